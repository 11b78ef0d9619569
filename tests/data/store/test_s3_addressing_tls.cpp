// The AWS configuration chain against the real test RGW: virtual-host
// addressing (RGW's rgw_dns_name is localhost, curl resolves BUCKET.localhost
// to loopback), keys from a credential_process, and TLS through stunnel4 with
// a CA bundle accepted and bad certificates refused.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

#include "base/error.h"
#include "data/store/aws_credentials.h"
#include "data/store/s3_source.h"
#include "rgw_env.h"
#include "test_util.h"
#include "tls_endpoint.h"

namespace strata::data {
namespace {

std::string rgw_port() {
  const std::string e = testing::need_env("STRATA_TEST_S3_ENDPOINT");
  return e.substr(e.rfind(':') + 1);
}

std::string new_bucket(const std::string& tag, const SourceOptions& o) {
  const std::string b = "chain-" + tag + "-" + std::to_string(::getpid());
  create_bucket(b, o);
  return b;
}

class S3Chain : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                          "AWS_CA_BUNDLE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "S3_ENDPOINT"})
      ::unsetenv(v);
    dir_ = testing::scratch_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ::setenv("AWS_CONFIG_FILE", (dir_ / "config").c_str(), 1);
    ::setenv("AWS_SHARED_CREDENTIALS_FILE", (dir_ / "credentials").c_str(), 1);
  }
  std::filesystem::path dir_;
};

TEST_F(S3Chain, VirtualHostAddressingAgreesWithPathStyle) {
  // What Huawei OBS requires (bucket.obs.REGION.myhuaweicloud.com), here as
  // BUCKET.localhost:PORT against RGW.
  SourceOptions virt = testing::rgw_options("http://localhost:" + rgw_port());
  virt.addressing = AddressingStyle::kVirtual;
  const std::string b = new_bucket("virtual", virt);  // PUT http://BUCKET.localhost:PORT/
  S3Source v("s3://" + b + "/ds", virt);
  ASSERT_TRUE(v.virtual_host());
  S3Source p("s3://" + b + "/ds", testing::rgw_options());  // path style at 127.0.0.1
  ASSERT_FALSE(p.virtual_host());
  v.put("a b/x+y=z.bin", testing::bytes_of("written virtual-host style"));
  p.put("from-path", testing::bytes_of("written path style"));
  EXPECT_EQ(p.get("a b/x+y=z.bin"), testing::bytes_of("written virtual-host style"));
  EXPECT_EQ(v.get("from-path"), testing::bytes_of("written path style"));
  EXPECT_EQ(v.get_range("from-path", 8, 4), testing::bytes_of("path"));
  EXPECT_EQ(v.head("from-path").size, 18u);
  v.set_list_page_size(1);
  auto listed = v.list("");
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].key, "a b/x+y=z.bin");
  EXPECT_EQ(listed[1].key, "from-path");
  try {
    v.get("absent");
    FAIL() << "GET of a missing key succeeded";
  } catch (const RemoteError& e) {
    EXPECT_EQ(e.http_status(), 404);  // NoSuchKey, not NoSuchBucket: the host named the bucket
    EXPECT_NE(std::string(e.what()).find("NoSuchKey"), std::string::npos) << e.what();
  }
}

TEST_F(S3Chain, ProfileSetsEndpointAndAddressingAndCredentialProcessSigns) {
  // The keys come from a child process; it logs each run so the test sees it ran.
  const auto script = dir_ / "creds.sh";
  testing::write_file(script, "#!/bin/sh\necho run >> " + (dir_ / "runs").string() +
                                  "\nprintf '{\"Version\": 1, \"AccessKeyId\": \"%s\", \"SecretAccessKey\": "
                                  "\"%s\"}' \"$1\" \"$2\"\n");
  ::chmod(script.c_str(), 0755);
  testing::write_file(dir_ / "config",
                      "[profile rgw]\nendpoint_url = http://localhost:" + rgw_port() +
                          "\ns3 =\n  addressing_style = virtual\n" + "credential_process = " +
                          script.string() + " " + testing::need_env("STRATA_TEST_S3_ACCESS_KEY") + " " +
                          testing::need_env("STRATA_TEST_S3_SECRET_KEY") +
                          "\n[profile wrong]\nendpoint_url = http://localhost:" + rgw_port() +
                          "\ncredential_process = " + script.string() + " " +
                          testing::need_env("STRATA_TEST_S3_ACCESS_KEY") + " not-the-secret\n");
  SourceOptions o;
  o.profile = "rgw";
  const std::string b = new_bucket("process", o);
  S3Source src("s3://" + b, o);
  EXPECT_TRUE(src.virtual_host());
  EXPECT_EQ(src.options().endpoint, "http://localhost:" + rgw_port());
  src.put("k", testing::bytes_of("signed with process keys"));
  EXPECT_EQ(src.get("k"), testing::bytes_of("signed with process keys"));
  EXPECT_EQ(testing::read_file(dir_ / "runs"), "run\nrun\n");  // once for create_bucket, once for src: cached

  SourceOptions w;
  w.profile = "wrong";
  S3Source bad("s3://" + b, w);
  try {
    bad.get("k");
    FAIL() << "wrong keys from credential_process were accepted";
  } catch (const RemoteError& e) {
    EXPECT_EQ(e.http_status(), 403);
    EXPECT_NE(std::string(e.what()).find("credential_process of profile 'wrong'"), std::string::npos)
        << e.what();
  }
}

TEST_F(S3Chain, TlsWithTheTestCaIsAcceptedAndBadCertificatesRefused) {
  testing::TlsEndpoint tls(dir_, "127.0.0.1:" + rgw_port());
  const std::string https = "https://localhost:" + std::to_string(tls.port());
  SourceOptions o = testing::rgw_options(https);
  o.ca_bundle = tls.ca();
  o.retry.max_attempts = 2;
  const std::string b = new_bucket("tls", o);
  S3Source src("s3://" + b, o);
  src.put("k", testing::bytes_of("over TLS"));
  EXPECT_EQ(src.get("k"), testing::bytes_of("over TLS"));

  ::setenv("AWS_CA_BUNDLE", tls.ca().c_str(), 1);  // the environment's bundle, when the options name none
  SourceOptions from_env = testing::rgw_options(https);
  EXPECT_EQ(S3Source("s3://" + b, from_env).get("k"), testing::bytes_of("over TLS"));
  ::unsetenv("AWS_CA_BUNDLE");

  auto refused = [&](SourceOptions opts, const std::string& endpoint, const std::string& reason) {
    S3Source s("s3://" + b, opts);
    try {
      s.get("k");
      ADD_FAILURE() << "TLS to " << endpoint << " was accepted";
    } catch (const RemoteError& e) {
      const std::string m = e.what();
      std::printf("refused: %s\n", m.c_str());
      EXPECT_NE(m.find("TLS with " + endpoint + " failed"), std::string::npos) << m;
      EXPECT_NE(m.find(reason), std::string::npos) << m;
    }
    EXPECT_EQ(s.stats().retries.load(), 0);  // a certificate does not get better by retrying
  };
  SourceOptions wrong_ca = o;
  wrong_ca.ca_bundle = tls.other_ca();
  refused(wrong_ca, https, "unable to get local issuer certificate");
  SourceOptions system_cas = testing::rgw_options(https);  // verification is on without a bundle too
  refused(system_cas, https, "the system's");
  const std::string by_ip = "https://127.0.0.1:" + std::to_string(tls.port());
  SourceOptions wrong_host = testing::rgw_options(by_ip);
  wrong_host.ca_bundle = tls.ca();
  refused(wrong_host, by_ip, "127.0.0.1");
}

}  // namespace
}  // namespace strata::data
