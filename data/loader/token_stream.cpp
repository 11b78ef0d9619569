// TokenStream (see token_stream.h). Downloads run in parallel threads; the maps
// are made afterwards in the calling thread, so HDF5 (asked where each dataset
// starts) is never entered concurrently from here.
#include "data/loader/token_stream.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "base/error.h"

namespace strata::data {

TokenStream::TokenStream(ShardCache& cache, int staging_threads, bool pin)
    : cache_(cache), threads_(std::max(staging_threads, 1)), pin_(pin) {
  const Manifest& m = cache_.manifest();
  u16_ = m.schema.at(0).dtype == "u16";
  starts_.push_back(0);
  for (const auto& s : m.shards) starts_.push_back(starts_.back() + s.samples);
  maps_.resize(m.shards.size());
  pins_.resize(m.shards.size());
}

int64_t TokenStream::shard_tokens(int32_t shard) const {
  const auto i = static_cast<size_t>(shard);
  return starts_.at(i + 1) - starts_[i];
}

void TokenStream::adopt(int32_t shard, ShardCache::Pin pin) {
  if (maps_.at(static_cast<size_t>(shard))) return;  // the pin is dropped: the map holds one
  map(shard, pin);
}

void TokenStream::release_except(const std::vector<int32_t>& keep) {
  for (size_t s = 0; s < maps_.size(); ++s) {
    if (!maps_[s] || std::find(keep.begin(), keep.end(), static_cast<int32_t>(s)) != keep.end()) continue;
    maps_[s].reset();  // unmapped first: the file may go once the pin does
    pins_[s] = ShardCache::Pin();
  }
}

int32_t TokenStream::shard_of(int64_t t) const {
  if (t < 0 || t >= tokens())
    throw Error("token stream: token " + std::to_string(t) + " is outside [0, " + std::to_string(tokens()) +
                ")");
  // The last shard starting at or before t: empty shards (equal starts) are passed over.
  return static_cast<int32_t>(std::upper_bound(starts_.begin(), starts_.end(), t) - starts_.begin() - 1);
}

void TokenStream::missing(int64_t first, int64_t n, std::vector<int32_t>& out) const {
  if (n <= 0) return;
  const int32_t last = shard_of(first + n - 1);
  for (int32_t s = shard_of(first); s <= last; ++s) {
    const auto i = static_cast<size_t>(s);
    if (!maps_[i] && starts_[i + 1] > starts_[i] && std::find(out.begin(), out.end(), s) == out.end())
      out.push_back(s);
  }
}

void TokenStream::stage(const std::vector<int32_t>& shards) {
  if (shards.empty()) return;
  const auto& infos = cache_.manifest().shards;
  std::vector<ShardCache::Pin> pins(shards.size());
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  auto work = [&] {
    for (size_t i; (i = next++) < shards.size();) {
      try {
        pins[i] = cache_.acquire(infos.at(static_cast<size_t>(shards[i])));
      } catch (...) {
        std::lock_guard<std::mutex> lk(error_mu);
        if (!error) error = std::current_exception();
        next = shards.size();  // the others stop after their current download
      }
    }
  };
  const size_t n = std::min(shards.size(), static_cast<size_t>(threads_));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  // Pinned until mapped; the mapping then keeps the file readable by itself.
  for (size_t i = 0; i < shards.size(); ++i) map(shards[i], pins[i]);
}

void TokenStream::map(int32_t shard, ShardCache::Pin& pin) {
  const ShardInfo& info = cache_.manifest().shards.at(static_cast<size_t>(shard));
  std::shared_ptr<const MappedShard> m;
  try {
    // Checks the token count and (once per process) the checksum against the manifest.
    m = MappedShard::open(pin.path().string(), cache_.manifest().schema, /*populate=*/false,
                          ShardExpectation::of(info, cache_.manifest()));
  } catch (const std::exception& e) {
    throw IoError("token stream: reading shard " + info.name + " from the cache failed: " + e.what());
  }
  maps_[static_cast<size_t>(shard)] = std::move(m);
  if (pin_) pins_[static_cast<size_t>(shard)] = std::move(pin);
  ++staged_;
}

void TokenStream::read(int64_t first, int64_t n, int64_t* out) const {
  if (n <= 0) return;
  if (first < 0 || first + n > tokens())
    throw Error("token stream: tokens [" + std::to_string(first) + ", " + std::to_string(first + n) +
                ") are outside [0, " + std::to_string(tokens()) + ")");
  for (auto s = static_cast<size_t>(shard_of(first)); n > 0; ++s) {
    const int64_t take = std::min(n, starts_[s + 1] - first);
    if (take <= 0) continue;  // an empty shard
    const MappedShard* m = maps_[s].get();
    if (!m)
      throw Error("token stream: shard " + cache_.manifest().shards[s].name + " is read before it is staged");
    // Tokens are little-endian in the file (MappedShard checks), maybe unaligned: memcpy each.
    const uint8_t* p = m->sample(0, first - starts_[s]);
    if (u16_) {
      for (int64_t i = 0; i < take; ++i) {
        uint16_t v;
        std::memcpy(&v, p + 2 * i, 2);
        out[i] = v;
      }
    } else {
      for (int64_t i = 0; i < take; ++i) {
        int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        out[i] = v;
      }
    }
    out += take;
    first += take;
    n -= take;
  }
}

}  // namespace strata::data
