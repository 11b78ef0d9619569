// Tests of the AWS configuration chain start from an empty environment: every
// variable the chain reads unset, HOME pointing nowhere (so no ~/.aws is read).
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "test_util.h"

namespace strata::data::testing {

inline void clear_aws_env() {
  for (const char* v :
       {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "S3_ENDPOINT", "AWS_REGION", "AWS_DEFAULT_REGION",
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_CA_BUNDLE", "AWS_ENDPOINT_URL_STS",
        "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME"})
    ::unsetenv(v);
  ::setenv("HOME", "/nonexistent-home", 1);
}

// A fixture with that environment and a scratch directory per test.
class AwsEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_aws_env();
    dir_ = scratch_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override { clear_aws_env(); }

  // An executable /bin/sh script running `body`.
  std::string script(const std::string& name, const std::string& body) {
    const auto p = dir_ / name;
    write_file(p, "#!/bin/sh\n" + body + "\n");
    ::chmod(p.c_str(), 0755);
    return p.string();
  }
  std::filesystem::path dir_;
};

}  // namespace strata::data::testing
