// The default shuffle window on a class-sorted dataset: every shard holds one
// class and the shards are in class order, as `strata-pack files --no-shuffle`
// packs an ImageFolder tree. With strata-train's default settings each batch's
// class histogram must be as close to the dataset's as a uniformly random batch
// is (a window of one shard, the old default, gives batches of one class); and
// with a cache smaller than the data, the default window must never take the
// cache over its capacity (sampled under the cache's own lock, two ranks).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <thread>

#include "base/file_lock.h"
#include "data/loader/loader.h"
#include "data/loader/shuffle_block.h"
#include "loader_test_util.h"
#include "train/config/train_config.h"  // strata-train's defaults, which the mixing test reads with

using namespace strata::data;
using namespace strata::data::testing;

namespace {

// `classes` x `per_class` shards of `per_shard` samples; shard s holds class
// s / per_class only. Fields: "x" u8[payload] and "label" i64.
Manifest class_sorted(const fs::path& dir, int classes, int per_class, int per_shard, int payload) {
  fs::create_directories(dir);
  Manifest m;
  m.schema = {{"x", "u8", {payload}, false}, {"label", "i64", {}, false}};
  for (int s = 0; s < classes * per_class; ++s) {
    const std::string name = "shard-" + std::to_string(s) + ".h5";
    ShardWriter w((dir / name).string(), m.schema);
    std::vector<uint8_t> x(static_cast<size_t>(payload));
    const int64_t label = s / per_class;
    for (int i = 0; i < per_shard; ++i) {
      for (size_t b = 0; b < x.size(); ++b)
        x[b] = static_cast<uint8_t>(s * 131 + i * 7 + static_cast<int>(b));
      w.add({{x.data(), x.size()}, {&label, sizeof label}});
    }
    w.finish();
    m.shards.push_back({name, per_shard, static_cast<int64_t>(fs::file_size(dir / name)),
                        checksum_file((dir / name).string())});
  }
  std::ofstream(dir / "manifest.json") << m.to_json();
  return m;
}

// The training loader as strata-train builds it from a config that sets nothing
// but the URLs (apps/strata-train.cpp, loader_options): the data.* defaults.
LoaderOptions strata_train_defaults(const fs::path& data, const fs::path& cache) {
  const strata::TrainConfig c;
  LoaderOptions o;
  o.url = data.string();
  o.cache_dir = cache;
  o.cache_bytes = c.data.cache_bytes;
  o.seed = static_cast<uint64_t>(c.seed);
  o.batch_size = c.data.batch_size;
  o.shuffle = true;
  o.shuffle_window = c.data.shuffle_window;
  o.remainder = c.data.remainder == "pad" ? Remainder::kPad : Remainder::kDrop;
  o.lookahead_bytes = c.data.lookahead_bytes;
  o.staging_threads = static_cast<int>(c.data.staging_threads);
  o.decode_threads = static_cast<int>(c.data.decode_threads);
  return o;
}

// Per batch, against the dataset's class proportions p (here all 1/K): Pearson's
// statistic X2 = sum_k (n_k - B p_k)^2 / (B p_k) and the total-variation distance
// TV = 1/2 sum_k |n_k / B - p_k|, averaged over the batches of `epochs` epochs.
struct Mixing {
  double x2 = 0, tv = 0;
  int64_t batches = 0;
};

Mixing measure(Loader& l, int epochs, int classes) {
  Mixing m;
  for (int e = 0; e < epochs; ++e) {
    l.start_epoch(e);
    strata::HostBatch b;
    while (l.next(b)) {
      std::vector<double> n(static_cast<size_t>(classes), 0);
      const int64_t* y = b.field("label").as<int64_t>();
      for (int64_t i = 0; i < b.size; ++i) n[static_cast<size_t>(y[i])] += 1;
      const double expect = static_cast<double>(b.size) / classes;
      for (double v : n) {
        m.x2 += (v - expect) * (v - expect) / expect;
        m.tv += 0.5 * std::abs(v / static_cast<double>(b.size) - 1.0 / classes);
      }
      ++m.batches;
    }
  }
  m.x2 /= static_cast<double>(m.batches);
  m.tv /= static_cast<double>(m.batches);
  return m;
}

// E[TV] of a uniformly random batch of B of N samples, N / K of each class: each
// n_k is hypergeometric, and E TV = K / (2B) E|n_k - B/K|.
double random_batch_tv(int64_t n, int classes, int64_t b) {
  const int64_t per = n / classes;
  auto log_choose = [](double a, double k) {
    return std::lgamma(a + 1) - std::lgamma(k + 1) - std::lgamma(a - k + 1);
  };
  double mad = 0;
  for (int64_t j = 0; j <= std::min(b, per); ++j) {
    if (b - j > n - per) continue;
    const double p = std::exp(log_choose(per, j) + log_choose(n - per, b - j) - log_choose(n, b));
    mad += p * std::abs(static_cast<double>(j) - static_cast<double>(b) / classes);
  }
  return classes * mad / (2.0 * b);
}

}  // namespace

TEST(DefaultShuffle, TheLibraryDefaultIsTheConfigDefault) {
  EXPECT_EQ(LoaderOptions{}.shuffle_window, strata::TrainConfig{}.data.shuffle_window);
  EXPECT_EQ(LoaderOptions{}.shuffle_window, 0) << "0: the widest window the cache holds";
}

TEST(DefaultShuffle, BatchesOfAClassSortedDatasetAreMixedLikeRandomOnes) {
  constexpr int kClasses = 10, kPerClass = 4, kPerShard = 200, kEpochs = 3;
  auto root = scratch_dir("mixing");
  const Manifest m = class_sorted(root / "ds", kClasses, kPerClass, kPerShard, 16);
  Loader l(strata_train_defaults(root / "ds", root / "cache"));
  EXPECT_EQ(l.shuffle_window(), kClasses * kPerClass) << "the dataset fits the default cache: one window";
  const Mixing got = measure(l, kEpochs, kClasses);

  // The bound. A window of every shard makes each batch a uniformly random
  // B-subset of the N samples (a slice of a uniform permutation). Then each n_k
  // is hypergeometric, Var n_k = B p (1-p) (N-B)/(N-1), so E[X2] is exactly
  // (K-1)(N-B)/(N-1), and X2's variance is about 2(K-1) (its chi-square limit;
  // 17.7 with the finite-B term for K = 10, B = 128). Batches of one epoch are
  // disjoint slices of one permutation (if anything negatively correlated) and
  // epochs are independent, so the mean over M batches has a standard deviation
  // of about sqrt(2(K-1)/M): the bound is E[X2] plus 4 of those (10.1 here).
  // A window of W < all shards adds B sum_k (q_k - p_k)^2 / p_k for the window's
  // class shares q: about +29 on average for W = 20 of these 40 shards, and
  // B(1-p)/p = 1152 for a batch of one class, which is what windows of one shard
  // (the old default) give all but the batches straddling two shards.
  const double n = static_cast<double>(m.total_samples()), b = static_cast<double>(l.global_batch());
  const double expected = (kClasses - 1) * (n - b) / (n - 1);
  const double bound = expected + 4 * std::sqrt(2.0 * (kClasses - 1) / static_cast<double>(got.batches));
  const double tv_random = random_batch_tv(m.total_samples(), kClasses, l.global_batch());
  std::printf(
      "[mixing] %d classes, %zu class-sorted shards, batch %ld, window %ld shards, %ld batches: mean X2 %.3f "
      "(random batch %.3f, bound %.3f), mean TV %.4f (random batch %.4f)\n",
      kClasses, m.shards.size(), static_cast<long>(l.global_batch()), static_cast<long>(l.shuffle_window()),
      static_cast<long>(got.batches), got.x2, expected, bound, got.tv, tv_random);
  EXPECT_LE(got.x2, bound) << "batches are less mixed than random batches of the dataset (mean TV " << got.tv
                           << ", a random batch's " << tv_random << ")";
}

TEST(DefaultShuffle, WindowNeverTakesTheCacheOverItsCapacity) {
  constexpr int kClasses = 6, kPerClass = 4, kPerShard = 64, kRanks = 2, kEpochs = 3;
  auto root = scratch_dir("bounded");
  const Manifest m = class_sorted(root / "ds", kClasses, kPerClass, kPerShard, 1024);
  int64_t shard = 0;
  std::vector<int64_t> samples, bytes;
  for (auto& s : m.shards) {
    shard = std::max(shard, s.bytes);
    samples.push_back(s.samples);
    bytes.push_back(s.bytes);
  }
  LoaderOptions o = strata_train_defaults(root / "ds", root / "cache");
  o.world_size = kRanks;
  o.local_ranks = kRanks;
  o.batch_size = 16;
  o.lookahead_bytes = shard;
  // Room, per rank, for two windows of 5 shards (the batches in flight straddle
  // two windows) and the look-ahead: less than the dataset, so shards are evicted
  // and fetched again.
  o.cache_bytes = kRanks * (2 * 5 * shard + shard);
  ASSERT_LT(o.cache_bytes, m.total_bytes());
  const WindowBudget budget{.cache_bytes = o.cache_bytes,
                            .lookahead_bytes = o.lookahead_bytes,
                            .local_ranks = kRanks,
                            .global_batch = o.batch_size * kRanks,
                            .span_batches = o.decode_threads + 2};
  ASSERT_EQ(widest_shuffle_window(samples, bytes, budget), 5);

  const fs::path dir = dataset_cache_dir(o.cache_dir, o.url);
  auto codes = run_children(kRanks + 1, [&](int i, const std::function<void()>& ready) {
    if (i == kRanks) {  // the sampler: the cache's bytes under its accounting lock
      ready();
      int64_t accounted = 0, on_disk = 0, samples_taken = 0;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
      while (!(fs::exists(root / "done.0") && fs::exists(root / "done.1")) &&
             std::chrono::steady_clock::now() < deadline) {
        strata::FileLock lock(dir / ".locks" / "cache.lock");
        lock.lock_exclusive();
        auto sum = [&](const char* sub) {
          int64_t total = 0;
          std::error_code ec;
          for (auto& e : fs::directory_iterator(dir / sub, ec))
            total += static_cast<int64_t>(e.file_size(ec));
          return total;
        };
        const int64_t shards = sum("shards");
        accounted = std::max(accounted, shards + sum(".reserve"));  // what the capacity bounds
        on_disk = std::max(on_disk, shards + sum(".tmp"));          // the bytes written
        lock.unlock();
        ++samples_taken;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      write_count(root / "accounted", accounted);
      write_count(root / "on_disk", on_disk);
      write_count(root / "samples_taken", samples_taken);
      return 0;
    }
    LoaderOptions mine = o;
    mine.rank = i;
    Loader l(mine);
    ready();
    write_count(root / ("window." + std::to_string(i)), l.shuffle_window());
    int64_t seen = 0;
    for (int e = 0; e < kEpochs; ++e) {
      if (l.required_cache_bytes(e) > o.cache_bytes) return 4;
      l.start_epoch(e);
      strata::HostBatch b;
      while (l.next(b)) seen += b.size;
    }
    if (seen != kEpochs * l.batches_per_epoch() * mine.batch_size) return 5;
    write_count(root / ("requests." + std::to_string(i)), l.source().stats().requests);
    write_count(root / ("done." + std::to_string(i)), 1);
    return 0;
  });
  ASSERT_EQ(codes, std::vector<int>(kRanks + 1, 0));
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(read_count(root / ("window." + std::to_string(r))), 5);
  const int64_t accounted = read_count(root / "accounted"), on_disk = read_count(root / "on_disk");
  const int64_t requests = read_count(root / "requests.0") + read_count(root / "requests.1");
  std::printf(
      "[bounded] cache %ld bytes (dataset %ld), window 5 of %zu shards, 2 ranks, %d epochs: most accounted "
      "%ld, most on disk %ld (%ld samples), %ld GETs\n",
      static_cast<long>(o.cache_bytes), static_cast<long>(m.total_bytes()), m.shards.size(), kEpochs,
      static_cast<long>(accounted), static_cast<long>(on_disk),
      static_cast<long>(read_count(root / "samples_taken")), static_cast<long>(requests));
  EXPECT_LE(accounted, o.cache_bytes);
  EXPECT_LE(on_disk, o.cache_bytes);
  EXPECT_GT(requests, static_cast<int64_t>(m.shards.size()) + 1)
      << "shards must have been evicted and fetched again for the bound to be under test";
}
