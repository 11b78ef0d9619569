// HDF5 shards. A fixed-size field is one dataset of shape (samples, *field.shape);
// a variable-size field is a u8 dataset "<name>" (all samples' bytes, concatenated)
// plus an i64 dataset "<name>_offsets" of samples+1 entries. Attributes on the root
// group: "strata_format" (= manifest format version) and "samples".
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/format/manifest.h"

namespace strata::data {

class ShardWriter {
 public:
  // Creates `path` (truncating). `deflate_level` 0 = uncompressed (the default).
  ShardWriter(std::string path, std::vector<FieldSpec> schema, int deflate_level = 0);
  ~ShardWriter();
  // One sample: one byte span per schema field, in schema order.
  void add(const std::vector<std::pair<const void*, size_t>>& fields);
  int64_t samples() const;
  int64_t bytes_buffered() const;
  // Writes the datasets and closes the file.
  void finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What a manifest says about one shard, checked when the shard is opened: a
// shard that disagrees is an IoError naming the file, the manifest and both
// values. The defaults check nothing.
struct ShardExpectation {
  int64_t samples = -1;  // sample count (a token shard's token count); -1: unchecked
  std::string checksum;  // of the whole file; empty: unchecked (MappedShard::open only)
  std::string manifest;  // the manifest's origin, for messages
  static ShardExpectation of(const ShardInfo& shard, const Manifest& m) {
    return {shard.samples, shard.staged_checksum(), m.origin};  // the file as staged (decrypted)
  }
  // Throws unless the shard at `path`, holding `samples`, has the count expected.
  void check_samples(const std::string& path, int64_t samples) const;
};

// A whole shard read into memory: each dataset read once, in one call.
class ShardData {
 public:
  // `expect.samples` is compared with the shard's own count before any data is read.
  static ShardData read(const std::string& path, const std::vector<FieldSpec>& schema,
                        const ShardExpectation& expect = {});
  int64_t samples() const { return samples_; }
  // Bytes of field `f` (schema index) of sample `i`.
  const uint8_t* sample(size_t f, int64_t i, size_t* size) const;
  // All of field `f`'s bytes; a variable field's samples+1 offsets into them (null for a fixed field).
  const uint8_t* field_data(size_t f) const { return data_[f].data(); }
  const int64_t* field_offsets(size_t f) const { return offsets_[f].empty() ? nullptr : offsets_[f].data(); }
  int64_t bytes() const;

 private:
  int64_t samples_ = 0;
  std::vector<std::vector<uint8_t>> data_;     // per field
  std::vector<std::vector<int64_t>> offsets_;  // per variable field; empty for fixed
  std::vector<int64_t> fixed_size_;            // per field bytes per sample (fixed)
};

}  // namespace strata::data
