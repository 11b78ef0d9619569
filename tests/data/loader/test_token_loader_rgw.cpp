// TokenLoader against the real test object store (Ceph RGW, scripts/rgw.sh,
// fixture "rgw"): a token dataset packed straight into a bucket by the real
// packer, read for two epochs by two processes (ranks 0 and 1 of a world of 2)
// sharing one node-local cache, makes one GET per shard plus the manifest for
// the node, and every window equals the token stream; once with plain shard
// objects and once with zstd frames (strata-pack --compress), decoded by the
// cache on their way from RGW.
#include <gtest/gtest.h>

#include "data/store/s3_source.h"
#include "rgw_env.h"
#include "token_loader_test_util.h"

using namespace strata::data;
using namespace strata::data::testing;

namespace {

void two_processes_two_epochs(const std::string& compress) {
  const std::string bucket = "tokens-" + compress + "-" + std::to_string(::getpid());
  auto root = scratch_dir("rgw-tokens-" + compress);
  // Packed in a child: a forked process inherits its parent's thread-local curl
  // handle, and two children reusing the parent's keep-alive connection would
  // read each other's responses. 20000 tokens in shards of 1000: windows of 64
  // cross shard boundaries.
  ASSERT_EQ(run_children(1,
                         [&](int, const std::function<void()>& ready) {
                           ready();
                           create_bucket(bucket, rgw_options());
                           const Manifest m = pack_counting(root, "s3://" + bucket + "/counting", 20000, 1000,
                                                            0, rgw_options(), nullptr, compress);
                           std::ofstream(root / "manifest.json") << m.to_json();
                           return 0;
                         }),
            std::vector<int>{0});
  const Manifest m = [&] {
    std::ifstream in(root / "manifest.json");
    return Manifest::from_json(std::string(std::istreambuf_iterator<char>(in), {}), "packed manifest");
  }();
  ASSERT_EQ(m.shards.size(), 20u);
  ASSERT_EQ(m.object_compression, compress);
  const std::string url = "s3://" + bucket + "/counting/train";
  const int procs = 2;
  const int64_t t = 64, batch = 8;  // 312 windows, global batch 16: 19 steps
  auto codes = run_children(procs, [&](int rank, const std::function<void()>& ready) {
    TokenLoaderOptions o = token_options(url, root / "cache", t, batch);
    o.source = rgw_options();
    o.rank = rank;
    o.world_size = procs;
    o.local_ranks = procs;
    TokenLoader l(o);
    ready();
    int64_t misses = 0;
    for (int64_t e = 0; e < 2; ++e) {
      if (windows_of(epoch(l, e), t).size() != 19 * batch) return 5;
      misses += l.metrics().cache_misses;
    }
    write_count(root / ("requests." + std::to_string(rank)), l.source().stats().requests);
    write_count(root / ("bytes." + std::to_string(rank)), l.source().stats().bytes);
    write_count(root / ("misses." + std::to_string(rank)), misses);
    return ::testing::Test::HasFailure() ? 6 : 0;
  });
  ASSERT_EQ(codes, std::vector<int>(procs, 0));
  int64_t requests = 0, bytes = 0, misses = 0;
  for (int r = 0; r < procs; ++r) {
    requests += read_count(root / ("requests." + std::to_string(r)));
    bytes += read_count(root / ("bytes." + std::to_string(r)));
    misses += read_count(root / ("misses." + std::to_string(r)));
  }
  EXPECT_EQ(requests, static_cast<int64_t>(m.shards.size()) + 1) << "one GET per shard plus the manifest";
  EXPECT_EQ(misses, static_cast<int64_t>(m.shards.size()));
  EXPECT_GE(bytes, m.total_bytes());
  EXPECT_LT(bytes, m.total_bytes() + 100'000);  // the shards and a manifest, nothing else
  if (compress != "none") {
    EXPECT_LT(m.total_bytes(), m.total_staged_bytes() / 2) << "the frames are what the store sends";
  }
}

TEST(RgwTokenLoader, TwoProcessesTwoEpochsOneGetPerShard) { two_processes_two_epochs("none"); }

TEST(RgwTokenLoader, ZstdFramesTwoProcessesTwoEpochsOneGetPerShard) { two_processes_two_epochs("zstd"); }

}  // namespace
