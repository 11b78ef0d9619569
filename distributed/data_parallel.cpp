// DataParallel and BucketedGradientSync (see data_parallel.h, docs/data-parallel.md).
//
// Buckets: parameters in reverse registration order (the order backward produces
// their gradients), cut when the next one would overflow the cap (a bucket holds
// at least one parameter). Each bucket owns a contiguous buffer in the reduce
// dtype on the parameters' device (grad_bucket.h).
//
// A step: begin_step(true) arms the hooks. Each parameter's grad-ready hook marks
// it; when a bucket's last parameter is marked, its gradients are copied into the
// buffer and -- buckets start strictly in index order, so every rank issues the
// same collectives in the same order even when backward completes them in a
// different one -- its allreduce_async (avg) starts. Every hook also polls the
// buckets in flight: Open MPI 4.1 advances a non-blocking collective only inside
// MPI calls (unless the communicator's progress thread runs). finish() starts the
// buckets still waiting (parameters without a gradient join as zeros), then
// copies the averages back into the gradients: after a host wait on each bucket,
// or -- a stream-ordered communicator (NCCL) on device buckets -- after making the
// compute stream wait for each bucket's collective by event, with no host wait.
#include "distributed/data_parallel.h"

#include <algorithm>
#include <chrono>

#include "base/error.h"
#include "distributed/cuda/stream_order.h"
#include "distributed/grad_bucket.h"
#include "kernels/runtime/allocator.h"

namespace strata {

namespace {

double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

bool is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64; }

Device device_of(const NamedTensors& params) {
  for (auto& [name, p] : params)
    if (p.device() != params[0].second.device())
      throw Error("BucketedGradientSync: parameter '" + params[0].first + "' is on " +
                  device_name(params[0].second.device()) + " but '" + name + "' on " +
                  device_name(p.device()));
  return params.empty() ? Device::cpu : params[0].second.device();
}

}  // namespace

BucketOptions BucketOptions::from_config(const DistributedConfig& c) {
  BucketOptions o;
  if (c.reduce_dtype != "f32" && c.reduce_dtype != "bf16" && c.reduce_dtype != "f16")
    throw ConfigError("distributed.reduce_dtype: '" + c.reduce_dtype + "' (expected f32, bf16 or f16)");
  o.reduce_dtype = dtype_from_name(c.reduce_dtype);
  return o;
}

// ---------------------------------------------------------------- gradient sync

struct BucketedGradientSync::State {
  struct Bucket {
    std::vector<size_t> params;  // indices into State::params, in launch order
    std::unique_ptr<GradBucket> buffer;
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
  bool on_device = false;         // device buckets reduced by a stream-ordered communicator
  bool armed = false;             // between begin_step(true) and finish()
  size_t next_start = 0;          // buckets start in index order
  size_t next_done = 0;           // first started bucket not yet seen complete
  GradSyncStats stats;
  std::function<void(size_t, bool)> on_start;

  void start(size_t b, bool in_backward) {
    Bucket& k = buckets[b];
    for (size_t i = 0; i < k.params.size(); ++i) k.buffer->gather(i, params[k.params[i]].second);
    k.buffer->gathered();
    if (on_start) on_start(b, in_backward);
    k.t_start = now();
    k.handle =
        comm.allreduce_async(k.buffer->comm_data(), k.buffer->count(), k.buffer->dtype(), ReduceOp::avg);
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

  // Makes bucket k's result usable by what comes next: on the device, the compute
  // stream waits for its collective; otherwise the host waits.
  void complete(Bucket& k) {
    auto* ordered = on_device ? dynamic_cast<StreamOrderedHandle*>(k.handle.get()) : nullptr;
    if (ordered)
      ordered->order_before(compute_stream());
    else
      k.handle->wait();
    if (!k.done) k.t_done = now();
    k.done = true;
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
  const Device device = device_of(s.params);
  StreamOrderedCommunicator* ordered = stream_ordered(comm);
  s.on_device = device != Device::cpu && ordered;
  // The caps are in bytes of the reduce dtype, so bf16 buckets hold twice the parameters.
  const size_t es = dtype_size(options.reduce_dtype);
  size_t cap = std::max<size_t>(es, options.first_bucket_bytes);
  size_t bytes = 0;
  for (size_t j = s.params.size(); j-- > 0;) {
    size_t pb = static_cast<size_t>(s.params[j].second.numel()) * es;
    if (s.buckets.empty() || (!s.buckets.back().params.empty() && bytes + pb > cap)) {
      if (!s.buckets.empty()) cap = std::max<size_t>(es, options.bucket_bytes);
      s.buckets.emplace_back();
      bytes = 0;
    }
    s.buckets.back().params.push_back(j);
    bytes += pb;
    s.bucket_of[j] = s.buckets.size() - 1;
  }
  for (auto& k : s.buckets) {
    std::vector<size_t> sizes;
    for (size_t p : k.params) sizes.push_back(static_cast<size_t>(s.params[p].second.numel()));
    k.buffer = std::make_unique<GradBucket>(sizes, options.reduce_dtype, device, s.on_device);
    // NCCL reads and writes the bucket on its own stream: the caching allocator
    // must not hand the block out again before that work is done.
    if (s.on_device)
      allocator_for(device).record_stream(k.buffer->device_data(), ordered->collective_stream());
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
    for (size_t b = s.next_done; b < s.buckets.size(); ++b) s.complete(s.buckets[b]);
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
    k.buffer->reduced();
    for (size_t i = 0; i < k.params.size(); ++i) k.buffer->scatter(i, s.params[k.params[i]].second);
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
bool BucketedGradientSync::reduces_on_device() const { return state_->on_device; }
const GradSyncStats& BucketedGradientSync::stats() const { return state_->stats; }
void BucketedGradientSync::reset_stats() { state_->stats = {}; }
void BucketedGradientSync::set_on_bucket_start(std::function<void(size_t, bool)> fn) {
  state_->on_start = std::move(fn);
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
  for (auto& [n, t] : model_->named_buffers())
    on_comm_memory(comm_, t, [&](void* data) {
      if (is_float(t.dtype()))
        comm_.allreduce(data, static_cast<size_t>(t.numel()), t.dtype(), ReduceOp::avg);
      else
        comm_.broadcast(data, static_cast<size_t>(t.numel()), t.dtype(), 0);
    });
}

}  // namespace strata
