#include "train/trainer/task.h"

#include "base/error.h"
#include "train/trainer/causal_lm_task.h"
#include "train/trainer/classification_task.h"

namespace strata {

std::vector<std::string> task_names() { return {"causal_lm", "classification"}; }

std::unique_ptr<Task> make_task(const std::string& name, const TaskOptions& options) {
  if (name == "classification") return std::make_unique<ClassificationTask>(options);
  if (name == "causal_lm") return std::make_unique<CausalLmTask>(options);
  std::string known;
  for (auto& n : task_names()) known += (known.empty() ? "" : ", ") + n;
  throw ConfigError("unknown task '" + name + "' (" + known + ")");
}

std::vector<std::string> monitor_names() {
  std::vector<std::string> out;
  for (auto& t : task_names())
    for (auto& m : make_task(t, {})->metric_names()) {
      std::string name = "val_" + m;
      bool seen = false;
      for (auto& o : out) seen = seen || o == name;
      if (!seen) out.push_back(name);
    }
  return out;
}

}  // namespace strata
