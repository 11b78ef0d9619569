// Reader for the golden files that tests/fixtures/make_*_golden.py write (the
// record format is documented in make_gpt_golden.py): PyTorch's weights, a batch,
// outputs and gradients. Used by the golden tests and the export tests; free of
// gtest so that plain tools (tests/models/make_golden_checkpoint) can read them.
#pragma once
#include <cmath>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/runtime/half.h"

namespace strata::testing {

struct Record {
  Shape shape;
  std::vector<float> f;      // f32 and f16 records, widened
  std::vector<int64_t> i64;  // i64 records
};

// Reads the record format documented in make_gpt_golden.py.
inline std::map<std::string, Record> load_golden(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  auto get = [&](void* p, size_t n) {
    in.read(static_cast<char*>(p), static_cast<std::streamsize>(n));
    if (!in) throw std::runtime_error(path + ": truncated");
  };
  std::map<std::string, Record> out;
  uint32_t len = 0;
  while (in.read(reinterpret_cast<char*>(&len), 4)) {
    std::string name(len, '\0');
    get(name.data(), len);
    uint8_t dtype = 0;
    uint32_t ndim = 0;
    get(&dtype, 1);
    get(&ndim, 4);
    Record r;
    r.shape.resize(ndim);
    int64_t n = 1;
    for (auto& d : r.shape) get(&d, 8), n *= d;
    if (dtype == 0) {
      r.f.resize(static_cast<size_t>(n));
      get(r.f.data(), 4 * r.f.size());
    } else if (dtype == 1) {
      std::vector<uint16_t> h(static_cast<size_t>(n));
      get(h.data(), 2 * h.size());
      for (uint16_t b : h) r.f.push_back(f16_bits_to_float(b));
    } else if (dtype == 2) {
      r.i64.resize(static_cast<size_t>(n));
      get(r.i64.data(), 8 * r.i64.size());
    } else {
      throw std::runtime_error(path + ": record " + name + " has unknown dtype " + std::to_string(dtype));
    }
    out.emplace(std::move(name), std::move(r));
  }
  return out;
}

}  // namespace strata::testing
