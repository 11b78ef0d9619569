// Checkpoint: everything a run needs to resume, as one value, and its HDF5 file.
//
//   /                      attrs: format = "strata-checkpoint", version = 1
//   /model/<name>          FP32 parameters and buffers (integer buffers as int64)
//   /optimizer/<name>      FP32 optimizer state tensors ("<param>.<slot>")
//   /trainer/<key>         int64 or float64 scalars: step, epoch, optimizer_step,
//                          best_metric, best_epoch, patience_counter, metric,
//                          scaler_scale, scaler_growth_tracker, ...
//   /rng/<name>            generator states (UTF-8 strings)
//   /config/resolved_yaml  the resolved config (UTF-8 string)
//   /loader/<key>          int64 loader position
//   /schedule/name         the schedule's name (string); /schedule/<key> float64 state
//
// save_checkpoint writes `path.tmp.<host>.<pid>.<n>`, flushes and fsyncs it,
// renames it over `path` and fsyncs the directory (base/atomic_file.h), so a
// crash never leaves a file at `path` that looks whole and is not (the trainer
// sweeps crashed writers' temporaries). Every error is a strata::IoError naming
// the file and the entry.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "core/tensor.h"
#include "nn/schedule/schedule.h"

namespace strata {

// The /trainer keys the trainer and the helpers in checkpoint_state.h use.
namespace ckpt_key {
inline constexpr const char* step = "step";                      // int64: optimizer steps done
inline constexpr const char* epoch = "epoch";                    // int64
inline constexpr const char* optimizer_step = "optimizer_step";  // int64: the optimizer's counter
inline constexpr const char* metric = "metric";            // float64: eval metric at this save (rotation)
inline constexpr const char* best_metric = "best_metric";  // float64
inline constexpr const char* best_epoch = "best_epoch";    // int64
inline constexpr const char* patience_counter = "patience_counter";            // int64
inline constexpr const char* scaler_scale = "scaler_scale";                    // float64
inline constexpr const char* scaler_growth_tracker = "scaler_growth_tracker";  // int64
}  // namespace ckpt_key

struct Checkpoint {
  std::map<std::string, Tensor> model;
  std::map<std::string, Tensor> optimizer;
  std::map<std::string, int64_t> ints;    // /trainer, int64
  std::map<std::string, double> scalars;  // /trainer, float64
  std::map<std::string, std::string> rng;
  std::string resolved_yaml;
  std::map<std::string, int64_t> loader;
  ScheduleState schedule;
  std::string source;  // the file it was loaded from ("" when built in memory), for messages

  // Lookups that throw IoError naming the file and the missing or ill-typed entry.
  const Tensor& model_tensor(const std::string& name) const;
  const Tensor& optimizer_tensor(const std::string& name) const;
  int64_t int_value(const std::string& key) const;
  double scalar_value(const std::string& key) const;
  const std::string& rng_state(const std::string& name) const;
  int64_t loader_value(const std::string& key) const;
};

void save_checkpoint(const Checkpoint& ck, const std::filesystem::path& path);
Checkpoint load_checkpoint(const std::filesystem::path& path);

// What rotation and auto-resume need, read without loading the tensors.
struct CheckpointInfo {
  std::filesystem::path path;
  int64_t step = 0;
  std::optional<double> metric;  // /trainer/metric when present and finite
};
CheckpointInfo read_checkpoint_info(const std::filesystem::path& path);

}  // namespace strata
