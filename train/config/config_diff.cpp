#include "train/config/config_diff.h"

#include <algorithm>

#include "train/config/schema.h"

namespace strata {

std::vector<std::string> config_differences(const TrainConfig& before, const TrainConfig& now,
                                            const std::vector<std::string>& ignore_sections) {
  std::vector<std::string> out;
  for (const ConfigKey& key : config_schema()) {
    if (std::find(ignore_sections.begin(), ignore_sections.end(), key.section()) != ignore_sections.end())
      continue;
    const std::string a = format_config_value(key, before), b = format_config_value(key, now);
    if (a != b) out.push_back(key.path + ": " + a + " -> " + b);
  }
  return out;
}

}  // namespace strata
