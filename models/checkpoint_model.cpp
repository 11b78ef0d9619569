#include "models/checkpoint_model.h"

#include <set>

#include "base/error.h"
#include "core/autograd.h"
#include "train/checkpoint/checkpoint_rotation.h"
#include "train/config/load.h"

namespace strata::models {
namespace fs = std::filesystem;

namespace {
std::string where(const Checkpoint& ck) {
  return "checkpoint '" + (ck.source.empty() ? std::string("<in memory>") : ck.source) + "'";
}
}  // namespace

fs::path resolve_checkpoint_path(const fs::path& path_or_run_dir) {
  std::error_code ec;
  if (!fs::exists(path_or_run_dir, ec))
    throw IoError("checkpoint '" + path_or_run_dir.string() + "': no such file or directory");
  if (!fs::is_directory(path_or_run_dir, ec)) return path_or_run_dir;
  fs::path dir = path_or_run_dir / "checkpoints";
  if (!fs::is_directory(dir, ec)) dir = path_or_run_dir;
  if (auto latest = find_latest_checkpoint(dir)) return *latest;
  throw IoError("checkpoint: no valid checkpoint (*.h5 with /trainer/step) in '" + dir.string() + "'");
}

TrainConfig checkpoint_config(const Checkpoint& ck) {
  if (ck.resolved_yaml.empty()) throw ConfigError(where(ck) + ": no /config/resolved_yaml");
  return parse_config(ck.resolved_yaml, where(ck) + " /config/resolved_yaml");
}

void load_model_weights(Module& model, const Checkpoint& ck) {
  NamedTensors wanted = model.named_parameters();
  for (auto& nb : model.named_buffers()) wanted.push_back(nb);
  std::set<std::string> used;
  NoGradGuard no_grad;
  for (auto& [name, t] : wanted) {
    auto it = ck.model.find(name);
    if (it == ck.model.end())
      throw IoError(where(ck) + ": the model's tensor '" + name + "' " + shape_str(t.shape()) +
                    " is missing from /model");
    if (it->second.shape() != t.shape())
      throw ShapeError(where(ck) + ": /model/" + name + " has shape " + shape_str(it->second.shape()) +
                       ", the model's tensor has " + shape_str(t.shape()));
    t.copy_(it->second);
    used.insert(name);
  }
  for (auto& [name, t] : ck.model)
    if (!used.count(name))
      throw IoError(where(ck) + ": /model/" + name + " " + shape_str(t.shape()) +
                    " is not a tensor of the model (wrong config, or another model's checkpoint)");
}

CheckpointModel load_checkpoint_model(const Checkpoint& ck, std::vector<int64_t> input_shape) {
  CheckpointModel out;
  out.config = checkpoint_config(ck);
  out.spec = spec_from_config(out.config, std::move(input_shape));
  out.model = build_model(out.spec);
  load_model_weights(*out.model, ck);
  out.model->eval();
  out.path = ck.source;
  return out;
}

CheckpointModel load_checkpoint_model(const fs::path& path_or_run_dir, std::vector<int64_t> input_shape) {
  return load_checkpoint_model(load_checkpoint(resolve_checkpoint_path(path_or_run_dir)),
                               std::move(input_shape));
}

}  // namespace strata::models
