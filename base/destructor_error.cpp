#include "base/destructor_error.h"

#include <cstdio>
#include <exception>
#include <mutex>
#include <set>
#include <string>

namespace strata {
namespace {
constexpr size_t kMaxReported = 16;
}  // namespace

void report_destructor_error(const char* what, const char* why) noexcept {
  try {
    static std::mutex mu;
    static std::set<std::string> seen;
    static bool capped = false;
    std::string line = std::string("strata: ") + (what ? what : "?") +
                       " failed in a destructor (ignored): " + (why ? why : "unknown error");
    std::lock_guard<std::mutex> lock(mu);
    if (seen.count(line)) return;
    if (seen.size() >= kMaxReported) {
      if (!capped) std::fputs("strata: further errors in destructors are not printed\n", stderr);
      capped = true;
      return;
    }
    seen.insert(line);
    std::fprintf(stderr, "%s\n", line.c_str());
  } catch (...) {
    // Out of memory while reporting: nothing better to do than stay quiet.
  }
}

void report_destructor_error(const char* what) noexcept {
  try {
    throw;
  } catch (const std::exception& e) {
    report_destructor_error(what, e.what());
  } catch (...) {
    report_destructor_error(what, "an exception that is not a std::exception");
  }
}

}  // namespace strata
