// Fault-injection points for the reliability suite: named places on the paths
// that must survive a crash (a checkpoint's write, an atomic file's commit).
// When the environment variable STRATA_FAULT_POINT names a point, the process
// kills itself with SIGKILL there, as a power cut or the OOM killer would: no
// destructor, no flush, no atexit handler runs.
//
//   STRATA_FAULT_POINT=NAME          at every pass through NAME
//   STRATA_FAULT_POINT=NAME@TEXT     only where the file involved contains TEXT
//                                    (e.g. checkpoint.partial_write@step-000000030)
//
// Unset (every normal run), a point costs one getenv.
#pragma once
#include <string>

namespace strata {

// Whether STRATA_FAULT_POINT names `point` for the file `path`.
bool fault_armed(const char* point, const std::string& path);
// SIGKILL this process when fault_armed(point, path).
void fault_point(const char* point, const std::string& path);

}  // namespace strata
