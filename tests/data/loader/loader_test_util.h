// Helpers shared by the loader tests: scratch directories, small datasets written
// through ShardWriter + Manifest, packed Fashion-MNIST, a Source wrapper with test
// hooks, and forked child processes with a start barrier.
#pragma once
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "data/format/manifest.h"
#include "data/format/packer.h"
#include "data/format/shard.h"
#include "data/store/file_source.h"
#include "data/store/source.h"

namespace strata::data::testing {
namespace fs = std::filesystem;

inline fs::path scratch_root() {
  return fs::temp_directory_path() / ("strata-loader-" + std::to_string(::getpid()));
}

// Removes this test binary's scratch root when the tests end (forked children
// leave through _exit and skip it); STRATA_KEEP_SCRATCH=1 keeps it for a look.
class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    if (!std::getenv("STRATA_KEEP_SCRATCH")) fs::remove_all(scratch_root());
  }
};
inline ::testing::Environment* const kScratchCleanup =
    ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

inline fs::path scratch_dir(const std::string& name) {
  auto p = scratch_root() / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

inline int64_t read_count(const fs::path& p) {
  std::ifstream in(p);
  int64_t v = -1;
  in >> v;
  return v;
}
inline void write_count(const fs::path& p, int64_t v) { std::ofstream(p) << v; }

// `shards` shards of `samples` samples each: field "x" u8[64] (sample bytes derived
// from shard and index) and "y" i64 (= shard * 1000 + index).
inline Manifest make_dataset(const fs::path& dir, int shards, int samples) {
  fs::create_directories(dir);
  Manifest m;
  m.schema = {{"x", "u8", {64}, false}, {"y", "i64", {}, false}};
  for (int s = 0; s < shards; ++s) {
    std::string name = "shard-" + std::to_string(s) + ".h5";
    ShardWriter w((dir / name).string(), m.schema);
    for (int i = 0; i < samples; ++i) {
      uint8_t x[64];
      for (int b = 0; b < 64; ++b) x[b] = static_cast<uint8_t>(s * 31 + i * 7 + b);
      int64_t y = s * 1000 + i;
      w.add({{x, sizeof x}, {&y, sizeof y}});
    }
    w.finish();
    m.shards.push_back({name, samples, static_cast<int64_t>(fs::file_size(dir / name)),
                        checksum_file((dir / name).string())});
  }
  std::ofstream(dir / "manifest.json") << m.to_json();
  return m;
}

// Fashion-MNIST train (60k) packed into `dir` with shards of `shard_bytes`, once per test binary.
inline Manifest packed_fashion_mnist(const fs::path& dir, int64_t shard_bytes) {
  const std::string root = "/usr/share/datasets/fashion-mnist/";
  if (fs::exists(dir / "manifest.json")) {
    std::ifstream in(dir / "manifest.json");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    return Manifest::from_json(text, (dir / "manifest.json").string());
  }
  PackOptions o;
  o.out_url = dir.string();
  o.shard_bytes = shard_bytes;
  return pack_idx(root + "train-images-idx3-ubyte.gz", root + "train-labels-idx1-ubyte.gz", o);
}

// A FileSource with hooks: after_download(key, dest, n) runs after the n-th (0-based)
// download of `key` has been written to `dest` (to corrupt or stall it); every call
// counts in this wrapper's own stats.
class HookedSource : public Source {
 public:
  explicit HookedSource(fs::path root) : inner_(std::move(root)) {}
  std::function<void(const std::string&, const fs::path&, int)> after_download;
  std::function<void(const std::string&, const fs::path&)> during_download;  // after half is written

  std::string url() const override { return inner_.url(); }
  std::vector<uint8_t> get(const std::string& key) override {
    ++stats_.requests;
    auto b = inner_.get(key);
    stats_.bytes += static_cast<int64_t>(b.size());
    return b;
  }
  std::vector<uint8_t> get_range(const std::string& key, uint64_t off, uint64_t len) override {
    ++stats_.requests;
    return inner_.get_range(key, off, len);
  }
  void get_to_file(const std::string& key, const fs::path& dest) override {
    ++stats_.requests;
    int n;
    {
      std::lock_guard<std::mutex> lock(downloads_mu_);  // the cache's staging threads download at once
      n = downloads_[key]++;
    }
    if (during_download) {
      auto bytes = inner_.get(key);
      std::ofstream out(dest, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size() / 2));
      out.flush();
      during_download(key, dest);
      out.write(reinterpret_cast<const char*>(bytes.data()) + bytes.size() / 2,
                static_cast<std::streamsize>(bytes.size() - bytes.size() / 2));
    } else {
      inner_.get_to_file(key, dest);
    }
    stats_.bytes += static_cast<int64_t>(fs::file_size(dest));
    if (after_download) after_download(key, dest, n);
  }
  ObjectInfo head(const std::string& key) override { return inner_.head(key); }
  void put(const std::string& key, const std::vector<uint8_t>& b) override { inner_.put(key, b); }
  void put_file(const std::string& key, const fs::path& src) override { inner_.put_file(key, src); }
  std::vector<ObjectInfo> list(const std::string& prefix) override { return inner_.list(prefix); }
  void remove(const std::vector<std::string>& keys) override { inner_.remove(keys); }

 private:
  FileSource inner_;
  std::mutex downloads_mu_;
  std::map<std::string, int> downloads_;
};

inline void flip_byte(const fs::path& p, uint64_t at) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char c;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5A);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(&c, 1);
}

// Runs body(i) in `n` forked children that all wait at a barrier until every one
// has called ready(); returns the exit codes. A child that throws exits 1 and
// prints the error.
inline std::vector<int> run_children(int n,
                                     const std::function<int(int, const std::function<void()>&)>& body) {
  int ready_pipe[2], go_pipe[2];
  if (::pipe(ready_pipe) != 0 || ::pipe(go_pipe) != 0) return {};
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(ready_pipe[0]);
      ::close(go_pipe[1]);
      // The child closes its end of the ready pipe once it has written, so a
      // sibling that dies before its barrier leaves the parent reading EOF
      // instead of waiting on the children parked at the barrier. The end is
      // forgotten too: a second ready() fails on -1 instead of writing into
      // whatever file has since been given the same descriptor.
      auto ready = [&] {
        char c = 1;
        if (::write(ready_pipe[1], &c, 1) != 1) ::_exit(3);
        ::close(ready_pipe[1]);
        ready_pipe[1] = -1;
        if (::read(go_pipe[0], &c, 1) < 0) ::_exit(3);  // 0 bytes = parent released everyone
      };
      int rc = 1;
      try {
        rc = body(i, ready);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", i, e.what());
      }
      std::fflush(stderr);
      ::_exit(rc);
    }
    pids.push_back(pid);
  }
  ::close(ready_pipe[1]);
  ::close(go_pipe[0]);
  for (int i = 0; i < n; ++i) {
    char c;
    if (::read(ready_pipe[0], &c, 1) != 1) break;  // a child died before its barrier
  }
  ::close(go_pipe[1]);
  ::close(ready_pipe[0]);
  std::vector<int> codes;
  for (pid_t p : pids) {
    int st = 0;
    ::waitpid(p, &st, 0);
    codes.push_back(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  }
  return codes;
}

}  // namespace strata::data::testing
