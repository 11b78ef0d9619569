// Helpers for the TokenLoader tests: token datasets packed by the real packer
// (strata-pack tokens' pack_tokens) with tiny shards, and draining a loader.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "data/format/token_packer.h"
#include "data/loader/token_loader.h"
#include "loader_test_util.h"

namespace strata::data::testing {

// Tokens 0, 1, ..., n-1 as a raw uint16 file (nanoGPT's format) packed into
// `out_url`/train with shards of `shard_tokens` u16 tokens (i32 when `vocab` >
// 65536): token t is t, so every id says where in the stream it came from.
inline Manifest pack_counting(const fs::path& scratch, const std::string& out_url, int64_t n,
                              int64_t shard_tokens, int64_t vocab = 0, SourceOptions source = {},
                              std::shared_ptr<const DataKey> key = nullptr,
                              const std::string& compress = "none") {
  const fs::path raw = scratch / "counting.bin";
  {
    std::ofstream f(raw, std::ios::binary | std::ios::trunc);
    for (int64_t t = 0; t < n; ++t) {
      const auto v = static_cast<uint16_t>(t);
      f.write(reinterpret_cast<const char*>(&v), 2);
    }
  }
  TokenPackOptions o;
  o.pack.out_url = out_url;
  o.pack.shard_bytes = shard_tokens * (vocab > 65536 ? 4 : 2);
  o.pack.source = std::move(source);
  o.pack.key = std::move(key);
  o.pack.compress = compress;
  o.val_fraction = 0;
  o.vocab_size = vocab;
  return pack_tokens({{raw.string(), TokenFormat::uint16}}, o).train;
}

// 3000 tokens in shards of 100: window k of context T reads tokens kT .. kT + T.
inline const fs::path& counting_dir() {
  static fs::path dir = [] {
    auto d = scratch_root() / "counting";
    fs::create_directories(d);
    pack_counting(d, (d / "out").string(), 3000, 100);
    return d / "out" / "train";
  }();
  return dir;
}

inline TokenLoaderOptions token_options(const std::string& url, const fs::path& cache, int64_t context,
                                        int64_t batch) {
  TokenLoaderOptions o;
  o.url = url;
  o.cache_dir = cache;
  o.cache_bytes = 64 << 20;
  o.seed = 5;
  o.batch_size = batch;
  o.context = context;
  return o;
}

// One batch as plain vectors: rows of input and target, and the valid count.
struct Rows {
  std::vector<int64_t> input, target;
  int64_t valid = 0;
  bool operator==(const Rows& o) const = default;
};

inline Rows rows_of(const strata::HostBatch& b) {
  Rows r;
  const auto& in = b.field("input");
  const auto& tg = b.field("target");
  EXPECT_EQ(in.dtype, strata::DType::i64);
  EXPECT_EQ(tg.dtype, strata::DType::i64);
  EXPECT_EQ(in.shape, tg.shape);
  r.input.assign(in.as<int64_t>(), in.as<int64_t>() + in.numel());
  r.target.assign(tg.as<int64_t>(), tg.as<int64_t>() + tg.numel());
  r.valid = b.valid_count();
  return r;
}

// `g` followed by `s`: a global batch from rank slices.
inline void append(Rows& g, const Rows& s) {
  g.input.insert(g.input.end(), s.input.begin(), s.input.end());
  g.target.insert(g.target.end(), s.target.begin(), s.target.end());
  g.valid += s.valid;
}

// Checks that every row of `rows` is some window of the counting stream and
// returns the windows' indices, in order.
inline std::vector<int64_t> windows_of(const std::vector<Rows>& rows, int64_t t) {
  std::vector<int64_t> ks;
  for (const Rows& r : rows)
    for (size_t i = 0; i * t < r.input.size(); ++i) {
      const int64_t first = r.input[i * t];
      EXPECT_EQ(first % t, 0) << "a window starts at token " << first;
      for (int64_t j = 0; j < t; ++j) {
        EXPECT_EQ(r.input[i * t + j], first + j);
        EXPECT_EQ(r.target[i * t + j], first + j + 1);
      }
      ks.push_back(first / t);
    }
  return ks;
}

// The rest of the current epoch.
inline std::vector<Rows> drain(TokenLoader& l) {
  std::vector<Rows> out;
  strata::HostBatch b;
  while (l.next(b)) out.push_back(rows_of(b));
  return out;
}

// The rest of the current epoch's global batches, each the ranks' slices in
// rank order; every rank must have as many batches as rank 0.
inline std::vector<Rows> drain_global(std::vector<std::unique_ptr<TokenLoader>>& ranks) {
  std::vector<Rows> out;
  strata::HostBatch b;
  while (ranks[0]->next(b)) {
    Rows g = rows_of(b);
    for (size_t r = 1; r < ranks.size(); ++r) {
      EXPECT_TRUE(ranks[r]->next(b));
      append(g, rows_of(b));
    }
    out.push_back(g);
  }
  for (auto& l : ranks) EXPECT_FALSE(l->next(b)) << "every rank has as many batches";
  return out;
}

inline std::vector<Rows> epoch(TokenLoader& l, int64_t e) {
  l.start_epoch(e);
  return drain(l);
}

}  // namespace strata::data::testing
