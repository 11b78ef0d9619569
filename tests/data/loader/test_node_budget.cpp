// One node budget for a job's datasets (node_budget.h): the evaluation datasets
// get their need, the training dataset the rest, the caps never sum to more
// than the budget, and a budget below the needs is one ConfigError naming every
// dataset, its need, the budget and the least data.cache_bytes that runs.
#include <gtest/gtest.h>

#include <numeric>

#include "base/error.h"
#include "data/loader/node_budget.h"

using namespace strata::data;

namespace {

std::vector<DatasetNeed> job(int64_t train, int64_t test, int64_t val) {
  return {{"data.train_url", "file://d/train", train, true},
          {"data.test_url", "file://d/test", test, false},
          {"data.val_url", "file://d/val", val, false}};
}

TEST(NodeBudget, EvaluationGetsItsNeedTrainingTheRest) {
  const auto caps = split_node_budget(job(100, 30, 20), 1000);
  ASSERT_EQ(caps.size(), 3u);
  EXPECT_EQ(caps[0], 950);
  EXPECT_EQ(caps[1], 30);
  EXPECT_EQ(caps[2], 20);
  EXPECT_EQ(std::accumulate(caps.begin(), caps.end(), int64_t{0}), 1000);
}

TEST(NodeBudget, CapsNeverSumToMoreThanTheBudget) {
  for (int64_t budget = 150; budget <= 400; budget += 7) {
    const auto caps = split_node_budget(job(100, 30, 20), budget);
    EXPECT_LE(std::accumulate(caps.begin(), caps.end(), int64_t{0}), budget);
    EXPECT_GE(caps[0], 100) << "the training dataset gets at least its need";
  }
  // exactly the needs: every dataset gets its own
  EXPECT_EQ(split_node_budget(job(100, 30, 20), 150), (std::vector<int64_t>{100, 30, 20}));
}

TEST(NodeBudget, TooSmallNamesEveryDatasetAndWhatToSet) {
  try {
    split_node_budget(job(100, 30, 20), 149);
    FAIL() << "149 bytes passed for needs of 150";
  } catch (const strata::ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("data.cache_bytes 149 bytes is the node's cache budget"), std::string::npos) << m;
    EXPECT_NE(m.find("data.train_url 'file://d/train' needs 100"), std::string::npos) << m;
    EXPECT_NE(m.find("data.test_url 'file://d/test' needs 30"), std::string::npos) << m;
    EXPECT_NE(m.find("data.val_url 'file://d/val' needs 20"), std::string::npos) << m;
    EXPECT_NE(m.find("set data.cache_bytes to at least 150"), std::string::npos) << m;
  }
}

TEST(NodeBudget, OneUrlIsOneDirectoryCountedOnce) {
  // test = train (one directory): the larger need, and the training dataset's cap
  const std::vector<DatasetNeed> same{{"data.train_url", "file://d", 100, true},
                                      {"data.test_url", "file://d", 120, false}};
  EXPECT_EQ(split_node_budget(same, 120), (std::vector<int64_t>{120, 120}));
  EXPECT_THROW(split_node_budget(same, 119), strata::ConfigError);
  // test = val: one cap, the larger need
  EXPECT_EQ(split_node_budget(job(100, 30, 20), 1000)[1], 30);
  const std::vector<DatasetNeed> evals{{"data.train_url", "file://t", 100, true},
                                       {"data.test_url", "file://e", 30, false},
                                       {"data.val_url", "file://e", 20, false}};
  EXPECT_EQ(split_node_budget(evals, 200), (std::vector<int64_t>{170, 30, 30}));
  try {
    split_node_budget(evals, 129);
    FAIL() << "129 bytes passed for needs of 130";
  } catch (const strata::ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("data.val_url 'file://e' needs 20 (the directory of data.test_url"), std::string::npos)
        << m;
    EXPECT_NE(m.find("at least 130"), std::string::npos) << m;
  }
}

TEST(NodeBudget, TrainingAloneGetsTheWholeBudget) {
  EXPECT_EQ(split_node_budget({{"data.train_url", "u", 10, true}}, 64), (std::vector<int64_t>{64}));
}

}  // namespace
