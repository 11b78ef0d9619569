// strata-elastic's pure parts: the hostfile and discovery formats, and the
// global batch split over a rank count (distributed/elastic).
#include <gtest/gtest.h>

#include "base/error.h"
#include "distributed/elastic/batch_split.h"
#include "distributed/elastic/membership.h"

namespace strata::elastic {
namespace {

TEST(ElasticMembership, HostfileLinesCommentsAndRepeatedHosts) {
  auto h = parse_hostfile(
      "# pool\nnode1 slots=2\n\nnode2 slots=1 max_slots=4  # spare\nnode1 slots=1\nnode3\n", "hosts");
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].name, "node1");
  EXPECT_EQ(h[0].slots, 3);
  EXPECT_EQ(h[1].slots, 1);
  EXPECT_EQ(h[2].slots, 1);  // no slots=: one
  EXPECT_EQ(total_slots(h), 5);
  EXPECT_EQ(to_hostfile(h), "node1 slots=3\nnode2 slots=1\nnode3 slots=1\n");
  EXPECT_EQ(describe(h), "node1:3,node2:1,node3:1");
  try {
    parse_hostfile("node1 slots=2\nnode2 slots=two\n", "hosts");
    FAIL() << "a bad slot count was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("hosts:2: slots 'two' is not a count"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_hostfile("node1 cpus=2\n", "hosts"), ConfigError);
}

TEST(ElasticMembership, DiscoveryHostColonSlots) {
  auto h = parse_discovery("10.0.0.1:4\n10.0.0.2\n\n10.0.0.3:0\n", "discovery output");
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].slots, 4);
  EXPECT_EQ(h[1].slots, 1);
  EXPECT_EQ(total_slots(h), 5);
  EXPECT_EQ(to_hostfile(h), "10.0.0.1 slots=4\n10.0.0.2 slots=1\n");  // a host of 0 slots is left out
  EXPECT_THROW(parse_discovery("node1 slots=2\n", "discovery output"), ConfigError);
  EXPECT_THROW(parse_discovery(":3\n", "discovery output"), ConfigError);
  EXPECT_TRUE(parse_discovery("", "discovery output").empty());
}

TEST(ElasticBatchSplit, KeepsTheGlobalBatchWithTheSameAccumulation) {
  EXPECT_EQ(split_global_batch(60, 1, 2, 8).batch, 30);
  EXPECT_EQ(split_global_batch(60, 1, 3, 8).batch, 20);
  BatchSplit s = split_global_batch(240, 2, 4, 8);
  EXPECT_EQ(s.batch, 30);
  EXPECT_EQ(s.accumulate, 2);
  EXPECT_EQ(compatible_world_sizes(60, 1, 8), (std::vector<int>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(largest_compatible(60, 1, 2, 7), 6);
  EXPECT_EQ(largest_compatible(61, 1, 2, 8), 0);
  try {
    split_global_batch(64, 1, 3, 8);
    FAIL() << "64 over 3 ranks was split";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(
        e.what(),
        "the global batch G=64 does not split over W=3 ranks: data.batch_size x trainer.accumulate (1) "
        "x 3 = 64 has no integer data.batch_size; rank counts up to 8 that do: 1, 2, 4, 8");
  }
}

}  // namespace
}  // namespace strata::elastic
