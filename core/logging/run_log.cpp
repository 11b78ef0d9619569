#include "core/logging/run_log.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace strata {

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  auto t = static_cast<int64_t>(s + 0.5);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", static_cast<long>(t / 3600), static_cast<long>(t / 60 % 60));
  else if (t >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", static_cast<long>(t / 60), static_cast<long>(t % 60));
  else
    std::snprintf(buf, sizeof buf, "%lds", static_cast<long>(t));
  return buf;
}

RunLog::RunLog(const std::string& run_dir, bool enabled, ConsoleMode console, bool tensorboard)
    : enabled_(enabled), console_(console) {
  if (!enabled_) return;
  std::filesystem::create_directories(run_dir);
  tty_ = console_ == ConsoleMode::automatic && isatty(fileno(stdout));
  log_ = std::fopen((run_dir + "/train.log").c_str(), "a");
  jsonl_ = std::fopen((run_dir + "/metrics.jsonl").c_str(), "a");
  if (!log_ || !jsonl_)
    throw IoError("cannot open train.log / metrics.jsonl in " + run_dir + ": " + std::strerror(errno));
  if (tensorboard) tb_ = std::make_unique<TensorBoardWriter>(run_dir + "/tensorboard");
}

RunLog::~RunLog() {
  if (!enabled_) return;
  end_redraw();
  if (log_) std::fclose(log_);
  if (jsonl_) std::fclose(jsonl_);
}

void RunLog::end_redraw() {
  if (redrawing_) {
    std::fputc('\n', stdout);
    redrawing_ = false;
  }
}

void RunLog::progress(const ProgressInfo& p) {
  if (!enabled_) return;
  char line[320];
  int n = std::snprintf(
      line, sizeof line, "epoch %ld/%ld step %ld (%ld/%ld) loss %.4f lr %.3g %.0f %ss/s data-wait %.1f%%",
      static_cast<long>(p.epoch + 1), static_cast<long>(p.epochs), static_cast<long>(p.step),
      static_cast<long>(p.step_in_epoch), static_cast<long>(p.steps_per_epoch), p.loss, p.lr,
      p.items_per_second > 0 ? p.items_per_second : p.samples_per_second, p.item_unit.c_str(),
      100.0 * p.data_wait_fraction);
  if (p.mfu > 0 && n > 0 && n < static_cast<int>(sizeof line))
    n += std::snprintf(line + n, sizeof line - static_cast<size_t>(n), " mfu %.1f%%", 100.0 * p.mfu);
  if (p.loss_scale > 0 && n > 0 && n < static_cast<int>(sizeof line))
    n += std::snprintf(line + n, sizeof line - static_cast<size_t>(n), " scale %.0f", p.loss_scale);
  if (n > 0 && n < static_cast<int>(sizeof line))
    std::snprintf(line + n, sizeof line - static_cast<size_t>(n), " eta %s",
                  format_duration(p.eta_seconds).c_str());
  std::fprintf(log_, "%s\n", line);
  std::fflush(log_);  // people tail train.log; a line every logging.every_steps is cheap
  if (console_ == ConsoleMode::off) return;
  if (tty_) {
    std::fprintf(stdout, "\r\033[K%s", line);
    std::fflush(stdout);
    redrawing_ = true;
  } else {
    std::fprintf(stdout, "%s\n", line);
    std::fflush(stdout);
  }
}

void RunLog::record(const std::string& kind, int64_t step, const std::map<std::string, double>& values) {
  if (!enabled_) return;
  nlohmann::json j;
  j["kind"] = kind;
  j["step"] = step;
  for (auto& [k, v] : values) j[k] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
  std::fprintf(jsonl_, "%s\n", j.dump().c_str());
  if (tb_)
    for (auto& [k, v] : values) tb_->add_scalar(kind + "/" + k, v, step);
}

void RunLog::message(const std::string& line) {
  if (!enabled_) return;
  std::fprintf(log_, "%s\n", line.c_str());
  std::fflush(log_);
  if (console_ == ConsoleMode::off) return;
  end_redraw();
  std::fprintf(stdout, "%s\n", line.c_str());
  std::fflush(stdout);
}

void RunLog::error(const std::string& what) {
  if (!enabled_) return;
  std::fprintf(log_, "error: %s\n", what.c_str());
  std::fflush(log_);
  end_redraw();
  std::fflush(stdout);
}

void RunLog::flush() {
  if (!enabled_) return;
  std::fflush(log_);
  std::fflush(jsonl_);
  if (tb_) tb_->flush();
}

}  // namespace strata
