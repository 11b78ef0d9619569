// The staging loader fetching shards in ranged parts from the test RGW
// (fixture "rgw"): the batches are the same as with one GET per shard, every
// shard still passes its checksum (the cache verifies each download), and
// DataMetrics / io_totals count every part request and every byte once.
#include <gtest/gtest.h>

#include "data/loader/loader.h"
#include "data/store/s3_source.h"
#include "loader_test_util.h"
#include "rgw_env.h"

using namespace strata::data;
using namespace strata::data::testing;

namespace {

constexpr int64_t kPart = 1 << 20;

struct EpochRun {
  std::vector<std::byte> bytes;  // every field of every batch, in order
  strata::DataMetrics metrics;
  strata::IoTotals totals;
};

EpochRun one_epoch(const std::string& url, int connections, const fs::path& cache) {
  LoaderOptions o;
  o.url = url;
  o.source = rgw_options();
  o.source.parts.connections = connections;
  o.source.parts.part_bytes = kPart;
  o.cache_dir = cache;
  o.cache_bytes = 400'000'000;
  o.seed = 5;
  o.batch_size = 100;
  o.lookahead_bytes = 20'000'000;
  fs::remove_all(cache);
  Loader loader(o);
  EpochRun r;
  loader.start_epoch(0);
  strata::HostBatch b;
  while (loader.next(b))
    for (const auto& f : b.fields) r.bytes.insert(r.bytes.end(), f.bytes.begin(), f.bytes.end());
  r.metrics = loader.metrics();
  r.totals = loader.io_totals();
  return r;
}

}  // namespace

TEST(RgwRangedLoader, PartsGiveTheSameBatchesAndCountEveryRequest) {
  const std::string bucket = "loader-ranged-" + std::to_string(::getpid());
  create_bucket(bucket, rgw_options());
  PackOptions p;
  p.out_url = "s3://" + bucket + "/fmnist";
  p.shard_bytes = 6'000'000;  // 8 shards of 6 parts and a shorter last one
  p.source = rgw_options();
  const std::string root = "/usr/share/datasets/fashion-mnist/";
  const Manifest m = pack_idx(root + "train-images-idx3-ubyte.gz", root + "train-labels-idx1-ubyte.gz", p);
  ASSERT_GE(m.shards.size(), 6u);
  int64_t part_requests = 0;
  for (const auto& s : m.shards) part_requests += (s.bytes + kPart - 1) / kPart;

  auto dir = scratch_dir("rgw-ranged");
  const EpochRun single = one_epoch(p.out_url, 1, dir / "single");
  const EpochRun ranged = one_epoch(p.out_url, 4, dir / "ranged");
  ASSERT_FALSE(single.bytes.empty());
  EXPECT_TRUE(ranged.bytes == single.bytes) << "ranged shards must give the same batches";

  const int64_t shards = static_cast<int64_t>(m.shards.size());
  EXPECT_EQ(single.metrics.remote_requests, shards);
  EXPECT_EQ(ranged.metrics.remote_requests, part_requests);
  EXPECT_EQ(ranged.metrics.remote_bytes, m.total_bytes());
  EXPECT_EQ(ranged.metrics.remote_bytes, single.metrics.remote_bytes);
  EXPECT_EQ(ranged.metrics.cache_misses, shards);
  EXPECT_EQ(ranged.metrics.retries, 0) << "no checksum refetch, no retried part";
  EXPECT_EQ(ranged.totals.remote_requests, part_requests + 1) << "the parts and the manifest";
  EXPECT_EQ(ranged.totals.remote_bytes, single.totals.remote_bytes);
}
