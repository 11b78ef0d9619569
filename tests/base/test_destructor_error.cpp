// report_destructor_error: each distinct message once on stderr, a bounded
// number of them, never a throw (base/destructor_error.h).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "base/destructor_error.h"

namespace strata {
namespace {

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(DestructorError, EachMessageOnceAndABoundedNumber) {
  testing::internal::CaptureStderr();
  report_destructor_error("cudaFreeAsync of scratch", "cudaErrorLaunchFailure");
  report_destructor_error("cudaFreeAsync of scratch", "cudaErrorLaunchFailure");
  try {
    throw std::runtime_error("from an exception");
  } catch (...) {
    report_destructor_error("freeing storage");
  }
  std::string first = testing::internal::GetCapturedStderr();
  EXPECT_EQ(first,
            "strata: cudaFreeAsync of scratch failed in a destructor (ignored): cudaErrorLaunchFailure\n"
            "strata: freeing storage failed in a destructor (ignored): from an exception\n");

  testing::internal::CaptureStderr();
  for (int i = 0; i < 100; ++i) report_destructor_error("free", std::to_string(i).c_str());
  std::string many = testing::internal::GetCapturedStderr();
  EXPECT_LT(lines(many), 20u) << many;  // 16 in all, then one line saying the rest are not printed
  EXPECT_NE(many.find("further errors in destructors are not printed"), std::string::npos) << many;
}

}  // namespace
}  // namespace strata
