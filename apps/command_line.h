// What every strata binary's command line shares (CLI11): --help and
// --version, `--opt=value` as well as `--opt value`, and an unknown option or
// argument is an error that names it. Included by apps/*.cpp and bench/main.cpp.
#pragma once
#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdio>
#include <string>

#include "base/build_info.h"

namespace strata::cli {

// A CLI11 app named `name` with a --version flag ("strata 0.1.0 (git ...)").
inline void add_version_flag(CLI::App& app) {
  app.set_version_flag("--version", strata_version_line(),
                       "Print the strata version and git commit, then exit");
}

// The first option in argv that neither `app` nor a subcommand of it knows ("" if none).
inline std::string first_unknown_option(CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-' || std::isdigit(static_cast<unsigned char>(a[1])) || a[1] == '.')
      continue;  // a value, or a negative number
    a = a.substr(0, a.find('='));
    bool known = app.get_option_no_throw(a) != nullptr;
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
      known = known || sub->get_option_no_throw(a) != nullptr;
    if (!known) return a;
  }
  return "";
}

// Parses argv into `app`. Returns -1 when the program should go on; else the
// exit code: 0 after --help or --version (printed on stdout), 2 after a usage
// error, printed on stderr as "<name>: <what was wrong>" with a pointer to --help.
inline int parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11 reports a missing required option before an unknown one, which is
    // the likelier mistake (often the required one misspelt): name it first.
    std::string what = e.what();
    if (e.get_name() == "RequiredError")
      if (const std::string unknown = first_unknown_option(app, argc, argv); !unknown.empty())
        what = "The following argument was not expected: " + unknown;
    std::fprintf(stderr, "%s: %s\n(see %s --help)\n", app.get_name().c_str(), what.c_str(),
                 app.get_name().c_str());
    return 2;
  }
}

}  // namespace strata::cli
