// A run directory whose process was killed mid-write: the resumed process's
// RunLog must not append to the torn last row of metrics.jsonl (which would
// make its own row unreadable) nor to a half line of train.log; the torn bytes
// stay where they were.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "train/logging/run_log.h"

namespace {
namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(RunLogTorn, ResumedRunEndsTheTornLinesAndKeepsTheirBytes) {
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
  const std::string torn = R"({"kind":"train","loss":0.4,"st)";
  const std::string jsonl = slurp(dir / "metrics.jsonl");
  ASSERT_EQ(jsonl.rfind(whole + "\n" + torn + "\n", 0), 0u) << jsonl;  // the killed process's bytes, kept
  std::istringstream rows(jsonl);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(rows, line)) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u) << jsonl;
  const auto row = nlohmann::json::parse(lines[2]);  // the resumed process's row, a line of its own
  EXPECT_EQ(row["step"], 2);
  EXPECT_EQ(row["loss"], 0.25);
  const std::string text = slurp(dir / "train.log");
  EXPECT_NE(text.find("step 1 loss 0.5\nstep 2 lo\n"), std::string::npos) << text;
  EXPECT_NE(text.find("its last row (30 bytes) was torn"), std::string::npos) << text;
  EXPECT_NE(text.find("\nresumed\n"), std::string::npos) << text;

  // A whole file is left as it was.
  const std::string before = slurp(dir / "metrics.jsonl");
  { strata::RunLog again(dir.string(), true, strata::ConsoleMode::off, false); }
  EXPECT_EQ(slurp(dir / "metrics.jsonl"), before);
  fs::remove_all(dir);
}

}  // namespace
