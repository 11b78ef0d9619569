#include "distributed/device_choice.h"

#include "base/error.h"

namespace strata {

DeviceChoice choose_device(const std::string& setting, const LaunchEnv& env,
                           const cuda::DeviceStatus& status) {
  if (setting != "auto" && setting != "cpu" && setting != "cuda")
    throw ConfigError("device: expected auto, cpu or cuda, got '" + setting + "'");
  DeviceChoice c;
  c.label = "cpu";
  if (setting == "cpu") return c;
  if (status.device_count <= 0) {
    if (setting == "auto") return c;
    throw ConfigError("device: cuda, but rank " + std::to_string(env.rank) + " sees no CUDA device (" +
                      status.reason + "); set device: cpu or auto, or run where a GPU is visible");
  }
  c.device = Device::cuda;
  c.index = select_device(env, status.device_count);
  c.label = "cuda:" + std::to_string(c.index) + (status.name.empty() ? "" : " (" + status.name + ")");
  return c;
}

DeviceChoice use_device(const std::string& setting, const LaunchEnv& env) {
  // device: cpu asks nothing of CUDA (no driver call, no context)
  DeviceChoice c =
      choose_device(setting, env, setting == "cpu" ? cuda::DeviceStatus{} : cuda::device_status());
  if (c.device == Device::cuda) cuda::set_device(c.index);
  return c;
}

}  // namespace strata
