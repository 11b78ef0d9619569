// docs/configuration.md, generated from the schema (apps/strata-config-docs
// prints it; a unit test fails when the committed file differs).
#pragma once
#include <string>

namespace strata {

std::string config_docs_markdown();

}  // namespace strata
