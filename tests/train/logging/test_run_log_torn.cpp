// A run directory whose process was killed mid-write: the resumed process's
// RunLog must not append to the torn last row of metrics.jsonl (which would
// make one line that is not JSON) nor to a half line of train.log.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "train/logging/run_log.h"

namespace {
namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(RunLogTorn, ResumedRunDropsTheTornRowAndEndsTheHalfLine) {
  const fs::path dir = fs::temp_directory_path() / ("strata-run-log-torn-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string whole = R"({"kind":"train","loss":0.5,"step":1,"timestamp":1.0})";
  std::ofstream(dir / "metrics.jsonl") << whole << "\n"
                                       << R"({"kind":"train","loss":0.4,"st)";
  std::ofstream(dir / "train.log") << "step 1 loss 0.5\nstep 2 lo";
  {
    strata::RunLog log(dir.string(), true, strata::ConsoleMode::off, false);
    log.record("train", 2, {{"loss", 0.25}});
    log.message("resumed");
  }
  std::istringstream rows(slurp(dir / "metrics.jsonl"));
  std::string line;
  int n = 0;
  while (std::getline(rows, line)) {
    ++n;
    nlohmann::json row;
    ASSERT_NO_THROW(row = nlohmann::json::parse(line)) << "row " << n << " is not JSON: " << line;
    EXPECT_EQ(row["step"], n);
  }
  EXPECT_EQ(n, 2);
  const std::string text = slurp(dir / "train.log");
  EXPECT_NE(text.find("step 1 loss 0.5\nstep 2 lo\n"), std::string::npos) << text;
  EXPECT_NE(text.find("dropped the torn last row (30 bytes)"), std::string::npos) << text;
  EXPECT_NE(text.find("\nresumed\n"), std::string::npos) << text;

  // A whole file is left as it was.
  const std::string before = slurp(dir / "metrics.jsonl");
  { strata::RunLog again(dir.string(), true, strata::ConsoleMode::off, false); }
  EXPECT_EQ(slurp(dir / "metrics.jsonl"), before);
  fs::remove_all(dir);
}

}  // namespace
