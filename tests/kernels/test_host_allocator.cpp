// host_allocator(): large blocks come back from its cache instead of the
// system, small ones go to malloc, statistics add up, and release_cached()
// empties the cache. Under AddressSanitizer nothing is cached
// (kHostCacheEnabled), and the test checks that instead.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "kernels/runtime/allocator.h"

namespace strata {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(HostAllocator, ALargeBlockFreedIsReusedWithoutTheSystem) {
  Allocator& h = host_allocator();
  h.release_cached();
  AllocatorStats s0 = h.stats();
  void* a = h.allocate(3 * kMiB + 100);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  std::memset(a, 1, 3 * kMiB + 100);  // the whole block is usable
  h.deallocate(a, 3 * kMiB + 100);
  AllocatorStats s1 = h.stats();
  EXPECT_EQ(s1.in_use_bytes, s0.in_use_bytes);
  void* b = h.allocate(3 * kMiB);  // the same size class
  AllocatorStats s2 = h.stats();
  EXPECT_EQ(s2.allocations, s0.allocations + 2);
  if (kHostCacheEnabled) {
    EXPECT_GE(s1.cached_bytes, s0.cached_bytes + 3 * kMiB);
    EXPECT_EQ(b, a);
    EXPECT_EQ(s2.system_allocations, s0.system_allocations + 1);
    EXPECT_GE(s2.in_use_bytes, s0.in_use_bytes + 3 * kMiB);
  } else {
    EXPECT_EQ(s1.cached_bytes, s0.cached_bytes);
    EXPECT_EQ(s2.system_allocations, s0.system_allocations + 2);
  }
  h.deallocate(b, 3 * kMiB);
  h.release_cached();
  EXPECT_EQ(h.stats().cached_bytes, 0u);
  EXPECT_EQ(h.stats().in_use_bytes, s0.in_use_bytes);
}

TEST(HostAllocator, SmallBlocksGoToMallocAndAreNotCached) {
  Allocator& h = host_allocator();
  AllocatorStats s0 = h.stats();
  void* a = h.allocate(kHostCacheMin - 64);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  EXPECT_EQ(h.stats().in_use_bytes, s0.in_use_bytes + kHostCacheMin - 64);
  h.deallocate(a, kHostCacheMin - 64);
  AllocatorStats s1 = h.stats();
  EXPECT_EQ(s1.cached_bytes, s0.cached_bytes);
  EXPECT_EQ(s1.system_allocations, s0.system_allocations + 1);
  EXPECT_EQ(s1.in_use_bytes, s0.in_use_bytes);
}

TEST(HostAllocator, AFreedSizeTooFarFromTheRequestIsNotReused) {
  // the pool's rule: a cached block serves requests of at least 4/5 of its size
  Allocator& h = host_allocator();
  h.release_cached();
  void* big = h.allocate(16 * kMiB);
  h.deallocate(big, 16 * kMiB);
  AllocatorStats s0 = h.stats();
  void* small = h.allocate(2 * kMiB);
  EXPECT_EQ(h.stats().system_allocations, s0.system_allocations + 1);
  h.deallocate(small, 2 * kMiB);
  h.release_cached();
}

}  // namespace
}  // namespace strata
