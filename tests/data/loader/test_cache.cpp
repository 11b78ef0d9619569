// ShardCache against real files and real processes: verified atomic admission,
// refetch-once on a bad checksum, one download per shard per node across forked
// processes, recovery after SIGKILL mid-download, Belady eviction that never
// touches a pinned shard, lifetimes.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "base/error.h"
#include "data/loader/shard_cache.h"
#include "loader_test_util.h"

using namespace strata::data;
using namespace strata::data::testing;

namespace {

int count_files(const fs::path& dir) {
  int n = 0;
  for (auto& e : fs::directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

ShardCacheOptions cache_opts(const fs::path& dir, int64_t cap, CacheLifetime life = CacheLifetime::kJob) {
  ShardCacheOptions o;
  o.dir = dir;
  o.capacity_bytes = cap;
  o.lifetime = life;
  return o;
}

// Forks a process that opens the persistent cache root/"cache" and downloads
// shard 0 of root/"ds"; with half the shard written it runs `mid_download`
// (hang, stop, keep writing) and, if that returns, finishes. Returns once the
// child is mid-download, its download lock held; -1 if it never got there.
pid_t fork_mid_download(const fs::path& root, const Manifest& m,
                        const std::function<void(const fs::path& temporary)>& mid_download) {
  int sync[2];
  if (::pipe(sync) != 0) return -1;
  pid_t child = ::fork();
  if (child == 0) {
    ::close(sync[0]);
    HookedSource src(root / "ds");
    src.during_download = [&](const std::string&, const fs::path& temporary) {
      char c = 1;
      (void)!::write(sync[1], &c, 1);  // half the shard is on disk: tell the parent
      mid_download(temporary);
    };
    ShardCache cache(src, cache_opts(root / "cache", 1 << 30, CacheLifetime::kPersistent));
    cache.acquire(m.shards[0]);
    ::_exit(0);
  }
  ::close(sync[1]);
  char c;
  const bool started = ::read(sync[0], &c, 1) == 1;
  ::close(sync[0]);
  if (!started) {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    return -1;
  }
  return child;
}

void hang(const fs::path&) {
  for (;;) ::pause();  // until killed
}

}  // namespace

TEST(ShardCache, DownloadsVerifiesAndHitsAfterwards) {
  auto root = scratch_dir("basic");
  Manifest m = make_dataset(root / "ds", 3, 50);
  HookedSource src(root / "ds");
  ShardCache cache(src, cache_opts(root / "cache", 1 << 30));
  EXPECT_EQ(cache.manifest().shards.size(), 3u);
  for (int round = 0; round < 2; ++round)
    for (auto& s : m.shards) {
      auto pin = cache.acquire(s);
      EXPECT_EQ(checksum_file(pin.path().string()), s.checksum);
    }
  EXPECT_EQ(cache.stats().misses.load(), 3);
  EXPECT_EQ(cache.stats().hits.load(), 3);
  EXPECT_EQ(src.stats().requests.load(), 4);  // manifest + 3 shards
  EXPECT_EQ(cache.usage_bytes(), m.total_bytes());
}

TEST(ShardCache, ChecksumMismatchIsFetchedAgainOnce) {
  auto root = scratch_dir("refetch");
  Manifest m = make_dataset(root / "ds", 2, 50);
  HookedSource src(root / "ds");
  src.after_download = [](const std::string& key, const fs::path& dest, int n) {
    if (key == "shard-1.h5" && n == 0) flip_byte(dest, 100);  // the first copy arrives damaged
  };
  ShardCache cache(src, cache_opts(root / "cache", 1 << 30));
  auto pin = cache.acquire(m.shards[1]);
  EXPECT_EQ(checksum_file(pin.path().string()), m.shards[1].checksum);
  EXPECT_EQ(cache.stats().refetches.load(), 1);
  EXPECT_EQ(src.stats().requests.load(), 3);  // manifest + 2 tries
}

TEST(ShardCache, ChecksumMismatchTwiceIsAnErrorNamingTheShard) {
  auto root = scratch_dir("badsum");
  Manifest m = make_dataset(root / "ds", 2, 50);
  HookedSource src(root / "ds");
  src.after_download = [](const std::string&, const fs::path& dest, int) { flip_byte(dest, 100); };
  ShardCache cache(src, cache_opts(root / "cache", 1 << 30));
  try {
    cache.acquire(m.shards[0]);
    FAIL() << "a shard that never matches its checksum was admitted";
  } catch (const strata::IoError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("shard-0.h5"), std::string::npos) << what;
    EXPECT_NE(what.find(m.shards[0].checksum), std::string::npos) << what;
  }
  EXPECT_EQ(count_files(root / "cache" / "shards"), 0) << "nothing may pass for a shard";
  EXPECT_EQ(count_files(root / "cache" / ".tmp"), 0);
  EXPECT_EQ(count_files(root / "cache" / ".reserve"), 0);
  EXPECT_EQ(src.stats().requests.load(), 3);  // manifest + exactly 2 tries
}

TEST(ShardCache, ManyProcessesDownloadEachShardOnce) {
  auto root = scratch_dir("multiproc");
  Manifest m = make_dataset(root / "ds", 6, 50);
  const int kProcs = 4;
  auto codes = run_children(kProcs, [&](int i, const std::function<void()>& ready) {
    HookedSource src(root / "ds");
    // A slow download keeps the others waiting on the lock while it runs.
    src.after_download = [](const std::string&, const fs::path&, int) {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    };
    ShardCache cache(src, cache_opts(root / "cache", 1 << 30));
    ready();
    std::vector<size_t> order(m.shards.size());
    std::iota(order.begin(), order.end(), 0);
    std::rotate(order.begin(), order.begin() + i, order.end());  // each starts elsewhere
    for (auto s : order) {
      auto pin = cache.acquire(m.shards[s]);
      if (checksum_file(pin.path().string()) != m.shards[s].checksum) return 2;
    }
    write_count(root / ("requests." + std::to_string(i)), src.stats().requests);
    return 0;
  });
  ASSERT_EQ(codes, std::vector<int>(kProcs, 0));
  int64_t total = 0;
  for (int i = 0; i < kProcs; ++i) total += read_count(root / ("requests." + std::to_string(i)));
  EXPECT_EQ(total, static_cast<int64_t>(m.shards.size()) + 1)
      << "one GET per shard plus the manifest, per node";
  EXPECT_FALSE(fs::exists(root / "cache" / "manifest.json"))
      << "job lifetime: the last process empties the cache";
  EXPECT_EQ(count_files(root / "cache" / "shards"), 0);
}

TEST(ShardCache, KillMidDownloadLeavesNoShardAndTheNextRunRecovers) {
  auto root = scratch_dir("kill");
  Manifest m = make_dataset(root / "ds", 2, 400);
  pid_t child = fork_mid_download(root, m, hang);
  ASSERT_GT(child, 0) << "the child never started its download";
  ::kill(child, SIGKILL);
  int st = 0;
  ::waitpid(child, &st, 0);
  ASSERT_TRUE(WIFSIGNALED(st));

  EXPECT_EQ(count_files(root / "cache" / "shards"), 0) << "a half download must not pass for a shard";
  EXPECT_EQ(count_files(root / "cache" / ".tmp"), 1) << "the partial download is there, under its temp name";
  EXPECT_EQ(count_files(root / "cache" / ".reserve"), 1);

  HookedSource src(root / "ds");
  ShardCache cache(src, cache_opts(root / "cache", 1 << 30, CacheLifetime::kPersistent));
  EXPECT_EQ(count_files(root / "cache" / ".tmp"), 0) << "the dead process's temp file is removed at start";
  EXPECT_EQ(count_files(root / "cache" / ".reserve"), 0);
  auto pin = cache.acquire(m.shards[0]);  // the dead process's lock died with it: no hang
  EXPECT_EQ(checksum_file(pin.path().string()), m.shards[0].checksum);
  EXPECT_EQ(cache.usage_bytes(), m.shards[0].bytes);
}

// The same kill while another process has the cache open: that process is not
// the first of a job, so no start-of-job sweep runs. It must take the shard
// over and remove the dead download's partial file itself; a cache that is
// never without a user (jobs sharing a persistent cache) would keep every
// killed download's partial file, uncounted by the capacity, forever.
TEST(ShardCache, KillMidDownloadIsRecoveredByAProcessAlreadyUsingTheCache) {
  auto root = scratch_dir("killshared");
  Manifest m = make_dataset(root / "ds", 2, 400);
  pid_t child = fork_mid_download(root, m, hang);
  ASSERT_GT(child, 0) << "the child never started its download";
  HookedSource src(root / "ds");
  ShardCache cache(src, cache_opts(root / "cache", 1 << 30, CacheLifetime::kPersistent));
  ASSERT_EQ(count_files(root / "cache" / ".tmp"), 1) << "joined a job in progress: its download is untouched";
  ::kill(child, SIGKILL);
  int st = 0;
  ::waitpid(child, &st, 0);
  ASSERT_TRUE(WIFSIGNALED(st));

  auto pin = cache.acquire(m.shards[0]);  // the dead download's locks died with it
  EXPECT_EQ(checksum_file(pin.path().string()), m.shards[0].checksum);
  EXPECT_EQ(count_files(root / "cache" / ".tmp"), 0) << "the dead download's partial file is left behind";
  EXPECT_EQ(count_files(root / "cache" / ".reserve"), 0);
  EXPECT_EQ(src.stats().requests.load(), 1) << "one re-fetch of the killed shard, the manifest read locally";
}

// A job stopped mid-download (SIGSTOP, a scheduler's suspend) keeps its download
// lock alive: without a way out, every job on the node that needs the shard
// waits for it forever. A waiter downloads the shard itself once the holder's
// temporary has not changed for download_stall_timeout_s, and says whose
// download it gave up on.
TEST(ShardCache, AStalledDownloadIsTakenOverAndNamed) {
  auto root = scratch_dir("stalled");
  Manifest m = make_dataset(root / "ds", 2, 400);
  pid_t child = fork_mid_download(root, m, [](const fs::path&) {
    ::raise(SIGSTOP);  // stopped with half the shard written, as a suspended job
    hang({});
  });
  ASSERT_GT(child, 0) << "the child never started its download";
  HookedSource src(root / "ds");
  auto opts = cache_opts(root / "cache", 1 << 30, CacheLifetime::kPersistent);
  opts.download_stall_timeout_s = 1;
  std::vector<std::string> warnings;
  opts.warn = [&](const std::string& w) { warnings.push_back(w); };
  ShardCache cache(src, opts);
  auto pin = cache.acquire(m.shards[0]);
  EXPECT_EQ(checksum_file(pin.path().string()), m.shards[0].checksum);
  EXPECT_EQ(cache.stats().stalled_takeovers.load(), 1);
  EXPECT_EQ(src.stats().requests.load(), 1) << "the waiter fetched the shard itself, once";
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("the download of " + m.shards[0].name + " by pid " + std::to_string(child) +
                             " on host "),
            std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[0].find("no progress for 1 s"), std::string::npos) << warnings[0];
  ::kill(child, SIGKILL);
  int st = 0;
  ::waitpid(child, &st, 0);
  EXPECT_EQ(cache.usage_bytes(), m.shards[0].bytes) << "the stopped download's reservation died with it";
}

// A download that is slow but moving is waited for, however long it takes.
TEST(ShardCache, ASlowDownloadThatProgressesIsWaitedFor) {
  auto root = scratch_dir("slow");
  Manifest m = make_dataset(root / "ds", 2, 400);
  pid_t child = fork_mid_download(root, m, [](const fs::path& dest) {
    for (int i = 0; i < 25; ++i) {  // 2.5 s, past the 1 s stall timeout, writing every 0.1 s
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      fs::last_write_time(dest, fs::file_time_type::clock::now());
    }
  });
  ASSERT_GT(child, 0) << "the child never started its download";
  HookedSource src(root / "ds");
  auto opts = cache_opts(root / "cache", 1 << 30, CacheLifetime::kPersistent);
  opts.download_stall_timeout_s = 1;
  ShardCache cache(src, opts);
  auto pin = cache.acquire(m.shards[0]);
  EXPECT_EQ(checksum_file(pin.path().string()), m.shards[0].checksum);
  EXPECT_EQ(cache.stats().stalled_takeovers.load(), 0);
  EXPECT_EQ(src.stats().requests.load(), 0) << "the waiter downloaded a shard whose download was progressing";
  EXPECT_EQ(cache.stats().hits.load(), 1);
  int st = 0;
  ::waitpid(child, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

TEST(ShardCache, EvictsTheFarthestNextUseAndNeverAPinnedShard) {
  auto root = scratch_dir("evict");
  Manifest m = make_dataset(root / "ds", 5, 50);  // equal-sized shards
  const int64_t shard = m.shards[0].bytes;
  for (auto& s : m.shards) ASSERT_EQ(s.bytes, shard);
  HookedSource src(root / "ds");
  ShardCache cache(src, cache_opts(root / "cache", 3 * shard));
  std::map<std::string, int64_t> next = {
      {"shard-0.h5", 50}, {"shard-1.h5", 900}, {"shard-2.h5", 10}, {"shard-3.h5", 5}, {"shard-4.h5", 1}};
  cache.set_next_use([&](const std::string& n) { return next.at(n); });
  cache.acquire(m.shards[0]);
  auto pinned = cache.acquire(m.shards[1]);  // farthest, but in use
  cache.acquire(m.shards[2]);
  cache.acquire(m.shards[3]);  // full: shard-0 (50) goes, shard-1 is pinned
  EXPECT_TRUE(fs::exists(cache.shard_path("shard-1.h5")));
  EXPECT_FALSE(fs::exists(cache.shard_path("shard-0.h5")));
  EXPECT_TRUE(fs::exists(cache.shard_path("shard-2.h5")));
  pinned = {};
  cache.acquire(m.shards[4]);  // now shard-1 (900) is free and farthest
  EXPECT_FALSE(fs::exists(cache.shard_path("shard-1.h5")));
  EXPECT_TRUE(fs::exists(cache.shard_path("shard-2.h5")));
  EXPECT_TRUE(fs::exists(cache.shard_path("shard-3.h5")));
  EXPECT_EQ(cache.stats().evictions.load(), 2);
  EXPECT_LE(cache.usage_bytes(), 3 * shard);
}

TEST(ShardCache, PersistentCacheReverifiesAtStart) {
  auto root = scratch_dir("persist");
  Manifest m = make_dataset(root / "ds", 3, 50);
  {
    HookedSource src(root / "ds");
    ShardCache cache(src, cache_opts(root / "cache", 1 << 30, CacheLifetime::kPersistent));
    for (auto& s : m.shards) cache.acquire(s);
  }
  ASSERT_EQ(count_files(root / "cache" / "shards"), 3) << "persistent: kept after the job";
  flip_byte(root / "cache" / "shards" / "shard-2.h5", 200);  // bit rot while nobody ran
  HookedSource src(root / "ds");
  ShardCache cache(src, cache_opts(root / "cache", 1 << 30, CacheLifetime::kPersistent));
  EXPECT_EQ(count_files(root / "cache" / "shards"), 2) << "the damaged shard is removed at start";
  for (auto& s : m.shards) cache.acquire(s);
  EXPECT_EQ(cache.stats().misses.load(), 1);
  EXPECT_EQ(src.stats().requests.load(), 2);  // manifest refresh + the damaged shard
}

TEST(ShardCache, AJobCacheStartsEmptyAfterACrashedJob) {
  auto root = scratch_dir("crashedjob");
  Manifest m = make_dataset(root / "ds", 2, 50);
  auto codes = run_children(1, [&](int, const std::function<void()>& ready) {
    HookedSource src(root / "ds");
    auto* cache = new ShardCache(src, cache_opts(root / "cache", 1 << 30));  // never destroyed: a crash
    ready();
    for (auto& s : m.shards) cache->acquire(s);
    return 0;
  });
  ASSERT_EQ(codes, std::vector<int>{0});
  ASSERT_EQ(count_files(root / "cache" / "shards"), 2) << "the crashed job left its shards";
  HookedSource src(root / "ds");
  ShardCache cache(src, cache_opts(root / "cache", 1 << 30));
  EXPECT_EQ(count_files(root / "cache" / "shards"), 0);
}

TEST(ShardCache, ShardLargerThanCapacityIsAConfigError) {
  auto root = scratch_dir("toosmall");
  Manifest m = make_dataset(root / "ds", 1, 50);
  HookedSource src(root / "ds");
  ShardCache cache(src, cache_opts(root / "cache", m.shards[0].bytes - 1));
  EXPECT_THROW(cache.acquire(m.shards[0]), strata::ConfigError);
}
