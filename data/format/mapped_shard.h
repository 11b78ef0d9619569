// MappedShard: a staged shard's fields as pointers into an mmap of the file
// (a variable-size field: its bytes and its offsets, checked once at open). For uncompressed contiguous
// datasets (strata-pack's default) HDF5 is asked only where each dataset starts; collation then copies
// straight from the page cache, once, with no HDF5 read (which holds HDF5's global lock) and no staging
// buffer. Chunked or filtered shards fall back to ShardData::read.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/format/manifest.h"
#include "data/format/shard.h"

namespace strata::data {

// Checks the file at `path` against `checksum` unless this process already did
// for the same file (same device, inode, size and mtime: a file replaced or
// rewritten since is checked again). Throws IoError naming the path, the manifest
// and both checksums on a mismatch. Thread-safe.
void verify_once(const std::string& path, const std::string& checksum, const std::string& manifest);

class MappedShard {
 public:
  // Throws strata::IoError naming the file when it does not match `schema`, or
  // what the manifest says (`expect`: sample count, and the checksum, verified
  // the first time this process opens that file; see verify_once).
  // `populate` faults the whole file in at once (cheap for a shard read whole);
  // without it pages come in as they are touched (random access to a big shard).
  static std::shared_ptr<const MappedShard> open(const std::string& path,
                                                 const std::vector<FieldSpec>& schema, bool populate = true,
                                                 const ShardExpectation& expect = {});
  ~MappedShard();
  MappedShard(const MappedShard&) = delete;
  MappedShard& operator=(const MappedShard&) = delete;

  int64_t samples() const { return samples_; }
  // Field `f` (schema index, fixed-size) of sample `i`: bytes_per_sample() bytes.
  const uint8_t* sample(size_t f, int64_t i) const { return base_[f] + i * stride_[f]; }
  // Field `f` (variable-size) of sample `i`: *size bytes.
  const uint8_t* variable_sample(size_t f, int64_t i, size_t* size) const {
    const int64_t* off = offsets_[f];
    *size = static_cast<size_t>(off[i + 1] - off[i]);
    return base_[f] + off[i];
  }
  bool mapped() const { return map_ != nullptr; }

 private:
  MappedShard() = default;
  bool try_map(const std::string& path, const std::vector<FieldSpec>& schema, bool populate);

  int64_t samples_ = 0;
  std::vector<const uint8_t*> base_;
  std::vector<int64_t> stride_;
  std::vector<const int64_t*> offsets_;  // per field: samples+1 offsets (variable fields), else null
  void* map_ = nullptr;
  size_t map_len_ = 0;
  std::optional<ShardData> data_;  // the fallback
};

}  // namespace strata::data
