// ConsoleBars on a pretend terminal and on a pipe, read back byte for byte.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "train/logging/progress_bar.h"

namespace {

using strata::BarLine;
using strata::ConsoleBars;

// Everything written to a FILE*, as a string.
class Capture {
 public:
  Capture() : f_(open_memstream(&buf_, &len_)) {}
  ~Capture() {
    std::fclose(f_);
    std::free(buf_);
  }
  std::FILE* file() { return f_; }
  std::string text() {
    std::fflush(f_);
    return std::string(buf_, len_);
  }

 private:
  char* buf_ = nullptr;
  size_t len_ = 0;
  std::FILE* f_;
};

BarLine epoch_bar(double done) {
  BarLine b;
  b.label = "epoch 1/2";
  b.done = done;
  b.total = 8;
  b.counts = std::to_string(static_cast<int>(done)) + "/8";
  b.detail = "loss 0.5000";
  b.eta_seconds = 0;
  return b;
}

TEST(ProgressBar, FormatsLabelBarCountsDetailAndEta) {
  EXPECT_EQ(strata::format_bar(epoch_bar(2), 8), "epoch 1/2 [##......] 2/8 loss 0.5000 eta 0s");
  EXPECT_EQ(strata::format_bar(epoch_bar(8), 8), "epoch 1/2 [########] 8/8 loss 0.5000 eta 0s");
  BarLine no_total;
  no_total.label = "staging";
  no_total.counts = "3 shards";
  EXPECT_EQ(strata::format_bar(no_total, 8), "staging 3 shards") << "no total: no bar graphic, no eta";
  EXPECT_EQ(strata::format_bar(epoch_bar(20), 4), "epoch 1/2 [####] 20/8 loss 0.5000 eta 0s")
      << "a count past the total fills the bar, no more";
}

// The bug of issue 12: "...eta 0stest accuracy 0.7652". After finish() what the
// program prints next starts a line of its own.
TEST(ProgressBar, WhatFollowsFinishStartsALineOfItsOwn) {
  Capture out;
  {
    ConsoleBars bars(out.file(), true);
    bars.update(0, epoch_bar(8), true);
    bars.finish();
    std::fputs("test accuracy 0.7652\n", out.file());
  }
  const std::string t = out.text();
  EXPECT_NE(t.find("eta 0s\ntest accuracy 0.7652\n"), std::string::npos) << t;
  EXPECT_EQ(t.find("eta 0stest"), std::string::npos) << t;
}

TEST(ProgressBar, TerminalRedrawsInPlaceAndPrintsMessagesAboveTheBars) {
  Capture out;
  ConsoleBars bars(out.file(), true);
  bars.update(0, epoch_bar(1), true);
  EXPECT_EQ(out.text(), "\033[Kepoch 1/2 [###.....................] 1/8 loss 0.5000 eta 0s");
  bars.update(0, epoch_bar(2), true);  // back to the line's start, erase it, draw again
  EXPECT_NE(out.text().find("\r\033[Kepoch 1/2 [######"), std::string::npos) << out.text();
  BarLine staging;
  staging.label = "staging";
  staging.done = 1;
  staging.total = 4;
  staging.counts = "1/4 shards";
  bars.update(1, staging, true);  // a second line under the first
  const size_t before = out.text().size();
  bars.print("epoch 1 step 2 validation: accuracy 0.5");
  const std::string p = out.text().substr(before);
  // up one line to the first bar, erase to the end of the screen, the message,
  // then both bars again below it
  EXPECT_EQ(p.rfind("\r\033[1A\033[Jepoch 1 step 2 validation: accuracy 0.5\n\033[Kepoch 1/2", 0), 0u) << p;
  EXPECT_NE(p.find("\n\033[Kstaging [######"), std::string::npos) << p;
  const size_t before_remove = out.text().size();
  bars.remove(1);  // the staging line is erased, the cursor back on the epoch's line
  const std::string r = out.text().substr(before_remove);
  EXPECT_EQ(r.substr(r.size() - 5), "\033[1A\r") << r;
  EXPECT_NE(r.find("\n\033[K\033[1A"), std::string::npos) << "the staging line is cleared: " << r;
}

TEST(ProgressBar, PlainOutputIsLinesWithoutCarriageReturns) {
  Capture out;
  {
    ConsoleBars bars(out.file(), false, 1e9);
    bars.update(0, epoch_bar(1));        // a slot's first line is printed
    bars.update(0, epoch_bar(2));        // within the interval: not printed
    bars.update(0, epoch_bar(3), true);  // forced: printed
    bars.print("a message");
    bars.remove(0);
  }
  EXPECT_EQ(out.text(),
            "epoch 1/2 1/8 loss 0.5000 eta 0s\n"
            "epoch 1/2 3/8 loss 0.5000 eta 0s\n"
            "a message\n");
}

TEST(ProgressBar, TransferBarShowsItemsBytesAndTheLastUpdateAlways) {
  Capture out;
  ConsoleBars bars(out.file(), false, 1e9);
  strata::TransferBar bar(bars, "packing");
  bar.update(1, 4, "files", 250000, 1000000, "0 shards");
  bar.update(2, 4, "files", 500000, 1000000, "0 shards");   // within the interval: not printed
  bar.update(4, 4, "files", 1000000, 1000000, "1 shards");  // complete: always printed
  const std::string t = out.text();
  EXPECT_EQ(t.rfind("packing 1/4 files 0.2/1.0 MB ", 0), 0u) << t;
  EXPECT_NE(t.find("\npacking 4/4 files 1.0/1.0 MB "), std::string::npos) << t;
  EXPECT_NE(t.find("1 shards eta 0s\n"), std::string::npos) << t;
  EXPECT_EQ(t.find("2/4"), std::string::npos) << t;
}

}  // namespace
