// manifest.json: format version, sample schema, and per shard its name, sample
// count, size in bytes and checksum. Written by strata-pack, fetched once per node.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace strata::data {

inline constexpr int kManifestFormatVersion = 1;
// A manifest of compressed shard objects (object_compression zstd or lz4) says
// version 2, so that a build older than compression refuses it by its version
// (it reads only 1) instead of staging frames it cannot open. This build reads both.
inline constexpr int kCompressedManifestFormatVersion = 2;

// One field of a sample. Fixed-size fields have a shape (per sample); variable-size
// fields (variable = true) are byte strings stored as blob + offsets.
struct FieldSpec {
  std::string name;
  std::string dtype;           // "u8", "u16", "i32", "i64", "f32", "f16", "bf16"
  std::vector<int64_t> shape;  // per-sample shape, empty for a scalar
  bool variable = false;
  int64_t bytes_per_sample() const;  // fixed fields only
};

struct ShardInfo {
  std::string name;  // key relative to the dataset URL, e.g. "shard-00000.h5"
  int64_t samples = 0;
  int64_t bytes = 0;     // file size
  std::string checksum;  // "xxh3:<16 hex digits>"
  // Encrypted or compressed datasets only (empty otherwise): the shard file's
  // size and checksum once decrypted or decompressed; `bytes` and `checksum` are
  // then the stored object's (what a download is checked against).
  int64_t plain_bytes = 0;
  std::string plain_checksum = {};
  // The shard file as the cache holds it: decrypted or decompressed when the
  // dataset is encrypted or compressed, the object itself otherwise.
  int64_t staged_bytes() const { return plain_checksum.empty() ? bytes : plain_bytes; }
  const std::string& staged_checksum() const { return plain_checksum.empty() ? checksum : plain_checksum; }
};

// An encrypted dataset (docs/data-format.md, "Encrypted datasets"): its shards
// are AES-256-GCM objects (data/format/shard_crypt.h), and the manifest carries an
// HMAC under the data key, so neither can be changed unseen by a key holder.
struct DatasetEncryption {
  std::string algorithm;     // "aes-256-gcm"; empty: not encrypted
  std::string key_id;        // DataKey::id() of the key, never the key
  std::string dataset_id;    // 32 hex digits, random per packed dataset
  std::string manifest_mac;  // "hmac-sha256:<64 hex>" over the manifest (data/format/manifest_auth.h)
};

struct Manifest {
  int format_version = kManifestFormatVersion;
  std::vector<FieldSpec> schema;
  std::vector<ShardInfo> shards;
  // The HDF5 filter inside each shard file: "none" or "deflate" (strata-pack --deflate).
  std::string compression = "none";
  // How each shard object is stored: "none" (the shard file itself), "zstd" or
  // "lz4" (the shard file as one frame, data/format/shard_codec.h;
  // strata-pack --compress). Absent from older manifests: "none". Not combined
  // with encryption.
  std::string object_compression = "none";
  bool object_compressed() const { return object_compression != "none"; }
  // Optional: names of the label values (strata-pack files: sorted subdirectory names).
  std::vector<std::string> class_names;
  // Token datasets only (0 otherwise): the vocabulary size. Such a dataset has one
  // field "tokens" (u16 or i32, scalar per sample): each shard is a 1-D token
  // array and a shard's `samples` is its token count (docs/data-format.md).
  int64_t vocab_size = 0;
  DatasetEncryption encryption;
  bool encrypted() const { return !encryption.algorithm.empty(); }
  // Where from_json read this manifest (a URL or a path), for error messages that
  // must name it; not part of the JSON.
  std::string origin;

  int64_t total_samples() const;
  int64_t total_bytes() const;         // of the stored objects: what an epoch reads from the store
  int64_t total_staged_bytes() const;  // of the shard files as the cache holds them
  const FieldSpec& field(const std::string& name) const;

  std::string to_json() const;
  // `origin` names where the text came from, for error messages.
  static Manifest from_json(const std::string& text, const std::string& origin);
};

// Checksum of a file or buffer in the manifest's notation ("xxh3:<hex>").
std::string checksum_file(const std::string& path);
std::string checksum_bytes(const void* data, size_t size);

}  // namespace strata::data
