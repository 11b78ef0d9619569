// The caching pool's bookkeeping against a fake device: memory is address ranges
// that are never touched, events complete when the test says their stream has
// finished, and the system runs out of memory at a capacity the test sets.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "kernels/runtime/caching_pool.h"

namespace strata {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// The fake device's state, owned by the test so that it outlives the pool.
struct FakeDevice {
  size_t capacity = SIZE_MAX;
  size_t live_bytes = 0;
  std::map<void*, size_t> live;  // system allocations not yet freed
  uintptr_t next_address = 0x10000;
  int system_allocs = 0, system_frees = 0, failed_allocs = 0, syncs = 0;
  struct Event {
    StreamId stream;
    bool done = false, released = false;
  };
  std::vector<Event> events;  // PoolEvent = index + 1

  void finish(StreamId s) {  // all work queued on s so far has run
    for (auto& e : events)
      if (e.stream == s) e.done = true;
  }
  int unreleased_events() const {
    return static_cast<int>(
        std::count_if(events.begin(), events.end(), [](const Event& e) { return !e.released; }));
  }
};

class FakeBackend final : public PoolBackend {
 public:
  explicit FakeBackend(FakeDevice& d) : d_(d) {}
  void* system_allocate(size_t bytes) override {
    if (bytes > d_.capacity - d_.live_bytes) {
      d_.failed_allocs++;
      return nullptr;
    }
    void* p = reinterpret_cast<void*>(d_.next_address);
    d_.next_address += bytes + 4096;
    d_.live[p] = bytes;
    d_.live_bytes += bytes;
    d_.system_allocs++;
    return p;
  }
  void system_free(void* p) override {
    auto it = d_.live.find(p);
    ASSERT_NE(it, d_.live.end()) << "system_free of a pointer the system did not give";
    d_.live_bytes -= it->second;
    d_.live.erase(it);
    d_.system_frees++;
  }
  PoolEvent record_event(StreamId s) override {
    d_.events.push_back({s});
    return d_.events.size();
  }
  bool event_done(PoolEvent e) override {
    EXPECT_FALSE(d_.events.at(e - 1).released) << "query of a released event";
    return d_.events.at(e - 1).done;
  }
  void release_event(PoolEvent e) override {
    EXPECT_FALSE(d_.events.at(e - 1).released) << "event released twice";
    d_.events.at(e - 1).released = true;
  }
  void synchronize() override {
    d_.syncs++;
    for (auto& e : d_.events) e.done = true;
  }
  std::string where() const override { return "fake device 7"; }

 private:
  FakeDevice& d_;
};

constexpr StreamId kS1 = 0x100, kS2 = 0x200;

CachingPool make_pool(FakeDevice& d, PoolOptions o = {}) {
  o.name = "test";
  return CachingPool(std::make_unique<FakeBackend>(d), o);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CachingPool, RoundsTo512BytesUpTo1MiBAnd2MiBAbove) {
  const size_t small = CachingPool::kSmallStep, large = CachingPool::kLargeStep;
  EXPECT_EQ(small, 512u);
  EXPECT_EQ(large, 2 * kMiB);
  EXPECT_EQ(CachingPool::round_size(0), small);
  EXPECT_EQ(CachingPool::round_size(1), small);
  EXPECT_EQ(CachingPool::round_size(small), small);
  EXPECT_EQ(CachingPool::round_size(small + 1), 2 * small);
  EXPECT_EQ(CachingPool::round_size(kMiB), kMiB);
  EXPECT_EQ(CachingPool::round_size(kMiB + 1), large);
  EXPECT_EQ(CachingPool::round_size(large + 1), 2 * large);
  for (size_t n : {size_t{3}, size_t{1000}, kMiB - 7, kMiB + 5, 7 * kMiB + 1}) {
    size_t r = CachingPool::round_size(n);
    EXPECT_GE(r, n);
    EXPECT_EQ(r % (n <= kMiB ? small : large), 0u) << n;
    EXPECT_LT(r - n, n <= kMiB ? small : large) << n;
  }
}

TEST(CachingPool, ReusesAFreedBlockOfTheSameSizeClassOnItsStream) {
  FakeDevice d;
  auto pool = make_pool(d);
  void* a = pool.allocate(1000, kS1);
  pool.deallocate(a, 1000);
  void* b = pool.allocate(900, kS1);  // same class (1024 bytes)
  EXPECT_EQ(b, a);
  EXPECT_EQ(d.system_allocs, 1);
  void* c = pool.allocate(2000, kS1);  // a bigger class while a is in use
  EXPECT_NE(c, a);
  pool.deallocate(b, 900);
  pool.deallocate(c, 2000);
  // A free 2048-byte block is too big for a 512-byte request (more than 5/4 of it),
  // but 1024 bytes is a fit for a 1024-byte request.
  void* e = pool.allocate(500, kS1);
  EXPECT_NE(e, c);
  EXPECT_NE(e, a);
  void* f = pool.allocate(1024, kS1);
  EXPECT_EQ(f, a);
  EXPECT_EQ(d.system_allocs, 3);
  auto s = pool.stats();
  EXPECT_EQ(s.allocations, 5u);
  EXPECT_EQ(s.system_allocations, 3u);
}

TEST(CachingPool, TakesTheSmallestLargeBlockWithinAQuarterOfTheRequest) {
  FakeDevice d;
  auto pool = make_pool(d);
  void* b8 = pool.allocate(8 * kMiB, kS1);
  void* b10 = pool.allocate(10 * kMiB, kS1);
  pool.deallocate(b8, 8 * kMiB);
  pool.deallocate(b10, 10 * kMiB);
  EXPECT_EQ(pool.allocate(7 * kMiB + 1, kS1), b8);  // class 8 MiB: the 8 MiB block, not the 10
  EXPECT_EQ(pool.allocate(8 * kMiB, kS1), b10);     // 10 <= 8 * 5/4
  void* n = pool.allocate(2 * kMiB, kS1);           // nothing free fits
  EXPECT_NE(n, b8);
  EXPECT_NE(n, b10);
  EXPECT_EQ(d.system_allocs, 3);
}

TEST(CachingPool, NeverHandsABlockToAnotherStream) {
  FakeDevice d;
  auto pool = make_pool(d);
  void* a = pool.allocate(4096, kS1);
  pool.deallocate(a, 4096);
  void* b = pool.allocate(4096, kS2);
  EXPECT_NE(b, a);
  EXPECT_EQ(d.system_allocs, 2);
  EXPECT_EQ(pool.allocate(4096, kS1), a);
}

TEST(CachingPool, ABlockUsedOnAnotherStreamWaitsForItsEvent) {
  FakeDevice d;
  auto pool = make_pool(d);
  void* a = pool.allocate(3 * kMiB, kS1);
  pool.record_stream(a, kS2);
  pool.record_stream(a, kS2);  // once is enough
  pool.record_stream(a, kS1);  // its own stream needs no event
  pool.deallocate(a, 3 * kMiB);
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].stream, kS2);
  EXPECT_EQ(pool.pending_blocks(), 1u);
  EXPECT_EQ(pool.stats().cached_bytes, 4 * kMiB) << "a block waiting on an event is cached";

  void* b = pool.allocate(3 * kMiB, kS1);
  EXPECT_NE(b, a) << "reused while kS2 may still read it";
  d.finish(kS2);
  void* c = pool.allocate(3 * kMiB, kS1);
  EXPECT_EQ(c, a);
  EXPECT_EQ(pool.pending_blocks(), 0u);
  EXPECT_EQ(d.unreleased_events(), 0);
  // The next use of the block starts with no recorded streams.
  pool.deallocate(c, 3 * kMiB);
  EXPECT_EQ(pool.pending_blocks(), 0u);
  EXPECT_EQ(d.events.size(), 1u);
  pool.deallocate(b, 3 * kMiB);
}

TEST(CachingPool, BlocksOfNoStreamRecordTheDefaultStream) {
  // The pinned host pool: blocks belong to no stream, so stream 0 is another stream.
  FakeDevice d;
  auto pool = make_pool(d, {.default_stream = kNoStream});
  void* a = pool.allocate(100);
  pool.record_stream(a, 0);
  pool.deallocate(a, 100);
  EXPECT_EQ(pool.pending_blocks(), 1u);
  EXPECT_NE(pool.allocate(100), a);
  d.finish(0);
  EXPECT_EQ(pool.allocate(100), a);
}

TEST(CachingPool, InUsePeakAndCachedCountWholeBlocks) {
  FakeDevice d;
  auto pool = make_pool(d);
  const std::vector<size_t> sizes = {100, 5000, 3 * kMiB, 700 * 1024, 9 * kMiB + 3};
  std::vector<void*> ptrs;
  size_t in_use = 0, peak = 0;
  for (size_t n : sizes) {
    ptrs.push_back(pool.allocate(n, kS1));
    in_use += CachingPool::round_size(n);
    peak = std::max(peak, in_use);
    EXPECT_EQ(pool.stats().in_use_bytes, in_use);
  }
  size_t cached = 0;
  for (size_t i = 0; i < sizes.size(); i += 2) {
    pool.deallocate(ptrs[i], sizes[i]);
    in_use -= CachingPool::round_size(sizes[i]);
    cached += CachingPool::round_size(sizes[i]);
  }
  auto s = pool.stats();
  EXPECT_EQ(s.in_use_bytes, in_use);
  EXPECT_EQ(s.cached_bytes, cached);
  EXPECT_EQ(s.peak_bytes, peak);
  EXPECT_EQ(s.in_use_bytes + s.cached_bytes, d.live_bytes) << "all the pool holds is in use or cached";
  EXPECT_EQ(s.allocations, sizes.size());
  EXPECT_EQ(s.system_allocations, sizes.size());
  // Reuse moves bytes from cached to in use; peak follows in use.
  void* again = pool.allocate(3 * kMiB, kS1);  // the freed 3 MiB request's 4 MiB block
  EXPECT_EQ(again, ptrs[2]);
  s = pool.stats();
  EXPECT_EQ(s.in_use_bytes, in_use + 4 * kMiB);
  EXPECT_EQ(s.cached_bytes, cached - 4 * kMiB);
  EXPECT_EQ(s.peak_bytes, std::max(peak, in_use + 4 * kMiB));
  EXPECT_EQ(s.system_allocations, sizes.size());
}

TEST(CachingPool, ReleaseCachedReturnsFreeBlocksAfterASynchronisation) {
  FakeDevice d;
  auto pool = make_pool(d);
  void* keep = pool.allocate(kMiB, kS1);
  void* a = pool.allocate(5 * kMiB, kS1);
  void* b = pool.allocate(64, kS2);
  pool.record_stream(b, kS1);
  pool.deallocate(a, 5 * kMiB);
  pool.deallocate(b, 64);  // pending on kS1's event
  EXPECT_EQ(pool.pending_blocks(), 1u);
  pool.release_cached();
  EXPECT_EQ(d.syncs, 1);
  EXPECT_EQ(d.system_frees, 2);
  EXPECT_EQ(pool.pending_blocks(), 0u);
  EXPECT_EQ(d.unreleased_events(), 0);
  auto s = pool.stats();
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(s.in_use_bytes, kMiB);
  EXPECT_EQ(d.live_bytes, kMiB) << "the block in use stays";
  pool.release_cached();
  EXPECT_EQ(d.syncs, 1) << "nothing cached: no synchronisation";
  pool.deallocate(keep, kMiB);
  EXPECT_NE(error_of([&] { pool.deallocate(a, 5 * kMiB); }).find("did not allocate"), std::string::npos)
      << "a released block is no longer the pool's";
}

TEST(CachingPool, OutOfMemoryReleasesTheCacheAndRetriesOnce) {
  FakeDevice d;
  d.capacity = 8 * kMiB;
  auto pool = make_pool(d);
  void* a = pool.allocate(6 * kMiB, kS1);
  pool.deallocate(a, 6 * kMiB);  // cached on kS1, useless to kS2
  void* b = pool.allocate(4 * kMiB, kS2);
  EXPECT_NE(b, nullptr);
  EXPECT_EQ(d.failed_allocs, 1);
  EXPECT_EQ(d.syncs, 1);
  EXPECT_EQ(d.system_frees, 1);
  auto s = pool.stats();
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(s.in_use_bytes, 4 * kMiB);
  EXPECT_EQ(s.system_allocations, 2u);
}

TEST(CachingPool, OutOfMemoryAfterTheRetryNamesBytesInUseCachedAndTheDevice) {
  FakeDevice d;
  d.capacity = 8 * kMiB;
  auto pool = make_pool(d);
  void* a = pool.allocate(6 * kMiB, kS1);
  void* small = pool.allocate(kMiB, kS1);
  pool.deallocate(small, kMiB);
  std::string e = error_of([&] { pool.allocate(5 * kMiB, kS1); });
  EXPECT_NE(e.find("out of memory"), std::string::npos) << e;
  EXPECT_NE(e.find(std::to_string(5 * kMiB) + " bytes"), std::string::npos) << e;
  EXPECT_NE(e.find(std::to_string(6 * kMiB) + " bytes (6.00 MiB) in use"), std::string::npos) << e;
  EXPECT_NE(e.find("releasing " + std::to_string(kMiB) + " bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("0 bytes cached"), std::string::npos) << e;
  EXPECT_NE(e.find("fake device 7"), std::string::npos) << e;
  EXPECT_EQ(d.failed_allocs, 2) << "one retry, not more";
  // The pool is whole after the failure.
  void* b = pool.allocate(kMiB, kS1);
  pool.deallocate(b, kMiB);
  pool.deallocate(a, 6 * kMiB);
  EXPECT_EQ(pool.stats().in_use_bytes, 0u);
  EXPECT_NE(error_of([&] { pool.allocate(SIZE_MAX - 5, kS1); }).find("no size class"), std::string::npos);
}

TEST(CachingPool, DoubleFreeForeignPointerAndWrongSizeAreErrors) {
  FakeDevice d;
  auto pool = make_pool(d);
  void* a = pool.allocate(256, kS1);
  int local = 0;
  EXPECT_NE(error_of([&] { pool.deallocate(&local, 4); }).find("did not allocate"), std::string::npos);
  EXPECT_NE(error_of([&] { pool.deallocate(static_cast<char*>(a) + 8, 248); }).find("did not allocate"),
            std::string::npos)
      << "an interior pointer is not a block";
  EXPECT_NE(error_of([&] { pool.deallocate(a, 512); }).find("allocated with 256 bytes"), std::string::npos);
  pool.deallocate(a, 256);
  std::string e = error_of([&] { pool.deallocate(a, 256); });
  EXPECT_NE(e.find("double free"), std::string::npos) << e;
  EXPECT_NE(e.find("test allocator on fake device 7"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { pool.record_stream(a, kS2); }).find("already freed"), std::string::npos);
  EXPECT_NE(error_of([&] { pool.record_stream(&local, kS2); }).find("did not allocate"), std::string::npos);
  pool.deallocate(nullptr, 0);  // as free(nullptr)
  EXPECT_EQ(pool.stats().cached_bytes, 512u);
}

TEST(CachingPool, ACapOnTheCacheReturnsBlocksFreedOverIt) {
  FakeDevice d;
  auto pool = make_pool(d, {.max_cached_bytes = kMiB});
  void* a = pool.allocate(kMiB, kS1);
  void* b = pool.allocate(kMiB, kS1);
  pool.deallocate(a, kMiB);
  EXPECT_EQ(d.system_frees, 0);
  pool.deallocate(b, kMiB);
  EXPECT_EQ(d.system_frees, 1);
  EXPECT_EQ(pool.stats().cached_bytes, kMiB);
  EXPECT_EQ(d.live_bytes, kMiB);
}

TEST(CachingPool, DestructionReturnsTheCacheAndLeavesBlocksInUse) {
  FakeDevice d;
  {
    auto pool = make_pool(d);
    pool.allocate(kMiB, kS1);
    void* b = pool.allocate(3 * kMiB, kS1);
    pool.record_stream(b, kS2);
    pool.deallocate(b, 3 * kMiB);
  }
  EXPECT_EQ(d.live_bytes, kMiB);
  EXPECT_EQ(d.unreleased_events(), 0);
}

TEST(CachingPool, ThreadsSharingThePoolKeepTheCountsExact) {
  FakeDevice d;
  auto pool = make_pool(d);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, t] {
      const StreamId s = kS1 + static_cast<StreamId>(t % 2);
      std::vector<std::pair<void*, size_t>> held;
      for (int i = 0; i < 2000; ++i) {
        size_t n = 512 * static_cast<size_t>(1 + (i * 7 + t) % 9);
        held.emplace_back(pool.allocate(n, s), n);
        if (held.size() > 5) {
          pool.deallocate(held.front().first, held.front().second);
          held.erase(held.begin());
        }
      }
      for (auto& [p, n] : held) pool.deallocate(p, n);
    });
  }
  for (auto& th : threads) th.join();
  auto s = pool.stats();
  EXPECT_EQ(s.in_use_bytes, 0u);
  EXPECT_EQ(s.cached_bytes, d.live_bytes);
  EXPECT_EQ(s.allocations, 8000u);
  // A block is made only when every block of its class on its stream is in use:
  // at most 2 streams x 9 classes x (2 threads x 6 blocks held).
  EXPECT_LE(s.system_allocations, 2u * 9u * 12u);
  EXPECT_GE(s.peak_bytes, 4u * 512u);
}

}  // namespace
}  // namespace strata
