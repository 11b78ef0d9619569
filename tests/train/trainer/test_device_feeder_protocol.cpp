// DeviceFeeder's copy/fence protocol against a fake device stream: a copy
// engine whose copies land only when the test says so (run_compute(): the
// device reaches the work queued so far; wait(): the host blocks on one fence).
// Checked: a HostBatch goes back to the source only after the fence of its copy
// has passed; at most two batches are in flight; the model reads each batch
// after its copy, in order; an error of the source's next() reaches the caller
// at the batch it failed on, with the position of the last batch handed out;
// and on the CPU the feeder hands the source's batch through as it is, kept
// from the source while a tensor wraps its bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "base/error.h"
#include "train/trainer/batch_tensors.h"
#include "train/trainer/device_feeder.h"

namespace strata {
namespace {

struct FakeFence final : StreamFence {
  uint64_t copies = 0;  // passed once the copies up to this one have landed
};

class FakeDeviceStream final : public CopyEngine {
 public:
  Device device() const override { return Device::cpu; }  // "device" memory the test can read
  bool pass_through() const override { return false; }
  std::unique_ptr<StreamFence> make_fence() override { return std::make_unique<FakeFence>(); }
  void copy_to_device(const void* src, void* dst, size_t bytes) override {
    pending_.push_back({static_cast<const std::byte*>(src), static_cast<std::byte*>(dst), bytes, ++queued_});
  }
  void record_after_copies(StreamFence& f) override { fence(f).copies = queued_; }
  void record_after_compute(StreamFence&) override { ++compute_fences_; }
  void copies_wait(StreamFence&) override { ++copy_waits_; }
  void compute_waits(StreamFence& f) override { compute_after_ = std::max(compute_after_, fence(f).copies); }
  bool passed(StreamFence& f) override { return landed_ >= fence(f).copies; }
  void wait(StreamFence& f) override {
    ++host_waits_;
    land_through(fence(f).copies);
  }

  // The device runs the compute queued so far: it waited for the copies
  // compute_waits() named, so those land first.
  void run_compute() { land_through(compute_after_); }
  // Whether a copy that has not landed reads [p, p + n).
  bool reading(const std::byte* p, size_t n) const {
    for (const Copy& c : pending_)
      if (c.src < p + n && p < c.src + c.bytes) return true;
    return false;
  }
  size_t in_flight() const { return pending_.size(); }
  int host_waits() const { return host_waits_; }
  int compute_fences() const { return compute_fences_; }
  int copy_waits() const { return copy_waits_; }

 private:
  struct Copy {
    const std::byte* src;
    std::byte* dst;
    size_t bytes;
    uint64_t id;
  };
  static FakeFence& fence(StreamFence& f) { return dynamic_cast<FakeFence&>(f); }
  void land_through(uint64_t id) {
    while (!pending_.empty() && pending_.front().id <= id) {
      const Copy& c = pending_.front();
      std::memcpy(c.dst, c.src, c.bytes);
      landed_ = c.id;
      pending_.erase(pending_.begin());
    }
  }
  std::vector<Copy> pending_;
  uint64_t queued_ = 0, landed_ = 0, compute_after_ = 0;
  int host_waits_ = 0, compute_fences_ = 0, copy_waits_ = 0;
};

// Batch k: "x" u8 [4, 3] all k, "y" i64 [4] all 100 + k; throws at batch `fail_at`.
// It checks what the protocol promises it: a buffer it gets back is no longer read by a copy.
class NumberedSource final : public BatchSource {
 public:
  NumberedSource(FakeDeviceStream* stream, int64_t batches, int64_t fail_at = -1)
      : stream_(stream), batches_(batches), fail_at_(fail_at) {}
  void start_epoch(int64_t) override { next_ = 0; }
  bool next(HostBatch& out) override {
    holders_.insert(&out);
    for (const HostArray& f : out.fields)
      if (stream_ && stream_->reading(f.bytes.data(), f.bytes.size()))
        ADD_FAILURE() << "batch buffer of field " << f.name << " handed back while its copy still reads it";
    if (next_ == fail_at_) throw IoError("shard-3.h5: the store failed for good");
    if (next_ >= batches_) return false;
    out.fields.resize(2);
    out.fields[0].name = "x";
    out.fields[0].dtype = DType::u8;
    out.fields[0].shape = {4, 3};
    out.fields[0].bytes.resize(12);
    std::memset(out.fields[0].bytes.data(), static_cast<int>(next_), 12);
    out.fields[1].name = "y";
    out.fields[1].dtype = DType::i64;
    out.fields[1].shape = {4};
    out.fields[1].bytes.resize(32);
    for (int i = 0; i < 4; ++i) out.fields[1].as<int64_t>()[i] = 100 + next_;
    out.size = 4;
    ++next_;
    return true;
  }
  int64_t batches_per_epoch() const override { return batches_; }
  SourcePosition position() const override { return {{"batch", next_}}; }
  void restore(const SourcePosition& p) override { next_ = p.at("batch"); }
  DataMetrics metrics() const override { return {}; }
  int64_t given() const { return next_; }
  size_t holders() const { return holders_.size(); }

 private:
  FakeDeviceStream* stream_;
  int64_t batches_, fail_at_, next_ = 0;
  std::set<const HostBatch*> holders_;
};

// What the model sees of a fed batch: the value of every x byte (-1: mixed) and of every label.
std::pair<int, int64_t> read_on_device(const FedBatch& b) {
  const Tensor& x = (*b.device_fields)[0];
  const Tensor& y = (*b.device_fields)[1];
  const auto* px = static_cast<const uint8_t*>(x.device_data());
  const auto* py = static_cast<const int64_t*>(y.device_data());
  int vx = px[0];
  for (int i = 1; i < 12; ++i)
    if (px[i] != px[0]) vx = -1;
  int64_t vy = py[0];
  for (int i = 1; i < 4; ++i)
    if (py[i] != py[0]) vy = -1;
  return {vx, vy};
}

TEST(DeviceFeeder, TheModelReadsEveryBatchAfterItsCopyAndInOrder) {
  FakeDeviceStream stream;
  NumberedSource src(&stream, 7);
  DeviceFeeder feeder(src, stream);
  for (int64_t k = 0; k < 7; ++k) {
    auto b = feeder.next();
    ASSERT_TRUE(b) << "batch " << k;
    ASSERT_NE(b->device_fields, nullptr);
    EXPECT_EQ(b->host->fields[0].as<uint8_t>()[0], k);
    // Batch k+1 is copying while batch k is handed out: two in flight, no more.
    EXPECT_EQ(src.given(), std::min<int64_t>(k + 2, 7));
    EXPECT_LE(src.holders(), 2u);
    EXPECT_EQ(feeder.position().at("batch"), k + 1) << "the position after the batch handed out";
    stream.run_compute();  // the device computes on batch k
    EXPECT_EQ(read_on_device(*b), std::make_pair(static_cast<int>(k), 100 + k)) << "batch " << k;
  }
  EXPECT_FALSE(feeder.next());
  EXPECT_FALSE(feeder.next());
  EXPECT_EQ(feeder.position().at("batch"), 7);
  // Each copy waits for the compute that read its slot before; the host waited
  // on no fence, since the device kept up.
  EXPECT_EQ(stream.compute_fences(), 7);
  EXPECT_EQ(stream.copy_waits(), 7);
  EXPECT_EQ(stream.host_waits(), 0);
}

TEST(DeviceFeeder, ABufferGoesBackOnlyAfterItsCopyLandedEvenWhenTheDeviceLags) {
  FakeDeviceStream stream;
  NumberedSource src(&stream, 6);
  DeviceFeeder feeder(src, stream);
  // The device never runs on its own: before a slot goes back to the source the
  // feeder must wait for that slot's copy (NumberedSource fails the test otherwise).
  for (int64_t k = 0; k < 6; ++k) {
    auto b = feeder.next();
    ASSERT_TRUE(b);
    EXPECT_LE(stream.in_flight(), size_t{4}) << "two batches of two fields";
    EXPECT_LE(src.holders(), 2u);
  }
  EXPECT_FALSE(feeder.next());
  EXPECT_GE(stream.host_waits(), 4) << "slots reused while their copies were pending";
}

TEST(DeviceFeeder, AComputeStartsOnlyAfterTheCopyOfItsBatch) {
  FakeDeviceStream stream;
  NumberedSource src(&stream, 3);
  DeviceFeeder feeder(src, stream);
  auto b = feeder.next();
  ASSERT_TRUE(b);
  // Before the device runs, batch 0 has not landed ("device" memory is uninitialised);
  // running the compute lands exactly the copies it waits on: batch 0's, not batch 1's.
  stream.run_compute();
  EXPECT_EQ(read_on_device(*b), std::make_pair(0, int64_t{100}));
  EXPECT_EQ(stream.in_flight(), size_t{2}) << "batch 1's copies still run";
}

TEST(DeviceFeeder, AnErrorOfTheSourceReachesTheCallerAtTheBatchItFailedOn) {
  FakeDeviceStream stream;
  NumberedSource src(&stream, 10, 3);
  DeviceFeeder feeder(src, stream);
  for (int64_t k = 0; k < 3; ++k) {
    auto b = feeder.next();
    ASSERT_TRUE(b) << "batch " << k << " was read before the failure";
    stream.run_compute();
    EXPECT_EQ(read_on_device(*b).first, k);
  }
  // The source failed while batch 3 was prefetched (during the third next()):
  // the position is still after batch 2, what a checkpoint saved now records.
  EXPECT_EQ(feeder.position().at("batch"), 3);
  try {
    feeder.next();
    FAIL() << "the source's error was swallowed";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("shard-3.h5"), std::string::npos) << e.what();
  }
}

TEST(DeviceFeeder, AnErrorAtTheFirstBatchPropagatesAtOnce) {
  FakeDeviceStream stream;
  NumberedSource src(&stream, 10, 0);
  DeviceFeeder feeder(src, stream);
  EXPECT_THROW(feeder.next(), IoError);
}

TEST(DeviceFeeder, OnTheCpuTheSourcesBatchIsHandedThroughAsItIs) {
  auto engine = make_cpu_copy_engine();
  NumberedSource src(nullptr, 3);
  DeviceFeeder feeder(src, *engine);
  for (int64_t k = 0; k < 3; ++k) {
    auto b = feeder.next();
    ASSERT_TRUE(b);
    EXPECT_EQ(b->device_fields, nullptr) << "no device copy: the task reads the host bytes";
    EXPECT_EQ(b->host->fields[0].as<uint8_t>()[0], k);
    EXPECT_EQ(src.given(), k + 1) << "no read-ahead on the CPU";
    EXPECT_EQ(feeder.position(), src.position());
  }
  EXPECT_FALSE(feeder.next());
  EXPECT_EQ(src.holders(), 1u) << "one HostBatch, as the trainer had before the feeder";
}

// On the CPU a task's tensors wrap the batch's bytes instead of copying them
// (batch_tensors.h host_field_tensor). One kept past the next batch (autograd
// keeps the input until backward; a caller may keep it longer) keeps its
// batch: the source fills another HostBatch and never overwrites or frees the
// wrapped bytes. Released, the feeder refills one HostBatch again.
TEST(DeviceFeeder, OnTheCpuATensorThatWrapsABatchKeepsItsBytes) {
  auto engine = make_cpu_copy_engine();
  NumberedSource src(nullptr, 5);
  DeviceFeeder feeder(src, *engine);
  Tensor kept;
  {
    auto b = feeder.next();
    ASSERT_TRUE(b);
    ASSERT_NE(b->owner, nullptr);
    const HostArray& y = b->host->field("y");
    kept = host_field_tensor(*b, y, {4}, DType::i64);
    EXPECT_EQ(kept.raw_data(), y.bytes.data()) << "wrapped, not copied";
  }
  for (int64_t k = 1; k < 5; ++k) {
    auto b = feeder.next();
    ASSERT_TRUE(b);
    EXPECT_NE(b->host->field("y").bytes.data(), kept.raw_data()) << "batch " << k << " in the kept bytes";
    EXPECT_EQ(b->host->field("y").as<int64_t>()[0], 100 + k);
    EXPECT_EQ(kept.to_i64_vector(), std::vector<int64_t>(4, 100)) << "batch 0's labels, after batch " << k;
  }
  kept = Tensor();
  EXPECT_FALSE(feeder.next());
  EXPECT_EQ(src.holders(), 2u) << "one HostBatch stayed with the tensor, one more for batches 1 to 4";
  // A batch without an owner (a HostBatch the caller keeps) is copied.
  HostBatch plain;
  src.start_epoch(0);
  ASSERT_TRUE(src.next(plain));
  const Tensor copied = host_field_tensor(plain, plain.field("y"), {4}, DType::i64);
  EXPECT_NE(copied.raw_data(), plain.field("y").bytes.data());
  EXPECT_EQ(copied.to_i64_vector(), std::vector<int64_t>(4, 100));
}

}  // namespace
}  // namespace strata
