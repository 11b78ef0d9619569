#include "train/logging/run_log.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace strata {

namespace {

// A process killed while writing leaves a last line without its newline. The
// resumed process appends to the same files, so that line is ended first: its
// bytes stay (a run directory in a store must keep what the killed process
// synced, as a prefix), and each new row starts a line of its own. A torn
// metrics.jsonl row is then one line that is not JSON, which readers skip
// (scripts/strata-plot). Returns the torn line's length.
int64_t end_torn_line(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size == 0) return 0;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return 0;
  int64_t line_start = static_cast<int64_t>(size);
  char c = 0;
  while (line_start > 0 && std::fseek(f, line_start - 1, SEEK_SET) == 0 && std::fread(&c, 1, 1, f) == 1 &&
         c != '\n')
    --line_start;
  std::fclose(f);
  const int64_t torn = static_cast<int64_t>(size) - line_start;
  if (torn == 0) return 0;
  std::FILE* a = std::fopen(path.c_str(), "a");
  if (!a || std::fputc('\n', a) == EOF || std::fclose(a) != 0)
    throw IoError("cannot end the torn last line of " + path + ": " + std::strerror(errno));
  return torn;
}

}  // namespace

RunLog::RunLog(const std::string& run_dir, bool enabled, ConsoleMode console, bool tensorboard)
    : enabled_(enabled), console_(console) {
  if (!enabled_) return;
  std::filesystem::create_directories(run_dir);
  end_torn_line(run_dir + "/train.log");
  const int64_t torn = end_torn_line(run_dir + "/metrics.jsonl");
  log_ = std::fopen((run_dir + "/train.log").c_str(), "a");
  jsonl_ = std::fopen((run_dir + "/metrics.jsonl").c_str(), "a");
  if (!log_ || !jsonl_)
    throw IoError("cannot open train.log / metrics.jsonl in " + run_dir + ": " + std::strerror(errno));
  if (torn > 0) {
    std::fprintf(
        log_,
        "metrics.jsonl: its last row (%lld bytes) was torn by a killed process; ended with a newline, "
        "it is the one line that is not JSON\n",
        static_cast<long long>(torn));
    std::fflush(log_);
  }
  if (tensorboard) tb_ = std::make_unique<TensorBoardWriter>(run_dir + "/tensorboard");
  if (console_ != ConsoleMode::off)
    bars_ =
        std::make_unique<ConsoleBars>(stdout, console_ == ConsoleMode::automatic && isatty(fileno(stdout)));
}

RunLog::~RunLog() {
  if (!enabled_) return;
  bars_.reset();  // ends the bars' lines
  if (log_) std::fclose(log_);
  if (jsonl_) std::fclose(jsonl_);
}

namespace {

enum Slot : size_t { kTrainBar = 0, kStagingBar = 1, kEvalBar = 2 };

std::string train_figures(const ProgressInfo& p) {
  char buf[256];
  int n = std::snprintf(buf, sizeof buf, "loss %.4f lr %.3g %.0f %ss/s data-wait %.1f%%", p.loss, p.lr,
                        p.items_per_second > 0 ? p.items_per_second : p.samples_per_second,
                        p.item_unit.c_str(), 100.0 * p.data_wait_fraction);
  if (p.mfu > 0 && n > 0 && n < static_cast<int>(sizeof buf))
    n += std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n), " mfu %.1f%%", 100.0 * p.mfu);
  if (p.loss_scale > 0 && n > 0 && n < static_cast<int>(sizeof buf))
    std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n), " scale %.0f", p.loss_scale);
  return buf;
}

std::string megabytes(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

// The bar, and train.log's and a non-terminal's line: "epoch 1/12 step 40 (40/469) loss ...".
BarLine train_bar(const ProgressInfo& p, std::string& line) {
  BarLine bar;
  if (p.bounded_by_steps) {
    bar.label = "step";
    bar.done = static_cast<double>(p.step);
    bar.total = static_cast<double>(p.total_steps);
    bar.counts = std::to_string(p.step) + "/" + std::to_string(p.total_steps);
    line = "step " + bar.counts;
  } else {
    bar.label = "epoch " + std::to_string(p.epoch + 1) + "/" + std::to_string(p.epochs);
    bar.done = static_cast<double>(p.step_in_epoch);
    bar.total = static_cast<double>(p.steps_per_epoch);
    bar.counts = std::to_string(p.step_in_epoch) + "/" + std::to_string(p.steps_per_epoch);
    line = bar.label + " step " + std::to_string(p.step) + " (" + bar.counts + ")";
  }
  bar.detail = train_figures(p);
  bar.eta_seconds = p.eta_seconds;
  line += " " + bar.detail + " eta " + format_duration(p.eta_seconds);
  return bar;
}

}  // namespace

void RunLog::progress(const ProgressInfo& p) {
  if (!enabled_) return;
  std::string line;
  const BarLine bar = train_bar(p, line);
  std::fprintf(log_, "%s\n", line.c_str());
  std::fflush(log_);  // people tail train.log; a line every logging.every_steps is cheap
  last_progress_ = std::make_unique<ProgressInfo>(p);
  if (!bars_) return;
  if (bars_->terminal())
    bars_->update(kTrainBar, bar, true);
  else
    bars_->print(line);
}

void RunLog::advance(int64_t epoch, int64_t step, int64_t step_in_epoch) {
  if (!enabled_ || !bars_ || !bars_->terminal() || !last_progress_) return;
  ProgressInfo p = *last_progress_;
  p.epoch = epoch;
  p.step = step;
  p.step_in_epoch = step_in_epoch;
  std::string line;
  bars_->update(kTrainBar, train_bar(p, line));
}

void RunLog::staging(const StagingInfo& s) {
  if (!enabled_ || !bars_) return;
  BarLine bar;
  bar.label = "staging";
  bar.done = static_cast<double>(s.shards_staged);
  bar.total = static_cast<double>(s.shard_uses);
  bar.counts = std::to_string(s.shards_staged) +
               (s.shard_uses > 0 ? "/" + std::to_string(s.shard_uses) : std::string()) + " shards";
  char rate[48] = "";
  if (s.shards_staged < s.shard_uses)  // while staging goes on; the interval rates are in metrics.jsonl
    std::snprintf(rate, sizeof rate, " (%.1f MB/s)", s.mb_per_second);
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s from the store%s, cache %ld hits %ld misses",
                megabytes(s.store_bytes).c_str(), rate, static_cast<long>(s.cache_hits),
                static_cast<long>(s.cache_misses));
  bar.detail = buf;
  bars_->update(kStagingBar, bar);
}

void RunLog::evaluation(int64_t done, int64_t total) {
  if (!enabled_ || !bars_) return;
  BarLine bar;
  bar.label = "evaluating";
  bar.done = static_cast<double>(done);
  bar.total = static_cast<double>(total);
  bar.counts = std::to_string(done) + "/" + std::to_string(total) + " batches";
  bars_->update(kEvalBar, bar);
}

void RunLog::end_evaluation() {
  if (enabled_ && bars_) bars_->remove(kEvalBar);
}

void RunLog::end_epoch(int64_t epoch, int64_t step, int64_t step_in_epoch, double epoch_seconds) {
  if (!enabled_ || !bars_) return;
  bars_->remove(kStagingBar);
  // a run bounded by max_steps has one step bar for the whole run
  if (last_progress_ && last_progress_->bounded_by_steps) return;
  if (bars_->terminal() && last_progress_) {
    ProgressInfo p = *last_progress_;
    p.epoch = epoch;
    p.step = step;
    p.step_in_epoch = step_in_epoch;
    std::string line;
    BarLine bar = train_bar(p, line);
    bar.eta_seconds = -1;
    bar.detail += " took " + format_duration(epoch_seconds);
    bars_->update(kTrainBar, bar, true);
  }
  bars_->finish();
}

void RunLog::end_console() {
  if (enabled_ && bars_) bars_->finish();
}

void RunLog::record(const std::string& kind, int64_t step, const std::map<std::string, double>& values) {
  if (!enabled_) return;
  nlohmann::json j;
  j["kind"] = kind;
  j["step"] = step;
  using namespace std::chrono;
  j["timestamp"] = duration<double>(system_clock::now().time_since_epoch()).count();
  for (auto& [k, v] : values) j[k] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
  std::fprintf(jsonl_, "%s\n", j.dump().c_str());
  if (tb_)
    for (auto& [k, v] : values) tb_->add_scalar(kind + "/" + k, v, step);
}

void RunLog::message(const std::string& line) {
  if (!enabled_) return;
  std::fprintf(log_, "%s\n", line.c_str());
  std::fflush(log_);
  if (bars_) bars_->print(line);
}

void RunLog::error(const std::string& what) {
  if (!enabled_) return;
  std::fprintf(log_, "error: %s\n", what.c_str());
  std::fflush(log_);
  end_console();  // the caller's report on stderr starts a line of its own
  std::fflush(stdout);
}

void RunLog::flush() {
  if (!enabled_) return;
  std::fflush(log_);
  std::fflush(jsonl_);
  if (tb_) tb_->flush();
}

}  // namespace strata
