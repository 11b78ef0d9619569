// Console progress bars. On a terminal every bar is one line redrawn in place
// (several bars stack; the cursor moves back up over them); elsewhere a bar is
// a plain line, printed when the caller forces it or at most once per interval,
// never with a carriage return. Everything else printed while bars are up goes
// through print(), which writes it on a line of its own above the bars, or
// after finish(): nothing is ever glued to the tail of a bar. Debian packages no maintained C++ progress-bar
// library, hence this small one. Not thread-safe: one thread (rank 0's trainer, or a tool's main loop) draws.
#pragma once
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace strata {

struct BarLine {
  std::string label;           // "epoch 2/12", "step 120/500", "eval", "staging"
  double done = 0, total = 0;  // total <= 0: no bar graphic, the text only
  std::string counts;          // after the bar: "120/469", "12/40 shards"
  std::string detail;          // "loss 0.4321 lr 0.01 ..."
  double eta_seconds = -1;     // < 0: no eta
};

std::string format_duration(double seconds);  // "1h02m", "3m05s", "12s"

// "epoch 2/12 [########............] 120/469 loss 0.43 ... eta 3m05s"; the bar
// graphic is `bar_width` characters wide (0: none).
std::string format_bar(const BarLine& b, int bar_width);

class ConsoleBars {
 public:
  // `terminal`: redraw in place. Otherwise each slot prints a plain line at
  // most every `plain_interval_s` seconds (or when an update is forced).
  ConsoleBars(std::FILE* out, bool terminal, double plain_interval_s = 10);
  ~ConsoleBars();  // ends the bars' lines
  ConsoleBars(const ConsoleBars&) = delete;
  ConsoleBars& operator=(const ConsoleBars&) = delete;

  // Sets bar `slot` (0 = the top line) and draws it. On a terminal redraws
  // are limited to about ten a second unless `force`.
  void update(size_t slot, const BarLine& b, bool force = false);
  // Takes the bar away; on a terminal its line is erased.
  void remove(size_t slot);
  // A line of its own. On a terminal it takes the bars' place and the bars
  // are drawn again below it, so they stay the last lines on the screen.
  void print(const std::string& line);
  // Leaves the bars on screen as drawn, the cursor at the start of a fresh
  // line, and forgets them (what a run does before it prints its result).
  void finish();
  bool terminal() const { return terminal_; }

 private:
  void redraw();
  std::FILE* out_;
  bool terminal_;
  double plain_interval_s_;
  std::vector<std::optional<BarLine>> bars_;
  std::vector<double> last_plain_;  // per slot, when its last plain line was printed
  int drawn_ = 0;                   // terminal lines the last redraw left on screen
  double last_redraw_ = -1e30;
};

// A bar over items and their bytes, with the rate and an ETA from the rate so
// far: strata-pack's "packing [####....] 1200/60000 images 9.4/47.0 MB ...".
class TransferBar {
 public:
  TransferBar(ConsoleBars& bars, std::string label, size_t slot = 0);
  void update(int64_t items_done, int64_t items_total, const std::string& unit, int64_t bytes_done,
              int64_t bytes_total, const std::string& extra = "");

 private:
  ConsoleBars& bars_;
  std::string label_;
  size_t slot_;
  double t0_;
};

}  // namespace strata
