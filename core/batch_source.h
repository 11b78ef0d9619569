// BatchSource: what the trainer pulls host batches from. The staging loader in
// data/ implements it; tests and synthetic runs use in-memory sources.
// Header-only so that data/ implements it without linking core (a field's
// DType comes from kernels/runtime/dtype.h, whose inline part is all data/ uses).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory_resource>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "kernels/runtime/dtype.h"

namespace strata {

// Where batch bytes come from. The loader's ring slots and the consumer's
// HostBatch take their memory from the same resource, so handing a batch over
// stays a swap of buffers; core's batch_memory_for(Device) gives page-locked
// memory when the model is on a GPU (its copies then run asynchronously) and
// plain host memory otherwise. data/ sees only this interface.
using HostBufferResource = std::pmr::memory_resource;

// A batch field's bytes: a buffer that remembers its resource (so a swap of two
// buffers from different resources stays valid, unlike std::pmr::vector's) and
// that does not zero-fill on resize: a batch is overwritten whole.
class HostBytes {
 public:
  static constexpr size_t kAlignment = 64;  // AVX-512 loads, and DMA-friendly

  HostBytes() = default;
  explicit HostBytes(HostBufferResource* resource) : resource_(resource ? resource : plain()) {}
  // A copy is plain host memory: page-locked memory is for the loader's buffers.
  HostBytes(const HostBytes& o) { assign(o.data(), o.size()); }
  HostBytes(HostBytes&& o) noexcept { swap(o); }
  HostBytes& operator=(const HostBytes& o) {
    if (this != &o) assign(o.data(), o.size());
    return *this;
  }
  HostBytes& operator=(HostBytes&& o) noexcept {
    HostBytes(std::move(o)).swap(*this);
    return *this;
  }
  ~HostBytes() { release(); }

  void swap(HostBytes& o) noexcept {
    std::swap(resource_, o.resource_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
  }
  // Keeps the first min(size, n) bytes; bytes past them are unspecified.
  void resize(size_t n) {
    if (n > capacity_) {
      auto* p = static_cast<std::byte*>(resource_->allocate(n, kAlignment));
      if (size_) std::memcpy(p, data_, size_);
      release();
      data_ = p;
      capacity_ = n;
    }
    size_ = n;
  }
  void assign(const std::byte* src, size_t n) {
    resize(n);
    if (n) std::memcpy(data_, src, n);
  }
  void clear() { size_ = 0; }

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  std::byte* begin() { return data_; }
  std::byte* end() { return data_ + size_; }
  const std::byte* begin() const { return data_; }
  const std::byte* end() const { return data_ + size_; }
  HostBufferResource* resource() const { return resource_; }
  friend bool operator==(const HostBytes& a, const HostBytes& b) {
    return a.size_ == b.size_ && (a.size_ == 0 || std::memcmp(a.data_, b.data_, a.size_) == 0);
  }

 private:
  static HostBufferResource* plain() { return std::pmr::new_delete_resource(); }
  void release() {
    if (data_) resource_->deallocate(data_, capacity_, kAlignment);
    data_ = nullptr;
    size_ = capacity_ = 0;
  }
  HostBufferResource* resource_ = plain();
  std::byte* data_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
};

inline void swap(HostBytes& a, HostBytes& b) noexcept { a.swap(b); }

// One named field of a batch, contiguous row-major on the host. shape[0] is the batch.
struct HostArray {
  std::string name;
  DType dtype =
      DType::u8;  // the loader's: a manifest field's (u8, u16, i32, i64, f16, bf16, f32), f32 normalised
  std::vector<int64_t> shape;
  HostBytes bytes;

  int64_t numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(bytes.data());
  }
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
};

struct HostBatch {
  std::vector<HostArray> fields;
  int64_t size = 0;  // samples in this batch
  // The first `valid` samples are real; the rest repeat earlier ones to pad the
  // last global batch (evaluation counts only the valid ones). -1 = all valid.
  int64_t valid = -1;
  int64_t valid_count() const { return valid < 0 ? size : valid; }

  const HostArray& field(const std::string& name) const {
    for (auto& f : fields)
      if (f.name == name) return f;
    throw Error("batch has no field '" + name + "'");
  }
  HostArray& field(const std::string& name) {
    return const_cast<HostArray&>(static_cast<const HostBatch*>(this)->field(name));
  }
};

// Per-epoch figures a source reports (the loader fills the remote/cache ones).
struct DataMetrics {
  double wait_seconds = 0;  // time the consumer spent blocked in next()
  int64_t batches = 0;
  int64_t samples = 0;
  int64_t sample_bytes = 0;
  int64_t shards_staged = 0;
  int64_t shard_uses = 0;  // shard uses in the epoch's staging plan: shards_staged's goal (0 = not known)
  int64_t cache_hits = 0;
  int64_t cache_misses = 0;
  int64_t remote_requests = 0;
  int64_t remote_bytes = 0;
  int64_t retries = 0;
  int64_t evictions = 0;
  int64_t bad_images = 0;  // images that could not be decoded, replaced (data.skip_bad_images)
};

struct IoTotals {
  int64_t remote_requests = 0;
  int64_t remote_bytes = 0;
};

// The position of a source: a few integers that restore it exactly.
using SourcePosition = std::map<std::string, int64_t>;

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Begin epoch `epoch` (0-based) from its first batch.
  virtual void start_epoch(int64_t epoch) = 0;
  // Fill `out` with the next batch of the current epoch; false at the end of the epoch.
  virtual bool next(HostBatch& out) = 0;
  // Batches this rank yields per epoch.
  virtual int64_t batches_per_epoch() const = 0;
  // Position after the last batch returned by next(); restore() continues from there.
  virtual SourcePosition position() const = 0;
  virtual void restore(const SourcePosition& pos) = 0;
  // Figures since the start of the current epoch.
  virtual DataMetrics metrics() const = 0;
  // Every request this source made of the object store, and the bytes they
  // brought, since it was created: the manifest's and evaluation's included,
  // which per-epoch metrics() leave out. What summary.json reports.
  virtual IoTotals io_totals() const { return {}; }
};

}  // namespace strata
