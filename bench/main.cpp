// strata-bench <name> [args...]: runs one benchmark; each prints its figure beside
// a peer measured in the same run, as a ratio. `strata-bench NAME --help` lists
// a benchmark's options.
#include <cstdio>
#include <exception>
#include <string>

#include "registry.h"

int main(int argc, char** argv) {
  auto& reg = strata::bench::registry();
  if (argc >= 2 && argv[1][0] != '-') {  // a benchmark's name, then its own options
    auto it = reg.find(argv[1]);
    if (it == reg.end()) {
      std::fprintf(stderr, "strata-bench: unknown benchmark '%s' (see strata-bench --help)\n", argv[1]);
      return 2;
    }
    std::vector<std::string> args(argv + 2, argv + argc);
    strata::bench::BenchCli cli(it->first, it->second.help, args);
    try {
      return it->second.run(args, cli);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "strata-bench %s: error: %s\n", argv[1], e.what());
      return 1;
    }
  }
  std::string list = "Benchmarks (strata-bench NAME --help for each one's options):\n";
  for (auto& [name, e] : reg)
    list += "  " + name + std::string(name.size() < 18 ? 18 - name.size() : 1, ' ') + e.help + "\n";
  CLI::App app(
      "Runs one benchmark; each prints its figure beside a peer measured in the same run, as a ratio.",
      "strata-bench");
  strata::cli::add_version_flag(app);
  app.footer(list);
  if (int rc = strata::cli::parse(app, argc, argv); rc >= 0) return rc;
  std::fputs(app.help().c_str(), stderr);  // no benchmark named
  return 2;
}
