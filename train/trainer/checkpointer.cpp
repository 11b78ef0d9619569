#include "train/trainer/checkpointer.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>

#include "base/atomic_file.h"
#include "base/error.h"
#include "core/autograd.h"
#include "core/random.h"
#include "nn/modules/dropout.h"
#include "train/config/config.h"
#include "train/config/config_diff.h"
#include "train/config/to_yaml.h"

namespace strata {
namespace fs = std::filesystem;

namespace {

constexpr int kWriterNice = 19;  // checkpoint.async's writer thread: this much nicer than the process

void collect_dropouts(const Module& m, const std::string& prefix,
                      std::vector<std::pair<std::string, Dropout*>>& out) {
  for (auto& [name, child] : m.named_children()) {
    std::string path = prefix.empty() ? name : prefix + "." + name;
    if (auto* d = dynamic_cast<Dropout*>(child.get())) out.push_back({path, d});
    collect_dropouts(*child, path, out);
  }
}

}  // namespace

Checkpointer::Checkpointer(const TrainConfig& cfg, std::string run_dir, int rank)
    : cfg_(cfg), run_dir_(std::move(run_dir)), rank_(rank) {}

Checkpointer::~Checkpointer() = default;

Checkpoint Checkpointer::snapshot(const TrainParts& parts, const SourcePosition& loader,
                                  const TrainState& s) {
  Checkpoint ck;
  // Copies in host memory, never views of the live tensors: an asynchronous save
  // writes them while the next steps change the model.
  auto host_copy = [](const Tensor& t) {
    Tensor host = t.to(Device::cpu);  // a copy already unless t is on the host
    return host.same(t) || host.dtype() != DType::f32 ? host.to(DType::f32) : host;
  };
  for (auto& [n, t] : parts.model.named_parameters()) ck.model[n] = host_copy(t);
  for (auto& [n, t] : parts.model.named_buffers()) ck.model[n] = host_copy(t);
  auto os = parts.optimizer.state();
  for (auto& [n, t] : os.tensors) ck.optimizer[n] = t;
  ck.ints[ckpt_key::optimizer_step] = os.step;
  ck.ints[ckpt_key::step] = s.step;
  ck.ints[ckpt_key::epoch] = s.epoch;
  ck.ints["mid_epoch"] = s.mid_epoch ? 1 : 0;
  ck.ints["micro"] = s.micro;
  ck.ints["skipped_steps"] = s.skipped_steps;
  // the epoch's training sums by the task's names: "epoch_sum.loss_sum", ...
  const auto sum_names = parts.task.sum_names();
  const std::vector<double> sums = s.sums.read();  // empty before the epoch's first batch
  for (size_t i = 0; i < sums.size() && i < sum_names.size(); ++i)
    ck.scalars["epoch_sum." + sum_names[i]] = sums[i];
  ck.ints["epochs_done"] = s.epochs_done;
  // the world-size history as ints: world_sizes.n, world_sizes.<i>.{world_size,step,unix_time}
  ck.ints["world_sizes.n"] = static_cast<int64_t>(s.world_sizes.size());
  for (size_t i = 0; i < s.world_sizes.size(); ++i) {
    const std::string k = "world_sizes." + std::to_string(i) + ".";
    ck.ints[k + "world_size"] = s.world_sizes[i].world_size;
    ck.ints[k + "step"] = s.world_sizes[i].step;
    ck.ints[k + "unix_time"] = s.world_sizes[i].unix_time;
  }
  ck.ints[ckpt_key::best_epoch] = s.best.best_epoch;
  ck.ints["have_best"] = s.best.have_best ? 1 : 0;
  ck.ints[ckpt_key::patience_counter] = s.best.early.bad_epochs();
  ck.ints["early_best_epoch"] = s.best.early.best_epoch();
  ck.scalars["early_best"] = s.best.early.best();
  ck.scalars[ckpt_key::best_metric] = s.best.best_metric;
  ck.scalars[ckpt_key::scaler_scale] = parts.scaler.scale();
  ck.ints[ckpt_key::scaler_growth_tracker] = parts.scaler.growth_tracker();
  ck.rng["default"] = default_generator().state();
  std::vector<std::pair<std::string, Dropout*>> drops;
  collect_dropouts(parts.model, "", drops);
  for (auto& [n, d] : drops) ck.rng["dropout." + n] = d->generator().state();
  ck.resolved_yaml = to_yaml(parts.cfg);
  for (auto& [k, v] : loader) ck.loader[k] = v;
  ck.schedule = parts.schedule.state();
  return ck;
}

// A checkpoint of another model is refused before anything is copied, naming
// the checkpoint, the first tensor that does not fit and the config keys that
// differ from the run that saved it (its resolved config is in the file).
void Checkpointer::check_fits(const Checkpoint& ck, const TrainParts& parts) {
  std::string problem;
  auto check = [&](const NamedTensors& tensors, const std::map<std::string, Tensor>& saved,
                   const char* group) {
    for (auto& [n, t] : tensors) {
      if (!problem.empty()) return;
      auto it = saved.find(n);
      if (it == saved.end())
        problem = "this model's " + std::string(group) + " '" + n + "' is not in it";
      else if (it->second.shape() != t.shape())
        problem = std::string(group) + " '" + n + "' is " + shape_str(it->second.shape()) + " there and " +
                  shape_str(t.shape()) + " in this model";
    }
  };
  check(parts.model.named_parameters(), ck.model, "parameter");
  check(parts.model.named_buffers(), ck.model, "buffer");
  if (problem.empty()) return;
  std::string changed;
  try {
    const TrainConfig saved = parse_config(ck.resolved_yaml, "the checkpoint's resolved config");
    for (const std::string& d : config_differences(saved, parts.cfg, {"checkpoint", "outputs", "logging"}))
      changed += (changed.empty() ? "" : "; ") + d;
  } catch (const Error&) {
    changed = "";  // written by another strata version: no key to name
  }
  throw ConfigError("checkpoint '" + ck.source + "' does not fit this model: " + problem +
                    (changed.empty()
                         ? std::string(" (the config keys match; was it saved by another model?)")
                         : "; config keys changed since it was saved (checkpoint -> now): " + changed));
}

void Checkpointer::restore(const Checkpoint& ck, const TrainParts& parts, BatchSource& train, TrainState& s) {
  check_fits(ck, parts);
  // Every entry is looked up before anything is set: a checkpoint that lacks
  // one (IoError) leaves the trainer as it was, and resume=auto tries an older one.
  OptimizerState os;
  os.step = ck.int_value(ckpt_key::optimizer_step);
  os.tensors = ck.optimizer;
  TrainState r;
  r.step = ck.int_value(ckpt_key::step);
  r.epoch = ck.int_value(ckpt_key::epoch);
  r.mid_epoch = ck.int_value("mid_epoch") != 0;
  r.micro = ck.int_value("micro");
  r.skipped_steps = ck.int_value("skipped_steps");
  r.epochs_done = ck.int_value("epochs_done");
  if (ck.ints.count("world_sizes.n"))  // absent from checkpoints written before the history
    for (int64_t i = 0; i < ck.int_value("world_sizes.n"); ++i) {
      const std::string k = "world_sizes." + std::to_string(i) + ".";
      r.world_sizes.push_back(
          {ck.int_value(k + "world_size"), ck.int_value(k + "step"), ck.int_value(k + "unix_time")});
    }
  r.best.best_epoch = ck.int_value(ckpt_key::best_epoch);
  r.best.have_best = ck.int_value("have_best") != 0;
  const EarlyStoppingState early{ck.scalar_value("early_best"), ck.int_value("early_best_epoch"),
                                 ck.int_value(ckpt_key::patience_counter)};
  r.best.best_metric = ck.scalar_value(ckpt_key::best_metric);
  const LossScalerState scaler{ck.scalar_value(ckpt_key::scaler_scale),
                               ck.int_value(ckpt_key::scaler_growth_tracker)};
  const std::string& default_rng = ck.rng_state("default");
  std::vector<std::pair<std::string, Dropout*>> drops;
  collect_dropouts(parts.model, "", drops);
  std::vector<const std::string*> drop_rngs;
  for (auto& [n, d] : drops) drop_rngs.push_back(&ck.rng_state("dropout." + n));
  std::vector<double> sums;
  for (auto& name : parts.task.sum_names()) {
    auto it = ck.scalars.find("epoch_sum." + name);
    if (it == ck.scalars.end()) break;  // saved before the epoch's first batch
    sums.push_back(it->second);
  }

  {
    NoGradGuard no_grad;
    for (auto& [n, t] : parts.model.named_parameters()) t.copy_(ck.model_tensor(n));
    for (auto& [n, t] : parts.model.named_buffers()) t.copy_(ck.model_tensor(n));
  }
  parts.optimizer.load_state(os);
  if (sums.size() == parts.task.sum_names().size()) {
    r.sums = TaskSums(sums.size(), parts.device);
    r.sums.assign(sums);
  }
  r.best.early = std::move(s.best.early);  // its options (mode, patience) are the config's
  r.best.early.load_state(early);
  s = std::move(r);
  parts.scaler.load_state(scaler);
  default_generator().set_state(default_rng);
  for (size_t i = 0; i < drops.size(); ++i) drops[i].second->generator().set_state(*drop_rngs[i]);
  parts.schedule.load_state(ck.schedule);
  if (s.mid_epoch) {
    SourcePosition pos(ck.loader.begin(), ck.loader.end());
    train.restore(pos);
  }
}

void Checkpointer::save(const TrainParts& parts, const SourcePosition& loader, const TrainState& s,
                        double metric, RunLog& log) {
  if (rank_ != 0) return;
  const auto t0 = std::chrono::steady_clock::now();
  auto since_t0 = [&t0] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  double waited = 0;
  if (in_flight_.valid()) {  // one save at a time
    if (in_flight_.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      log.message("checkpoint: the save of step " + std::to_string(s.step) +
                  " waits for the previous one, still being written or uploaded");
    in_flight_.get();
    waited = since_t0();
  }
  flush_notes(log);
  Checkpoint ck = snapshot(parts, loader, s);
  if (std::isfinite(metric)) ck.scalars[ckpt_key::metric] = metric;
  const std::optional<double> kept = std::isfinite(metric) ? std::optional<double>(metric) : std::nullopt;
  if (cfg_.checkpoint.async_save)
    in_flight_ = std::async(std::launch::async, [this, ck = std::move(ck), step = s.step, kept] {
      // Below the training threads: the step loop keeps the cores while the file
      // is written and uploaded (the upload's part threads inherit the priority).
      const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
      ::setpriority(PRIO_PROCESS, tid, std::min(19, ::getpriority(PRIO_PROCESS, tid) + kWriterNice));
      write(ck, step, kept);
    });
  else
    write(ck, s.step, kept);
  const double blocked = since_t0();
  if (!cfg_.checkpoint.async_save) flush_notes(log);  // this save's lines and upload row now
  ++times_.saves;
  times_.blocked_seconds += blocked;
  times_.waited_seconds += waited;
  log.record("checkpoint", s.step,
             {{"blocked_seconds", blocked},
              {"waited_seconds", waited},
              {"async", cfg_.checkpoint.async_save ? 1.0 : 0.0}});
}

void Checkpointer::write(const Checkpoint& ck, int64_t step, std::optional<double> metric) {
  fs::path dir = fs::path(run_dir_) / "checkpoints";
  fs::create_directories(dir);
  sweep_dead_temporaries(dir);  // left by writers killed while saving (a live writer's stays)
  if (!rotation_) {             // adopts the checkpoints already there (a resumed run)
    RotationOptions ro;
    ro.keep_last = cfg_.checkpoint.keep_last;  // 0 keeps every checkpoint
    ro.not_adopted = resume_skipped_;
    ro.notify = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(notes_mu_);
      notes_.push_back(line);
    };
    ro.keep_best = cfg_.checkpoint.keep_best;
    ro.mode = cfg_.early_stopping.mode;  // the monitored metric's direction
    ro.prefix = "step";
    rotation_ = std::make_unique<CheckpointRotation>(dir, ro);
  }
  const fs::path file = rotation_->save(ck);
  if (!on_saved_) return;
  std::map<std::string, double> figures = on_saved_(file, step, metric);
  if (figures.empty()) return;
  std::lock_guard<std::mutex> lock(notes_mu_);
  hook_rows_.emplace_back(step, std::move(figures));
}

void Checkpointer::flush_notes(RunLog& log) {
  std::vector<std::string> notes;
  std::vector<std::pair<int64_t, std::map<std::string, double>>> rows;
  {
    std::lock_guard<std::mutex> lock(notes_mu_);
    notes.swap(notes_);
    rows.swap(hook_rows_);
  }
  for (const std::string& line : notes) log.message(line);
  for (const auto& [step, figures] : rows) log.record("checkpoint_upload", step, figures);
}

void Checkpointer::finish(RunLog& log) {
  if (in_flight_.valid()) in_flight_.get();
  flush_notes(log);
}

void Checkpointer::check_resume_path() const {
  const std::string& r = cfg_.checkpoint.resume;
  if (r.empty() || r == "auto") return;
  std::error_code ec;
  if (!fs::is_regular_file(r, ec))
    throw ConfigError("checkpoint.resume: no checkpoint file at '" + r + "'" +
                      (fs::is_directory(r, ec) ? " (a directory: name a step-*.h5 file, or use auto)" : ""));
}

void Checkpointer::resume(const TrainParts& parts, BatchSource& train, TrainState& s, RunLog& log) {
  const std::string& r = cfg_.checkpoint.resume;
  if (r.empty()) return;
  auto resumed = [&](const fs::path& path) {
    log.message("resumed from " + path.string() + " at step " + std::to_string(s.step) + ", epoch " +
                std::to_string(s.epoch + 1));
  };
  if (r != "auto") {
    restore(load_checkpoint(r), parts, train, s);
    resumed(r);
    return;
  }
  const fs::path dir = fs::path(run_dir_) / "checkpoints";
  CheckpointScan scan = scan_checkpoints(dir);
  std::vector<UnreadableCheckpoint> skipped;
  auto skip = [&](UnreadableCheckpoint u) {
    log.message("resume: auto: skipped " + u.path.string() + ": " + u.reason);
    resume_skipped_.push_back(u.path);  // never adopted by the rotation, so never deleted
    skipped.push_back(std::move(u));
  };
  for (UnreadableCheckpoint& u : scan.unreadable) skip(std::move(u));
  // Newest first. A file that opens may still lack an entry the trainer needs
  // (IoError: another version's, or one written by hand); restore() looks every
  // entry up before it sets anything, so the next one can be tried.
  for (auto it = scan.readable.rbegin(); it != scan.readable.rend(); ++it) {
    try {
      restore(load_checkpoint(it->path), parts, train, s);
    } catch (const IoError& e) {
      skip({it->path, checkpoint_error_reason(it->path, e.what())});
      continue;
    }
    resumed(it->path);
    return;
  }
  if (skipped.empty()) {
    log.message("resume: auto: no checkpoint in " + dir.string() + ", starting fresh");
    return;
  }
  std::string list;
  for (const UnreadableCheckpoint& u : skipped)
    list += (list.empty() ? "" : "; ") + u.path.string() + ": " + u.reason;
  throw IoError("resume: auto: no checkpoint in " + dir.string() +
                " can be read, so the run stops instead of starting fresh over them (nothing was changed "
                "there): " +
                list +
                ". To go on, set checkpoint.resume to a checkpoint file that loads, or "
                "checkpoint.resume=\"\" to start fresh (a file that cannot be read is then renamed aside "
                "when a save needs its name, never deleted)");
}

}  // namespace strata
