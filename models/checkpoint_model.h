// A model back from a checkpoint: the run's resolved config (stored in the
// checkpoint) rebuilds the model through the registry, and the checkpoint's
// /model tensors are copied in by name. For tools that use a trained model
// outside the trainer (strata-generate; strata-export reads the config only).
#pragma once
#include <filesystem>
#include <memory>
#include <vector>

#include "core/module.h"
#include "models/registry.h"
#include "train/checkpoint/checkpoint.h"
#include "train/config/train_config.h"

namespace strata::models {

struct CheckpointModel {
  std::shared_ptr<Module> model;  // on the host, in eval mode
  TrainConfig config;             // parsed from the checkpoint's resolved_yaml
  ModelSpec spec;
  std::filesystem::path path;  // the checkpoint file it came from ("" when built in memory)
};

// `path` itself when it is a file; for a directory, the latest valid checkpoint
// (find_latest_checkpoint) in <dir>/checkpoints (a run directory), else in <dir>.
// Throws IoError naming what was searched when there is none.
std::filesystem::path resolve_checkpoint_path(const std::filesystem::path& path_or_run_dir);

// The checkpoint's resolved config; ConfigError (naming the checkpoint) when it
// has none or it does not parse.
TrainConfig checkpoint_config(const Checkpoint& ck);

// Copies ck.model into `model`'s parameters and persistent buffers by name. A
// name the model has and the checkpoint lacks, or the reverse, is an IoError; a
// shape that differs is a ShapeError; each names the tensor and the checkpoint.
void load_model_weights(Module& model, const Checkpoint& ck);

// Builds the model the checkpoint's config names and loads its weights. Image
// models need the per-sample input shape (C, H, W), which the checkpoint does
// not store; token models take none.
CheckpointModel load_checkpoint_model(const Checkpoint& ck, std::vector<int64_t> input_shape = {});
// The same from a checkpoint file or run directory (resolve_checkpoint_path).
CheckpointModel load_checkpoint_model(const std::filesystem::path& path_or_run_dir,
                                      std::vector<int64_t> input_shape = {});

}  // namespace strata::models
