// What this build of strata is: its version (CMake's project version) and the
// git commit it was built from, captured at build time by
// cmake/StrataVersion.cmake ("unknown" outside a git checkout, "-dirty" when
// the tree had uncommitted changes). For `--version` and the run directory.
#pragma once
#include <string>

namespace strata {

const char* strata_version();     // "0.1.0"
const char* strata_git_commit();  // "95247b8a1c3d", "95247b8a1c3d-dirty" or "unknown"

// "strata 0.1.0 (git 95247b8a1c3d)": the line every binary's --version prints.
std::string strata_version_line();

}  // namespace strata
