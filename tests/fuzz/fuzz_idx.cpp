// IDX files (plain or gzip), as strata-pack reads them.
#include "data/format/idx.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = strata::fuzz::scratch_file(".idx");
  strata::fuzz::write_scratch(path, data, size);
  return strata::fuzz::run_one([&] {
    strata::data::IdxArray a = strata::data::read_idx(path);
    // the dimensions must describe exactly the bytes read
    uint64_t n = a.element_size();
    for (int64_t d : a.dims) n *= static_cast<uint64_t>(d);
    if (n != a.data.size()) {
      std::fprintf(stderr, "fuzz finding: IDX dims describe %llu bytes, %zu were read\n",
                   static_cast<unsigned long long>(n), a.data.size());
      std::abort();
    }
  });
}
