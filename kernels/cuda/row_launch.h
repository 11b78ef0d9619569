// Launch shape of the row-wise CUDA kernels (softmax, log_softmax, cross_entropy,
// global average pooling): a row of `cols` elements is walked by a group of
// threads_per_row threads with stride threads_per_row, then reduced. Short rows
// take one warp each (shuffles only, four rows per block); longer rows take a
// whole block, wide enough that each thread holds a few dozen elements. Plain
// C++ without CUDA headers, so the arithmetic is unit-tested on the host.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "base/error.h"

namespace strata::cuda {

struct RowLaunch {
  int threads_per_row = 32;  // 32 (one warp), or 128..1024 (a whole block)
  int rows_per_block = 1;    // > 1 only with one warp per row
  int block = 32;            // threads_per_row * rows_per_block
  int64_t grid = 0;          // ceil(rows / rows_per_block) blocks
};

inline constexpr int kWarp = 32;
inline constexpr int kMaxBlock = 1024;

inline int threads_per_row(int64_t cols) {
  if (cols <= 1024) return kWarp;
  if (cols <= 4096) return 128;
  if (cols <= 16384) return 256;
  if (cols <= 32768) return 512;
  return kMaxBlock;
}

// Throws strata::Error naming `op` (e.g. "cuda softmax") when the grid would not fit gridDim.x.
inline RowLaunch row_launch(int64_t rows, int64_t cols, const char* op) {
  RowLaunch l;
  l.threads_per_row = threads_per_row(cols);
  l.rows_per_block = l.threads_per_row == kWarp ? 4 : 1;
  l.block = l.threads_per_row * l.rows_per_block;
  l.grid = (rows + l.rows_per_block - 1) / l.rows_per_block;
  if (l.grid > 2147483647)
    throw Error(std::string(op) + ": " + std::to_string(rows) + " rows exceed the launch grid");
  return l;
}

// Whether a row kernel may walk rows in 16-byte chunks (kernels/cuda/row_walk.cuh):
// each row a whole number of chunks of elem_bytes-sized elements, and every
// buffer 16-byte aligned, so that every row starts on a chunk boundary.
inline bool row_vectorizable(int64_t cols, size_t elem_bytes, std::initializer_list<const void*> buffers) {
  if (elem_bytes == 0 || 16 % elem_bytes != 0 || cols % static_cast<int64_t>(16 / elem_bytes) != 0)
    return false;
  for (const void* p : buffers)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

}  // namespace strata::cuda
