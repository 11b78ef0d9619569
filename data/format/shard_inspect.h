// What is inside one shard file, for strata-inspect: its datasets with dtypes
// and shapes, its sample count, its checksum, and whether it agrees with the
// manifest.json beside it (the file a staged or packed shard sits next to).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/format/manifest.h"

namespace strata::data {

struct ShardDataset {
  std::string name;            // "image", "bytes", "bytes_offsets", "tokens", ...
  std::string dtype;           // manifest notation: "u8", "i64", "f16", "bf16", ...
  std::vector<int64_t> shape;  // the whole dataset's, sample axis first
};

struct ShardReport {
  std::string path;
  int64_t bytes = 0;                        // file size
  int64_t format_version = 0;               // root attribute strata_format
  int64_t samples = 0;                      // root attribute samples (a token shard: its tokens)
  std::vector<ShardDataset> datasets;       // in name order
  std::string checksum;                     // of the file, computed now ("xxh3:...")
  std::string manifest_path;                // manifest.json beside the shard; "" when there is none
  std::optional<ShardInfo> manifest_entry;  // this shard's entry there, by file name
  std::vector<FieldSpec> schema;            // the manifest's sample schema (empty without one)
  // Every way the file disagrees with its manifest entry (size, samples,
  // checksum); empty when it agrees. Meaningless without an entry.
  std::vector<std::string> mismatches;
  bool verified() const { return manifest_entry && mismatches.empty(); }
};

// True when `path` is an HDF5 file with a root attribute strata_format.
bool is_shard_file(const std::string& path);

// Reads the shard's structure (not its data) and checksums the whole file.
// Throws IoError naming the file and what is wrong with it.
ShardReport inspect_shard(const std::string& path);

}  // namespace strata::data
