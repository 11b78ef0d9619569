// Multipart uploads (data/store/s3_multipart.h) against the real test RGW,
// partly through strata-proxy to fail, refuse or stall single requests.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>

#include "base/error.h"
#include "data/store/s3_multipart.h"
#include "data/store/s3_source.h"
#include "proxy_process.h"
#include "rgw_env.h"
#include "test_util.h"

namespace strata::data {
namespace {

constexpr int64_t kPart = 64 * 1024;  // the test RGW's smallest part (scripts/rgw.sh)

SourceOptions parted(int connections, const std::string& endpoint = "") {
  SourceOptions o = testing::rgw_options(endpoint);
  o.retry.base_delay_s = 0.01;
  o.retry.max_delay_s = 0.05;
  o.upload.connections = connections;
  o.upload.part_bytes = kPart;
  return o;
}

std::string new_bucket(const std::string& tag) {
  const std::string b = "multipart-" + tag + "-" + std::to_string(::getpid());
  create_bucket(b, testing::rgw_options());
  return b;
}

std::string random_text(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string v(n, '\0');
  for (auto& b : v) b = static_cast<char>(rng());
  return v;
}

std::string hostport(const std::string& endpoint) { return endpoint.substr(endpoint.find("//") + 2); }

// The proxy's log line of request `n` ("N METHOD TARGET HTTP/1.1"), or "".
std::string logged_request(const std::filesystem::path& log, int n) {
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(std::to_string(n) + " ", 0) == 0) return line;
  return "";
}

// Sizes around the part size: one short of a part and exactly one (a single
// PUT), one byte over (two parts, the last of one byte), many parts with fewer,
// equal and more connections than parts.
TEST(MultipartUpload, ObjectIsByteIdenticalToTheFile) {
  const std::string b = new_bucket("assembly");
  const auto dir = testing::scratch_dir("multipart-assembly");
  const std::vector<std::tuple<int64_t, int, int>> cases = {
      {kPart - 1, 4, 1},        {kPart, 4, 1},     {kPart + 1, 4, 2}, {10 * kPart + 17, 4, 11},
      {10 * kPart + 17, 1, 11}, {3 * kPart, 16, 3}};
  for (const auto& [size, connections, parts] : cases) {
    SCOPED_TRACE(std::to_string(size) + " bytes, " + std::to_string(connections) + " connections");
    const std::string data =
        random_text(static_cast<size_t>(size), static_cast<uint64_t>(size + connections));
    testing::write_file(dir / "src", data);
    S3Source s3("s3://" + b + "/up", parted(connections));
    const std::string key = "obj-" + std::to_string(size) + "-" + std::to_string(connections);
    s3.put_file(key, dir / "src");
    EXPECT_EQ(s3.last_upload().parts, parts);
    EXPECT_EQ(s3.last_upload().bytes, size);
    const auto back = s3.get(key);
    EXPECT_EQ(back.size(), data.size());
    EXPECT_TRUE(std::string(back.begin(), back.end()) == data) << "the object differs from the file";
    EXPECT_EQ(s3.head(key).size, static_cast<uint64_t>(size));
  }
  S3Source s3("s3://" + b, parted(1));
  EXPECT_TRUE(s3.open_uploads().empty()) << "a completed upload is still listed as open";
}

TEST(MultipartUpload, PartSizeGrowsBeyondTenThousandParts) {
  EXPECT_EQ(multipart_part_bytes(10000 * kPart, kPart), kPart);
  EXPECT_EQ(multipart_part_bytes(10000 * kPart + 1, kPart), int64_t{1} << 20);  // rounded up to a MiB
  const int64_t tb = int64_t{1} << 40;
  EXPECT_GE(multipart_part_bytes(tb, int64_t{8} << 20) * 10000, tb);
  EXPECT_THROW(multipart_part_bytes(1, 0), ConfigError);
}

// Request 1 creates the upload, 2 and 3 send parts 1 and 2 (one connection:
// in order); request 4, part 3, gets a 503 once and is sent again.
TEST(MultipartUpload, APartThatFailsOnceIsSentAgain) {
  const std::string b = new_bucket("retry");
  const auto dir = testing::scratch_dir("multipart-retry");
  const std::string data = random_text(6 * kPart + 5, 7);
  testing::write_file(dir / "src", data);
  testing::ProxyProcess proxy(
      hostport(testing::need_env("STRATA_TEST_S3_ENDPOINT")),
      {"--pass-first", "3", "--fail-first", "1", "--log", (dir / "proxy.log").string()});
  S3Source s3("s3://" + b, parted(1, proxy.endpoint()));
  s3.put_file("obj", dir / "src");
  EXPECT_EQ(s3.stats().retries, 1);
  EXPECT_NE(logged_request(dir / "proxy.log", 4).find("partNumber=3&"), std::string::npos)
      << "request 4 was " << logged_request(dir / "proxy.log", 4);
  const auto back = s3.get("obj");
  EXPECT_TRUE(std::string(back.begin(), back.end()) == data);
  EXPECT_TRUE(s3.open_uploads().empty());
}

// A part refused (403 is not retried): the upload fails naming that part, is
// aborted, and neither the object nor an open upload is left.
TEST(MultipartUpload, ARefusedPartAbortsTheUpload) {
  const std::string b = new_bucket("refused");
  const auto dir = testing::scratch_dir("multipart-refused");
  testing::write_file(dir / "src", random_text(8 * kPart, 8));
  testing::ProxyProcess proxy(hostport(testing::need_env("STRATA_TEST_S3_ENDPOINT")),
                              {"--pass-first", "3", "--fail-first", "1", "--fail-status", "403"});
  S3Source s3("s3://" + b, parted(4, proxy.endpoint()));
  try {
    s3.put_file("obj", dir / "src");
    FAIL() << "the upload succeeded with a part refused";
  } catch (const RemoteError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("S3 UploadPart "), std::string::npos) << msg;
    EXPECT_NE(msg.find("HTTP 403"), std::string::npos) << msg;
    EXPECT_NE(msg.find("the upload was aborted"), std::string::npos) << msg;
  }
  S3Source direct("s3://" + b, parted(1));
  EXPECT_TRUE(direct.open_uploads().empty()) << "the failed upload was left open";
  EXPECT_TRUE(direct.list("").empty()) << "a failed upload left an object";
}

// A part whose answer never comes is a stall: after retry.low_speed_timeout_s
// it is an error, sent again, and the upload completes.
TEST(MultipartUpload, AStalledPartIsAbandonedAndSentAgain) {
  const std::string b = new_bucket("stall");
  const auto dir = testing::scratch_dir("multipart-stall");
  const std::string data = random_text(4 * kPart, 9);
  testing::write_file(dir / "src", data);
  testing::ProxyProcess proxy(hostport(testing::need_env("STRATA_TEST_S3_ENDPOINT")),
                              {"--fault-every", "3", "--faults", "stall", "--stall-ms", "60000"});
  SourceOptions o = parted(2, proxy.endpoint());
  o.retry.low_speed_timeout_s = 1;
  S3Source s3("s3://" + b, o);
  s3.put_file("obj", dir / "src");
  EXPECT_GE(s3.stats().retries, 1);
  S3Source direct("s3://" + b, parted(1));
  const auto back = direct.get("obj");
  EXPECT_TRUE(std::string(back.begin(), back.end()) == data);
  EXPECT_TRUE(direct.open_uploads().empty());
}

// An upload left open (here: started by hand and never completed) is listed
// under its key and goes away when aborted.
TEST(MultipartUpload, OpenUploadsAreListedAndAborted) {
  const std::string b = new_bucket("open");
  const auto dir = testing::scratch_dir("multipart-open");
  testing::write_file(dir / "src", random_text(3 * kPart, 10));
  // Complete (request 5 on one connection) refused twice, the abort too: the upload stays open.
  testing::ProxyProcess proxy(hostport(testing::need_env("STRATA_TEST_S3_ENDPOINT")),
                              {"--pass-first", "4", "--fail-first", "2", "--fail-status", "403"});
  S3Source s3("s3://" + b + "/run", parted(1, proxy.endpoint()));
  try {
    s3.put_file("ckpt/obj", dir / "src");
    FAIL() << "the upload succeeded with its completion refused";
  } catch (const RemoteError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("CompleteMultipartUpload"), std::string::npos) << msg;
    EXPECT_NE(msg.find("aborting the upload"), std::string::npos) << msg;
    EXPECT_NE(msg.find("stay in the store"), std::string::npos) << msg;
  }
  S3Source direct("s3://" + b + "/run", parted(1));
  auto open = direct.open_uploads("ckpt/");
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].key, "ckpt/obj");
  EXPECT_FALSE(open[0].upload_id.empty());
  EXPECT_TRUE(direct.open_uploads("other/").empty());
  direct.abort_upload(open[0]);
  EXPECT_TRUE(direct.open_uploads().empty());
  EXPECT_TRUE(direct.list("").empty());
}

}  // namespace
}  // namespace strata::data
