// Prints docs/configuration.md, generated from the config schema:
//   build/bin/strata-config-docs > docs/configuration.md
#include <iostream>

#include "apps/command_line.h"
#include "train/config/docs.h"

int main(int argc, char** argv) {
  CLI::App app("Prints docs/configuration.md (every config key, its type, default and meaning) on stdout.",
               "strata-config-docs");
  strata::cli::add_version_flag(app);
  if (int rc = strata::cli::parse(app, argc, argv); rc >= 0) return rc;
  std::cout << strata::config_docs_markdown();
  return 0;
}
