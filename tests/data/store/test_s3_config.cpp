// Credential/endpoint lookup from the environment and the shared credentials
// file, and the S3 XML parsing, without a server.
#include <gtest/gtest.h>

#include <cstdlib>

#include "aws_env_fixture.h"
#include "base/error.h"
#include "data/store/aws_credentials.h"
#include "data/store/s3_source.h"
#include "data/store/s3_xml.h"
#include "test_util.h"

namespace strata::data {
namespace {

using testing::clear_aws_env;

SourceOptions explicit_options() {
  SourceOptions o;
  o.endpoint = "http://h:3";
  o.access_key = "A2";
  o.secret_key = "S2";
  return o;
}

TEST(S3Options, EnvironmentAndDefaults) {
  clear_aws_env();
  EXPECT_THROW(resolve_s3_options({}), ConfigError);
  ::setenv("AWS_ACCESS_KEY_ID", "AK", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "SK", 1);
  ::setenv("AWS_SESSION_TOKEN", "TOK", 1);
  SourceOptions o = resolve_s3_options({});
  EXPECT_EQ(o.region, "us-east-1");
  EXPECT_EQ(o.endpoint, "https://s3.us-east-1.amazonaws.com");
  EXPECT_EQ(o.credentials->get().access_key, "AK");
  EXPECT_EQ(o.credentials->get().session_token, "TOK");
  ::setenv("AWS_DEFAULT_REGION", "eu-west-1", 1);
  ::setenv("S3_ENDPOINT", "http://127.0.0.1:1/", 1);
  o = resolve_s3_options({});
  EXPECT_EQ(o.region, "eu-west-1");
  EXPECT_EQ(o.endpoint, "http://127.0.0.1:1");
  ::setenv("AWS_REGION", "ap-south-1", 1);
  ::setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:2", 1);
  o = resolve_s3_options({});
  EXPECT_EQ(o.region, "ap-south-1");
  EXPECT_EQ(o.endpoint, "http://127.0.0.1:2");
  o = resolve_s3_options(explicit_options());
  EXPECT_EQ(o.endpoint, "http://h:3");
  EXPECT_EQ(o.credentials->get().access_key, "A2");
  clear_aws_env();
}

TEST(S3Options, SharedCredentialsFileProfiles) {
  clear_aws_env();
  auto dir = testing::scratch_dir("s3-creds");
  testing::write_file(
      dir / "credentials",
      "# comment\n[default]\naws_access_key_id = DEFAK\naws_secret_access_key=DEFSK\n\n"
      "[other]\naws_access_key_id = OAK\n aws_secret_access_key = OSK \naws_session_token = OTOK\n");
  ::setenv("AWS_SHARED_CREDENTIALS_FILE", (dir / "credentials").c_str(), 1);
  AwsCredentials k = resolve_s3_options({}).credentials->get();
  EXPECT_EQ(k.access_key, "DEFAK");
  EXPECT_EQ(k.secret_key, "DEFSK");
  ::setenv("AWS_PROFILE", "other", 1);
  k = resolve_s3_options({}).credentials->get();
  EXPECT_EQ(k.access_key, "OAK");
  EXPECT_EQ(k.secret_key, "OSK");
  EXPECT_EQ(k.session_token, "OTOK");
  ::setenv("AWS_PROFILE", "absent", 1);
  EXPECT_THROW(resolve_s3_options({}), ConfigError);
  clear_aws_env();
}

TEST(S3Xml, ErrorAndListPage) {
  S3Error e = parse_s3_error(
      "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>a &amp; b</Message>"
      "<RequestId>tx-1</RequestId></Error>");
  EXPECT_EQ(e.code, "NoSuchKey");
  EXPECT_EQ(e.message, "a & b");
  EXPECT_EQ(e.request_id, "tx-1");
  ListPage p = parse_list_page(
      "<ListBucketResult><IsTruncated>true</IsTruncated><Contents><Key>a&amp;b &lt;c&gt; &#x41;&#66;</Key>"
      "<ETag>&quot;e1&quot;</ETag><Size>12</Size></Contents><Contents><Key>z</Key><Size>0</Size></Contents>"
      "<NextContinuationToken>tok/+=</NextContinuationToken></ListBucketResult>");
  EXPECT_TRUE(p.truncated);
  EXPECT_EQ(p.next_token, "tok/+=");
  ASSERT_EQ(p.objects.size(), 2u);
  EXPECT_EQ(p.objects[0].key, "a&b <c> AB");
  EXPECT_EQ(p.objects[0].etag, "e1");
  EXPECT_EQ(p.objects[0].size, 12u);
  EXPECT_EQ(p.objects[1].key, "z");
}

}  // namespace
}  // namespace strata::data
