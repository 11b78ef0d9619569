#include "data/loader/node_budget.h"

#include <algorithm>
#include <map>

#include "base/error.h"

namespace strata::data {

std::vector<int64_t> split_node_budget(const std::vector<DatasetNeed>& datasets, int64_t budget) {
  // One directory per URL: datasets that name the same URL share it, and its cap.
  struct Dir {
    int64_t need = 0;
    bool train = false;
  };
  std::map<std::string, Dir> dirs;
  int trains = 0;
  for (const auto& d : datasets) {
    if (d.need < 0) throw ConfigError("node budget: " + d.key + " has a negative need");
    Dir& dir = dirs[d.url];
    dir.need = std::max(dir.need, d.need);
    dir.train = dir.train || d.train;
    trains += d.train ? 1 : 0;
  }
  if (trains > 1) throw ConfigError("node budget: more than one training dataset");
  int64_t total = 0, eval = 0;
  for (const auto& [url, dir] : dirs) {
    total += dir.need;
    if (!dir.train) eval += dir.need;
  }
  if (total > budget) {
    std::string each;
    for (size_t i = 0; i < datasets.size(); ++i) {
      const auto& d = datasets[i];
      each += (each.empty() ? "" : "; ") + d.key + " '" + d.url + "' needs " + std::to_string(d.need);
      for (size_t j = 0; j < i; ++j)
        if (datasets[j].url == d.url) {
          each += " (the directory of " + datasets[j].key + ": counted once, the larger need)";
          break;
        }
    }
    throw ConfigError("data.cache_bytes " + std::to_string(budget) +
                      " bytes is the node's cache budget for all of this job's datasets, and they need " +
                      std::to_string(total) + " bytes in the cache at once (" + each +
                      "); set data.cache_bytes to at least " + std::to_string(total) +
                      " (docs/cache-sizing.md)");
  }
  std::vector<int64_t> caps;
  for (const auto& d : datasets) {
    const Dir& dir = dirs.at(d.url);
    caps.push_back(dir.train ? budget - eval : dir.need);
  }
  return caps;
}

}  // namespace strata::data
