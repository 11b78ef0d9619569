#include "base/build_info.h"

#include "strata_version.h"  // generated into the build tree (cmake/StrataVersion.cmake)

namespace strata {

const char* strata_version() { return STRATA_VERSION_STRING; }

const char* strata_git_commit() { return STRATA_GIT_COMMIT; }

std::string strata_version_line() {
  return std::string("strata ") + strata_version() + " (git " + strata_git_commit() + ")";
}

}  // namespace strata
