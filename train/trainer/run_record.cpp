#include "train/trainer/run_record.h"

#include <unistd.h>

#include <ctime>
#include <nlohmann/json.hpp>

#include "base/build_info.h"

namespace strata {

void RunRecord::fill_from_this_process(int ranks) {
  strata_version = strata::strata_version();
  git_commit = strata_git_commit();
  char name[256] = {};
  host = ::gethostname(name, sizeof name - 1) == 0 ? name : "unknown";
  world_size = ranks;
  const std::time_t t = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  started_at = stamp;
}

std::string RunRecord::to_json() const {
  nlohmann::json j;
  j["command_line"] = command_line;
  j["overrides"] = overrides;
  j["config_file"] = config_file;
  j["strata_version"] = strata_version;
  j["git_commit"] = git_commit;
  j["host"] = host;
  j["world_size"] = world_size;
  j["started_at"] = started_at;
  return j.dump(2);
}

}  // namespace strata
