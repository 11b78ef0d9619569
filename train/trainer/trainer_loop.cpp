// Trainer::fit: epochs of steps, evaluation by epochs or steps, early
// stopping, checkpoints and the summary. Stop signals finish the current step,
// save and return. fit() reads top to bottom as the run: set up, resume,
// train_epoch / end_epoch per epoch, the best weights, summarize; train_step
// is one optimizer step; after_step is everything a step may trigger.
#include <algorithm>
#include <cmath>
#include <csignal>
#include <ctime>
#include <optional>

#include "base/error.h"
#include "kernels/cuda/runtime.h"
#include "kernels/runtime/trace_range.h"
#include "train/make_schedule.h"
#include "train/trainer/collective_sums.h"
#include "train/trainer/stop_signal.h"
#include "train/trainer/trainer.h"

namespace strata {

TrainSummary Trainer::fit(BatchSource& train, BatchSource* val, BatchSource* test) {
  try {
    return run_fit(train, val, test);
  } catch (const std::exception& e) {
    if (reporter_.is_open()) reporter_.log().error(e.what());  // the console gets it from whoever catches it
    throw;
  }
}

TrainSummary Trainer::run_fit(BatchSource& train, BatchSource* val, BatchSource* test) {
  t_start_ = steady_seconds();
  install_stop_handlers();
  shape_.accumulate = std::max<int64_t>(1, cfg_.trainer.accumulate);
  shape_.batches_per_epoch = train.batches_per_epoch();
  if (shape_.batches_per_epoch == 0)
    throw Error("the training set yields no batch per rank (batch size larger than this rank's share?)");
  shape_.steps_per_epoch = shape_.steps_in_epoch(shape_.batches_per_epoch);
  shape_.total_steps = cfg_.trainer.epochs * shape_.steps_per_epoch;
  if (cfg_.trainer.max_steps > 0) shape_.total_steps = std::min(shape_.total_steps, cfg_.trainer.max_steps);
  schedule_ = make_schedule(cfg_.schedule, shape_.total_steps, cfg_.optimizer.lr);
  checkpointer_.check_resume_path();
  reporter_.open(run_record_, model_device());
  train_ = &train;
  val_ = val ? val : test;
  done_ = false;
  stop_signal_ = 0;

  feeder_.reset();  // of an earlier fit()
  TrainState s;
  s.best.early =
      EarlyStopping({cfg_.early_stopping.mode, cfg_.early_stopping.patience, cfg_.early_stopping.min_delta});
  checkpointer_.resume(parts(), train, s, reporter_.log());
  if (comm_.rank() != 0 && !s.sums.empty()) s.sums.zero();  // the checkpoint's sums are all ranks' (save)
  // this start joins the world-size history the checkpoint brought (issue 33)
  s.world_sizes.push_back({comm_.size(), s.step, static_cast<int64_t>(std::time(nullptr))});
  reporter_.note_world_sizes(s.world_sizes);
  open_sample_trace(s);
  reporter_.start_run(shape_, s.step);
  evaluator_.start_run();
  // resumed from the last step of a run that trainer.max_steps ended: nothing more to train
  if (cfg_.trainer.max_steps > 0 && s.step >= cfg_.trainer.max_steps) done_ = true;
  for (; s.epoch < cfg_.trainer.epochs && !done_; ++s.epoch) {
    train_epoch(train, s);
    if (stop_signal_) break;
    if (done_ && cfg_.trainer.max_steps > 0 && s.micro < shape_.batches_per_epoch) {
      // max_steps ends the run mid-epoch: no end_epoch, so save here, resumable mid-epoch
      const bool checkpointing = cfg_.checkpoint.every_steps > 0 || cfg_.checkpoint.every_epochs > 0;
      const bool saved = cfg_.checkpoint.every_steps > 0 && s.step % cfg_.checkpoint.every_steps == 0;
      if (checkpointing && !saved) save(train, s, NAN);
      s.epoch++;  // counts as the epoch reached
      break;
    }
    end_epoch(train, s);
  }
  feeder_.reset();
  checkpointer_.finish(reporter_.log());  // checkpoint.async: the last save is written (and uploaded)
  if (!stop_signal_) evaluator_.restore_best_weights(s, reporter_.log());
  return summarize(s, test);
}

void Trainer::train_epoch(BatchSource& train, TrainState& s) {
  feeder_.reset();  // the last epoch's: its copies finish before the source restarts
  if (!s.mid_epoch) {
    train.start_epoch(s.epoch);
    s.micro = 0;
    s.sums = TaskSums();  // made on the first batch, on the model's device
  }
  s.mid_epoch = true;
  model_->train();
  reporter_.start_epoch();
  feeder_ = std::make_unique<DeviceFeeder>(train, copy_engine());
  // A step's host synchronisations are counted from its first micro-batch's
  // arrival through the update (the waits for the data before it left out).
  uint64_t syncs_at = 0;
  // A source that fails for good (a store down past its retry budget) ends the
  // run. On one process, at a step boundary, the steps trained so far are saved
  // first (with several ranks the others are inside a collective: the newest
  // periodic checkpoint is where the job resumes).
  auto next_batch = [&]() -> std::optional<FedBatch> {
    TraceRange wait("data wait");
    std::optional<FedBatch> b;
    try {
      b = feeder_->next();
    } catch (const Error& e) {
      if (comm_.size() > 1 || s.micro % shape_.accumulate != 0 || s.step == 0) throw;
      save(train, s, NAN);
      throw Error(std::string(e.what()) + "; checkpoint of step " + std::to_string(s.step) +
                  " saved: continue with checkpoint.resume=auto once the data can be read");
    }
    if (s.micro % shape_.accumulate == 0) syncs_at = cuda::host_syncs();
    return b;
  };
  while (!done_) {
    // the window ends at the epoch's last batch; past it, the source is asked
    // once more and ends the epoch (its end-of-epoch wait shows in the trace)
    const int64_t left = shape_.batches_per_epoch - s.micro;
    const int64_t window = left > 0 ? std::min(shape_.accumulate, left) : shape_.accumulate;
    if (!train_step(next_batch, window, s)) break;
    reporter_.count_host_syncs(static_cast<int64_t>(cuda::host_syncs() - syncs_at));
    after_step(train, s);
    reporter_.show_console(train, s);
  }
  reporter_.end_epoch(train, s);
  sync_buffers_if_trained();  // the epoch's end: buffers agree across ranks
}

bool Trainer::train_step(const std::function<std::optional<FedBatch>()>& next_batch, int64_t window,
                         TrainState& s) {
  int64_t samples = 0, done = 0;
  double items = 0;
  for (; done < window; ++done) {
    const std::optional<FedBatch> batch = next_batch();
    if (!batch) break;  // the source ended inside the window: its gradients wait, no update
    items += forward_backward(*batch, /*sync=*/done + 1 == window, s);
    if (sample_trace_) trace_samples(*batch->host, s);
    samples += batch->host->size;
    s.micro++;
  }
  reporter_.count_micro_batches(done, samples, items);
  if (done < window) return false;
  optimizer_->set_lr(schedule_->lr(s.step));
  if (!optimizer_update(s.step)) s.skipped_steps++;
  s.step++;
  return true;
}

void Trainer::after_step(BatchSource& train, TrainState& s) {
  if (cfg_.logging.every_steps > 0 && s.step % cfg_.logging.every_steps == 0)
    reporter_.log_progress(train, s,
                           StepFigures{optimizer_->lr(), scaler_.enabled() ? scaler_.scale() : 0.0,
                                       scaler_.scale(), model_device()});
  double metric = NAN;
  if (cfg_.trainer.eval_every_steps > 0 && s.step % cfg_.trainer.eval_every_steps == 0)
    metric = evaluate_and_track(s);
  const bool saved = cfg_.checkpoint.every_steps > 0 && s.step % cfg_.checkpoint.every_steps == 0;
  if (saved) save(train, s, metric);
  if (cfg_.trainer.max_steps > 0 && s.step >= cfg_.trainer.max_steps) done_ = true;
  if ((stop_signal_ = agreed_stop_signal()) != 0) {
    if (!saved) save(train, s, NAN);  // this step's state is on disk already
    reporter_.log().message("stopped by signal " + std::to_string(stop_signal_) + " at step " +
                            std::to_string(s.step) +
                            "; checkpoint saved; continue with checkpoint.resume=auto --run-dir " + run_dir_);
    done_ = true;
  }
}

// A signal reaches the ranks of a job at slightly different moments (mpirun
// forwards it rank by rank), and the checkpoint is collective: the ranks agree
// to stop after the same step, and on which signal stopped them, so the log and
// the exit status name the signal that was sent even where it reached rank 0
// only after the agreement. Each rank counts the stop signal it holds; the most
// held wins, ties going to the first in kStopSignals.
int Trainer::agreed_stop_signal() {
  static constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGUSR1};
  const int mine = stop_requested();
  if (comm_.size() == 1) return mine;
  std::vector<double> held(std::size(kStopSignals), 0.0);
  for (size_t i = 0; i < held.size(); ++i) held[i] = mine == kStopSignals[i] ? 1.0 : 0.0;
  held = allreduce_sums(comm_, std::move(held));
  const auto most = std::max_element(held.begin(), held.end());
  return *most > 0 ? kStopSignals[most - held.begin()] : 0;
}

void Trainer::end_epoch(BatchSource& train, TrainState& s) {
  std::vector<double> sums = s.sums.read();
  sums.resize(task_->sum_names().size(), 0.0);  // an epoch this rank saw no batch of
  sums = allreduce_sums(comm_, std::move(sums));
  std::map<std::string, double> record = {{"epoch", double(s.epoch + 1)}};
  for (auto& [name, value] : task_->metrics(sums, false)) record["train_" + name] = value;
  reporter_.log().record("epoch", s.step, record);
  double metric = NAN;
  if (cfg_.trainer.eval_every_epochs > 0 && (s.epoch + 1) % cfg_.trainer.eval_every_epochs == 0)
    metric = evaluate_and_track(s);
  s.epochs_done = s.epoch + 1;
  s.mid_epoch = false;
  if (evaluator_.stopped_early()) {
    reporter_.log().message("early stopping at epoch " + std::to_string(s.epoch + 1) +
                            ": no improvement of " + cfg_.early_stopping.monitor + " for " +
                            std::to_string(cfg_.early_stopping.patience) + " evaluations");
    done_ = true;
  }
  TrainState next = s;  // the checkpoint resumes at the next epoch's start
  next.epoch = s.epoch + 1;
  if (cfg_.checkpoint.every_epochs > 0 && (s.epoch + 1) % cfg_.checkpoint.every_epochs == 0)
    save(train, next, metric);
}

double Trainer::evaluate_and_track(TrainState& s) {
  if (!val_) return NAN;
  sync_buffers_if_trained();
  return evaluator_.evaluate_and_track(*val_, copy_engine(), model_device(), *schedule_, s, reporter_.log());
}

void Trainer::save(const BatchSource& train, TrainState& s, double metric) {
  sync_buffers_if_trained();                                 // collective: before rank 0 alone goes on
  const bool fed = feeder_ && &feeder_->source() == &train;  // the loader is a batch ahead of the step
  // The epoch's training sums are each rank's own, and rank 0 writes the
  // checkpoint: it holds all ranks' sums, and after a resume rank 0 alone
  // carries them on (run_fit), so that a resume on any rank count counts each
  // sample of the epoch once in its train_loss and train_accuracy.
  std::vector<double> mine;
  if (comm_.size() > 1 && !s.sums.empty()) {
    mine = s.sums.read();
    s.sums.assign(allreduce_sums(comm_, mine));
  }
  checkpointer_.save(parts(), fed ? feeder_->position() : train.position(), s, metric, reporter_.log());
  if (!mine.empty()) s.sums.assign(mine);
}

}  // namespace strata
