// TokenStream: a token dataset's shards, staged through the node-local cache and
// memory-mapped read-only, seen as one token stream t[0..N). A span of tokens may
// cross any number of shard boundaries. Shards are staged on demand: stage()
// fetches (once per node, through ShardCache) and maps the ones not yet mapped.
//
// Without `pin`, a mapped shard holds no pin: the cache evicts only to make
// room, and the loader sizes it for the whole dataset; even a removed file stays
// readable through its mapping. With `pin` (a corpus streaming through a smaller
// cache), each mapped shard stays pinned until release() unmaps it, so the cache
// never removes a file that a mapping still holds on disk. Pages come in as
// windows touch them (no MAP_POPULATE).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "data/format/mapped_shard.h"
#include "data/loader/shard_cache.h"

namespace strata::data {

class TokenStream {
 public:
  // `cache` holds a token dataset's manifest (one scalar field, u16 or i32).
  TokenStream(ShardCache& cache, int staging_threads, bool pin = false);

  int64_t tokens() const { return starts_.back(); }
  // The shard (manifest index) holding token t < tokens().
  int32_t shard_of(int64_t t) const;
  // Adds to `out` the shards that tokens [first, first + n) lie in, not yet staged.
  void missing(int64_t first, int64_t n, std::vector<int32_t>& out) const;
  // Stages and maps `shards` (downloads in parallel); throws the first error.
  void stage(const std::vector<int32_t>& shards);
  // Tokens [first, first + n) widened to i64; their shards must be staged.
  void read(int64_t first, int64_t n, int64_t* out) const;
  int64_t shards_staged() const { return staged_; }
  // Maps `shard` from a pin acquired elsewhere (the loader's look-ahead).
  void adopt(int32_t shard, ShardCache::Pin pin);
  // Unmaps (and unpins) every mapped shard not in `keep`.
  void release_except(const std::vector<int32_t>& keep);
  bool mapped(int32_t shard) const { return maps_[static_cast<size_t>(shard)] != nullptr; }
  int64_t shard_tokens(int32_t shard) const;

 private:
  void map(int32_t shard, ShardCache::Pin& pin);

  ShardCache& cache_;
  int threads_;
  bool pin_;
  bool u16_;
  std::vector<int64_t> starts_;  // token offset of each shard, then N
  std::vector<std::shared_ptr<const MappedShard>> maps_;
  std::vector<ShardCache::Pin> pins_;  // with pin_: held while mapped
  int64_t staged_ = 0;
};

}  // namespace strata::data
