// The batches' memory: the loaders' ring slots and the consumer's HostBatch take
// their bytes from LoaderOptions::batch_memory / TokenLoaderOptions::batch_memory
// (what core's batch_memory_for(Device::cuda) makes page-locked), the hand-over
// stays a swap (no allocation in steady state), and the batches are the same as
// from plain memory. A counting std::pmr resource stands for the pinned one.
#include <gtest/gtest.h>

#include <mutex>
#include <set>

#include "data/loader/loader.h"
#include "loader_test_util.h"
#include "token_loader_test_util.h"

using namespace strata::data;
using namespace strata::data::testing;

namespace {

class CountingResource final : public strata::HostBufferResource {
 public:
  size_t allocations() const {
    std::lock_guard<std::mutex> lk(mu_);
    return allocations_;
  }
  bool owns(const void* p) const {
    std::lock_guard<std::mutex> lk(mu_);
    return live_.count(p) > 0;
  }
  size_t live() const {
    std::lock_guard<std::mutex> lk(mu_);
    return live_.size();
  }

 private:
  void* do_allocate(size_t bytes, size_t alignment) override {
    void* p = std::pmr::new_delete_resource()->allocate(bytes, alignment);
    std::lock_guard<std::mutex> lk(mu_);
    ++allocations_;
    live_.insert(p);
    return p;
  }
  void do_deallocate(void* p, size_t bytes, size_t alignment) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      EXPECT_EQ(live_.erase(p), 1u) << "freed a buffer this resource did not give";
    }
    std::pmr::new_delete_resource()->deallocate(p, bytes, alignment);
  }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }

  mutable std::mutex mu_;
  size_t allocations_ = 0;
  std::set<const void*> live_;
};

LoaderOptions image_options(const fs::path& root) {
  LoaderOptions o;
  o.url = (root / "ds").string();
  o.cache_dir = root / "cache";
  o.cache_bytes = 64 << 20;
  o.seed = 3;
  o.batch_size = 8;
  o.decode_threads = 2;
  o.ring_batches = 3;
  return o;
}

std::vector<strata::HostBytes> drain(strata::BatchSource& l, CountingResource* memory, size_t* steady) {
  std::vector<strata::HostBytes> out;
  strata::HostBatch b;
  int64_t k = 0;
  while (l.next(b)) {
    for (const auto& f : b.fields) {
      if (memory) {
        EXPECT_EQ(f.bytes.resource(), memory) << "field " << f.name << " of batch " << k;
        EXPECT_TRUE(memory->owns(f.bytes.data())) << "field " << f.name << " of batch " << k;
      }
      out.push_back(f.bytes);
    }
    if (memory && k == 1) *steady = memory->allocations();  // the consumer's buffers are the resource's now
    ++k;
  }
  return out;
}

}  // namespace

TEST(BatchMemory, RingSlotsAndTheConsumersBatchComeFromTheLoadersResource) {
  auto root = scratch_dir("batch_memory_image");
  make_dataset(root / "ds", 3, 30);
  CountingResource memory;
  std::vector<strata::HostBytes> plain, pinned;
  size_t steady = 0;
  {
    Loader l(image_options(root));
    l.start_epoch(0);
    plain = drain(l, nullptr, nullptr);
  }
  {
    LoaderOptions o = image_options(root);
    o.batch_memory = &memory;
    Loader l(o);
    l.start_epoch(0);
    pinned = drain(l, &memory, &steady);
    EXPECT_EQ(memory.allocations(), steady)
        << "after the first batches, handing a batch over allocates nothing";
    // ring slots x fields, plus the consumer's fields
    EXPECT_EQ(memory.live(), size_t{3 * 2});
  }
  EXPECT_EQ(memory.live(), 0u) << "every buffer goes back to the resource";
  ASSERT_EQ(plain.size(), pinned.size());
  EXPECT_EQ(plain.size(), size_t{2 * (90 / 8)});
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_TRUE(plain[i] == pinned[i]) << "buffer " << i;
}

TEST(BatchMemory, TheTokenLoaderFillsTheConsumersBatchInItsResource) {
  auto root = scratch_dir("batch_memory_tokens");
  CountingResource memory;
  TokenLoaderOptions o = token_options(counting_dir().string(), root / "cache", 16, 4);
  std::vector<strata::HostBytes> plain, pinned;
  size_t steady = 0;
  {
    TokenLoader l(o);
    l.start_epoch(0);
    plain = drain(l, nullptr, nullptr);
  }
  o.batch_memory = &memory;
  {
    TokenLoader l(o);
    l.start_epoch(0);
    pinned = drain(l, &memory, &steady);
    EXPECT_EQ(memory.allocations(), steady);
  }
  ASSERT_EQ(plain.size(), pinned.size());
  ASSERT_FALSE(plain.empty());
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_TRUE(plain[i] == pinned[i]) << "buffer " << i;
}

TEST(BatchMemory, HostBytesSwapsAcrossResourcesAndDoesNotZeroFill) {
  CountingResource a;
  strata::HostBytes x(&a), y;
  x.resize(100);
  std::memset(x.data(), 7, 100);
  const std::byte* p = x.data();
  x.resize(50);  // shrinking keeps the buffer
  x.resize(100);
  EXPECT_EQ(x.data(), p);
  EXPECT_EQ(x.capacity(), 100u);
  x.swap(y);  // each buffer keeps the resource it came from
  EXPECT_EQ(y.resource(), &a);
  EXPECT_EQ(y.data(), p);
  EXPECT_EQ(x.resource(), std::pmr::new_delete_resource());
  EXPECT_TRUE(x.empty());
  strata::HostBytes copy = y;  // a copy is plain memory
  EXPECT_EQ(copy.resource(), std::pmr::new_delete_resource());
  EXPECT_TRUE(copy == y);
  EXPECT_EQ(a.allocations(), 1u);
}
