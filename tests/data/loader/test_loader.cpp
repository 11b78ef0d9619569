// Loader end to end on file:// datasets in temp dirs: Fashion-MNIST packed into
// several shards read for 3 epochs by 1 and 3 processes (one GET per shard plus the
// manifest), remote reads with half the data cached against an independent
// farthest-next-use simulation, exactly-once coverage through the real pipeline,
// mid-epoch and elastic restore, transforms, errors.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>

#include "base/error.h"
#include "data/format/shard.h"
#include "data/loader/loader.h"
#include "data/loader/transforms.h"
#include "loader_test_util.h"

using namespace strata::data;
using namespace strata::data::testing;

namespace {

const fs::path& fmnist_dir() {
  static fs::path dir = [] {
    auto d = scratch_root() / "fmnist";
    packed_fashion_mnist(d, 6'000'000);
    return d;
  }();
  return dir;
}

LoaderOptions base_options(const fs::path& data, const fs::path& cache, int64_t cache_bytes) {
  LoaderOptions o;
  o.url = data.string();
  o.cache_dir = cache;
  o.cache_bytes = cache_bytes;
  o.seed = 7;
  o.batch_size = 64;
  o.lookahead_bytes = 12'000'000;
  o.staging_threads = 2;
  o.decode_threads = 2;
  return o;
}

uint64_t batch_hash(const strata::HostBatch& b) {
  uint64_t h = 0;
  for (auto& f : b.fields)
    h = h * 1000003 ^ std::hash<std::string_view>{}(
                          std::string_view(reinterpret_cast<const char*>(f.bytes.data()), f.bytes.size()));
  return h;
}

std::vector<uint64_t> read_rest(Loader& l) {
  std::vector<uint64_t> out;
  strata::HostBatch b;
  while (l.next(b)) out.push_back(batch_hash(b));
  return out;
}

}  // namespace

// The helper the multi-process tests stand on: a child that dies before its
// barrier (a constructor that throws) must not leave the parent and the children
// already at the barrier waiting on each other.
TEST(RunChildren, AChildDyingBeforeItsBarrierReleasesTheOthers) {
  auto codes = run_children(3, [](int i, const std::function<void()>& ready) {
    if (i == 0) throw std::runtime_error("dies before its barrier");
    ready();
    return 10 + i;
  });
  EXPECT_EQ(codes, (std::vector<int>{1, 11, 12}));
}

TEST(Loader, FashionMnistIsPackedIntoSeveralShards) {
  Manifest m = packed_fashion_mnist(fmnist_dir(), 6'000'000);
  EXPECT_EQ(m.total_samples(), 60000);
  EXPECT_GE(m.shards.size(), 6u);
  for (auto& s : m.shards) EXPECT_LE(s.bytes, 8'000'000);
}

// 3 epochs with a cache larger than the data: one GET per shard plus the manifest,
// whether one process reads everything or three processes (ranks) share the node.
class OneGetPerShard : public ::testing::TestWithParam<int> {};

TEST_P(OneGetPerShard, ThreeEpochs) {
  const int procs = GetParam();
  Manifest m = packed_fashion_mnist(fmnist_dir(), 6'000'000);
  auto root = scratch_dir("oneget" + std::to_string(procs));
  auto codes = run_children(procs, [&](int rank, const std::function<void()>& ready) {
    LoaderOptions o = base_options(fmnist_dir(), root / "cache", 400'000'000);
    o.rank = rank;
    o.world_size = procs;
    o.local_ranks = procs;
    Loader loader(o);
    ready();  // all ranks of the job are up before anyone reads
    int64_t samples = 0;
    for (int e = 0; e < 3; ++e) {
      loader.start_epoch(e);
      strata::HostBatch b;
      while (loader.next(b)) samples += b.size;
      if (e > 0 && loader.metrics().remote_requests != 0) return 4;  // later epochs are all hits
    }
    if (samples != 3 * loader.batches_per_epoch() * o.batch_size) return 5;
    write_count(root / ("requests." + std::to_string(rank)), loader.source().stats().requests);
    return 0;
  });
  ASSERT_EQ(codes, std::vector<int>(static_cast<size_t>(procs), 0));
  int64_t total = 0;
  for (int r = 0; r < procs; ++r) total += read_count(root / ("requests." + std::to_string(r)));
  EXPECT_EQ(total, static_cast<int64_t>(m.shards.size()) + 1);
}

INSTANTIATE_TEST_SUITE_P(Processes, OneGetPerShard, ::testing::Values(1, 3));

// With half the data cached, remote reads per epoch equal what a plain simulation
// of the farthest-next-use rule predicts for the same order and pipeline shape
// (look-ahead 0, one stager, one decoder, ring of one batch: a shard is staged when
// the batch that first reads it is started, while the shards still read by that
// batch are pinned).
TEST(Loader, HalfCacheRemoteReadsMatchFarthestNextUse) {
  Manifest m = packed_fashion_mnist(fmnist_dir(), 6'000'000);
  auto root = scratch_dir("half");
  LoaderOptions o = base_options(fmnist_dir(), root / "cache", m.total_bytes() / 2);
  o.batch_size = 100;
  o.shuffle_window = 1;
  o.lookahead_bytes = 0;
  o.staging_threads = 1;
  o.decode_threads = 1;
  o.ring_batches = 1;
  const int epochs = 3;

  // --- the simulation ---
  std::vector<int64_t> sizes;
  for (auto& s : m.shards) sizes.push_back(s.samples);
  OrderOptions oo;
  oo.seed = o.seed;
  oo.global_batch = o.batch_size;
  oo.shuffle_window = 1;
  struct Run {
    int32_t shard;
    int64_t first, last;
  };
  std::vector<std::vector<Run>> runs(epochs + 1);
  for (int e = 0; e <= epochs; ++e) {
    auto order = global_order(sizes, oo, e);
    for (int64_t p = 0; p < static_cast<int64_t>(order.size()); ++p) {
      if (runs[e].empty() || runs[e].back().shard != order[p].shard)
        runs[e].push_back({order[p].shard, p, p});
      runs[e].back().last = p;
    }
  }
  const int64_t n = static_cast<int64_t>(global_order(sizes, oo, 0).size());
  std::set<int32_t> cached;
  std::vector<int64_t> predicted(epochs, 0);
  for (int e = 0; e < epochs; ++e) {
    for (size_t j = 0; j < runs[e].size(); ++j) {
      const Run& r = runs[e][j];
      const int64_t t = r.first / o.batch_size * o.batch_size;  // start of the batch that needs it
      if (cached.count(r.shard)) continue;
      predicted[e]++;
      auto next_use = [&](int32_t s) -> int64_t {
        for (auto& x : runs[e])
          if (x.shard == s && x.last >= t) return std::max(x.first, t);
        for (auto& x : runs[e + 1])
          if (x.shard == s) return n + x.first;
        return INT64_MAX;
      };
      std::set<int32_t> pinned;
      for (size_t i = 0; i < j; ++i)
        if (runs[e][i].last >= t) pinned.insert(runs[e][i].shard);
      auto used = [&] {
        int64_t u = 0;
        for (auto s : cached) u += m.shards[s].bytes;
        return u;
      };
      while (used() + m.shards[r.shard].bytes > o.cache_bytes) {
        int32_t victim = -1;
        for (auto s : cached)
          if (!pinned.count(s) && (victim < 0 || next_use(s) > next_use(victim))) victim = s;
        ASSERT_GE(victim, 0);
        cached.erase(victim);
      }
      cached.insert(r.shard);
    }
  }

  // --- the loader ---
  Loader loader(o);
  std::vector<int64_t> seen;
  for (int e = 0; e < epochs; ++e) {
    loader.start_epoch(e);
    strata::HostBatch b;
    while (loader.next(b)) {
    }
    seen.push_back(loader.metrics().remote_requests);
    EXPECT_EQ(loader.metrics().cache_misses, predicted[e]);
    EXPECT_LE(loader.cache().usage_bytes(), o.cache_bytes);
  }
  EXPECT_EQ(seen, predicted);
  EXPECT_EQ(predicted[0], static_cast<int64_t>(m.shards.size()));
  EXPECT_LT(predicted[1], static_cast<int64_t>(m.shards.size()))
      << "the rule must save reads for the test to mean anything";
  std::printf("remote reads per epoch with half the data cached: %ld %ld %ld (shards %zu)\n", (long)seen[0],
              (long)seen[1], (long)seen[2], m.shards.size());
}

TEST(Loader, EverySampleExactlyOnceAcrossRanks) {
  auto root = scratch_dir("coverage");
  make_dataset(root / "ds", 5, 37);  // 185 samples
  for (int world = 1; world <= 4; ++world) {
    for (Remainder rem : {Remainder::kDrop, Remainder::kPad}) {
      std::map<int64_t, int> count;
      std::vector<std::unique_ptr<Loader>> ranks;
      for (int r = 0; r < world; ++r) {
        LoaderOptions o = base_options(root / "ds", root / "cache", 1 << 30);
        o.batch_size = 12 / world;
        o.world_size = world;
        o.rank = r;
        o.local_ranks = world;
        o.shuffle_window = 2;
        o.remainder = rem;
        ranks.push_back(std::make_unique<Loader>(o));
      }
      for (auto& l : ranks) {
        l->start_epoch(1);
        strata::HostBatch b;
        while (l->next(b)) {
          auto& y = b.field("y");
          for (int64_t i = 0; i < b.size; ++i) count[y.as<int64_t>()[i]]++;
        }
      }
      int64_t total = 0;
      for (auto& [k, c] : count) total += c;
      if (rem == Remainder::kDrop) {
        EXPECT_EQ(total, 180) << "world " << world;
        for (auto& [k, c] : count) EXPECT_EQ(c, 1) << "sample " << k << " world " << world;
      } else {
        EXPECT_EQ(total, 192) << "world " << world;
        EXPECT_EQ(count.size(), 185u) << "world " << world;
      }
    }
  }
}

TEST(Loader, RestoreMidEpochReproducesTheRest) {
  auto root = scratch_dir("restore");
  auto o = base_options(fmnist_dir(), root / "cache", 400'000'000);
  o.shuffle_window = 2;
  Loader a(o);
  a.start_epoch(2);
  strata::HostBatch b;
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(a.next(b));
  auto pos = a.position();
  EXPECT_EQ(pos.at("step"), 100);
  EXPECT_EQ(pos.at("epoch"), 2);
  auto rest = read_rest(a);
  EXPECT_EQ(static_cast<int64_t>(rest.size()), a.batches_per_epoch() - 100);

  Loader c(o);  // a fresh process after a restart
  c.restore(pos);
  EXPECT_EQ(read_rest(c), rest);
  EXPECT_EQ(c.position().at("step"), c.batches_per_epoch());
}

TEST(Loader, RestoreWithADifferentWorldSizeKeepsTheGlobalOrder) {
  auto root = scratch_dir("elastic");
  auto o = base_options(fmnist_dir(), root / "cache", 400'000'000);
  o.batch_size = 64;  // global batch 64 on 1 rank ...
  Loader one(o);
  one.start_epoch(0);
  strata::HostBatch b;
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(one.next(b));
  auto pos = one.position();
  std::vector<std::vector<int64_t>> labels_one;
  while (one.next(b)) {
    auto& y = b.field("label");
    labels_one.emplace_back(y.as<int64_t>(), y.as<int64_t>() + b.size);
  }
  // ... resumed on 2 ranks of 32: their slices, side by side, are the same global batches.
  std::vector<std::unique_ptr<Loader>> two;
  for (int r = 0; r < 2; ++r) {
    auto o2 = o;
    o2.batch_size = 32;
    o2.world_size = 2;
    o2.rank = r;
    o2.local_ranks = 2;
    two.push_back(std::make_unique<Loader>(o2));
    two.back()->restore(pos);
  }
  strata::HostBatch b0, b1;
  size_t step = 0;
  while (two[0]->next(b0)) {
    ASSERT_TRUE(two[1]->next(b1));
    ASSERT_LT(step, labels_one.size());
    std::vector<int64_t> joined(b0.field("label").as<int64_t>(), b0.field("label").as<int64_t>() + 32);
    joined.insert(joined.end(), b1.field("label").as<int64_t>(), b1.field("label").as<int64_t>() + 32);
    EXPECT_EQ(joined, labels_one[step]) << "global step " << 30 + step;
    ++step;
  }
  EXPECT_EQ(step, labels_one.size());
  // The same check on the images, for the first resumed step (labels alone repeat).
  auto o2 = o;
  o2.batch_size = 32;
  o2.world_size = 2;
  o2.local_ranks = 2;
  Loader r0(o2);
  r0.restore(pos);
  Loader again(o);
  again.restore(pos);
  ASSERT_TRUE(r0.next(b0));
  ASSERT_TRUE(again.next(b));
  EXPECT_EQ(0, std::memcmp(b0.field("image").bytes.data(), b.field("image").bytes.data(), 32 * 784));
}

TEST(Loader, RestoreRejectsAnotherGlobalBatchOrSeed) {
  auto root = scratch_dir("reject");
  auto o = base_options(fmnist_dir(), root / "cache", 400'000'000);
  Loader l(o);
  auto pos = l.position();
  auto bad = pos;
  bad["global_batch"] = 128;
  EXPECT_THROW(l.restore(bad), strata::ConfigError);
  bad = pos;
  bad["seed"] = 8;
  EXPECT_THROW(l.restore(bad), strata::ConfigError);
}

TEST(Loader, CacheSmallerThanInFlightIsAConfigErrorNamingBothNumbers) {
  auto root = scratch_dir("small");
  auto o = base_options(fmnist_dir(), root / "cache", 10'000'000);  // one shard + 12 MB look-ahead do not fit
  try {
    Loader l(o);
    FAIL() << "no error for a cache that cannot hold what is in flight";
  } catch (const strata::ConfigError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("10000000"), std::string::npos) << what;
    EXPECT_NE(what.find("look-ahead 12000000"), std::string::npos) << what;
  }
}

TEST(Loader, NormalisesAndCopiesExactly) {
  auto root = scratch_dir("norm");
  Manifest m = make_dataset(root / "ds", 2, 20);
  auto o = base_options(root / "ds", root / "cache", 1 << 30);
  o.batch_size = 8;
  o.normalize = {NormalizeU8{"x", {0.5f}, {0.25f}}};
  Loader l(o);
  strata::HostBatch b;
  ASSERT_TRUE(l.next(b));
  auto& x = b.field("x");
  auto& y = b.field("y");
  EXPECT_EQ(x.dtype, strata::DType::f32);
  EXPECT_EQ(x.shape, (std::vector<int64_t>{8, 64}));
  EXPECT_EQ(y.dtype, strata::DType::i64);
  for (int64_t i = 0; i < 8; ++i) {
    int64_t label = y.as<int64_t>()[i];
    int s = static_cast<int>(label / 1000), idx = static_cast<int>(label % 1000);
    for (int k = 0; k < 64; ++k) {
      float raw = static_cast<float>(static_cast<uint8_t>(s * 31 + idx * 7 + k));
      // Computed as one multiply-add: within a few float roundings of the plain formula.
      EXPECT_NEAR(x.as<float>()[i * 64 + k], (raw / 255.0 - 0.5) / 0.25, 2e-6);
    }
  }
}

// The manifest keeps its dtype strings; a batch field carries a DType, converted
// once when the loader compiles its transforms: a u16 field stays u16 (as
// pack_raw's token records are), and a dtype with no DType fails there, naming
// the field and the dtype.
TEST(Loader, BatchFieldsCarryTheManifestDtypeAsADType) {
  auto root = scratch_dir("u16");
  fs::create_directories(root / "ds");
  Manifest m;
  m.schema = {{"tokens", "u16", {4}, false}, {"y", "i64", {}, false}};
  {
    ShardWriter w((root / "ds" / "shard-0.h5").string(), m.schema);
    for (int i = 0; i < 16; ++i) {
      uint16_t t[4];
      for (int k = 0; k < 4; ++k) t[k] = static_cast<uint16_t>(60000 + 4 * i + k);
      int64_t y = i;
      w.add({{t, sizeof t}, {&y, sizeof y}});
    }
    w.finish();
  }
  m.shards.push_back({"shard-0.h5", 16, static_cast<int64_t>(fs::file_size(root / "ds" / "shard-0.h5")),
                      checksum_file((root / "ds" / "shard-0.h5").string())});
  std::ofstream(root / "ds" / "manifest.json") << m.to_json();
  auto o = base_options(root / "ds", root / "cache", 1 << 30);
  o.batch_size = 4;
  Loader l(o);
  strata::HostBatch b;
  ASSERT_TRUE(l.next(b));
  const auto& t = b.field("tokens");
  EXPECT_EQ(t.dtype, strata::DType::u16);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{4, 4}));
  ASSERT_EQ(t.bytes.size(), 4u * 4u * 2u);
  for (int64_t r = 0; r < 4; ++r)
    for (int k = 0; k < 4; ++k)
      EXPECT_EQ(t.as<uint16_t>()[r * 4 + k], 60000 + 4 * b.field("y").as<int64_t>()[r] + k);
  EXPECT_EQ(b.field("y").dtype, strata::DType::i64);

  try {
    FieldTransform(FieldSpec{"audio", "c64", {2}, false}, nullptr);
    FAIL() << "a field of dtype c64 became a batch field";
  } catch (const strata::ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'audio'"), std::string::npos) << what;
    EXPECT_NE(what.find("'c64'"), std::string::npos) << what;
  }
}

TEST(Loader, ADamagedShardStopsNextWithAnErrorNamingIt) {
  auto root = scratch_dir("damaged");
  make_dataset(root / "ds", 3, 20);
  flip_byte(root / "ds" / "shard-1.h5", 300);  // the object store holds a bad copy
  auto o = base_options(root / "ds", root / "cache", 1 << 30);
  o.batch_size = 4;
  Loader l(o);
  strata::HostBatch b;
  try {
    while (l.next(b)) {
    }
    FAIL() << "read a shard that fails its checksum";
  } catch (const strata::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("shard-1.h5"), std::string::npos) << e.what();
  }
}

TEST(Loader, MetricsPerEpoch) {
  Manifest m = packed_fashion_mnist(fmnist_dir(), 6'000'000);
  auto root = scratch_dir("metrics");
  Loader l(base_options(fmnist_dir(), root / "cache", 400'000'000));
  for (int e = 0; e < 2; ++e) {
    l.start_epoch(e);
    strata::HostBatch b;
    while (l.next(b)) {
    }
    auto mt = l.metrics();
    EXPECT_EQ(mt.batches, l.batches_per_epoch());
    EXPECT_EQ(mt.samples, mt.batches * 64);
    EXPECT_EQ(mt.sample_bytes, mt.samples * (784 + 8));
    EXPECT_EQ(mt.shards_staged, static_cast<int64_t>(m.shards.size()));
    EXPECT_EQ(mt.cache_misses, e == 0 ? static_cast<int64_t>(m.shards.size()) : 0);
    EXPECT_EQ(mt.cache_hits, e == 0 ? 0 : static_cast<int64_t>(m.shards.size()));
    EXPECT_EQ(mt.remote_requests, mt.cache_misses);
    EXPECT_EQ(mt.remote_bytes, e == 0 ? m.total_bytes() : 0);
    EXPECT_GE(mt.wait_seconds, 0.0);
  }
}

// Two datasets whose shards share names (both hold shard-00000.h5 ...) in one
// cache root: each loader must read its own data, never the other's cached file.
TEST(Loader, DatasetsWithTheSameShardNamesDoNotShareCachedFiles) {
  auto read_file = [](const fs::path& p) {
    std::ifstream f(p);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  auto write_file = [](const fs::path& p, const std::string& text) { std::ofstream(p) << text; };
  auto root = scratch_dir("two-datasets");
  fs::path a = root / "a", b = root / "b";
  packed_fashion_mnist(a, 6'000'000);
  fs::create_directories(b);
  // b: the same shard names, but only the first shard, with every label shifted
  Manifest ma = Manifest::from_json(read_file(a / "manifest.json"), "a");
  ShardData first = ShardData::read((a / ma.shards[0].name).string(), ma.schema);
  ShardWriter w((b / ma.shards[0].name).string(), ma.schema);
  for (int64_t i = 0; i < first.samples(); ++i) {
    size_t n0 = 0, n1 = 0;
    const uint8_t* img = first.sample(0, i, &n0);
    int64_t label = (*reinterpret_cast<const int64_t*>(first.sample(1, i, &n1)) + 1) % 10;
    w.add({{img, n0}, {&label, sizeof label}});
  }
  w.finish();
  Manifest mb = ma;
  mb.shards.resize(1);
  mb.shards[0].checksum = checksum_file((b / ma.shards[0].name).string());
  mb.shards[0].bytes = static_cast<int64_t>(fs::file_size(b / ma.shards[0].name));
  write_file(b / "manifest.json", mb.to_json());

  auto labels_of = [&](const fs::path& data) {
    LoaderOptions o = base_options(data, root / "cache", 400'000'000);
    o.shuffle = false;
    Loader l(o);
    l.start_epoch(0);
    strata::HostBatch batch;
    EXPECT_TRUE(l.next(batch));
    const auto& lab = batch.field("label");
    return std::vector<int64_t>(lab.as<int64_t>(), lab.as<int64_t>() + lab.numel());
  };
  Loader keep_a(base_options(a, root / "cache", 400'000'000));  // a's shards stay cached meanwhile
  keep_a.start_epoch(0);
  strata::HostBatch warm;
  ASSERT_TRUE(keep_a.next(warm));
  auto la = labels_of(a), lb = labels_of(b);
  ASSERT_EQ(la.size(), lb.size());
  for (size_t i = 0; i < la.size(); ++i)
    ASSERT_EQ(lb[i], (la[i] + 1) % 10) << "sample " << i << " came from the other dataset";
}

// With Remainder::kPad the last global batch repeats samples; each batch says how
// many of its rows are real, so evaluation counts every sample exactly once.
TEST(Loader, PaddedRowsAreMarkedInvalid) {
  auto root = scratch_dir("valid");
  const int world = 3;
  int64_t valid_total = 0, rows = 0;
  for (int r = 0; r < world; ++r) {
    LoaderOptions o = base_options(fmnist_dir(), root / "cache", 400'000'000);
    o.remainder = Remainder::kPad;
    o.rank = r;
    o.world_size = world;
    o.batch_size = 64;  // global 192: 60000 = 312 * 192 + 96
    Loader l(o);
    l.start_epoch(0);
    strata::HostBatch b;
    while (l.next(b)) {
      ASSERT_GE(b.valid_count(), 0);
      ASSERT_LE(b.valid_count(), b.size);
      valid_total += b.valid_count();
      rows += b.size;
    }
  }
  EXPECT_EQ(valid_total, 60000) << "every sample counted once";
  EXPECT_EQ(rows, 313 * 192) << "the last global batch is padded to full size";
}
