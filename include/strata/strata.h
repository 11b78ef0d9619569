// strata's public C++ API in one include: #include <strata/strata.h>.
//
// This list is the public API by definition: `cmake --install` installs this file
// and every header it reaches through its includes (cmake/StrataInstallHeaders.cmake),
// and no other. A header left out of this list and of the includes of the ones in
// it is private (docs/api.md, "Headers"). Each header can also be included alone,
// as <strata/core/tensor.h>.
#pragma once

// errors
#include "base/error.h"

// tensors, devices, memory
#include "core/storage.h"
#include "core/tensor.h"
#include "kernels/device_ops.h"
#include "kernels/runtime/allocator.h"
#include "kernels/runtime/device.h"
#include "kernels/runtime/dtype.h"

// ops, autograd, modules, initialisation, mixed precision
#include "core/autograd.h"
#include "core/init.h"
#include "core/module.h"
#include "core/ops.h"
#include "core/precision.h"
#include "core/random.h"
#include "nn/loss_scaler.h"
#include "nn/modules/modules.h"

// optimisation
#include "nn/grad_clip.h"
#include "nn/optim/adamw.h"
#include "nn/optim/sgd.h"
#include "nn/schedule/one_cycle.h"
#include "nn/schedule/plateau.h"
#include "nn/schedule/step_schedules.h"
#include "nn/schedule/warmup.h"
#include "train/early_stopping.h"
#include "train/make_optimizer.h"
#include "train/make_schedule.h"

// configuration, training loop, checkpoints
#include "core/batch_source.h"
#include "core/communicator.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/safetensors.h"
#include "train/config/config.h"
#include "train/config/load.h"
#include "train/config/to_yaml.h"
#include "train/trainer/causal_lm_task.h"
#include "train/trainer/classification_task.h"
#include "train/trainer/memory_source.h"
#include "train/trainer/trainer.h"

// data: sources, shards, loaders, packing
#include "data/format/idx.h"
#include "data/format/manifest.h"
#include "data/format/packer.h"
#include "data/format/shard.h"
#include "data/format/token_packer.h"
#include "data/loader/loader.h"
#include "data/loader/token_loader.h"
#include "data/store/file_source.h"
#include "data/store/http_source.h"
#include "data/store/s3_source.h"
#include "data/store/source.h"

// distributed: launch environment, communicators, data parallel
#include "distributed/data_parallel.h"
#include "distributed/launch_env.h"
#include "distributed/mpi_communicator.h"

// models
#include "models/checkpoint_export.h"
#include "models/checkpoint_model.h"
#include "models/generate.h"
#include "models/registry.h"
#include "models/resnet.h"
#include "models/sampling.h"
