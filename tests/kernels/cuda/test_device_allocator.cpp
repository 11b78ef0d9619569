// The CUDA allocators on a device: the caching pool over cudaMalloc and over
// cudaHostAlloc (the bookkeeping itself is tested on the CPU in
// tests/kernels/test_caching_pool.cpp). Without a device every test but the first
// reports SKIPPED with the reason; the first checks the error a user gets then.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "device_buffer.h"
#include "kernels/cuda/runtime.h"
#include "kernels/runtime/allocator.h"

#if STRATA_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace strata {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

std::string error_of(Allocator& (*get)()) {
  try {
    get();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Both sides of the same question, so the test runs (and can fail) on every
// machine: with a device both allocators come up; without one each says why.
TEST(DeviceAllocator, ComesUpWithADeviceOrSaysWhyWithout) {
  auto st = cuda::device_status();
  std::string dev = error_of(device_allocator), pinned = error_of(pinned_host_allocator);
  if (st.device_count > 0) {
    EXPECT_EQ(dev, "") << "a device is present (" << st.name << ")";
    EXPECT_EQ(pinned, "") << "a device is present (" << st.name << ")";
    return;
  }
  EXPECT_NE(dev.find("device allocator needs a CUDA device: " + st.reason), std::string::npos) << dev;
  EXPECT_NE(pinned.find("pinned host memory needs a CUDA device: " + st.reason), std::string::npos) << pinned;
}

#if STRATA_HAVE_CUDA

void check(cudaError_t e, const char* what) {
  ASSERT_EQ(e, cudaSuccess) << what << ": " << cudaGetErrorString(e);
}

TEST(DeviceAllocator, AllocatesReusesAndCounts) {
  STRATA_SKIP_WITHOUT_DEVICE();
  Allocator& a = device_allocator();
  EXPECT_EQ(a.device(), Device::cuda);
  const size_t n = 37 * kMiB + 5;  // a size class no other test uses: 38 MiB
  const AllocatorStats before = a.stats();
  void* p = a.allocate(n);
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.allocations, before.allocations + 1);
  EXPECT_EQ(s.system_allocations, before.system_allocations + 1);
  EXPECT_EQ(s.in_use_bytes, before.in_use_bytes + 38 * kMiB);
  EXPECT_GE(s.peak_bytes, s.in_use_bytes);

  std::vector<unsigned char> host(n), back(n);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<unsigned char>(i * 131 + 7);
  check(cudaDeviceSynchronize(), "sync");
  check(cudaMemcpy(p, host.data(), n, cudaMemcpyHostToDevice), "H2D");
  check(cudaMemcpy(back.data(), p, n, cudaMemcpyDeviceToHost), "D2H");
  EXPECT_EQ(std::memcmp(host.data(), back.data(), n), 0);

  a.deallocate(p, n);
  s = a.stats();
  EXPECT_EQ(s.in_use_bytes, before.in_use_bytes);
  EXPECT_EQ(s.cached_bytes, before.cached_bytes + 38 * kMiB);
  void* q = a.allocate(n - 100);  // same class, same (context) stream: the cached block
  EXPECT_EQ(q, p);
  EXPECT_EQ(a.stats().system_allocations, before.system_allocations + 1);
  a.deallocate(q, n - 100);
  a.release_cached();
  EXPECT_EQ(a.stats().cached_bytes, 0u);
}

void CUDART_CB wait_for_flag(void* flag) {
  while (!static_cast<std::atomic<bool>*>(flag)->load()) std::this_thread::yield();
}

TEST(DeviceAllocator, ABlockUsedOnAnotherStreamIsReusedOnlyAfterThatStreamsWork) {
  STRATA_SKIP_WITHOUT_DEVICE();
  Allocator& a = device_allocator();
  cudaStream_t side = nullptr;
  check(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), "stream");
  std::atomic<bool> go{false};
  struct Release {  // a failed check must not leave the side stream spinning
    std::atomic<bool>& go;
    ~Release() { go = true; }
  } release{go};
  // The side stream is held in a host function until `go`: its work is unfinished.
  check(cudaLaunchHostFunc(side, wait_for_flag, &go), "host func");
  const size_t n = 41 * kMiB;
  void* p = a.allocate(n);
  a.record_stream(p, reinterpret_cast<StreamId>(side));
  a.deallocate(p, n);
  void* q = a.allocate(n);
  EXPECT_NE(q, p) << "reused while the side stream may still use it";
  go = true;
  check(cudaStreamSynchronize(side), "side sync");
  void* r = a.allocate(n);
  EXPECT_EQ(r, p) << "the side stream has finished: the block is free again";
  a.deallocate(q, n);
  a.deallocate(r, n);
  check(cudaStreamDestroy(side), "stream destroy");
  a.release_cached();
}

TEST(DeviceAllocator, AnAbsurdRequestNamesBytesAndTheDevice) {
  STRATA_SKIP_WITHOUT_DEVICE();
  Allocator& a = device_allocator();
  const size_t absurd = size_t{1} << 50;  // 1 PiB
  std::string e;
  try {
    a.allocate(absurd);
  } catch (const Error& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("out of memory allocating " + std::to_string(absurd) + " bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("in use"), std::string::npos) << e;
  EXPECT_NE(e.find("cached"), std::string::npos) << e;
  EXPECT_NE(e.find("CUDA device"), std::string::npos) << e;
  EXPECT_EQ(cudaGetLastError(), cudaSuccess)
      << "the failed cudaMalloc must not linger for the next launch check";
  void* p = a.allocate(kMiB);  // still usable
  a.deallocate(p, kMiB);
}

TEST(PinnedHostAllocator, RoundTripThroughTheDeviceAndReuse) {
  STRATA_SKIP_WITHOUT_DEVICE();
  Allocator& h = pinned_host_allocator();
  Allocator& d = device_allocator();
  EXPECT_EQ(h.device(), Device::cpu);
  const size_t count = 3 << 20, n = count * sizeof(float);
  const AllocatorStats before = h.stats();
  auto* src = static_cast<float*>(h.allocate(n));
  auto* dst = static_cast<float*>(h.allocate(n));
  EXPECT_EQ(h.stats().in_use_bytes, before.in_use_bytes + 2 * 12 * kMiB);
  cudaPointerAttributes attr{};
  check(cudaPointerGetAttributes(&attr, src), "attributes");
  EXPECT_EQ(attr.type, cudaMemoryTypeHost) << "page-locked host memory";
  for (size_t i = 0; i < count; ++i) src[i] = static_cast<float>(i) * 0.5f - 1000.0f;
  std::memset(dst, 0, n);

  cudaStream_t copy = nullptr;
  check(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking), "stream");
  void* dev = d.allocate(n, reinterpret_cast<StreamId>(copy));
  check(cudaMemcpyAsync(dev, src, n, cudaMemcpyHostToDevice, copy), "H2D");
  check(cudaMemcpyAsync(dst, dev, n, cudaMemcpyDeviceToHost, copy), "D2H");
  h.record_stream(src, reinterpret_cast<StreamId>(copy));
  h.record_stream(dst, reinterpret_cast<StreamId>(copy));
  check(cudaStreamSynchronize(copy), "sync");
  EXPECT_EQ(std::memcmp(src, dst, n), 0);

  h.deallocate(src, n);                        // records an event on `copy`
  check(cudaStreamSynchronize(copy), "sync");  // ...which has completed after this
  void* again = h.allocate(n);
  EXPECT_EQ(again, src);
  h.deallocate(again, n);
  h.deallocate(dst, n);
  d.deallocate(dev, n);
  check(cudaStreamDestroy(copy), "stream destroy");
  const AllocatorStats after = h.stats();
  EXPECT_EQ(after.in_use_bytes, before.in_use_bytes);
  EXPECT_EQ(after.allocations, before.allocations + 3);
  EXPECT_EQ(after.system_allocations, before.system_allocations + 2);
  h.release_cached();
  EXPECT_EQ(h.stats().cached_bytes, 0u);
}

#else  // a build without CUDA: the device tests report SKIPPED, with the reason

TEST(DeviceAllocator, OnADevice) { GTEST_SKIP() << cuda::device_status().reason; }

#endif  // STRATA_HAVE_CUDA

}  // namespace
}  // namespace strata
