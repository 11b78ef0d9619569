// S3Source against the real test RGW (scripts/rgw.sh, signature checks on),
// partly through strata-proxy to inject 503s and dropped connections.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "base/error.h"
#include "data/format/manifest.h"
#include "data/format/packer.h"
#include "data/format/shard.h"
#include "data/store/http_source.h"
#include "data/store/s3_source.h"
#include "proxy_process.h"
#include "rgw_env.h"
#include "test_util.h"

namespace strata::data {
namespace {

SourceOptions rgw_options() {
  SourceOptions o = testing::rgw_options();
  o.retry.base_delay_s = 0.01;  // keep injected-failure tests short
  o.retry.max_delay_s = 0.05;
  return o;
}

// A fresh bucket per test (RGW bucket names: lower case, digits, '-').
std::string new_bucket(const std::string& tag) {
  const std::string b = "dataio-" + tag + "-" + std::to_string(::getpid());
  create_bucket(b, rgw_options());
  return b;
}

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::string hostport(const std::string& endpoint) { return endpoint.substr(endpoint.find("//") + 2); }

TEST(S3Source, PutGetHeadRange) {
  const std::string b = new_bucket("basic");
  auto src = open_source("s3://" + b + "/data", rgw_options());
  EXPECT_EQ(src->url(), "s3://" + b + "/data/");
  const auto big = random_bytes(3 * 1024 * 1024 + 17, 1);  // > 1 MiB: curl sends Expect: 100-continue
  src->put("dir/big.bin", big);
  EXPECT_EQ(src->get("dir/big.bin"), big);
  ObjectInfo info = src->head("dir/big.bin");
  EXPECT_EQ(info.size, big.size());
  EXPECT_FALSE(info.etag.empty());
  EXPECT_EQ(info.etag.find('"'), std::string::npos);

  auto r = src->get_range("dir/big.bin", 1000, 5000);
  ASSERT_EQ(r.size(), 5000u);
  EXPECT_TRUE(std::equal(r.begin(), r.end(), big.begin() + 1000));
  r = src->get_range("dir/big.bin", big.size() - 10, 100);  // runs past the end: clipped
  ASSERT_EQ(r.size(), 10u);
  EXPECT_TRUE(std::equal(r.begin(), r.end(), big.end() - 10));
  EXPECT_TRUE(src->get_range("dir/big.bin", big.size() + 5, 10).empty());  // starts past the end
  EXPECT_TRUE(src->get_range("dir/big.bin", 0, 0).empty());

  auto dir = testing::scratch_dir("s3-basic");
  src->get_to_file("dir/big.bin", dir / "big.bin");
  EXPECT_EQ(testing::read_file(dir / "big.bin"), std::string(big.begin(), big.end()));
  testing::write_file(dir / "up.txt", "uploaded from a file");
  src->put_file("up.txt", dir / "up.txt");
  EXPECT_EQ(src->get("up.txt"), testing::bytes_of("uploaded from a file"));
  src->put("empty", {});
  EXPECT_TRUE(src->get("empty").empty());
  EXPECT_EQ(src->head("empty").size, 0u);

  EXPECT_EQ(src->stats().retries.load(), 0);
  EXPECT_EQ(src->stats().requests.load(), 12);  // the zero-length range sends nothing
  EXPECT_GE(src->stats().bytes.load(), static_cast<int64_t>(3 * big.size()));
}

TEST(S3Source, ListPaginatesAndRoundTripsAwkwardKeys) {
  const std::string b = new_bucket("list");
  auto root = std::make_unique<S3Source>("s3://" + b, rgw_options());
  std::vector<std::string> keys;
  for (int i = 0; i < 23; ++i)
    keys.push_back("ds/part-" + std::string(i < 10 ? "0" : "") + std::to_string(i));
  for (std::string k : {"ds/a b+c=d.txt", "ds/sp ace/x y", "ds/pl+us", "ds/eq=ual&amp;", "other/z"})
    keys.push_back(k);
  for (const auto& k : keys) root->put(k, testing::bytes_of(k));
  root->set_list_page_size(7);
  const int64_t before = root->stats().requests.load();
  auto all = root->list("ds/");
  EXPECT_EQ(root->stats().requests.load() - before, 4);  // 27 keys / 7 per page
  std::vector<std::string> want;
  for (const auto& k : keys)
    if (k.rfind("ds/", 0) == 0) want.push_back(k);
  std::sort(want.begin(), want.end());
  ASSERT_EQ(all.size(), want.size());
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].key, want[i]);
    EXPECT_EQ(all[i].size, want[i].size());
    EXPECT_EQ(root->get(all[i].key), testing::bytes_of(want[i])) << all[i].key;
  }
  EXPECT_EQ(root->list("").size(), keys.size());
  EXPECT_TRUE(root->list("nothing/").empty());

  // A source opened on a prefix sees keys relative to it.
  S3Source ds("s3://" + b + "/ds", rgw_options());
  ds.set_list_page_size(5);
  auto sub = ds.list("sp ace/");
  ASSERT_EQ(sub.size(), 1u);
  EXPECT_EQ(sub[0].key, "sp ace/x y");
  EXPECT_EQ(ds.get("a b+c=d.txt"), testing::bytes_of("ds/a b+c=d.txt"));
}

// remove() deletes in DeleteObjects batches of 1,000 (1,003 keys: two
// requests), awkward keys included, only under the source's prefix, and a key
// that is not there is no error.
TEST(S3Source, RemoveDeletesInBatchesUnderThePrefix) {
  const std::string b = new_bucket("remove");
  S3Source root("s3://" + b, rgw_options());
  S3Source run("s3://" + b + "/run", rgw_options());
  std::vector<std::string> keys;
  for (int i = 0; i < 1003; ++i) keys.push_back("ckpt/" + std::to_string(i));
  keys.push_back("ckpt/a & <b> 'c'.h5");
  for (const auto& k : keys) run.put(k, {'x'});
  root.put("other/keep", {'k'});
  run.put("keep", {'k'});
  keys.push_back("ckpt/never-there");
  const int64_t before = run.stats().requests;
  run.remove(keys);
  EXPECT_EQ(run.stats().requests - before, 2) << run.stats().retries << " retries";
  EXPECT_TRUE(run.list("ckpt/").empty());
  const auto left = root.list("");
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].key, "other/keep");
  EXPECT_EQ(left[1].key, "run/keep");
  const int64_t after = run.stats().requests;
  run.remove({});
  EXPECT_EQ(run.stats().requests, after) << "no keys, no request";
}

TEST(S3Source, WrongSecretIs403NamingBucketKeyAndRequestId) {
  const std::string b = new_bucket("auth");
  S3Source good("s3://" + b, rgw_options());
  good.put("secret/obj", testing::bytes_of("x"));
  SourceOptions bad = rgw_options();
  bad.secret_key = "not-the-secret";
  S3Source src("s3://" + b, bad);
  try {
    src.get("secret/obj");
    FAIL() << "GET with a wrong secret succeeded";
  } catch (const RemoteError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.http_status(), 403);
    EXPECT_NE(msg.find(b), std::string::npos) << msg;
    EXPECT_NE(msg.find("secret/obj"), std::string::npos) << msg;
    EXPECT_NE(msg.find("SignatureDoesNotMatch"), std::string::npos) << msg;
    EXPECT_FALSE(e.request_id().empty());
    EXPECT_NE(msg.find(e.request_id()), std::string::npos) << msg;
  }
  EXPECT_EQ(src.stats().retries.load(), 0);  // a 4xx is never retried
  EXPECT_EQ(src.stats().requests.load(), 1);
}

TEST(S3Source, MissingKeyIs404) {
  const std::string b = new_bucket("missing");
  S3Source src("s3://" + b, rgw_options());
  try {
    src.get("no/such/key");
    FAIL();
  } catch (const RemoteError& e) {
    EXPECT_EQ(e.http_status(), 404);
    EXPECT_NE(std::string(e.what()).find("NoSuchKey"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no/such/key"), std::string::npos) << e.what();
  }
  try {
    src.head("no/such/key");
    FAIL();
  } catch (const RemoteError& e) {
    EXPECT_EQ(e.http_status(), 404);
    EXPECT_FALSE(e.request_id().empty());  // HEAD has no body: the id comes from x-amz-request-id
  }
  EXPECT_THROW(S3Source("s3://no-such-bucket-dataio", rgw_options()).get("k"), RemoteError);
  create_bucket("s3://" + b + "/ignored/prefix", rgw_options());  // idempotent
}

TEST(S3Source, Injected503sAreRetried) {
  const std::string b = new_bucket("retry");
  S3Source direct("s3://" + b, rgw_options());
  const auto data = random_bytes(200000, 2);
  direct.put("obj", data);
  testing::ProxyProcess proxy(hostport(rgw_options().endpoint),
                              {"--fail-first", "3", "--fail-status", "503"});
  SourceOptions o = rgw_options();
  o.endpoint = proxy.endpoint();
  S3Source src("s3://" + b, o);
  EXPECT_EQ(src.get("obj"), data);
  EXPECT_EQ(src.stats().retries.load(), 3);
  EXPECT_EQ(src.stats().requests.load(), 4);
  EXPECT_EQ(src.stats().bytes.load(), static_cast<int64_t>(data.size()));  // failed tries carry no payload
}

TEST(S3Source, RetriesRunOutWith503SlowDown) {
  const std::string b = new_bucket("retry-out");
  testing::ProxyProcess proxy(hostport(rgw_options().endpoint), {"--fail-first", "100"});
  SourceOptions o = rgw_options();
  o.endpoint = proxy.endpoint();
  o.retry.max_attempts = 3;
  S3Source src("s3://" + b, o);
  try {
    src.get("obj");
    FAIL();
  } catch (const RemoteError& e) {
    EXPECT_EQ(e.http_status(), 503);
    EXPECT_NE(std::string(e.what()).find("SlowDown"), std::string::npos) << e.what();
  }
  EXPECT_EQ(src.stats().requests.load(), 3);
  EXPECT_EQ(src.stats().retries.load(), 2);
}

TEST(S3Source, DroppedConnectionsAreRetriedAndFilesRestart) {
  const std::string b = new_bucket("drop");
  S3Source direct("s3://" + b, rgw_options());
  const auto data = random_bytes(1 << 20, 3);
  direct.put("obj", data);
  testing::ProxyProcess proxy(hostport(rgw_options().endpoint), {"--fail-first", "1", "--drop-first", "2"});
  SourceOptions o = rgw_options();
  o.endpoint = proxy.endpoint();
  S3Source src("s3://" + b, o);
  auto dir = testing::scratch_dir("s3-drop");
  testing::write_file(dir / "dest", std::string(5 << 20, 'q'));  // longer than the object: must be truncated
  src.get_to_file("obj", dir / "dest");
  EXPECT_EQ(testing::read_file(dir / "dest"), std::string(data.begin(), data.end()));
  // 3 failed tries: libcurl itself re-sends once, silently, when a reused
  // keep-alive connection closes without an answer, so 2 or 3 show as retries.
  EXPECT_GE(src.stats().retries.load(), 2);
  EXPECT_LE(src.stats().retries.load(), 3);
  // PUTs go through the same retry path (the body is re-sent from the start).
  testing::ProxyProcess proxy2(hostport(rgw_options().endpoint), {"--drop-first", "1"});
  o.endpoint = proxy2.endpoint();
  S3Source src2("s3://" + b, o);
  src2.put("put-after-drop", data);
  EXPECT_EQ(src2.stats().retries.load(), 1);
  EXPECT_EQ(direct.get("put-after-drop"), data);
}

TEST(S3Source, PackToS3AndReadBack) {
  const std::string b = new_bucket("pack");
  auto dir = testing::scratch_dir("s3-pack");
  std::vector<uint16_t> tok(64 * 100);
  for (size_t i = 0; i < tok.size(); ++i) tok[i] = static_cast<uint16_t>(i * 7);
  testing::write_file(dir / "tok.bin", std::string(reinterpret_cast<char*>(tok.data()), tok.size() * 2));
  PackOptions p;
  p.out_url = "s3://" + b + "/tokens";
  p.source = rgw_options();
  p.shard_bytes = 128 * 30;
  Manifest m = pack_raw((dir / "tok.bin").string(), "u16", 64, p);
  ASSERT_EQ(m.shards.size(), 4u);
  auto src = open_source("s3://" + b + "/tokens/", rgw_options());
  auto listed = src->list("");
  ASSERT_EQ(listed.size(), 5u);
  EXPECT_EQ(listed[0].key, "manifest.json");
  auto text = src->get("manifest.json");
  Manifest back = Manifest::from_json(std::string(text.begin(), text.end()), src->url() + "manifest.json");
  int64_t seen = 0;
  for (const auto& s : back.shards) {
    src->get_to_file(s.name, dir / s.name);
    EXPECT_EQ(checksum_file((dir / s.name).string()), s.checksum);
    ShardData d = ShardData::read((dir / s.name).string(), back.schema);
    for (int64_t i = 0; i < d.samples(); ++i, ++seen) {
      size_t n;
      const uint8_t* t = d.sample(0, i, &n);
      ASSERT_EQ(n, 128u);
      ASSERT_EQ(std::memcmp(t, tok.data() + seen * 64, n), 0);
    }
  }
  EXPECT_EQ(seen, 100);
}

std::string key(int i) {
  char k[16];
  std::snprintf(k, sizeof k, "o%d", i);
  return k;
}

TEST(S3Source, ConcurrentThreadsShareOneSource) {
  const std::string b = new_bucket("threads");
  S3Source src("s3://" + b, rgw_options());
  std::vector<std::vector<uint8_t>> objs;
  for (int i = 0; i < 8; ++i) {
    objs.push_back(random_bytes(100000 + i, 10 + i));
    src.put(key(i), objs.back());
  }
  std::atomic<int> bad{0}, gets{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int r = 0; r < 5; ++r)
        for (int i = t; i < 8; i += 2, ++gets)
          if (src.get(key(i)) != objs[static_cast<size_t>(i)]) ++bad;
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(src.stats().requests.load(), 8 + gets.load());
  EXPECT_EQ(src.stats().retries.load(), 0);
}

// Processes forked after the parent used S3 (the loader tests fork ranks; MPI
// launchers may too) must not share the parent's cached keep-alive connection:
// two children writing requests onto one socket read each other's responses.
TEST(S3Source, ForkedChildrenOpenTheirOwnConnections) {
  const std::string b = new_bucket("fork");
  S3Source src("s3://" + b, rgw_options());
  std::vector<std::vector<uint8_t>> objs;
  for (int i = 0; i < 4; ++i) {
    objs.push_back(random_bytes(200000 + i, 40 + i));
    src.put(key(i), objs.back());  // the parent's thread handle now holds a live connection
  }
  std::vector<pid_t> kids;
  for (int c = 0; c < 3; ++c) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int bad = 0;
      try {
        for (int r = 0; r < 10; ++r)
          for (int i = 0; i < 4; ++i)
            if (src.get(key(i)) != objs[static_cast<size_t>(i)]) ++bad;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", c, e.what());
        ::_exit(2);
      }
      ::_exit(bad == 0 ? 0 : 1);
    }
    kids.push_back(pid);
  }
  for (int i = 0; i < 4; ++i) EXPECT_EQ(src.get(key(i)), objs[static_cast<size_t>(i)]);  // the parent too
  for (pid_t k : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(k, &status, 0), k);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a forked child failed its GETs";
  }
}

// Only a lower bound on time: the proxy must add at least its delay twice
// (request and response); nothing here depends on how fast the machine is.
TEST(S3Source, ProxyDelayAddsLatencyPerRequest) {
  const std::string b = new_bucket("delay");
  S3Source direct("s3://" + b, rgw_options());
  direct.put("k", testing::bytes_of("v"));
  testing::ProxyProcess proxy(hostport(rgw_options().endpoint), {"--delay-ms", "100"});
  SourceOptions o = rgw_options();
  o.endpoint = proxy.endpoint();
  S3Source src("s3://" + b, o);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(src.get("k"), testing::bytes_of("v"));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(600));
  EXPECT_EQ(src.stats().retries.load(), 0);
}

TEST(HttpSource, ReadOnlyAndErrorsNameTheUrl) {
  const std::string b = new_bucket("http");
  auto src = open_source(rgw_options().endpoint + "/" + b, rgw_options());
  EXPECT_THROW(src->put("k", {}), ConfigError);
  EXPECT_THROW(src->list(""), ConfigError);
  try {
    src->get("private key");  // unsigned GET of a private bucket: RGW refuses
    FAIL();
  } catch (const RemoteError& e) {
    EXPECT_TRUE(e.http_status() == 403 || e.http_status() == 404) << e.what();
    EXPECT_NE(std::string(e.what()).find(b + "/private%20key"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace strata::data
