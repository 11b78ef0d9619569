// A benchmark's command line, parsed by CLI11 as every strata binary's is
// (apps/command_line.h): the benchmark declares its options on `app`, then
// parse() reads its arguments; --help lists them, --version prints strata's,
// an unknown option is an error that names it.
#pragma once
#include <string>
#include <vector>

#include "apps/command_line.h"

namespace strata::bench {

class BenchCli {
 public:
  BenchCli(const std::string& name, const std::string& help, std::vector<std::string> args)
      : app(help, "strata-bench " + name), name_("strata-bench " + name), args_(std::move(args)) {
    cli::add_version_flag(app);
  }
  CLI::App app;
  // -1: run the benchmark; else its exit code (0 after --help, 2 after a usage error).
  int parse() {
    std::vector<char*> argv{name_.data()};
    for (std::string& a : args_) argv.push_back(a.data());
    return cli::parse(app, static_cast<int>(argv.size()), argv.data());
  }

 private:
  std::string name_;
  std::vector<std::string> args_;
};

}  // namespace strata::bench
