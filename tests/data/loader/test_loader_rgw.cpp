// The loader against the real test object store (Ceph RGW, scripts/rgw.sh, fixture
// "rgw"): packed Fashion-MNIST read for 3 epochs by 1 and 3 local processes makes
// one GET per shard plus the manifest; a process SIGKILLed while its download is
// held up by strata-proxy --delay-ms leaves nothing that passes for a shard, and
// the next run recovers.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "data/loader/loader.h"
#include "data/loader/shard_cache.h"
#include "data/store/s3_source.h"
#include "loader_test_util.h"
#include "proxy_process.h"
#include "rgw_env.h"

using namespace strata::data;
using namespace strata::data::testing;

namespace {

// Fashion-MNIST packed into the RGW once per test binary.
const std::string& fmnist_url() {
  static std::string url = [] {
    const std::string bucket = "loader-" + std::to_string(::getpid());
    create_bucket(bucket, rgw_options());
    PackOptions o;
    o.out_url = "s3://" + bucket + "/fmnist";
    o.shard_bytes = 6'000'000;
    o.source = rgw_options();
    const std::string root = "/usr/share/datasets/fashion-mnist/";
    pack_idx(root + "train-images-idx3-ubyte.gz", root + "train-labels-idx1-ubyte.gz", o);
    return o.out_url;
  }();
  return url;
}

int count_files(const fs::path& dir) {
  int n = 0;
  for (auto& e : fs::directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

}  // namespace

class RgwOneGetPerShard : public ::testing::TestWithParam<int> {};

TEST_P(RgwOneGetPerShard, ThreeEpochsOfFashionMnist) {
  const int procs = GetParam();
  const std::string url = fmnist_url();
  auto src = open_source(url, rgw_options());
  Manifest m = Manifest::from_json(
      [&] {
        auto b = src->get("manifest.json");
        return std::string(b.begin(), b.end());
      }(),
      url);
  ASSERT_GE(m.shards.size(), 6u);
  auto root = scratch_dir("rgw-oneget" + std::to_string(procs));
  auto codes = run_children(procs, [&](int rank, const std::function<void()>& ready) {
    LoaderOptions o;
    o.url = url;
    o.source = rgw_options();
    o.cache_dir = root / "cache";
    o.cache_bytes = 400'000'000;
    o.seed = 11;
    o.rank = rank;
    o.world_size = procs;
    o.local_ranks = procs;
    o.batch_size = 60;
    o.lookahead_bytes = 12'000'000;
    Loader loader(o);
    ready();
    int64_t samples = 0;
    for (int e = 0; e < 3; ++e) {
      loader.start_epoch(e);
      strata::HostBatch b;
      while (loader.next(b)) samples += b.size;
    }
    if (samples != 3 * loader.batches_per_epoch() * o.batch_size) return 5;
    write_count(root / ("requests." + std::to_string(rank)), loader.source().stats().requests);
    write_count(root / ("bytes." + std::to_string(rank)), loader.source().stats().bytes);
    return 0;
  });
  ASSERT_EQ(codes, std::vector<int>(static_cast<size_t>(procs), 0));
  int64_t requests = 0, bytes = 0;
  for (int r = 0; r < procs; ++r) {
    requests += read_count(root / ("requests." + std::to_string(r)));
    bytes += read_count(root / ("bytes." + std::to_string(r)));
  }
  EXPECT_EQ(requests, static_cast<int64_t>(m.shards.size()) + 1) << "one GET per shard plus the manifest";
  EXPECT_GE(bytes, m.total_bytes());
  EXPECT_LT(bytes, m.total_bytes() + 1'000'000);
}

INSTANTIATE_TEST_SUITE_P(Processes, RgwOneGetPerShard, ::testing::Values(1, 3));

TEST(RgwLoader, KillDuringADelayedDownloadThenRecover) {
  const std::string url = fmnist_url();
  std::string ep = need_env("STRATA_TEST_S3_ENDPOINT");
  // 60 s per request: the download cannot finish before the kill however slow the
  // machine is, so the test does not depend on timing.
  ProxyProcess slow(ep.substr(ep.find("//") + 2), {"--delay-ms", "60000"});
  auto root = scratch_dir("rgw-kill");
  const fs::path cache_dir = root / "cache";
  pid_t child = -1;
  bool began = false;
  {
    // This process opens the cache first (manifest fetched directly); the child
    // then joins the job and downloads shard 0 through the slow proxy.
    auto direct = open_source(url, rgw_options());
    ShardCache job(*direct, ShardCacheOptions{cache_dir, 400'000'000, CacheLifetime::kPersistent});
    child = ::fork();
    if (child == 0) {
      try {
        auto src = open_source(url, rgw_options(slow.endpoint()));
        ShardCache cache(*src, ShardCacheOptions{cache_dir, 400'000'000, CacheLifetime::kPersistent});
        cache.acquire(cache.manifest().shards[0]);
      } catch (...) {
      }
      ::_exit(0);
    }
    // Wait (bounded, so a broken child cannot hang the test) until the download has begun.
    for (int i = 0; i < 6000 && !began; ++i) {
      began = count_files(cache_dir / ".reserve") > 0;
      if (!began) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(child, SIGKILL);
    int st = 0;
    ::waitpid(child, &st, 0);
    ASSERT_TRUE(began) << "the child never started a shard download";
    ASSERT_TRUE(WIFSIGNALED(st));
    EXPECT_EQ(count_files(cache_dir / "shards"), 0) << "a killed download must not leave a shard";
    EXPECT_EQ(count_files(cache_dir / ".reserve"), 1) << "the dead download's reservation is still there";
  }
  // The next run: the first process of the new job clears the dead process's files.
  auto src = open_source(url, rgw_options());
  ShardCache cache(*src, ShardCacheOptions{cache_dir, 400'000'000, CacheLifetime::kPersistent});
  EXPECT_EQ(count_files(cache_dir / ".tmp"), 0);
  EXPECT_EQ(count_files(cache_dir / ".reserve"), 0);
  auto& s0 = cache.manifest().shards[0];
  auto pin = cache.acquire(s0);  // the dead process's lock died with it: no wait
  EXPECT_EQ(checksum_file(pin.path().string()), s0.checksum);
  EXPECT_EQ(cache.usage_bytes(), s0.bytes);
}
