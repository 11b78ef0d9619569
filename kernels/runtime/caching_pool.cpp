// The caching pool's bookkeeping (policy in caching_pool.h). Byte counts:
// in_use_bytes and cached_bytes count whole (rounded) blocks, so their sum is
// what the pool holds from the system.
#include "kernels/runtime/caching_pool.h"

#include <algorithm>
#include <cstdio>

#include "base/destructor_error.h"
#include "base/error.h"

namespace strata {
namespace {

std::string bytes_text(size_t n) {
  char buf[64];
  if (n >= (size_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%zu bytes (%.2f GiB)", n, static_cast<double>(n) / (1 << 30));
  else if (n >= (size_t{1} << 20))
    std::snprintf(buf, sizeof buf, "%zu bytes (%.2f MiB)", n, static_cast<double>(n) / (1 << 20));
  else
    std::snprintf(buf, sizeof buf, "%zu bytes", n);
  return buf;
}

std::string pointer_text(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

}  // namespace

size_t CachingPool::round_size(size_t bytes) {
  if (bytes <= kSmallLimit) return std::max<size_t>(1, (bytes + kSmallStep - 1) / kSmallStep) * kSmallStep;
  return (bytes + kLargeStep - 1) / kLargeStep * kLargeStep;
}

CachingPool::CachingPool(std::unique_ptr<PoolBackend> backend, PoolOptions options)
    : backend_(std::move(backend)), opts_(options) {
  if (!backend_) throw Error(std::string(opts_.name) + " allocator: no backend");
}

CachingPool::~CachingPool() {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    release_cached_locked();
  } catch (...) {
    // A destructor must not throw; the process is ending or the device is gone.
    report_destructor_error("releasing an allocator's cached blocks");
  }
}

std::string CachingPool::where() const {
  return std::string(opts_.name) + " allocator on " + backend_->where();
}

void* CachingPool::allocate(size_t bytes, StreamId stream) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.allocations++;
  if (bytes > SIZE_MAX - kLargeStep)
    throw Error(where() + ": cannot allocate " + bytes_text(bytes) + ": no size class is that large");
  const size_t rounded = round_size(bytes);
  collect_pending();
  Block* b = take_free(stream, rounded);
  if (!b) {
    void* p = backend_->system_allocate(rounded);
    if (!p) {
      const size_t released = stats_.cached_bytes;
      release_cached_locked();
      p = backend_->system_allocate(rounded);
      if (!p) throw_out_of_memory(bytes, rounded, released);
    }
    stats_.system_allocations++;
    auto owned = std::make_unique<Block>();
    b = owned.get();
    b->ptr = p;
    b->size = rounded;
    b->stream = stream;
    blocks_.emplace(p, std::move(owned));
  }
  b->in_use = true;
  b->requested = bytes;
  stats_.in_use_bytes += b->size;
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.in_use_bytes);
  return b->ptr;
}

CachingPool::Block* CachingPool::take_free(StreamId stream, size_t rounded) {
  auto list = free_.find(stream);
  if (list == free_.end()) return nullptr;
  auto it = list->second.lower_bound(rounded);
  if (it == list->second.end() || it->first > rounded + rounded / 4) return nullptr;
  Block* b = it->second;
  list->second.erase(it);
  stats_.cached_bytes -= b->size;
  return b;
}

CachingPool::Block& CachingPool::find(void* p, const char* what) {
  auto it = blocks_.find(p);
  if (it == blocks_.end())
    throw Error(where() + ": " + what + " of " + pointer_text(p) +
                ", which this allocator did not allocate (a foreign pointer, or one freed after "
                "release_cached)");
  return *it->second;
}

void CachingPool::deallocate(void* p, size_t bytes) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  Block& b = find(p, "deallocate");
  if (!b.in_use)
    throw Error(where() + ": double free of " + pointer_text(p) + " (" + bytes_text(b.size) + ")");
  if (bytes != b.requested)
    throw Error(where() + ": deallocate of " + pointer_text(p) + " with " + bytes_text(bytes) +
                ", but it was allocated with " + bytes_text(b.requested));
  b.in_use = false;
  stats_.in_use_bytes -= b.size;
  stats_.cached_bytes += b.size;
  for (StreamId s : b.used_on) b.pending.push_back(backend_->record_event(s));
  b.used_on.clear();
  if (b.pending.empty())
    make_free(&b);
  else
    pending_.push_back(&b);
}

void CachingPool::record_stream(void* p, StreamId stream) {
  std::lock_guard<std::mutex> lock(mu_);
  Block& b = find(p, "record_stream");
  if (!b.in_use) throw Error(where() + ": record_stream of " + pointer_text(p) + ", which is already freed");
  if (stream == b.stream || std::find(b.used_on.begin(), b.used_on.end(), stream) != b.used_on.end()) return;
  b.used_on.push_back(stream);
}

void CachingPool::make_free(Block* b) {
  if (stats_.cached_bytes > opts_.max_cached_bytes) {
    // Over the cap: this block's uses have ended (no pending event), so it can go.
    stats_.cached_bytes -= b->size;
    void* p = b->ptr;
    blocks_.erase(p);  // destroys *b
    backend_->system_free(p);
    return;
  }
  free_[b->stream].emplace(b->size, b);
}

void CachingPool::collect_pending() {
  std::erase_if(pending_, [&](Block* b) {
    std::erase_if(b->pending, [&](PoolEvent e) {
      if (!backend_->event_done(e)) return false;
      backend_->release_event(e);
      return true;
    });
    if (!b->pending.empty()) return false;
    make_free(b);
    return true;
  });
}

void CachingPool::release_cached() {
  std::lock_guard<std::mutex> lock(mu_);
  release_cached_locked();
}

void CachingPool::release_cached_locked() {
  if (free_.empty() && pending_.empty()) return;
  // Work queued before a block was freed may still read it; system_free of a block
  // in use by the device is undefined, so wait for all of it once.
  backend_->synchronize();
  for (Block* b : pending_) {
    for (PoolEvent e : b->pending) backend_->release_event(e);
    b->pending.clear();
    free_[b->stream].emplace(b->size, b);
  }
  pending_.clear();
  for (auto& [stream, list] : free_) {
    for (auto& [size, b] : list) {
      void* p = b->ptr;
      stats_.cached_bytes -= b->size;
      blocks_.erase(p);
      backend_->system_free(p);
    }
  }
  free_.clear();
}

void CachingPool::throw_out_of_memory(size_t bytes, size_t rounded, size_t released) {
  throw Error(where() + ": out of memory allocating " + bytes_text(bytes) + " (size class " +
              bytes_text(rounded) + ") after releasing " + bytes_text(released) +
              " of cached blocks and retrying; " + bytes_text(stats_.in_use_bytes) + " in use, " +
              bytes_text(stats_.cached_bytes) + " cached, peak " + bytes_text(stats_.peak_bytes));
}

AllocatorStats CachingPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

size_t CachingPool::pending_blocks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size();
}

}  // namespace strata
