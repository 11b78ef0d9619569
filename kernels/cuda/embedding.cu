// Embedding on CUDA, tables in f32/f16/bf16. Forward is a gather: a block per id
// (grid-strided) copies the table row's D elements in its own storage type, so
// it reads and writes count*D elements once. Backward is sort-based and
// deterministic, with no atomics: the ids become 32-bit keys (an out-of-range id
// sorts last and is dropped, embedding_sort.h), a stable CUB radix sort of
// (key, position) pairs groups equal ids with their positions in ascending order,
// the table gradient is zeroed, and the block at the start of each run of equal
// keys sums that run's gradient rows in FP32 registers in position order and
// writes the table row once in its dtype. So the result is the same bits on
// every run, half tables need no FP32 scratch copy, and g is read once; the
// price is a sort of count keys and one block per distinct id (a very frequent
// id, such as padding, is summed by a single block). A forward id outside [0, V)
// writes a NaN row instead of reading out of bounds (the CPU backend throws).
#include <cmath>
#include <cstdint>
#include <cub/device/device_radix_sort.cuh>
#include <string>

#include "kernels/backends.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/embedding_sort.h"
#include "kernels/cuda/half_io.cuh"
#include "kernels/cuda/kernel_macros.cuh"

namespace strata::cuda {
namespace {

constexpr int kThreads = 128;             // threads across D of one row
constexpr int64_t kMaxGrid = 65535 * 16;  // blocks; grid-strided beyond

int64_t grid_for(int64_t items) { return items < kMaxGrid ? items : kMaxGrid; }

// ---------------------------------------------------------------- kernels

// y[i, :] = table[ids[i], :]; ids [count], table [V, D], y [count, D]
template <typename T>
__global__ void gather_kernel(const int64_t* ids, const T* table, T* y, int64_t count, int64_t V, int64_t D) {
  for (int64_t i = blockIdx.x; i < count; i += gridDim.x) {
    int64_t id = ids[i];
    T* yr = y + i * D;
    if (id < 0 || id >= V) {
      for (int64_t j = threadIdx.x; j < D; j += blockDim.x) store(yr, j, NAN);
      continue;
    }
    const T* tr = table + id * D;
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) yr[j] = tr[j];
  }
}

// keys[i] = sort key of ids[i], pos[i] = i
__global__ void make_keys_kernel(const int64_t* ids, uint32_t* keys, int32_t* pos, int64_t count, int64_t V) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    keys[i] = embedding_sort_key(ids[i], V);
    pos[i] = static_cast<int32_t>(i);
  }
}

// dtable[key, :] = sum over the run of `key` in the sorted keys of g[pos, :]
template <typename T>
__global__ void segment_sum_kernel(const uint32_t* keys, const int32_t* pos, const T* g, T* dtable,
                                   int64_t count, int64_t V, int64_t D) {
  for (int64_t s = blockIdx.x; s < count; s += gridDim.x) {
    uint32_t key = keys[s];
    if (key == V || (s > 0 && keys[s - 1] == key)) continue;  // dropped id, or not the run's start
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      float acc = 0;
      for (int64_t k = s; k < count && keys[k] == key; ++k)
        acc += load(g, static_cast<int64_t>(pos[k]) * D + j);
      store(dtable, static_cast<int64_t>(key) * D + j, acc);
    }
  }
}

}  // namespace

// ---------------------------------------------------------------- launchers

void embedding_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  const TensorView &ids = in[0], &table = in[1];
  int64_t count = ids.numel(), V = table.shape[0], D = table.shape[1];
  if (count == 0 || D == 0) return;
  dispatch_float(table.dtype, "cuda embedding table", [&](auto tag) {
    using T = typename decltype(tag)::type;
    STRATA_LAUNCH(static_cast<unsigned>(grid_for(count)), kThreads, 0, context().stream, gather_kernel<T>)
    (ids.as<const int64_t>(), table.as<const T>(), out[0].as<T>(), count, V, D);
  });
  STRATA_CUDA_LAUNCH_CHECK();
}

void embedding_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& g,
                        TensorView* gin) {
  const TensorView& dtable = gin[1];
  if (!dtable.defined()) return;
  const TensorView& ids = in[0];
  int64_t count = ids.numel(), V = dtable.shape[0], D = dtable.shape[1];
  if (count > INT32_MAX || V >= static_cast<int64_t>(UINT32_MAX))
    throw Error(std::string("cuda embedding: backward supports up to 2^31 ids and 2^32 - 1 rows, got ") +
                std::to_string(count) + " ids for a table of " + std::to_string(V) + " rows");
  if (g.dtype != dtable.dtype)
    throw Error(std::string("cuda embedding: grad ") + dtype_name(g.dtype) + " and table grad " +
                dtype_name(dtable.dtype) + " differ");
  cudaStream_t stream = context().stream;
  STRATA_CUDA_CHECK(cudaMemsetAsync(dtable.data, 0, dtable.bytes(), stream));  // rows no id names
  if (count == 0 || D == 0) return;

  auto n = static_cast<size_t>(count);
  Scratch keys(n * sizeof(uint32_t)), sorted_keys(n * sizeof(uint32_t));
  Scratch pos(n * sizeof(int32_t)), sorted_pos(n * sizeof(int32_t));
  int threads = 256;
  auto blocks = static_cast<unsigned>(grid_for((count + threads - 1) / threads));
  STRATA_LAUNCH(blocks, threads, 0, stream, make_keys_kernel)
  (ids.as<const int64_t>(), keys.as<uint32_t>(), pos.as<int32_t>(), count, V);
  STRATA_CUDA_LAUNCH_CHECK();

  int end_bit = embedding_sort_bits(V);
  size_t temp_bytes = 0;
  STRATA_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys.as<const uint32_t>(),
                                                    sorted_keys.as<uint32_t>(), pos.as<const int32_t>(),
                                                    sorted_pos.as<int32_t>(), count, 0, end_bit, stream));
  Scratch temp(temp_bytes > 0 ? temp_bytes : 1);  // a null buffer would ask for the size again
  STRATA_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), temp_bytes, keys.as<const uint32_t>(),
                                                    sorted_keys.as<uint32_t>(), pos.as<const int32_t>(),
                                                    sorted_pos.as<int32_t>(), count, 0, end_bit, stream));

  dispatch_float(dtable.dtype, "cuda embedding table grad", [&](auto tag) {
    using T = typename decltype(tag)::type;
    STRATA_LAUNCH(static_cast<unsigned>(grid_for(count)), kThreads, 0, stream, segment_sum_kernel<T>)
    (sorted_keys.as<const uint32_t>(), sorted_pos.as<const int32_t>(), g.as<const T>(), dtable.as<T>(), count,
     V, D);
  });
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace strata::cuda
