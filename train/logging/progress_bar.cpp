#include "train/logging/progress_bar.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>

namespace strata {
namespace {

double seconds_now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

constexpr int kBarWidth = 24;

}  // namespace

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

std::string format_bar(const BarLine& b, int bar_width) {
  std::string s = b.label;
  if (b.total > 0 && bar_width > 0) {
    const double f = std::clamp(b.done / b.total, 0.0, 1.0);
    const int full = static_cast<int>(std::floor(f * bar_width + 1e-9));
    s += " [" + std::string(static_cast<size_t>(full), '#') +
         std::string(static_cast<size_t>(bar_width - full), '.') + "]";
  }
  if (!b.counts.empty()) s += " " + b.counts;
  if (!b.detail.empty()) s += " " + b.detail;
  if (b.eta_seconds >= 0) s += " eta " + format_duration(b.eta_seconds);
  return s;
}

ConsoleBars::ConsoleBars(std::FILE* out, bool terminal, double plain_interval_s)
    : out_(out), terminal_(terminal), plain_interval_s_(plain_interval_s) {}

ConsoleBars::~ConsoleBars() { finish(); }

void ConsoleBars::update(size_t slot, const BarLine& b, bool force) {
  if (bars_.size() <= slot) {
    bars_.resize(slot + 1);
    last_plain_.resize(slot + 1, -1e30);
  }
  bars_[slot] = b;
  const double t = seconds_now();
  if (!terminal_) {
    if (!force && t - last_plain_[slot] < plain_interval_s_) return;
    last_plain_[slot] = t;
    std::fprintf(out_, "%s\n", format_bar(b, 0).c_str());
    std::fflush(out_);
    return;
  }
  if (!force && t - last_redraw_ < 0.1) return;
  last_redraw_ = t;
  redraw();
}

void ConsoleBars::remove(size_t slot) {
  if (slot >= bars_.size() || !bars_[slot]) return;
  bars_[slot].reset();
  if (terminal_) redraw();
}

void ConsoleBars::print(const std::string& line) {
  if (drawn_ == 0) {
    std::fprintf(out_, "%s\n", line.c_str());
    std::fflush(out_);
    return;
  }
  // erase the bars, write the line where they were and draw them again below it
  std::string s = "\r";
  if (drawn_ > 1) s += "\033[" + std::to_string(drawn_ - 1) + "A";
  s += "\033[J" + line + "\n";
  std::fputs(s.c_str(), out_);
  drawn_ = 0;
  redraw();
}

void ConsoleBars::finish() {
  if (drawn_ > 0) {
    std::fputc('\n', out_);
    std::fflush(out_);
  }
  drawn_ = 0;
  bars_.clear();
}

// The cursor rests at the end of the last bar line; a redraw goes back up to
// the first line this drawing owns, rewrites every line (erasing the ones a
// removed bar leaves over) and comes to rest on the last bar again.
void ConsoleBars::redraw() {
  std::vector<std::string> lines;
  for (auto& b : bars_)
    if (b) lines.push_back(format_bar(*b, kBarWidth));
  std::string s;
  if (drawn_ > 0) {
    s += "\r";
    if (drawn_ > 1) s += "\033[" + std::to_string(drawn_ - 1) + "A";
  }
  const int n = std::max<int>(static_cast<int>(lines.size()), drawn_);
  for (int i = 0; i < n; ++i) {
    if (i > 0) s += "\n";
    s += "\033[K";
    if (i < static_cast<int>(lines.size())) s += lines[static_cast<size_t>(i)];
  }
  const int extra = n - std::max<int>(1, static_cast<int>(lines.size()));
  if (extra > 0) s += "\033[" + std::to_string(extra) + "A\r";
  drawn_ = static_cast<int>(lines.size());
  std::fputs(s.c_str(), out_);
  std::fflush(out_);
}

TransferBar::TransferBar(ConsoleBars& bars, std::string label, size_t slot)
    : bars_(bars), label_(std::move(label)), slot_(slot), t0_(seconds_now()) {}

void TransferBar::update(int64_t items_done, int64_t items_total, const std::string& unit, int64_t bytes_done,
                         int64_t bytes_total, const std::string& extra) {
  const double dt = std::max(1e-9, seconds_now() - t0_);
  BarLine b;
  b.label = label_;
  b.done = static_cast<double>(bytes_total > 0 ? bytes_done : items_done);
  b.total = static_cast<double>(bytes_total > 0 ? bytes_total : items_total);
  b.counts = std::to_string(items_done) + "/" + std::to_string(items_total) + " " + unit;
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.1f/%.1f MB %.1f MB/s", static_cast<double>(bytes_done) / 1e6,
                static_cast<double>(bytes_total) / 1e6, static_cast<double>(bytes_done) / 1e6 / dt);
  b.detail = buf;
  if (!extra.empty()) b.detail += " " + extra;
  // a rate from the first second would be noise: no eta before it (or at the end)
  if (b.done >= b.total && b.total > 0)
    b.eta_seconds = 0;
  else if (b.done > 0 && b.total > b.done && dt >= 1)
    b.eta_seconds = dt / b.done * (b.total - b.done);
  bars_.update(slot_, b, b.total > 0 && b.done >= b.total);  // the last one is always drawn
}

}  // namespace strata
