// Web-identity credentials from a real STS stand-in: moto's server, started by
// sts_moto.sh, which passes its endpoint in STRATA_TEST_STS_ENDPOINT. The clock
// is injected so that "5 minutes before expiry" arrives without waiting.
#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <filesystem>

#include "data/store/s3_options.h"
#include "data/store/sts_client.h"
#include "rgw_env.h"
#include "test_util.h"

namespace strata::data {
namespace {

std::string utc(WallClock::time_point t) {
  const std::time_t s = WallClock::to_time_t(t);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&s));
  return b;
}

WebIdentitySettings settings(const std::filesystem::path& token_file) {
  WebIdentitySettings s;
  s.sts_endpoint = testing::need_env("STRATA_TEST_STS_ENDPOINT");
  s.token_file = token_file;
  s.role_arn = "arn:aws:iam::123456789012:role/strata-reader";
  s.session_name = "strata-test";
  s.duration_s = 900;
  return s;
}

TEST(WebIdentity, ObtainedCachedAndRefreshedBeforeExpiry) {
  const auto dir = testing::scratch_dir("web-identity");
  testing::write_file(dir / "token", "eyJ.first-token.sig\n");
  WallClock::time_point now = WallClock::now();
  WebIdentityCredentialProvider p(settings(dir / "token"),
                                  RefreshPolicy{std::chrono::minutes(5), [&] { return now; }});

  const AwsCredentials first = p.get();
  ASSERT_TRUE(first.expires);
  std::printf("obtained  %s (session token %zu bytes), expires %s, fetches %lld\n", first.access_key.c_str(),
              first.session_token.size(), utc(*first.expires).c_str(), static_cast<long long>(p.fetches()));
  EXPECT_FALSE(first.access_key.empty());
  EXPECT_FALSE(first.secret_key.empty());
  EXPECT_FALSE(first.session_token.empty());
  EXPECT_GT(*first.expires, now);

  now = *first.expires - std::chrono::minutes(5) - std::chrono::seconds(1);
  EXPECT_EQ(p.get().access_key, first.access_key);  // outside the margin: the cached keys
  EXPECT_EQ(p.fetches(), 1);

  testing::write_file(dir / "token", "eyJ.rotated-token.sig\n");  // the kubelet rotates the file
  now = *first.expires - std::chrono::minutes(5);
  const AwsCredentials second = p.get();
  std::printf("refreshed %s at %s (5 min before %s), expires %s, fetches %lld\n", second.access_key.c_str(),
              utc(now).c_str(), utc(*first.expires).c_str(), utc(*second.expires).c_str(),
              static_cast<long long>(p.fetches()));
  EXPECT_EQ(p.fetches(), 2);
  EXPECT_NE(second.access_key, first.access_key);
  EXPECT_NE(second.session_token, first.session_token);

  // The token file is read again on each refresh: without it the refresh fails, naming it.
  std::filesystem::remove(dir / "token");
  now = *second.expires;
  try {
    p.get();
    FAIL() << "refreshed without a token file";
  } catch (const CredentialError& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "token").string()), std::string::npos) << e.what();
  }
}

TEST(WebIdentity, TheChainUsesTheEnvironmentAsOnEks) {
  for (const char* v : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_ENDPOINT_URL"})
    ::unsetenv(v);
  ::setenv("HOME", "/nonexistent-home", 1);
  const auto dir = testing::scratch_dir("web-identity-env");
  testing::write_file(dir / "token", "eyJ.pod-token.sig");
  ::setenv("AWS_WEB_IDENTITY_TOKEN_FILE", (dir / "token").c_str(), 1);
  ::setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/pod-role", 1);
  ::setenv("AWS_ROLE_SESSION_NAME", "pod-session", 1);
  ::setenv("AWS_ENDPOINT_URL_STS", testing::need_env("STRATA_TEST_STS_ENDPOINT").c_str(), 1);
  const SourceOptions o = resolve_s3_options({});
  const AwsCredentials k = o.credentials->get();
  std::printf("chain: %s -> %s\n", o.credentials->describe().c_str(), k.access_key.c_str());
  EXPECT_FALSE(k.session_token.empty());
  EXPECT_NE(o.credentials->describe().find("pod-role"), std::string::npos);
}

TEST(WebIdentity, StsRefusalNamesTheEndpoint) {
  const auto dir = testing::scratch_dir("web-identity-refused");
  testing::write_file(dir / "token", "t");
  WebIdentitySettings s = settings(dir / "token");
  s.sts_endpoint += "/no-such-path";  // moto answers 404 here
  s.retry.max_attempts = 1;
  WebIdentityCredentialProvider p(s);
  try {
    p.get();
    FAIL() << "credentials from a wrong STS path";
  } catch (const CredentialError& e) {
    std::printf("refused: %s\n", e.what());
    EXPECT_NE(std::string(e.what()).find(s.sts_endpoint), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("HTTP 4"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace strata::data
