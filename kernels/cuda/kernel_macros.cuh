// The launch and memory-space forms every CUDA kernel file writes through, so
// that a kernel's own text also compiles for the host SIMT emulator
// (tests/simt/cuda_host.h defines these first, to run it there):
//
//   STRATA_LAUNCH(grid, block, shared_bytes, stream, kernel<T>)(args...)
//       STRATA_LAUNCH(grid, block, shared_bytes, stream, kernel<T>)(args...)
//   STRATA_LAUNCH_NAMED("kernel", grid, block, shared_bytes, stream, ptr)(args...)
//       the same through a pointer chosen at run time, named for the emulator's reports
//   STRATA_SHARED(float, part, [32][4]);          __shared__ float part[32][4];
//   STRATA_DYNAMIC_SHARED(unsigned char, smem, 128);
//       extern __shared__ __align__(128) unsigned char smem[];
//   STRATA_VECTOR_ACCESS(p, 16, "load_vec");      nothing on the device; the
//       emulator fails a vector access at an address not aligned to its size
#pragma once

#ifndef STRATA_LAUNCH
#define STRATA_LAUNCH(grid, block, shared_bytes, stream, ...) \
  __VA_ARGS__<<<grid, block, shared_bytes, stream>>>
#define STRATA_LAUNCH_NAMED(name, grid, block, shared_bytes, stream, ...) \
  __VA_ARGS__<<<grid, block, shared_bytes, stream>>>
#define STRATA_SHARED(type, name, ...) __shared__ type name __VA_ARGS__
#define STRATA_DYNAMIC_SHARED(type, name, align) \
  extern __shared__ __align__(align)             \
  type name[]
#define STRATA_VECTOR_ACCESS(p, bytes, what) ((void)0)
#endif
