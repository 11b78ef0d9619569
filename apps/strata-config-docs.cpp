// Prints docs/configuration.md, generated from the config schema:
//   build/bin/strata-config-docs > docs/configuration.md
#include <iostream>

#include "core/config/docs.h"

int main() {
  std::cout << strata::config_docs_markdown();
  return 0;
}
