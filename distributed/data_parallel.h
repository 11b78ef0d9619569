// DataParallel: one model replica per rank, kept identical.
//  - construction: every rank must have built the same model (names, shapes and
//    dtypes of parameters and buffers; a mismatch is a CommError naming the first
//    differing entry and the ranks), then rank 0's parameters and buffers are
//    broadcast to all;
//  - BucketedGradientSync: gradients in buckets (reverse parameter order, a small
//    first bucket) on the parameters' device, each bucket's allreduce (avg)
//    started from the grad-ready hooks the moment its last gradient is produced,
//    so communication overlaps the rest of backward; finish() waits (on the
//    device, by event, for NCCL) and copies the averages back;
//  - sync_buffers(): BatchNorm running statistics averaged over ranks (policy in
//    docs/data-parallel.md; the trainer calls it through Trainer::set_buffer_sync).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "core/module.h"
#include "train/config/train_config.h"
#include "train/trainer/grad_sync.h"

namespace strata {

struct BucketOptions {
  size_t first_bucket_bytes = 1ull << 20;  // the first bucket (the last layers) starts early
  size_t bucket_bytes = 25ull << 20;       // the others (caps in bytes of reduce_dtype)
  // The dtype of the bucket buffers, i.e. what goes over the wire: f32, bf16 or f16.
  // Gradients are converted into the bucket and the averages back into each
  // gradient's own dtype; how 16-bit sums accumulate is the communicator's choice
  // (docs/data-parallel.md).
  DType reduce_dtype = DType::f32;
  // distributed.reduce_dtype; other values are a ConfigError naming the key.
  static BucketOptions from_config(const DistributedConfig& c);
};

// Cumulative figures of the steps that synced (begin_step(true) ... finish()),
// by host clocks. On the NCCL path (reduces_on_device()) the host never waits for
// the device, so wait_seconds is only the queuing of the event waits and "seen
// complete" means seen by the host; the device-side overlap shows in Nsight.
struct GradSyncStats {
  int64_t steps = 0;                // finish() calls that synced
  int64_t allreduces = 0;           // bucket allreduces started
  int64_t started_in_backward = 0;  // of those, started from a grad-ready hook
  double wait_seconds = 0;          // in finish(): waiting for buckets (after backward)
  double finish_seconds = 0;        // all of finish(), copies included
  double comm_seconds = 0;          // per step: first bucket start -> last bucket seen complete
  double bucket_seconds = 0;        // sum over buckets of start -> seen complete
};

class BucketedGradientSync final : public GradientSync {
 public:
  // `params` in registration order (Module::named_parameters()); FP32 masters.
  BucketedGradientSync(Communicator& comm, NamedTensors params, BucketOptions options = {});
  ~BucketedGradientSync() override;  // completes anything in flight; hooks become no-ops

  void begin_step(bool sync) override;
  void finish() override;

  size_t num_buckets() const;
  // Parameter names per bucket, bucket 0 first (launch order).
  std::vector<std::vector<std::string>> bucket_names() const;
  // Buckets whose allreduce is in flight or done in the current step.
  size_t buckets_started() const;
  // True when the buckets live on the device and a stream-ordered communicator
  // (NCCL) reduces them there: no host copy and no host wait in the step.
  bool reduces_on_device() const;
  const GradSyncStats& stats() const;
  void reset_stats();
  // Test/trace hook: called as bucket `b` starts (in_backward: from a grad-ready hook).
  void set_on_bucket_start(std::function<void(size_t b, bool in_backward)> fn);

 private:
  struct State;
  std::shared_ptr<State> state_;  // the parameters' hooks hold a weak_ptr to it
};

class DataParallel {
 public:
  // Checks that every rank built the same model, then broadcasts rank 0's
  // parameters and buffers. Collective: every rank of `comm` must call it.
  DataParallel(Communicator& comm, std::shared_ptr<Module> model, BucketOptions options = {});

  // A gradient sync over the model's parameters for Trainer::set_gradient_sync.
  std::unique_ptr<BucketedGradientSync> make_gradient_sync() const;
  // Floating-point buffers (BatchNorm running mean/var) := their average over
  // ranks; integer buffers := rank 0's. Collective.
  void sync_buffers();

  Module& module() { return *model_; }
  Communicator& comm() { return comm_; }

 private:
  Communicator& comm_;
  std::shared_ptr<Module> model_;
  BucketOptions options_;
};

// The check DataParallel's constructor makes: throws CommError on every rank
// when ranks disagree on the parameter/buffer names, shapes or dtypes.
void check_same_model(Communicator& comm, const Module& model);
// Copies rank `root`'s parameters and buffers to every rank.
void broadcast_model(Communicator& comm, Module& model, int root = 0);
// Runs `op` on memory `comm` takes holding the contiguous tensor t: t's own (a
// host tensor, or a device tensor with a stream-ordered communicator such as
// NCCL), else a host copy that is copied back into t afterwards.
void on_comm_memory(Communicator& comm, Tensor& t, const std::function<void(void*)>& op);

}  // namespace strata
