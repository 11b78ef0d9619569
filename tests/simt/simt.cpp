// The emulator's launch, barriers and warp rendezvous (simt.h). One mutex per
// launch guards all of a block's coordination state; the block barrier and each
// warp have a condition variable of their own, so a warp's shuffle wakes only
// its 32 lanes. A failure is recorded once, wakes every waiter and unwinds every
// CUDA thread with Abort; launch() then throws Error with the first message.
#include "simt.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <semaphore>
#include <set>
#include <thread>

namespace simt {
namespace {

struct Abort {};  // unwinds a CUDA thread once the launch has failed

std::string where_text(std::source_location w) {
  std::string f = w.file_name();
  if (auto s = f.rfind('/'); s != std::string::npos) f = f.substr(s + 1);
  return f + ":" + std::to_string(w.line());
}
bool same_site(std::source_location a, std::source_location b) {
  return a.line() == b.line() && a.column() == b.column() && std::strcmp(a.file_name(), b.file_name()) == 0;
}
std::string dim_text(unsigned x, unsigned y, unsigned z) {
  return "(" + std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z) + ")";
}

struct AlignedFree {
  size_t align;
  void operator()(void* p) const { ::operator delete(p, std::align_val_t(align)); }
};
using Bytes = std::unique_ptr<void, AlignedFree>;

Bytes alloc_shared(size_t bytes, size_t align) {
  // at least one byte, so that a zero-sized array still has an address ASan guards
  Bytes b(::operator new(std::max<size_t>(bytes, 1), std::align_val_t(align)), AlignedFree{align});
  std::memset(b.get(), 0xFF, std::max<size_t>(bytes, 1));  // NaN in f32, f16, bf16 and f64
  return b;
}

struct Warp {
  unsigned arrived = 0, mask = 0, readers = 0;
  uint64_t generation = 0;
  std::source_location site;
  uint64_t slots[32] = {}, result[32] = {};
};

struct Launch {
  const char* kernel;
  dim3 grid, block;
  size_t dynamic_bytes;
  unsigned threads;

  std::mutex m;
  bool failed = false;
  std::string message;

  // per block, reset between blocks (by the launching thread, between gates)
  uint3 block_idx{};
  unsigned bar_arrived = 0;
  uint64_t bar_generation = 0;
  std::source_location bar_site;
  std::vector<char> exited, at_barrier, parked;
  std::vector<std::unique_ptr<std::binary_semaphore>> wakeup;  // one per thread: no thundering herd
  unsigned exited_count = 0;
  std::vector<std::unique_ptr<Warp>> warps;
  std::map<const void*, Bytes> shared;
  Bytes dynamic{nullptr, AlignedFree{1}};
};

struct ThreadCtx {
  Launch* launch = nullptr;
  uint3 idx{};
  unsigned linear = 0;
};
thread_local ThreadCtx t_ctx;

Launch& current() {
  if (!t_ctx.launch) {
    std::fprintf(stderr, "simt: a CUDA built-in was used outside a kernel launch\n");
    std::abort();
  }
  return *t_ctx.launch;
}

std::string thread_text(const Launch& L) {
  return "block " + dim_text(L.block_idx.x, L.block_idx.y, L.block_idx.z) + " thread " +
         dim_text(t_ctx.idx.x, t_ctx.idx.y, t_ctx.idx.z);
}

// With L.m held: releases thread t if it is parked.
void wake(Launch& L, unsigned t) {
  if (!L.parked[t]) return;
  L.parked[t] = 0;
  L.wakeup[t]->release();
}
void wake_all(Launch& L) {
  for (unsigned t = 0; t < L.threads; ++t) wake(L, t);
}
// Blocks this thread (lock held on entry and exit) until `done` holds or the
// launch fails; each waiter sleeps on its own semaphore, woken by wake().
template <typename Pred>
void park(Launch& L, std::unique_lock<std::mutex>& lock, Pred done) {
  const unsigned t = t_ctx.linear;
  while (!done() && !L.failed) {
    L.parked[t] = 1;
    lock.unlock();
    L.wakeup[t]->acquire();
    lock.lock();
  }
}

// With L.m held: records the failure (the first one wins) and unwinds this thread.
[[noreturn]] void fail_locked(Launch& L, const std::string& what, std::source_location where) {
  if (!L.failed) {
    L.failed = true;
    L.message = std::string("simt: kernel ") + L.kernel + ", " + thread_text(L) + ", " + where_text(where) +
                ": " + what;
  }
  wake_all(L);
  throw Abort{};
}

void check_live(Launch& L) {
  if (L.failed) throw Abort{};
}

std::mutex g_log_m;
std::set<std::string> g_launched;

void record_launch(const char* kernel, const char* site) {
  std::string name = kernel;
  if (auto lt = name.find('<'); lt != std::string::npos) name.resize(lt);
  name.erase(std::remove_if(name.begin(), name.end(), [](char c) { return c == ' ' || c == '\n'; }),
             name.end());
  std::string file = site;
  if (auto s = file.rfind('/'); s != std::string::npos) file = file.substr(s + 1);
  std::string key = file + ":" + name;
  std::lock_guard lock(g_log_m);
  if (!g_launched.insert(key).second) return;
  if (const char* log = std::getenv("STRATA_SIMT_LAUNCH_LOG"); log && *log) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(log).parent_path(), ec);
    FILE* f = std::fopen(log, "a");
    if (!f) throw Error(std::string("simt: cannot append to the launch log ") + log);
    std::fprintf(f, "%s\n", key.c_str());
    std::fclose(f);
  }
}

std::string hex(unsigned v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

void thread_returned(Launch& L, std::source_location where) {
  std::unique_lock lock(L.m);
  check_live(L);
  L.exited[t_ctx.linear] = 1;
  L.exited_count++;
  if (L.bar_arrived > 0)
    fail_locked(L,
                "returned while " + std::to_string(L.bar_arrived) + " threads wait at __syncthreads() at " +
                    where_text(L.bar_site) + ": every thread of the block must reach it",
                where);
  Warp& w = *L.warps[t_ctx.linear / 32];
  if (w.arrived > 0 && (w.mask >> (t_ctx.linear % 32) & 1u))
    fail_locked(L,
                "returned while its warp waits for it at the warp operation at " + where_text(w.site) +
                    " (mask " + hex(w.mask) + ")",
                where);
}

}  // namespace

const uint3& thread_idx() { return t_ctx.idx; }
const uint3& block_idx() { return current().block_idx; }
const dim3& block_dim() { return current().block; }
const dim3& grid_dim() { return current().grid; }
unsigned lane_id() { return t_ctx.linear % 32; }

void fail(const std::string& what, std::source_location where) {
  Launch& L = current();
  std::unique_lock lock(L.m);
  fail_locked(L, what, where);
}

void syncthreads(std::source_location where) {
  Launch& L = current();
  std::unique_lock lock(L.m);
  check_live(L);
  if (L.exited_count > 0) {
    unsigned t = static_cast<unsigned>(std::find(L.exited.begin(), L.exited.end(), 1) - L.exited.begin());
    fail_locked(L,
                "__syncthreads() reached after thread " + std::to_string(t) +
                    " of the block returned: every thread of the block must reach it",
                where);
  }
  Warp& w = *L.warps[t_ctx.linear / 32];
  if (w.arrived > 0 && (w.mask >> (t_ctx.linear % 32) & 1u))
    fail_locked(
        L,
        "__syncthreads() reached while its warp waits for it at the warp operation at " + where_text(w.site),
        where);
  if (L.bar_arrived == 0)
    L.bar_site = where;
  else if (!same_site(L.bar_site, where))
    fail_locked(
        L,
        "__syncthreads() here while other threads of the block wait at the one at " + where_text(L.bar_site),
        where);
  if (++L.bar_arrived == L.threads) {
    L.bar_arrived = 0;
    L.bar_generation++;
    for (unsigned t = 0; t < L.threads; ++t)
      if (L.at_barrier[t]) {
        L.at_barrier[t] = 0;
        wake(L, t);
      }
    return;
  }
  L.at_barrier[t_ctx.linear] = 1;
  const uint64_t gen = L.bar_generation;
  park(L, lock, [&] { return L.bar_generation != gen; });
  check_live(L);
}

void warp_exchange(unsigned mask, const void* value, size_t bytes, void* all, std::source_location where) {
  Launch& L = current();
  std::unique_lock lock(L.m);
  check_live(L);
  const unsigned warp = t_ctx.linear / 32, lane = t_ctx.linear % 32;
  const unsigned first = warp * 32, lanes = std::min(32u, L.threads - first);
  const unsigned present = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
  if (!(mask >> lane & 1u))
    fail_locked(L,
                "a warp operation whose mask " + hex(mask) + " leaves out lane " + std::to_string(lane) +
                    ", which calls it",
                where);
  if (mask & ~present)
    fail_locked(L,
                "a warp operation with mask " + hex(mask) + " in warp " + std::to_string(warp) +
                    ", which has " + std::to_string(lanes) + " lanes (lanes " + hex(mask & ~present) +
                    " do not exist)",
                where);
  for (unsigned l = 0; l < 32; ++l)
    if ((mask >> l & 1u) && L.exited[first + l])
      fail_locked(L,
                  "a warp operation with mask " + hex(mask) + " names lane " + std::to_string(l) +
                      ", which has returned",
                  where);
  for (unsigned l = 0; l < 32; ++l)
    if ((mask >> l & 1u) && first + l < L.threads && L.at_barrier[first + l])
      fail_locked(L,
                  "a warp operation waits for lane " + std::to_string(l) +
                      ", which waits at __syncthreads() at " + where_text(L.bar_site),
                  where);
  Warp& w = *L.warps[warp];
  park(L, lock, [&] { return w.readers == 0; });  // the last round has been read
  check_live(L);
  if (w.arrived == 0) {
    w.mask = mask;
    w.site = where;
  } else if (w.mask != mask || !same_site(w.site, where)) {
    fail_locked(L,
                "lanes of warp " + std::to_string(warp) + " meet at two warp operations: here (mask " +
                    hex(mask) + ") and at " + where_text(w.site) + " (mask " + hex(w.mask) + ")",
                where);
  }
  std::memcpy(&w.slots[lane], value, bytes);
  const unsigned n = static_cast<unsigned>(std::popcount(mask));
  if (++w.arrived == n) {
    std::memcpy(w.result, w.slots, sizeof w.slots);
    w.arrived = 0;
    w.readers = n - 1;
    w.generation++;
    for (unsigned l = 0; l < 32; ++l)
      if (mask >> l & 1u) wake(L, first + l);
  } else {
    const uint64_t gen = w.generation;
    park(L, lock, [&] { return w.generation != gen; });
    check_live(L);
    if (--w.readers == 0)
      for (unsigned l = 0; l < lanes; ++l) wake(L, first + l);  // a next round may wait for the readers
  }
  for (unsigned l = 0; l < 32; ++l)
    if (mask >> l & 1u) std::memcpy(static_cast<char*>(all) + l * bytes, &w.result[l], bytes);
}

void syncwarp(unsigned mask, std::source_location where) {
  char none = 0, all[32];
  warp_exchange(mask, &none, 1, all, where);
}

void* shared_memory(const void* key, size_t bytes, size_t align) {
  Launch& L = current();
  std::lock_guard lock(L.m);
  auto it = L.shared.find(key);
  if (it == L.shared.end()) it = L.shared.emplace(key, alloc_shared(bytes, align)).first;
  return it->second.get();
}

void* dynamic_shared_memory(size_t align) {
  Launch& L = current();
  std::lock_guard lock(L.m);
  if (!L.dynamic) L.dynamic = alloc_shared(L.dynamic_bytes, std::max<size_t>(align, 16));
  return L.dynamic.get();
}

void check_vector_access(const void* p, size_t bytes, const char* what, std::source_location where) {
  if (reinterpret_cast<uintptr_t>(p) % bytes == 0) return;
  char addr[32];
  std::snprintf(addr, sizeof addr, "%p", p);
  fail(std::string(what) + " of " + std::to_string(bytes) + " bytes at " + addr + ", which is not " +
           std::to_string(bytes) + "-byte aligned",
       where);
}

namespace {

// The CUDA threads of a block: host threads kept for the whole process (a
// launch of many blocks would otherwise create and join thousands of them).
// Worker t runs thread t of each block it is released for.
class Workers {
 public:
  ~Workers() {
    stop_ = true;
    for (auto& w : slots_) w->go.release();
    for (auto& w : slots_) w->thread.join();
  }
  void run_block(Launch& L, const std::function<void()>& body) {
    while (slots_.size() < L.threads) add();
    launch_ = &L;
    body_ = &body;
    remaining_.store(L.threads);
    for (unsigned t = 0; t < L.threads; ++t) slots_[t]->go.release();
    done_.acquire();
  }

 private:
  struct Slot {
    std::binary_semaphore go{0};
    std::thread thread;
  };
  void add() {
    auto s = std::make_unique<Slot>();
    const unsigned t = static_cast<unsigned>(slots_.size());
    Slot* raw = s.get();
    s->thread = std::thread([this, raw, t] { work(*raw, t); });
    slots_.push_back(std::move(s));
  }
  void work(Slot& slot, unsigned t) {
    for (;;) {
      slot.go.acquire();
      if (stop_) return;
      Launch& L = *launch_;
      const dim3 b = L.block;
      t_ctx.launch = &L;
      t_ctx.linear = t;
      t_ctx.idx = {t % b.x, (t / b.x) % b.y, t / (b.x * b.y)};
      try {
        (*body_)();
        thread_returned(L, std::source_location::current());
      } catch (const Abort&) {
      } catch (const std::exception& e) {
        std::lock_guard lock(L.m);
        if (!L.failed) {
          L.failed = true;
          L.message = std::string("simt: kernel ") + L.kernel + ", " + thread_text(L) + ": threw " + e.what();
        }
        wake_all(L);
      }
      t_ctx = {};
      if (remaining_.fetch_sub(1) == 1) done_.release();
    }
  }
  std::vector<std::unique_ptr<Slot>> slots_;
  Launch* launch_ = nullptr;
  const std::function<void()>* body_ = nullptr;
  std::atomic<unsigned> remaining_{0};
  std::binary_semaphore done_{0};
  std::atomic<bool> stop_{false};
};

Workers& workers() {
  static Workers w;
  return w;
}

std::mutex g_launch_m;  // one launch at a time: the workers serve one block

}  // namespace

void launch(const char* kernel, const char* site, dim3 grid, dim3 block, size_t dynamic_shared_bytes,
            const std::function<void()>& body) {
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  const uint64_t blocks = uint64_t{grid.x} * grid.y * grid.z;
  if (threads == 0 || threads > 1024 || blocks == 0)
    throw Error(std::string("simt: kernel ") + kernel + ": invalid launch: grid " +
                dim_text(grid.x, grid.y, grid.z) + " block " + dim_text(block.x, block.y, block.z) +
                " (a block holds 1 to 1024 threads)");
  if (grid.y > 65535 || grid.z > 65535)
    throw Error(std::string("simt: kernel ") + kernel + ": gridDim.y and gridDim.z are at most 65535, got " +
                dim_text(grid.x, grid.y, grid.z));
  record_launch(kernel, site);
  std::lock_guard one_at_a_time(g_launch_m);
  Launch L;
  L.kernel = kernel;
  L.grid = grid;
  L.block = block;
  L.dynamic_bytes = dynamic_shared_bytes;
  L.threads = static_cast<unsigned>(threads);
  L.exited.assign(L.threads, 0);
  L.at_barrier.assign(L.threads, 0);
  L.parked.assign(L.threads, 0);
  for (unsigned t = 0; t < L.threads; ++t) L.wakeup.push_back(std::make_unique<std::binary_semaphore>(0));
  for (unsigned w = 0; w < (L.threads + 31) / 32; ++w) L.warps.push_back(std::make_unique<Warp>());

  for (unsigned z = 0; z < grid.z && !L.failed; ++z)
    for (unsigned y = 0; y < grid.y && !L.failed; ++y)
      for (unsigned x = 0; x < grid.x && !L.failed; ++x) {
        L.block_idx = {x, y, z};
        L.bar_arrived = 0;
        L.exited_count = 0;
        std::fill(L.exited.begin(), L.exited.end(), 0);
        std::fill(L.at_barrier.begin(), L.at_barrier.end(), 0);
        for (auto& w : L.warps) w->arrived = w->readers = 0;
        L.shared.clear();
        L.dynamic.reset();
        workers().run_block(L, body);
      }
  if (L.failed) throw Error(L.message);
}

}  // namespace simt
