#include "data/loader/loader.h"

#include <algorithm>
#include <cctype>

#include "base/error.h"
#include "data/loader/prefetch_pipeline.h"
#include "data/loader/shuffle_block.h"
#include "data/loader/staging_plan.h"

namespace strata::data {

Loader::Loader(LoaderOptions options) : opts_(std::move(options)) {
  source_ = open_source(opts_.url, opts_.source);
  init();
}

Loader::Loader(LoaderOptions options, std::unique_ptr<Source> source)
    : opts_(std::move(options)), source_(std::move(source)) {
  if (!source_) throw ConfigError("loader: no source given");
  init();
}

Loader::~Loader() { pipeline_.reset(); }

std::filesystem::path dataset_cache_dir(const std::filesystem::path& root, const std::string& url) {
  // a readable tail of the URL plus a hash of all of it
  std::string tail;
  for (char c : url.substr(url.size() > 40 ? url.size() - 40 : 0))
    tail += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  while (!tail.empty() && tail.front() == '_') tail.erase(tail.begin());
  std::string h = checksum_bytes(url.data(), url.size());  // "xxh3:<16 hex>"
  return root / (tail + "-" + h.substr(h.find(':') + 1, 12));
}

void Loader::init() {
  if (opts_.world_size < 1 || opts_.rank < 0 || opts_.rank >= opts_.world_size)
    throw ConfigError("loader: rank " + std::to_string(opts_.rank) + " is outside world size " +
                      std::to_string(opts_.world_size));
  if (opts_.batch_size < 1)
    throw ConfigError("loader: batch size must be >= 1, got " + std::to_string(opts_.batch_size));
  if (opts_.lookahead_bytes < 0) throw ConfigError("loader: look-ahead bytes must be >= 0");
  if (opts_.shuffle_window < 0)
    throw ConfigError("loader: shuffle window must be >= 0 shards (0 = the widest the cache holds), got " +
                      std::to_string(opts_.shuffle_window));
  cache_ = std::make_unique<ShardCache>(
      *source_, ShardCacheOptions{.dir = dataset_cache_dir(opts_.cache_dir, opts_.url),
                                  .capacity_bytes = opts_.cache_bytes,
                                  .lifetime = opts_.lifetime,
                                  .download_stall_timeout_s = opts_.download_stall_timeout_s,
                                  .key = opts_.key});
  const Manifest& m = cache_->manifest();
  const ImageDecodeOptions* decode = nullptr;
  if (opts_.image) {
    decode = &*opts_.image;
    const FieldSpec& f = m.field(decode->field);  // throws for an unknown field name
    if (!f.variable)
      throw ConfigError("loader: dataset " + opts_.url + " field '" + f.name +
                        "' is not variable-size: it holds no encoded images");
  }
  for (auto& f : m.schema) {
    const ImageDecodeOptions* dec = decode && decode->field == f.name ? decode : nullptr;
    const std::string& out = dec ? dec->out_field : f.name;  // the batch field's name
    const NormalizeU8* norm = nullptr;
    for (auto& n : opts_.normalize)
      if (n.field == out) norm = &n;
    const AugmentU8* aug = nullptr;
    for (auto& a : opts_.augment)
      if (a.field == out) aug = &a;
    transforms_.emplace_back(f, norm, aug, dec);
  }
  auto check_field = [&](const std::string& name) {  // a batch field, or the manifest's error
    for (auto& t : transforms_)
      if (!t.dropped() && t.out_name() == name) return;
    for (auto& f : m.schema)  // strata-pack files: encoded images, not decoded
      if (f.variable && f.dtype == "u8" && !opts_.image && f.name == "bytes")
        throw ConfigError("loader: dataset " + opts_.url + " has no field '" + name +
                          "': it holds encoded images (JPEG, PNG) in the variable-size field '" + f.name +
                          "'; decode them with data.image_size (docs/loader.md, \"Image decoding\")");
    m.field(name);
    throw ConfigError("loader: field '" + name + "' of dataset " + opts_.url +
                      " is variable-size: not a batch field");
  };
  for (auto& n : opts_.normalize) check_field(n.field);
  for (auto& a : opts_.augment) check_field(a.field);
  int64_t first = 0;
  for (auto& s : m.shards) {
    shard_samples_.push_back(s.samples);
    shard_first_sample_.push_back(first);
    first += s.samples;
  }
  if (batches_per_epoch() == 0)
    throw ConfigError("loader: dataset " + opts_.url + " has " + std::to_string(m.total_samples()) +
                      " samples, fewer than one global batch of " + std::to_string(global_batch()));
  window_ = resolve_window();
  check_capacity(required_cache_bytes(0), 0);
}

int64_t Loader::resolve_window() const {
  if (opts_.shuffle_window > 0) return opts_.shuffle_window;
  if (!opts_.shuffle) return 1;  // in manifest order the window reorders nothing
  std::vector<int64_t> bytes;
  for (auto& s : cache_->manifest().shards) bytes.push_back(s.staged_bytes());
  return widest_shuffle_window(shard_samples_, bytes,
                               WindowBudget{.cache_bytes = opts_.cache_bytes,
                                            .lookahead_bytes = opts_.lookahead_bytes,
                                            .local_ranks = opts_.local_ranks,
                                            .global_batch = global_batch(),
                                            .span_batches = ring(),
                                            .pad = opts_.remainder == Remainder::kPad});
}

int Loader::ring() const { return opts_.ring_batches > 0 ? opts_.ring_batches : opts_.decode_threads + 2; }

OrderOptions Loader::order_options() const {
  OrderOptions o;
  o.seed = opts_.seed;
  o.global_batch = global_batch();
  o.shuffle_window = window_;
  o.shuffle = opts_.shuffle;
  o.remainder = opts_.remainder;
  return o;
}

std::vector<SampleRef> Loader::rank_order_of(int64_t epoch, int64_t first_step) const {
  auto global = global_order(shard_samples_, order_options(), epoch);
  return rank_order(global, global_batch(), opts_.world_size, opts_.rank, first_step);
}

int64_t Loader::batches_per_epoch() const {
  int64_t total = 0;
  for (auto n : shard_samples_) total += n;
  return global_batches(total, order_options());
}

int64_t Loader::required_cache_bytes(int64_t epoch) const {
  return node_cache_need(StagingPlan(rank_order_of(epoch, 0), cache_->manifest()));
}

int64_t Loader::node_cache_need(const StagingPlan& plan) const {
  int64_t in_use = plan.max_bytes_in_span(static_cast<int64_t>(ring()) * opts_.batch_size);
  return data::node_cache_need(in_use, opts_.lookahead_bytes, cache_->manifest().total_staged_bytes(),
                               opts_.local_ranks);
}

void Loader::check_capacity(int64_t need, int64_t epoch) const {
  if (opts_.cache_bytes < need)
    throw ConfigError(
        "loader: cache capacity " + std::to_string(opts_.cache_bytes) + " bytes is smaller than the " +
        std::to_string(need) + " bytes that must be in the cache at once in epoch " + std::to_string(epoch) +
        " (look-ahead " + std::to_string(opts_.lookahead_bytes) + " + shards in use by " +
        std::to_string(ring()) + " batches with a shuffle window of " + std::to_string(window_) +
        " shard(s), x" + std::to_string(opts_.local_ranks) + " local ranks, at most the whole dataset)");
}

void Loader::start_at(int64_t epoch, int64_t step) {
  pipeline_.reset();
  // The order of this epoch was usually computed already, as the "next" epoch.
  std::vector<SampleRef> order;
  if (next_order_epoch_ == epoch) {
    auto from = std::min<size_t>(static_cast<size_t>(step * opts_.batch_size), next_order_.size());
    order.assign(next_order_.begin() + static_cast<std::ptrdiff_t>(from), next_order_.end());
  } else {
    order = rank_order_of(epoch, step);
  }
  StagingPlan plan(order, cache_->manifest());
  check_capacity(node_cache_need(plan), epoch);
  epoch_ = epoch;
  start_step_ = step;
  started_ = true;
  // The next epoch's first uses let eviction keep what the next epoch opens with.
  next_order_ = rank_order_of(epoch + 1, 0);
  next_order_epoch_ = epoch + 1;
  next_epoch_first_use_.assign(shard_samples_.size(), -1);
  for (size_t p = next_order_.size(); p-- > 0;)
    next_epoch_first_use_[static_cast<size_t>(next_order_[p].shard)] = static_cast<int64_t>(p);
  PipelineConfig cfg;
  cfg.batch = opts_.batch_size;
  cfg.lookahead_bytes = opts_.lookahead_bytes;
  cfg.staging_threads = opts_.staging_threads;
  cfg.decode_threads = opts_.decode_threads;
  cfg.ring = ring();
  cfg.next_epoch_first_use = next_epoch_first_use_;
  cfg.seed = opts_.seed;
  cfg.epoch = epoch;
  cfg.shard_first_sample = shard_first_sample_;
  cfg.memory = opts_.batch_memory;
  pipeline_ = std::make_unique<PrefetchPipeline>(*cache_, cache_->manifest().schema, transforms_,
                                                 std::move(order), std::move(plan), cfg);
}

void Loader::start_epoch(int64_t epoch) {
  if (epoch < 0) throw ConfigError("loader: epoch must be >= 0");
  reset_metrics();
  start_at(epoch, 0);
}

void Loader::reset_metrics() {
  wait_s_ = 0;
  base_ = StagingCounters::read(*source_, *cache_);
}

bool Loader::next(HostBatch& out) {
  if (!started_) start_epoch(0);
  int64_t step = start_step_ + pipeline_->consumed();
  if (!pipeline_->next(out, &wait_s_)) return false;
  // Padding (Remainder::kPad) repeats samples at the end of the global order, and
  // a rank's slice is contiguous: rows past the dataset's end are a suffix.
  int64_t first = step * global_batch() + static_cast<int64_t>(opts_.rank) * opts_.batch_size;
  out.valid = std::clamp<int64_t>(cache_->manifest().total_samples() - first, 0, out.size);
  return true;
}

SourcePosition Loader::position() const {
  int64_t step = start_step_ + (pipeline_ ? pipeline_->consumed() : 0);
  return SourcePosition{{"epoch", epoch_},
                        {"step", step},
                        {"seed", static_cast<int64_t>(opts_.seed)},
                        {"global_batch", global_batch()},
                        {"shuffle_window", window_},
                        {"world_size", opts_.world_size},
                        {"rank", opts_.rank}};
}

void Loader::restore(const SourcePosition& pos) {
  auto get = [&](const char* key) {
    auto it = pos.find(key);
    if (it == pos.end()) throw ConfigError(std::string("loader: position has no '") + key + "'");
    return it->second;
  };
  int64_t epoch = get("epoch"), step = get("step");
  if (get("seed") != static_cast<int64_t>(opts_.seed))
    throw ConfigError("loader: position was saved with seed " + std::to_string(get("seed")) +
                      ", this run has seed " + std::to_string(opts_.seed));
  if (get("global_batch") != global_batch())
    throw ConfigError("loader: position was saved with global batch " + std::to_string(get("global_batch")) +
                      ", this run has " + std::to_string(global_batch()) + " (batch size x world size)");
  if (epoch < 0 || step < 0 || step > batches_per_epoch())
    throw ConfigError("loader: position step " + std::to_string(step) + " is outside epoch of " +
                      std::to_string(batches_per_epoch()) + " steps");
  // The window is part of the order. A position from before it was recorded was
  // saved by a loader that used the explicit window, or 1 for 0 (strata-train
  // turned 0 into 1 then). The width 0 resolves to depends on the cache, the
  // ranks per node and the look-ahead, so a run resumed elsewhere keeps the
  // checkpoint's width, also in later epochs, rather than its own.
  auto saved = pos.find("shuffle_window");
  const int64_t window = saved != pos.end() ? saved->second : std::max<int64_t>(opts_.shuffle_window, 1);
  if (window < 1)
    throw ConfigError("loader: position has shuffle window " + std::to_string(window) + ", must be >= 1");
  if (opts_.shuffle) {
    if (opts_.shuffle_window > 0 && window != opts_.shuffle_window)
      throw ConfigError("loader: position was saved with shuffle window " + std::to_string(window) +
                        " shard(s), this run has " + std::to_string(opts_.shuffle_window) +
                        " (a window of 0 resumes with the saved one)");
    if (window != window_) {
      window_ = window;
      next_order_epoch_ = -1;  // the order kept for reuse was planned with the other window
      next_order_.clear();
    }
  }
  reset_metrics();  // figures restart with the resumed part of the epoch
  start_at(epoch, step);
}

DataMetrics Loader::metrics() const {
  DataMetrics m;
  m.wait_seconds = wait_s_;
  m.batches = pipeline_ ? pipeline_->consumed() : 0;
  m.samples = m.batches * opts_.batch_size;
  int64_t per_sample = 0;
  for (auto& t : transforms_) per_sample += t.out_bytes();
  m.sample_bytes = m.samples * per_sample;
  m.shards_staged = pipeline_ ? pipeline_->uses_staged() : 0;
  m.shard_uses = pipeline_ ? static_cast<int64_t>(pipeline_->plan().uses().size()) : 0;
  m.bad_images = pipeline_ ? pipeline_->bad_images() : 0;
  StagingCounters::read(*source_, *cache_).fill_since(base_, m);
  return m;
}

IoTotals Loader::io_totals() const {
  const SourceStats& s = source_->stats();
  return {s.requests, s.bytes};
}

}  // namespace strata::data
