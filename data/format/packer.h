// Packing samples into HDF5 shards plus manifest.json (the logic behind
// strata-pack). Shards are written to a local temporary directory, each one
// uploaded to the output URL as soon as it is sealed, in the background while
// the next ones are packed (PackOptions::parallel_shards at a time, each in
// parallel parts when larger than source.upload.part_bytes), and manifest.json
// is uploaded last, once every shard is stored: a dataset whose packing died
// half way has no manifest.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/format/data_key.h"
#include "data/format/manifest.h"
#include "data/store/source.h"

namespace strata::data {

// How far a packing has come (PackOptions::progress): inputs (files, images,
// records) and their bytes read, of how many, and the shards sealed so far.
struct PackProgress {
  std::string unit;  // what an input is: "files", "images", "records", "tokens"
  int64_t inputs_done = 0, inputs_total = 0;
  int64_t bytes_done = 0, bytes_total = 0;
  int64_t shards_sealed = 0;
};

// What pack_files does with a file that is not a JPEG or PNG that decodes.
enum class ImageCheck {
  kNone,    // no check: any file is packed as it is
  kRefuse,  // every file is decoded; any that fails is listed and nothing is published
  kSkip,    // every file is decoded; those that fail are left out and listed (log)
};

struct PackOptions {
  std::string out_url;               // file dir, file://, s3://bucket/prefix
  int64_t shard_bytes = 64ll << 20;  // seal a shard once its samples reach this size
  int deflate_level = 0;             // 0 = uncompressed contiguous datasets
  // How each shard object is stored (Manifest::object_compression): "none", or
  // the whole shard file as one "zstd" or "lz4" frame (data/format/shard_codec.h)
  // at compress_level (0: the codec's default). Not combined with `key`.
  std::string compress = "none";
  int compress_level = 0;
  std::string prefix = "shard";  // shard names: <prefix>-00000.h5, ...
  SourceOptions source;
  // Shards uploading at a time; packing waits for the oldest when that many are
  // in flight. Each shard holds its local temporary file until it is stored.
  int parallel_shards = 4;
  // Set: every shard is stored encrypted with this key (AES-256-GCM,
  // data/format/shard_crypt.h) and the manifest says so and is sealed with it.
  std::shared_ptr<const DataKey> key;
  // Set: pack_files and pack_idx write the samples in a permutation of the input
  // seeded by this value (PlanRng Fisher-Yates: the same on every platform), so
  // that an input sorted by class spreads every class over every shard; unset:
  // in input order. strata-pack sets it for `files` by default (--seed, 0) and
  // for `idx` with --shuffle.
  std::optional<uint64_t> shuffle_seed;
  // pack_files: whether each file is decoded as an image first (ImageCheck), and
  // by how many threads files are read and checked (0: one per core).
  ImageCheck check_images = ImageCheck::kNone;
  int file_threads = 0;
  std::function<void(const std::string&)> log;  // progress lines; may be empty
  // Called after every input (the caller throttles what it draws); may be empty.
  std::function<void(const PackProgress&)> progress;
};

class DatasetPacker {
 public:
  DatasetPacker(std::vector<FieldSpec> schema, PackOptions options);
  ~DatasetPacker();
  // One sample: one byte span per schema field, in schema order.
  void add(const std::vector<std::pair<const void*, size_t>>& fields);
  // Seals the last shard, uploads manifest.json and returns the manifest.
  // `vocab_size` > 0 marks a token dataset (Manifest::vocab_size).
  Manifest finish(std::vector<std::string> class_names = {}, int64_t vocab_size = 0);
  int64_t shards_sealed() const;

 private:
  void seal();

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// "64MB" -> 64000000, "8MiB" -> 8388608, "4096" -> 4096 (K, M, G, T; KB/KiB ...).
int64_t parse_size(const std::string& text);

// IDX images (u8, N x H x W ...) and labels (u8, N): fields "image" u8 [H,W,...]
// and "label" i64. Either file may be gzip-compressed. In the files' order, or
// permuted by options.shuffle_seed.
Manifest pack_idx(const std::string& images, const std::string& labels, const PackOptions& options);

// One sample per file under root/<class>/...: fields "bytes" (variable u8, the
// file's contents, so its length is the file's size), "label" i64 (index of
// <class> among the sorted subdirectory names, which the manifest records as
// class_names) and "name" (variable u8, the file's path under root,
// "<class>/.../<file>"). In sorted class and path order, or permuted by
// options.shuffle_seed. options.check_images decodes every file first.
Manifest pack_files(const std::filesystem::path& root, const PackOptions& options);

// Fixed-size records of a raw file. dtype "u8" with element count
// `sample_elems` gives field "data" u8 [n]; "u16"/"i32" give field "tokens"
// [n] (token sequences of n tokens, native byte order). A trailing partial
// record is dropped (and reported through options.log).
Manifest pack_raw(const std::string& input, const std::string& dtype, int64_t sample_elems,
                  const PackOptions& options);

}  // namespace strata::data
