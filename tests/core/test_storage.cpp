// Storage's destructor never throws (base/destructor_error.h): an allocator whose
// deallocate fails (as the CUDA pool's does after a sticky device error) or a
// wrapped storage whose release callback throws is reported on stderr, once per
// distinct message, and the program carries on instead of ending in
// std::terminate.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "base/error.h"
#include "core/storage.h"

namespace strata {
namespace {

class FailingAllocator final : public Allocator {
 public:
  explicit FailingAllocator(std::string why) : why_(std::move(why)) {}
  void* allocate(size_t) override { return &byte_; }
  void deallocate(void*, size_t) override {
    ++deallocations;
    throw Error(why_);
  }
  Device device() const override { return Device::cpu; }
  const char* name() const override { return "failing"; }
  AllocatorStats stats() const override { return {}; }
  int deallocations = 0;

 private:
  std::string why_;
  char byte_ = 0;
};

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Storage, DestructorReportsAFailedFreeInsteadOfThrowing) {
  FailingAllocator a("CUDA error cudaErrorIllegalAddress in cudaEventRecord (storage test)");
  testing::internal::CaptureStderr();
  { Storage s(16, a); }
  { Storage s(16, a); }  // the same failure again: not printed again
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(a.deallocations, 2);
  EXPECT_EQ(count(err,
                  "freeing a tensor's storage failed in a destructor (ignored): CUDA error "
                  "cudaErrorIllegalAddress in cudaEventRecord (storage test)"),
            1u)
      << err;
}

TEST(Storage, DestructorReportsAThrowingReleaseCallback) {
  testing::internal::CaptureStderr();
  {
    auto s = Storage::wrap(nullptr, 0, Device::cpu, [] { throw Error("release failed (storage test)"); });
  }
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err,
                  "releasing a wrapped tensor's storage failed in a destructor (ignored): release failed "
                  "(storage test)"),
            1u)
      << err;
}

TEST(Storage, DestructorDuringUnwindingKeepsTheFirstError) {
  // Without the catch, the second throw (from ~Storage while the first unwinds)
  // would call std::terminate.
  FailingAllocator a("free failed during unwinding (storage test)");
  testing::internal::CaptureStderr();
  try {
    Storage s(16, a);
    throw Error("the kernel's error");
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "the kernel's error");
  }
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, "free failed during unwinding (storage test)"), 1u) << err;
}

}  // namespace
}  // namespace strata
