// Temporary credentials without a server: credential_process run as a real
// child process, the refresh cache and its clock, the STS answer parser, and
// the session token on the wire (a one-shot HTTP listener records a request).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "aws_env_fixture.h"
#include "base/error.h"
#include "data/store/credential_process.h"
#include "data/store/s3_source.h"
#include "data/store/sts_client.h"
#include "test_util.h"

namespace strata::data {
namespace {

using Credentials = testing::AwsEnvTest;  // every variable the chain reads unset, HOME nowhere

TEST_F(Credentials, CommandLineIsSplitWithoutAShell) {
  EXPECT_EQ(split_command_line("a  'b c' \"d \\\"e\\\" $HOME\" f\\ g `x` ;|", "p"),
            (std::vector<std::string>{"a", "b c", "d \"e\" $HOME", "f g", "`x`", ";|"}));
  EXPECT_THROW(split_command_line("a 'b", "p"), ConfigError);
  EXPECT_THROW(split_command_line("   ", "p"), ConfigError);
}

TEST_F(Credentials, CredentialProcessOutputAndFailures) {
  const std::string where = "profile 'p' in /x/config";
  AwsCredentials c = parse_credential_process_output(
      R"({"Version": 1, "AccessKeyId": "K", "SecretAccessKey": "S", "SessionToken": "T",
          "Expiration": "2030-01-02T03:04:05Z"})",
      where);
  EXPECT_EQ(c.session_token, "T");
  ASSERT_TRUE(c.expires);
  EXPECT_EQ(WallClock::to_time_t(*c.expires), 1893553445);
  EXPECT_FALSE(
      parse_credential_process_output(R"({"Version":1,"AccessKeyId":"K","SecretAccessKey":"S"})", where)
          .expires);
  for (const char* bad : {"not json", R"({"Version": 2, "AccessKeyId": "K", "SecretAccessKey": "S"})",
                          R"({"Version": 1, "SecretAccessKey": "S"})", "[1]"})
    try {
      parse_credential_process_output(bad, where);
      FAIL() << "accepted " << bad;
    } catch (const CredentialError& e) {
      EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
    }

  // A real child: its arguments arrive unexpanded, and its failure names the
  // profile, the command, the exit status and what it wrote to stderr.
  const std::string echo_args =
      script("args.sh",
             "printf '{\"Version\":1,\"AccessKeyId\":\"%s\",\"SecretAccessKey\":\"%s\"}' "
             "\"$1\" \"$2\"");
  ProcessCredentialProvider ok(echo_args + " 'A K' '$HOME'", where);
  c = ok.get();
  EXPECT_EQ(c.access_key, "A K");
  EXPECT_EQ(c.secret_key, "$HOME");
  ProcessCredentialProvider failing(script("fail.sh", "echo 'token expired, run login' >&2; exit 3"), where);
  try {
    failing.get();
    FAIL() << "a failing credential_process gave keys";
  } catch (const CredentialError& e) {
    const std::string m = e.what();
    for (const char* part :
         {"profile 'p' in /x/config", "fail.sh", "exit status 3", "token expired, run login"})
      EXPECT_NE(m.find(part), std::string::npos) << part << " not in: " << m;
  }
  ProcessCredentialProvider absent("/nonexistent/creds --x", where);
  EXPECT_THROW(absent.get(), CredentialError);
  ProcessCredentialProvider garbage(script("garbage.sh", "echo hello"), where);
  EXPECT_THROW(garbage.get(), CredentialError);
}

TEST_F(Credentials, ExpiringProcessKeysAreRefetchedBeforeExpiry) {
  // Each run prints a new key (a counter file) that expires in 2030.
  const std::string counter = (dir_ / "n").string();
  const std::string cmd =
      script("count.sh", "n=$(cat " + counter + " 2>/dev/null || echo 0); n=$((n+1)); echo $n > " + counter +
                             "; echo '{\"Version\":1,\"AccessKeyId\":\"K'$n'\","
                             "\"SecretAccessKey\":\"S\",\"Expiration\":\"2030-01-01T00:00:00Z\"}'");
  WallClock::time_point now = parse_iso8601("2029-12-31T23:00:00Z", "t");
  RefreshPolicy policy{std::chrono::minutes(5), [&] { return now; }};
  ProcessCredentialProvider p(cmd, "profile 'p'", policy);
  EXPECT_EQ(p.get().access_key, "K1");
  EXPECT_EQ(p.get().access_key, "K1");  // cached
  now = parse_iso8601("2029-12-31T23:54:59Z", "t");
  EXPECT_EQ(p.get().access_key, "K1");  // 5 min 1 s left: still cached
  now = parse_iso8601("2029-12-31T23:55:00Z", "t");
  EXPECT_EQ(p.get().access_key, "K2");  // within the margin: fetched again
  EXPECT_EQ(p.fetches(), 2);
}

TEST_F(Credentials, AFailedRefreshKeepsUnexpiredKeys) {
  // The process succeeds while the flag file exists.
  const std::string flag = (dir_ / "up").string();
  testing::write_file(flag, "");
  const std::string cmd =
      script("flaky.sh", "[ -e " + flag +
                             " ] || { echo 'STS unreachable' >&2; exit 1; }; "
                             "echo '{\"Version\":1,\"AccessKeyId\":\"K\",\"SecretAccessKey\":\"S\","
                             "\"Expiration\":\"2030-01-01T00:00:00Z\"}'");
  WallClock::time_point now = parse_iso8601("2029-12-31T23:00:00Z", "t");
  ProcessCredentialProvider p(cmd, "profile 'p'",
                              RefreshPolicy{std::chrono::minutes(5), [&] { return now; }});
  EXPECT_EQ(p.get().access_key, "K");
  std::filesystem::remove(flag);
  now = parse_iso8601("2029-12-31T23:58:00Z", "t");  // inside the margin, not expired
  EXPECT_EQ(p.get().access_key, "K");
  EXPECT_EQ(p.fetches(), 2);                         // it did try
  now = parse_iso8601("2030-01-01T00:00:00Z", "t");  // expired: the failure surfaces
  try {
    p.get();
    FAIL() << "expired keys were returned";
  } catch (const CredentialError& e) {
    EXPECT_NE(std::string(e.what()).find("STS unreachable"), std::string::npos) << e.what();
  }
}

TEST_F(Credentials, ConcurrentCallersShareOneFetch) {
  const std::string counter = (dir_ / "n").string();
  const std::string cmd =
      script("slow.sh", "sleep 0.2; echo x >> " + counter +
                            "; echo '{\"Version\":1,\"AccessKeyId\":\"K\",\"SecretAccessKey\":\"S\"}'");
  ProcessCredentialProvider p(cmd, "profile 'p'");
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) threads.emplace_back([&] { EXPECT_EQ(p.get().access_key, "K"); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(p.fetches(), 1);
  EXPECT_EQ(testing::read_file(counter), "x\n");
}

TEST_F(Credentials, Iso8601Forms) {
  EXPECT_EQ(WallClock::to_time_t(parse_iso8601("2030-01-02T03:04:05.123Z", "t")), 1893553445);
  EXPECT_EQ(WallClock::to_time_t(parse_iso8601("2030-01-02T04:04:05+01:00", "t")), 1893553445);
  EXPECT_THROW(parse_iso8601("2030-01-02 03:04", "t"), CredentialError);
  EXPECT_THROW(parse_iso8601("2030-01-02T03:04:05", "t"), CredentialError);
}

TEST_F(Credentials, StsAnswerParsing) {
  AwsCredentials c = parse_assume_role_response(
      "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
      "<SessionToken>T/+=</SessionToken><SecretAccessKey>S</SecretAccessKey>"
      "<Expiration>2030-01-02T03:04:05Z</Expiration><AccessKeyId>ASIAK</AccessKeyId></Credentials>"
      "</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>",
      "sts");
  EXPECT_EQ(c.access_key, "ASIAK");
  EXPECT_EQ(c.session_token, "T/+=");
  EXPECT_EQ(WallClock::to_time_t(*c.expires), 1893553445);
  EXPECT_THROW(
      parse_assume_role_response("<ErrorResponse><Error><Code>X</Code></Error></ErrorResponse>", "sts"),
      CredentialError);
}

// Accepts one connection on 127.0.0.1, keeps the request head, answers 200.
class OneRequestListener {
 public:
  OneRequestListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 1) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("listener: bind/listen failed");
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      const int c = ::accept(fd_, nullptr, nullptr);
      char buf[4096];
      while (head_.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        head_.append(buf, static_cast<size_t>(n));
      }
      const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      (void)!::write(c, ok.data(), ok.size());
      ::close(c);
    });
  }
  ~OneRequestListener() {
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string head() {  // after the request
    thread_.join();
    return head_;
  }

 private:
  int fd_ = -1, port_ = 0;
  std::thread thread_;
  std::string head_;
};

TEST_F(Credentials, SessionTokenIsSentAndSigned) {
  OneRequestListener server;
  SourceOptions o;
  o.endpoint = server.endpoint();
  o.credentials = std::make_shared<StaticCredentialProvider>(
      AwsCredentials{"ASIAKEY", "secret", "the-session-token", std::nullopt}, "test keys");
  o.retry.max_attempts = 1;
  S3Source src("s3://bucket", o);
  src.head("k");
  const std::string head = server.head();
  EXPECT_NE(head.find("x-amz-security-token: the-session-token\r\n"), std::string::npos) << head;
  const auto signed_at = head.find("SignedHeaders=");
  ASSERT_NE(signed_at, std::string::npos) << head;
  const std::string signed_headers = head.substr(signed_at, head.find(',', signed_at) - signed_at);
  EXPECT_NE(signed_headers.find("x-amz-security-token"), std::string::npos) << signed_headers;
  EXPECT_NE(head.find("Credential=ASIAKEY/"), std::string::npos) << head;
}

}  // namespace
}  // namespace strata::data
