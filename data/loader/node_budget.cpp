#include "data/loader/node_budget.h"

#include "base/error.h"

namespace strata::data {

std::vector<int64_t> split_node_budget(const std::vector<DatasetNeed>& datasets, int64_t budget) {
  int64_t total = 0, trains = 0;
  for (const auto& d : datasets) {
    if (d.need < 0) throw ConfigError("node budget: " + d.key + " has a negative need");
    total += d.need;
    trains += d.train ? 1 : 0;
  }
  if (trains > 1) throw ConfigError("node budget: more than one training dataset");
  if (total > budget) {
    std::string each;
    for (const auto& d : datasets)
      each += (each.empty() ? "" : "; ") + d.key + " '" + d.url + "' needs " + std::to_string(d.need);
    throw ConfigError("data.cache_bytes " + std::to_string(budget) +
                      " bytes is the node's cache budget for all of this job's datasets, and they need " +
                      std::to_string(total) + " bytes in the cache at once (" + each +
                      "); set data.cache_bytes to at least " + std::to_string(total) +
                      " (docs/cache-sizing.md)");
  }
  std::vector<int64_t> caps;
  int64_t eval = 0;
  for (const auto& d : datasets)
    if (!d.train) eval += d.need;
  for (const auto& d : datasets) caps.push_back(d.train ? budget - eval : d.need);
  return caps;
}

}  // namespace strata::data
