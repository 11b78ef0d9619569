#include "base/fault_point.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace strata {

bool fault_armed(const char* point, const std::string& path) {
  const char* spec = std::getenv("STRATA_FAULT_POINT");
  if (spec == nullptr || *spec == '\0') return false;
  const char* at = std::strchr(spec, '@');
  const size_t name_len = at ? static_cast<size_t>(at - spec) : std::strlen(spec);
  if (name_len != std::strlen(point) || std::strncmp(spec, point, name_len) != 0) return false;
  return at == nullptr || path.find(at + 1) != std::string::npos;
}

void fault_point(const char* point, const std::string& path) {
  if (fault_armed(point, path)) ::kill(::getpid(), SIGKILL);
}

}  // namespace strata
