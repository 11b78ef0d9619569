// The host SIMT emulator: runs a CUDA kernel's own code on the host, one
// std::thread per CUDA thread of a block, blocks one after another.
//
// What a launch provides: threadIdx/blockIdx/blockDim/gridDim in three
// dimensions; __syncthreads() as a block barrier and __syncwarp / the
// __shfl*_sync / __ballot_sync / __any_sync / __all_sync family as a rendezvous
// of the lanes in the mask; atomics through std::atomic_ref; static and dynamic
// shared memory as per-block heap arrays filled with 0xFF bytes (a NaN in every
// float type), sized exactly, so AddressSanitizer sees an overrun.
//
// What it reports, as simt::Error from launch() naming the kernel, the block,
// the thread and the source line, instead of hanging or passing:
//   - a __syncthreads() not reached by every thread of the block (a thread that
//     returned, or threads waiting at two different barriers);
//   - a warp operation whose mask names a lane the block does not have (a full
//     mask on a partial warp), a lane outside the mask, a lane that returned,
//     or lanes of one mask at two different call sites;
//   - a 16-byte vector load or store at an address that is not 16-byte aligned.
// Races (two threads on the same word between two barriers, one writing) are
// ThreadSanitizer's to find: the barriers are mutexes and condition variables it
// understands, so a missing __syncthreads() is a data race in its report. Out-of-
// range global and shared accesses are AddressSanitizer's.
#pragma once
#include <vector_types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <source_location>
#include <stdexcept>
#include <string>

namespace simt {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs body() once per thread of every block of the grid. `kernel` names it in
// reports and in the launch log; `site` is the launch's source file.
void launch(const char* kernel, const char* site, dim3 grid, dim3 block, size_t dynamic_shared_bytes,
            const std::function<void()>& body);

// The calling CUDA thread's coordinates; valid inside a launch only.
const uint3& thread_idx();
const uint3& block_idx();
const dim3& block_dim();
const dim3& grid_dim();
unsigned lane_id();

void syncthreads(std::source_location where);
void syncwarp(unsigned mask, std::source_location where);
// Every lane in `mask` contributes `bytes` (<= 8) from `value`; after the call
// `all` holds lane l's contribution at all + l * bytes for each lane in the mask.
void warp_exchange(unsigned mask, const void* value, size_t bytes, void* all, std::source_location where);
// A failure inside a kernel: throws, ending the launch with `what`.
[[noreturn]] void fail(const std::string& what, std::source_location where);

// The block's instance of one static shared array (key: the declaration).
void* shared_memory(const void* key, size_t bytes, size_t align);
// The block's dynamic shared memory (the launch's size), aligned to `align`.
void* dynamic_shared_memory(size_t align);

// A vector access of `bytes` at p: fails unless p is `bytes`-aligned.
void check_vector_access(const void* p, size_t bytes, const char* what, std::source_location where);

}  // namespace simt
