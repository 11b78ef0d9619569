// The SIMT emulator itself (simt.h, cuda_host.h, force-included here, so the
// kernels below are written as CUDA): the warp built-ins against their CUDA
// semantics (shuffles at full and partial widths, ballot/any/all), atomics,
// shared memory (one per block, NaN-filled), and each report a kernel bug must
// produce instead of a hang or a pass: a barrier some thread skips, threads at
// two barriers, a full mask on a partial warp, a misaligned vector access, an
// invalid launch. Launches after a failed one run normally.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace {

// ---- kernels ---------------------------------------------------------------------

__global__ void shuffles_kernel(int* out) {
  const int t = static_cast<int>(threadIdx.x), lane = t % 32;
  const int v = lane * 10;
  int* o = out + t * 6;
  o[0] = __shfl_xor_sync(0xffffffffu, v, 1);
  o[1] = __shfl_xor_sync(0xffffffffu, v, 16, 16);  // the partner is in a later group: own value
  o[2] = __shfl_up_sync(0xffffffffu, v, 3);
  o[3] = __shfl_down_sync(0xffffffffu, v, 5, 16);
  o[4] = __shfl_sync(0xffffffffu, v, 7, 8);
  o[5] = static_cast<int>(__ballot_sync(0xffffffffu, lane % 3 == 0)) +
         1000 * __any_sync(0xffffffffu, lane == 31) + 10000 * __all_sync(0xffffffffu, lane < 31);
}

__global__ void atomics_kernel(int* count, unsigned long long* most) {
  atomicAdd(count, 1);
  const unsigned linear = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned long long mine = blockIdx.x * 1000ull + linear;
  unsigned long long seen = 0;  // a guess: each failed CAS returns the value it found
  while (seen < mine) {         // a CAS loop, as kernels write atomicMax for types CUDA lacks it for
    const unsigned long long was = atomicCAS(most, seen, mine);
    if (was == seen) break;
    seen = was;
  }
}

__global__ void shared_kernel(float* first_read, float* sums) {
  STRATA_SHARED(float, buf, [64]);
  if (threadIdx.x == 0) first_read[blockIdx.x] = buf[5];  // before any write: the 0xFF fill
  __syncthreads();
  buf[threadIdx.x] = static_cast<float>(threadIdx.x + blockIdx.x);
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0;
    for (int i = 0; i < 64; ++i) s += buf[i];
    sums[blockIdx.x] = s;
  }
}

__global__ void skipped_barrier_kernel() {
  if (threadIdx.x < 32) return;
  __syncthreads();
}

__global__ void two_barriers_kernel() {
  if (threadIdx.x % 2)
    __syncthreads();
  else
    __syncthreads();
}

__global__ void partial_warp_shuffle_kernel(float* out) {
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}

__global__ void misaligned_vector_kernel(const float* p) { STRATA_VECTOR_ACCESS(p + 1, 16, "load_vec"); }

// ---- tests ------------------------------------------------------------------------

std::string failure_of(const std::function<void()>& launch) {
  try {
    launch();
  } catch (const simt::Error& e) {
    return e.what();
  }
  return "";
}

TEST(Simt, ShufflesBallotAnyAllFollowCuda) {
  const int n = 64;
  std::vector<int> out(n * 6, -1);
  STRATA_LAUNCH(1, n, 0, nullptr, shuffles_kernel)(out.data());
  unsigned every_third = 0;
  for (int l = 0; l < 32; l += 3) every_third |= 1u << l;
  for (int t = 0; t < n; ++t) {
    const int l = t % 32, seg16 = l & ~15, seg8 = l & ~7;
    SCOPED_TRACE("thread " + std::to_string(t));
    EXPECT_EQ(out[t * 6 + 0], (l ^ 1) * 10);
    EXPECT_EQ(out[t * 6 + 1], ((l ^ 16) < seg16 + 16 ? (l ^ 16) : l) * 10);
    EXPECT_EQ(out[t * 6 + 2], (l >= 3 ? l - 3 : l) * 10);
    EXPECT_EQ(out[t * 6 + 3], (l - seg16 + 5 < 16 ? l + 5 : l) * 10);
    EXPECT_EQ(out[t * 6 + 4], (seg8 + 7) * 10);
    EXPECT_EQ(out[t * 6 + 5], static_cast<int>(every_third) + 1000 + 0);
  }
}

TEST(Simt, AtomicsAddAndCasAcrossBlocks) {
  int count = 0;
  unsigned long long most = 0;
  STRATA_LAUNCH(dim3(3, 2), dim3(16, 4, 2), 0, nullptr, atomics_kernel)(&count, &most);
  EXPECT_EQ(count, 6 * 128);
  EXPECT_EQ(most, 2 * 1000ull + 127);  // blockIdx.x 2, the last of 16x4x2 threads in x, y, z order
}

TEST(Simt, SharedMemoryIsPerBlockAndStartsAsNan) {
  std::vector<float> first(3, 0), sums(3, 0);
  STRATA_LAUNCH(3, 64, 0, nullptr, shared_kernel)(first.data(), sums.data());
  for (int b = 0; b < 3; ++b) {
    EXPECT_TRUE(std::isnan(first[b])) << "block " << b << " saw the last block's shared memory";
    EXPECT_EQ(sums[b], 64 * 63 / 2 + 64 * b);
  }
}

TEST(Simt, ABarrierSomeThreadsSkipIsReported) {
  std::string e = failure_of([] { STRATA_LAUNCH(1, 64, 0, nullptr, skipped_barrier_kernel)(); });
  EXPECT_NE(e.find("kernel skipped_barrier_kernel"), std::string::npos) << e;
  EXPECT_NE(e.find("every thread of the block must reach it"), std::string::npos) << e;
}

TEST(Simt, ThreadsAtTwoBarriersAreReported) {
  std::string e = failure_of([] { STRATA_LAUNCH(1, 64, 0, nullptr, two_barriers_kernel)(); });
  EXPECT_NE(e.find("wait at the one at test_simt.cpp:"), std::string::npos) << e;
}

TEST(Simt, AFullMaskOnAPartialWarpIsReported) {
  std::vector<float> out(48);
  std::string e = failure_of([&] {
    STRATA_LAUNCH(1, 48, 0, nullptr, partial_warp_shuffle_kernel)
    (out.data());
  });
  EXPECT_NE(e.find("mask 0xffffffff in warp 1, which has 16 lanes"), std::string::npos) << e;
}

TEST(Simt, AMisalignedVectorAccessIsReportedWithTheThread) {
  alignas(16) float data[8] = {};
  std::string e = failure_of([&] { STRATA_LAUNCH(1, 32, 0, nullptr, misaligned_vector_kernel)(data); });
  EXPECT_NE(e.find("block (0,0,0) thread ("), std::string::npos) << e;
  EXPECT_NE(e.find("load_vec of 16 bytes at"), std::string::npos) << e;
  EXPECT_NE(e.find("which is not 16-byte aligned"), std::string::npos) << e;
}

TEST(Simt, InvalidLaunchesAreErrorsAndLaterLaunchesRun) {
  EXPECT_NE(failure_of([] {
              STRATA_LAUNCH(0, 64, 0, nullptr, two_barriers_kernel)
              ();
            }).find("invalid launch"),
            std::string::npos);
  EXPECT_NE(failure_of([] {
              STRATA_LAUNCH(1, 1025, 0, nullptr, two_barriers_kernel)
              ();
            }).find("1 to 1024"),
            std::string::npos);
  int count = 0;
  unsigned long long most = 0;
  STRATA_LAUNCH(1, 32, 0, nullptr, atomics_kernel)(&count, &most);
  EXPECT_EQ(count, 32);
}

}  // namespace
