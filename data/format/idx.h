// IDX files (the MNIST / Fashion-MNIST container): a magic number giving the
// element type and rank, big-endian dimension sizes, then the data. Files may
// be gzip-compressed (read transparently).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace strata::data {

struct IdxArray {
  uint8_t type = 0;  // 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;  // elements in host byte order
  int64_t count() const { return dims.empty() ? 0 : dims[0]; }
  size_t element_size() const;
};

// Reads a whole IDX file (plain or .gz). Throws strata::IoError naming the file
// for a bad magic number, an unknown type, or data shorter than the header says.
IdxArray read_idx(const std::string& path);

}  // namespace strata::data
