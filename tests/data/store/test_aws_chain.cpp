// The AWS configuration chain without a server: the ini parser, which source
// wins for endpoint/region/addressing/CA/keys, credential_process run as a real
// child process, the STS answer parser, the refresh cache, addressing choice.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>

#include "aws_env_fixture.h"
#include "base/error.h"
#include "data/store/aws_config.h"
#include "data/store/s3_endpoint.h"
#include "data/store/s3_options.h"
#include "test_util.h"

namespace strata::data {
namespace {

// Every variable the chain reads, unset; HOME points nowhere (aws_env_test.h).
class AwsChain : public testing::AwsEnvTest {
 protected:
  std::filesystem::path config(const std::string& text) {
    testing::write_file(dir_ / "config", text);
    ::setenv("AWS_CONFIG_FILE", (dir_ / "config").c_str(), 1);
    return dir_ / "config";
  }
};

TEST_F(AwsChain, ConfigFileProfilesAndSubsections) {
  const auto file = config(
      "# comment\n[default]\nregion = eu-west-1\ns3 =\n  addressing_style = virtual\n  endpoint_url = "
      "http://e:1\n"
      "output = json\n\n[profile dev]\nregion=ap-south-1\ncredential_process = /bin/creds --a 'b c'\n"
      "[dev]\nregion = ignored-without-profile-prefix\n[sso-session x]\nregion = ignored\n");
  AwsProfile d = read_aws_profile(file, "default", AwsFileKind::kConfig);
  EXPECT_TRUE(d.found);
  EXPECT_EQ(d.get("region"), "eu-west-1");
  EXPECT_EQ(d.get("s3", "addressing_style"), "virtual");
  EXPECT_EQ(d.get("s3", "endpoint_url"), "http://e:1");
  EXPECT_EQ(d.get("output"), "json");  // the sub-section ended at the unindented line
  EXPECT_EQ(d.get("s3", "output"), "");
  AwsProfile dev = read_aws_profile(file, "dev", AwsFileKind::kConfig);
  EXPECT_EQ(dev.get("region"), "ap-south-1");
  EXPECT_EQ(dev.get("credential_process"), "/bin/creds --a 'b c'");
  EXPECT_FALSE(read_aws_profile(file, "x", AwsFileKind::kConfig).found);
  EXPECT_FALSE(read_aws_profile(dir_ / "absent", "default", AwsFileKind::kConfig).found);
  // In the credentials file a section is the bare profile name.
  EXPECT_EQ(read_aws_profile(file, "dev", AwsFileKind::kCredentials).get("region"),
            "ignored-without-profile-prefix");
}

TEST_F(AwsChain, MalformedLineNamesFileAndLine) {
  const auto file = config("[default]\nregion = x\nthis line has no equals sign\n");
  try {
    read_aws_profile(file, "default", AwsFileKind::kConfig);
    FAIL() << "accepted a malformed line";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(file.string() + ":3"), std::string::npos) << e.what();
  }
}

TEST_F(AwsChain, EndpointRegionAddressingPrecedence) {
  config(
      "[default]\nregion = eu-west-1\naws_access_key_id = CK\naws_secret_access_key = CS\n"
      "[profile p]\nregion = eu-north-1\nendpoint_url = http://global:1\nca_bundle = /p/ca.pem\n"
      "aws_access_key_id = PK\naws_secret_access_key = PS\ns3 =\n  addressing_style = path\n"
      "[profile q]\nendpoint_url = http://global:2\naws_access_key_id = QK\naws_secret_access_key = QS\n"
      "s3 =\n  endpoint_url = http://s3-only:2\n");
  SourceOptions o = resolve_s3_options({});  // the profile's values under defaults
  EXPECT_EQ(o.region, "eu-west-1");
  EXPECT_EQ(o.endpoint, "https://s3.eu-west-1.amazonaws.com");
  EXPECT_EQ(o.addressing, AddressingStyle::kAuto);
  EXPECT_EQ(o.credentials->get().access_key, "CK");
  ::setenv("AWS_PROFILE", "p", 1);
  o = resolve_s3_options({});
  EXPECT_EQ(o.region, "eu-north-1");
  EXPECT_EQ(o.endpoint, "http://global:1");
  EXPECT_EQ(o.addressing, AddressingStyle::kPath);
  EXPECT_EQ(o.ca_bundle, "/p/ca.pem");
  EXPECT_EQ(o.sts_endpoint, "http://global:1");  // endpoint_url is for every service
  ::setenv("AWS_PROFILE", "q", 1);
  EXPECT_EQ(resolve_s3_options({}).endpoint, "http://s3-only:2");  // the s3 sub-section beats the global one
  // The environment beats the profile...
  ::setenv("AWS_REGION", "us-west-2", 1);
  ::setenv("AWS_ENDPOINT_URL", "http://env:3", 1);
  ::setenv("AWS_CA_BUNDLE", "/env/ca.pem", 1);
  ::setenv("AWS_PROFILE", "p", 1);
  o = resolve_s3_options({});
  EXPECT_EQ(o.region, "us-west-2");
  EXPECT_EQ(o.endpoint, "http://env:3");
  EXPECT_EQ(o.ca_bundle, "/env/ca.pem");
  ::setenv("AWS_ENDPOINT_URL_S3", "http://env-s3:4", 1);
  ::setenv("AWS_ENDPOINT_URL_STS", "http://env-sts:5", 1);
  o = resolve_s3_options({});
  EXPECT_EQ(o.endpoint, "http://env-s3:4");
  EXPECT_EQ(o.sts_endpoint, "http://env-sts:5");
  // ...and explicit options (data.s3.*) beat the environment.
  SourceOptions x;
  x.endpoint = "http://yaml:6/";
  x.region = "sa-east-1";
  x.addressing = AddressingStyle::kVirtual;
  x.ca_bundle = "/yaml/ca.pem";
  o = resolve_s3_options(x);
  EXPECT_EQ(o.endpoint, "http://yaml:6");
  EXPECT_EQ(o.region, "sa-east-1");
  EXPECT_EQ(o.addressing, AddressingStyle::kVirtual);
  EXPECT_EQ(o.ca_bundle, "/yaml/ca.pem");
}

TEST_F(AwsChain, CredentialOrderMatchesTheCli) {
  config(
      "[default]\naws_access_key_id = CFGK\naws_secret_access_key = CFGS\n"
      "[profile p]\ncredential_process = " +
      script("p.sh", "echo '{\"Version\": 1, \"AccessKeyId\": \"PROCK\", \"SecretAccessKey\": \"PROCS\"}'") +
      "\naws_access_key_id = PCFGK\naws_secret_access_key = PCFGS\n");
  testing::write_file(dir_ / "credentials",
                      "[p]\naws_access_key_id = FILEK\naws_secret_access_key = FILES\n");
  auto key = [](SourceOptions o = {}) { return resolve_s3_options(o).credentials->get().access_key; };
  EXPECT_EQ(key(), "CFGK");  // config-file keys, the last resort
  ::setenv("AWS_PROFILE", "p", 1);
  EXPECT_EQ(key(), "PROCK");  // credential_process beats config-file keys
  ::setenv("AWS_SHARED_CREDENTIALS_FILE", (dir_ / "credentials").c_str(), 1);
  EXPECT_EQ(key(), "FILEK");  // the credentials file beats credential_process
  ::setenv("AWS_ACCESS_KEY_ID", "ENVK", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "ENVS", 1);
  EXPECT_EQ(key(), "ENVK");  // the environment beats the files (AWS_PROFILE set or not)
  SourceOptions by_profile;
  by_profile.profile = "p";
  EXPECT_EQ(key(by_profile), "FILEK");  // an explicit profile skips the environment, as --profile does
  SourceOptions keys;
  keys.access_key = "OPTK";
  keys.secret_key = "OPTS";
  EXPECT_EQ(key(keys), "OPTK");  // explicit keys beat everything
  SourceOptions missing;
  missing.profile = "nope";
  EXPECT_THROW(resolve_s3_options(missing), ConfigError);
}

TEST_F(AwsChain, WebIdentityFromEnvironmentOrProfile) {
  testing::write_file(dir_ / "token", "tok\n");
  ::setenv("AWS_WEB_IDENTITY_TOKEN_FILE", (dir_ / "token").c_str(), 1);
  EXPECT_THROW(resolve_s3_options({}), ConfigError);  // a token without a role
  ::setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/r", 1);
  ::setenv("AWS_ENDPOINT_URL_STS", "http://sts:1", 1);
  SourceOptions o = resolve_s3_options({});
  EXPECT_NE(o.credentials->describe().find("role arn:aws:iam::123456789012:role/r"), std::string::npos);
  EXPECT_NE(o.credentials->describe().find("STS at http://sts:1"), std::string::npos);
  ::unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");
  ::unsetenv("AWS_ROLE_ARN");
  config("[default]\nweb_identity_token_file = " + (dir_ / "token").string() +
         "\nrole_arn = arn:x:role/cfg\n");
  EXPECT_NE(resolve_s3_options({}).credentials->describe().find("role arn:x:role/cfg"), std::string::npos);
}

TEST_F(AwsChain, AddressingChoice) {
  using A = AddressingStyle;
  EXPECT_EQ(choose_addressing(A::kAuto, "https://s3.eu-west-1.amazonaws.com", "my-bucket"), A::kVirtual);
  EXPECT_EQ(choose_addressing(A::kAuto, "https://obs.cn-north-4.myhuaweicloud.com", "data"), A::kVirtual);
  EXPECT_EQ(choose_addressing(A::kAuto, "https://s3.amazonaws.com", "dotted.name"),
            A::kPath);  // TLS wildcard
  EXPECT_EQ(choose_addressing(A::kAuto, "https://s3.amazonaws.com", "Upper_Case"), A::kPath);
  EXPECT_EQ(choose_addressing(A::kAuto, "http://127.0.0.1:7480", "data"), A::kPath);
  EXPECT_EQ(choose_addressing(A::kAuto, "http://minio.internal:9000", "data"), A::kPath);
  EXPECT_EQ(choose_addressing(A::kVirtual, "http://localhost:7480", "data"), A::kVirtual);
  EXPECT_EQ(choose_addressing(A::kPath, "https://s3.amazonaws.com", "data"), A::kPath);
  EXPECT_THROW(choose_addressing(A::kVirtual, "http://127.0.0.1:7480", "data"), ConfigError);
  EXPECT_THROW(choose_addressing(A::kVirtual, "https://s3.amazonaws.com", "a.b"), ConfigError);
  EXPECT_THROW(choose_addressing(A::kAuto, "s3.amazonaws.com", "data"), ConfigError);  // no scheme

  S3Endpoint obs("https://obs.cn-north-4.myhuaweicloud.com", "data", A::kAuto);
  EXPECT_EQ(obs.object_url("a/b.h5"), "https://data.obs.cn-north-4.myhuaweicloud.com/a/b.h5");
  EXPECT_EQ(obs.bucket_resource(), "https://data.obs.cn-north-4.myhuaweicloud.com/");
  S3Endpoint local("http://localhost:7480", "data", A::kVirtual);
  EXPECT_EQ(local.object_url("k"), "http://data.localhost:7480/k");
  S3Endpoint path("http://127.0.0.1:7480", "data", A::kAuto);
  EXPECT_EQ(path.object_url("k"), "http://127.0.0.1:7480/data/k");
  EXPECT_EQ(path.bucket_resource(), "http://127.0.0.1:7480/data");
  EXPECT_EQ(parse_addressing_style("virtual", "x"), A::kVirtual);
  EXPECT_THROW(parse_addressing_style("host", "x"), ConfigError);
}

}  // namespace
}  // namespace strata::data
