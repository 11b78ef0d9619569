// HDF5 shards as the loader maps them: a 4x4 u8 "image" and an i64 "label" per
// sample (the schema of the committed corpus). Every sample's bytes are read,
// so a shard whose datasets are shorter than they claim shows under ASan.
#include "data/format/mapped_shard.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = strata::fuzz::scratch_file(".h5");
  static const std::vector<strata::data::FieldSpec> schema = {{"image", "u8", {4, 4}, false},
                                                              {"label", "i64", {}, false}};
  strata::fuzz::write_scratch(path, data, size);
  return strata::fuzz::run_one([&] {
    auto shard = strata::data::MappedShard::open(path, schema, /*populate=*/false);
    uint64_t sum = 0;
    for (int64_t i = 0; i < shard->samples(); ++i)
      for (size_t f = 0; f < schema.size(); ++f) {
        const uint8_t* p = shard->sample(f, i);
        for (int64_t b = 0; b < schema[f].bytes_per_sample(); ++b) sum += p[b];
      }
    if (sum == 0xFFFFFFFFFFFFFFFFull) std::fprintf(stderr, "unlikely\n");  // keeps the reads
  });
}
