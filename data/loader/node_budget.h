// One node budget for all the datasets of a job (docs/cache-sizing.md, "One
// budget per node"). Every dataset URL has its own cache directory under the
// cache root, each with its own cap; split_node_budget chooses those caps so
// that together they never exceed data.cache_bytes: each evaluation dataset
// gets the bytes it needs at once, the training dataset the rest.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace strata::data {

struct DatasetNeed {
  std::string key;  // the config key that gave the URL ("data.test_url")
  std::string url;
  int64_t need = 0;    // node bytes that must be in its cache at once (all local ranks)
  bool train = false;  // the one dataset that gets what the others leave
};

// The cap of each dataset, in the order given: an evaluation dataset's is its
// need, the training dataset's the budget less the evaluation caps. Datasets
// with the same URL share one directory, so one cap: the training dataset's
// when one of them is it, else the larger of their needs; the caps of distinct
// URLs sum to at most `budget`. A ConfigError naming every dataset (key, URL, need),
// the budget and the least data.cache_bytes that runs, when the needs add up
// to more than `budget`.
std::vector<int64_t> split_node_budget(const std::vector<DatasetNeed>& datasets, int64_t budget);

}  // namespace strata::data
