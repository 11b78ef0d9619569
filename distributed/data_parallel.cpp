// DataParallel and BucketedGradientSync (see data_parallel.h, docs/data-parallel.md).
//
// Buckets: parameters in reverse registration order (the order backward produces
// their gradients), cut when the next one would overflow the cap (a bucket holds
// at least one parameter). Each bucket owns a contiguous FP32 buffer.
//
// A step: begin_step(true) arms the hooks. Each parameter's grad-ready hook marks
// it; when a bucket's last parameter is marked, its gradients are copied into the
// buffer and -- buckets start strictly in index order, so every rank issues the
// same collectives in the same order even when backward completes them in a
// different one -- its allreduce_async (avg) starts. Every hook also polls the
// buckets in flight: Open MPI 4.1 advances a non-blocking collective only inside
// MPI calls (unless the communicator's progress thread runs). finish() starts the
// buckets still waiting (parameters without a gradient join as zeros), waits for
// all and copies the averages back into the gradients.
#include "distributed/data_parallel.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "base/error.h"

namespace strata {

namespace {

double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string shape_text(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

bool is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64; }

// Copies `g` (any dtype, contiguous or not) into dst as FP32.
void gather_f32(const Tensor& g, float* dst) {
  size_t n = static_cast<size_t>(g.numel());
  if (g.dtype() == DType::f32 && g.is_contiguous()) {
    std::memcpy(dst, g.raw_data(), n * 4);
  } else {
    auto v = g.to_float_vector();
    std::memcpy(dst, v.data(), n * 4);
  }
}

void scatter_f32(const float* src, Tensor& g) {
  size_t n = static_cast<size_t>(g.numel());
  if (g.dtype() == DType::f32 && g.is_contiguous()) {
    std::memcpy(g.raw_data(), src, n * 4);
  } else {
    g.copy_(Tensor::from_vector(std::vector<float>(src, src + n), g.shape()));
  }
}

}  // namespace

// ---------------------------------------------------------------- gradient sync

struct BucketedGradientSync::State {
  struct Bucket {
    std::vector<size_t> params;   // indices into State::params, in launch order
    std::vector<size_t> offsets;  // element offset of each in `flat`
    std::vector<float> flat;
    size_t ready = 0;  // parameters whose gradient is complete this step
    bool started = false, done = false;
    std::unique_ptr<CommHandle> handle;
    double t_start = 0, t_done = 0;
  };

  explicit State(Communicator& c) : comm(c) {}
  Communicator& comm;
  NamedTensors params;
  std::vector<Bucket> buckets;
  std::vector<size_t> bucket_of;  // per parameter
  std::vector<char> marked;       // per parameter, this step
  bool armed = false;             // between begin_step(true) and finish()
  size_t next_start = 0;          // buckets start in index order
  size_t next_done = 0;           // first started bucket not yet seen complete
  GradSyncStats stats;
  std::function<void(size_t, bool)> on_start;

  void start(size_t b, bool in_backward) {
    Bucket& k = buckets[b];
    for (size_t i = 0; i < k.params.size(); ++i) {
      Tensor g = params[k.params[i]].second.grad();
      float* dst = k.flat.data() + k.offsets[i];
      if (g.defined())
        gather_f32(g, dst);
      else
        std::fill(dst, dst + params[k.params[i]].second.numel(), 0.0f);  // joins as zeros
    }
    if (on_start) on_start(b, in_backward);
    k.t_start = now();
    k.handle = comm.allreduce_async(k.flat.data(), k.flat.size(), DType::f32, ReduceOp::avg);
    k.started = true;
    stats.allreduces++;
    if (in_backward) stats.started_in_backward++;
  }

  // Starts every ready bucket whose predecessors have started.
  void start_ready(bool in_backward) {
    while (next_start < buckets.size() && buckets[next_start].ready == buckets[next_start].params.size())
      start(next_start++, in_backward);
  }

  // Lets the library advance the collectives in flight; notes the ones complete.
  void poll() {
    while (next_done < next_start) {
      Bucket& k = buckets[next_done];
      if (!k.handle->test()) return;
      k.done = true;
      k.t_done = now();
      ++next_done;
    }
  }

  void on_grad_ready(size_t p) {
    if (!armed || marked[p]) return;
    marked[p] = 1;
    buckets[bucket_of[p]].ready++;
    start_ready(true);
    poll();
  }

  // Waits for whatever is in flight (errors rethrown) and clears the step.
  void drain() {
    for (auto& k : buckets) {
      if (k.started && !k.done) k.handle->wait();
      k.handle.reset();
      k.ready = 0;
      k.started = k.done = false;
    }
    std::fill(marked.begin(), marked.end(), 0);
    next_start = next_done = 0;
  }
};

BucketedGradientSync::BucketedGradientSync(Communicator& comm, NamedTensors params, BucketOptions options)
    : state_(std::make_shared<State>(comm)) {
  State& s = *state_;
  s.params = std::move(params);
  s.bucket_of.assign(s.params.size(), 0);
  s.marked.assign(s.params.size(), 0);
  size_t cap = std::max<size_t>(4, options.first_bucket_bytes);
  size_t bytes = 0;
  for (size_t j = s.params.size(); j-- > 0;) {
    size_t pb = static_cast<size_t>(s.params[j].second.numel()) * 4;
    if (s.buckets.empty() || (!s.buckets.back().params.empty() && bytes + pb > cap)) {
      if (!s.buckets.empty()) cap = std::max<size_t>(4, options.bucket_bytes);
      s.buckets.emplace_back();
      bytes = 0;
    }
    auto& k = s.buckets.back();
    k.offsets.push_back(bytes / 4);
    k.params.push_back(j);
    bytes += pb;
    s.bucket_of[j] = s.buckets.size() - 1;
  }
  for (auto& k : s.buckets) {
    size_t n = 0;
    for (size_t p : k.params) n += static_cast<size_t>(s.params[p].second.numel());
    k.flat.assign(n, 0.0f);
  }
  std::weak_ptr<State> weak = state_;
  for (size_t j = 0; j < s.params.size(); ++j)
    s.params[j].second.add_grad_ready_hook([weak, j](Tensor&) {
      if (auto st = weak.lock()) st->on_grad_ready(j);
    });
}

BucketedGradientSync::~BucketedGradientSync() {
  try {
    state_->drain();
  } catch (const std::exception&) {  // the error was the step's to report; nothing left in flight
  }
}

void BucketedGradientSync::begin_step(bool sync) {
  State& s = *state_;
  if (s.armed && s.next_start > 0) s.drain();  // a step begun twice: settle the first
  s.armed = sync;
}

void BucketedGradientSync::finish() {
  State& s = *state_;
  const double t0 = now();
  // Parameters that produced no gradient (or a finish() without begin_step(true)):
  // every bucket not yet started is ready now.
  for (auto& k : s.buckets) k.ready = k.params.size();
  s.start_ready(false);
  s.poll();
  try {
    for (size_t b = s.next_done; b < s.buckets.size(); ++b) {
      auto& k = s.buckets[b];
      k.handle->wait();
      k.done = true;
      k.t_done = now();
    }
  } catch (...) {
    s.armed = false;
    s.drain();
    throw;
  }
  const double t_waited = now();
  double first = s.buckets.empty() ? t0 : s.buckets[0].t_start, last = first;
  for (auto& k : s.buckets) {
    first = std::min(first, k.t_start);
    last = std::max(last, k.t_done);
    s.stats.bucket_seconds += k.t_done - k.t_start;
    for (size_t i = 0; i < k.params.size(); ++i) {
      Tensor& p = s.params[k.params[i]].second;
      Tensor g = p.grad();
      if (!g.defined()) {
        g = Tensor::zeros(p.shape(), DType::f32);
        p.set_grad(g);
      }
      scatter_f32(k.flat.data() + k.offsets[i], g);
    }
  }
  s.stats.steps++;
  s.stats.wait_seconds += t_waited - t0;
  s.stats.comm_seconds += last - first;
  s.stats.finish_seconds += now() - t0;
  s.armed = false;
  s.drain();
}

size_t BucketedGradientSync::num_buckets() const { return state_->buckets.size(); }

std::vector<std::vector<std::string>> BucketedGradientSync::bucket_names() const {
  std::vector<std::vector<std::string>> r;
  for (auto& k : state_->buckets) {
    r.emplace_back();
    for (size_t p : k.params) r.back().push_back(state_->params[p].first);
  }
  return r;
}

size_t BucketedGradientSync::buckets_started() const { return state_->next_start; }
const GradSyncStats& BucketedGradientSync::stats() const { return state_->stats; }
void BucketedGradientSync::reset_stats() { state_->stats = {}; }
void BucketedGradientSync::set_on_bucket_start(std::function<void(size_t, bool)> fn) {
  state_->on_start = std::move(fn);
}

// ---------------------------------------------------------------- model checks

namespace {

struct Entry {
  std::string kind, name;
  Tensor t;
  std::string describe() const {
    return kind + " '" + name + "' " + dtype_name(t.dtype()) + " " + shape_text(t.shape());
  }
};

std::vector<Entry> entries_of(const Module& m) {
  std::vector<Entry> v;
  for (auto& [n, t] : m.named_parameters()) v.push_back({"parameter", n, t});
  for (auto& [n, t] : m.named_buffers()) v.push_back({"buffer", n, t});
  return v;
}

int64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return static_cast<int64_t>(h & 0x7fffffffffffffffull);
}

}  // namespace

void check_same_model(Communicator& comm, const Module& model) {
  const int n = comm.size();
  if (n == 1) return;
  auto entries = entries_of(model);
  std::vector<int64_t> per(entries.size());
  int64_t whole = static_cast<int64_t>(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    per[i] = fnv1a(entries[i].describe());
    whole = fnv1a(std::to_string(per[i]), static_cast<uint64_t>(whole));
  }
  std::vector<int64_t> all(static_cast<size_t>(n));
  comm.allgather(&whole, all.data(), 1, DType::i64);
  if (std::all_of(all.begin(), all.end(), [&](int64_t h) { return h == all[0]; })) return;

  // Mismatch: find the first entry that differs, and what each rank has there.
  int64_t count = static_cast<int64_t>(entries.size());
  std::vector<int64_t> counts(static_cast<size_t>(n));
  comm.allgather(&count, counts.data(), 1, DType::i64);
  size_t maxn = static_cast<size_t>(*std::max_element(counts.begin(), counts.end()));
  std::vector<int64_t> mine(maxn, -1), table(maxn * static_cast<size_t>(n));
  std::copy(per.begin(), per.end(), mine.begin());
  comm.allgather(mine.data(), table.data(), maxn, DType::i64);
  size_t first = maxn;
  for (size_t i = 0; i < maxn && first == maxn; ++i)
    for (int r = 1; r < n; ++r)
      if (table[static_cast<size_t>(r) * maxn + i] != table[i]) first = i;
  if (first == maxn) first = maxn - 1;  // (hash collision in the summary: cannot happen in practice)
  constexpr size_t kText = 240;
  std::string text = first < entries.size() ? entries[first].describe()
                                            : "nothing (it has only " + std::to_string(count) + " entries)";
  std::vector<char> send(kText, 0), recv(kText * static_cast<size_t>(n));
  text.copy(send.data(), kText - 1);
  comm.allgather(send.data(), recv.data(), kText, DType::u8);
  auto at = [&](int r) { return std::string(recv.data() + static_cast<size_t>(r) * kText); };
  std::string differ, has;
  for (int r = 1; r < n; ++r)
    if (table[static_cast<size_t>(r) * maxn + first] != table[first]) {
      differ += (differ.empty() ? "" : ", ") + std::to_string(r);
      if (has.size() < 600) has += "; rank " + std::to_string(r) + " has " + at(r);
    }
  throw CommError("DataParallel: the ranks built different models: rank(s) " + differ +
                  " differ from rank 0 at entry #" + std::to_string(first) + ": rank 0 has " + at(0) + has);
}

void broadcast_model(Communicator& comm, Module& model, int root) {
  if (comm.size() == 1) return;
  for (auto& e : entries_of(model)) {
    if (!e.t.is_contiguous()) throw Error("broadcast_model: " + e.describe() + " is not contiguous");
    comm.broadcast(e.t.raw_data(), static_cast<size_t>(e.t.numel()), e.t.dtype(), root);
  }
}

// ---------------------------------------------------------------- DataParallel

DataParallel::DataParallel(Communicator& comm, std::shared_ptr<Module> model, BucketOptions options)
    : comm_(comm), model_(std::move(model)), options_(options) {
  check_same_model(comm_, *model_);
  broadcast_model(comm_, *model_, 0);
}

std::unique_ptr<BucketedGradientSync> DataParallel::make_gradient_sync() const {
  return std::make_unique<BucketedGradientSync>(comm_, model_->named_parameters(), options_);
}

void DataParallel::sync_buffers() {
  if (comm_.size() == 1) return;
  for (auto& [n, t] : model_->named_buffers()) {
    if (is_float(t.dtype()))
      comm_.allreduce(t.raw_data(), static_cast<size_t>(t.numel()), t.dtype(), ReduceOp::avg);
    else
      comm_.broadcast(t.raw_data(), static_cast<size_t>(t.numel()), t.dtype(), 0);
  }
}

}  // namespace strata
