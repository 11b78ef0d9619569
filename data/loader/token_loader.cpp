// TokenLoader (see token_loader.h): options and manifest checks, epochs, the
// batch copy out of the mapped shards, position and metrics.
#include "data/loader/token_loader.h"

#include <algorithm>
#include <chrono>
#include <functional>

#include "base/error.h"
#include "data/loader/loader.h"
#include "data/loader/token_stream.h"

namespace strata::data {

TokenLoader::TokenLoader(TokenLoaderOptions options) : opts_(std::move(options)) {
  source_ = open_source(opts_.url, opts_.source);
  init();
}

TokenLoader::TokenLoader(TokenLoaderOptions options, std::unique_ptr<Source> source)
    : opts_(std::move(options)), source_(std::move(source)) {
  if (!source_) throw ConfigError("token loader: no source given");
  init();
}

TokenLoader::~TokenLoader() {
  try {
    join_ahead();
  } catch (...) {
    // A failed look-ahead matters to no one now.
  }
  if (cache_) cache_->set_next_use({});
}

int64_t TokenLoader::window_need(int64_t w) const {
  int64_t need = 0;
  for (size_t i = 0; i < shard_bytes_desc_.size() && static_cast<int64_t>(i) < w + 1; ++i)
    need += shard_bytes_desc_[i];
  return need;
}

int64_t TokenLoader::min_cache_bytes() const {
  const int64_t whole = manifest().total_staged_bytes();
  if (manifest().shards.size() < 2) return whole;
  if (opts_.shuffle) return std::min(whole, window_need(1));
  return std::min(whole, std::max(window_need(1), in_order_need()));
}

void TokenLoader::make_windows() {
  const TokenOrderOptions order{opts_.seed, global_batch(), opts_.shuffle, opts_.remainder};
  windows_ = window_shards_ > 0 ? TokenWindows(shard_tokens_, window_shards_, opts_.context, order)
                                : TokenWindows(stream_->tokens(), opts_.context, order);
}

int64_t TokenLoader::next_use(const std::string& shard) const {
  // Called by the cache (under its lock, maybe from the look-ahead thread) to rank
  // eviction: a shard of the shard window in use or of a later one is used that
  // many windows from now; one read already this epoch not before the next.
  const auto it = shard_index_.find(shard);
  const int64_t now = current_window_.load();
  if (it == shard_index_.end() || now < 0 || window_of_shard_.empty()) return ShardCache::kNever;
  const int64_t w = window_of_shard_[static_cast<size_t>(it->second)];
  return w >= now ? w - now : ShardCache::kNever;
}

ShardCache::Pin TokenLoader::join_ahead() {
  if (!ahead_.valid()) return {};
  try {
    return ahead_.get();
  } catch (const std::exception&) {
    return {};  // staged again, and its error raised, when the shard window needs it
  }
}

void TokenLoader::enter_window(int64_t w) {
  ShardCache::Pin ahead = join_ahead();
  const int32_t ahead_shard = ahead_shard_;
  ahead_shard_ = -1;
  const std::vector<int32_t> shards = windows_.shards_of_window(w);
  // Unmapped and unpinned first, so that the cache can evict them for this window.
  stream_->release_except(shards);
  current_window_ = w;
  if (ahead.valid() && std::find(shards.begin(), shards.end(), ahead_shard) != shards.end())
    stream_->adopt(ahead_shard, std::move(ahead));
  ahead = ShardCache::Pin();
  std::vector<int32_t> missing;
  for (int32_t s : shards)
    if (!stream_->mapped(s) && stream_->shard_tokens(s) > 0) missing.push_back(s);
  stream_->stage(missing);
  // The next shard window's first shard, staged while this one is read.
  const int64_t next = windows_.next_shard_window(w);
  if (next < 0) return;
  for (int32_t s : windows_.shards_of_window(next)) {
    if (stream_->shard_tokens(s) == 0) continue;
    ahead_shard_ = s;
    const ShardInfo* info = &manifest().shards.at(static_cast<size_t>(s));
    ahead_ = std::async(std::launch::async, [this, info] { return cache_->acquire(*info); });
    return;
  }
}

void TokenLoader::init() {
  const std::string where = "token loader (" + opts_.url + "): ";
  if (opts_.world_size < 1 || opts_.rank < 0 || opts_.rank >= opts_.world_size)
    throw ConfigError(where + "rank " + std::to_string(opts_.rank) + " is outside world size " +
                      std::to_string(opts_.world_size));
  if (opts_.batch_size < 1)
    throw ConfigError(where + "batch size must be >= 1, got " + std::to_string(opts_.batch_size));
  if (opts_.context < 1)
    throw ConfigError(where + "context length must be >= 1, got " + std::to_string(opts_.context));
  if (opts_.local_ranks < 1)
    throw ConfigError(where + "local ranks must be >= 1, got " + std::to_string(opts_.local_ranks));
  cache_ = std::make_unique<ShardCache>(
      *source_, ShardCacheOptions{.dir = dataset_cache_dir(opts_.cache_dir, opts_.url),
                                  .capacity_bytes = opts_.cache_bytes,
                                  .lifetime = opts_.lifetime,
                                  .download_stall_timeout_s = opts_.download_stall_timeout_s,
                                  .key = opts_.key});
  validate_manifest();
  const Manifest& m = manifest();
  for (size_t i = 0; i < m.shards.size(); ++i) {
    shard_tokens_.push_back(m.shards[i].samples);
    shard_bytes_desc_.push_back(m.shards[i].staged_bytes());
    shard_index_[m.shards[i].name] = static_cast<int32_t>(i);
  }
  std::sort(shard_bytes_desc_.begin(), shard_bytes_desc_.end(), std::greater<>());
  const bool fits = opts_.cache_bytes >= m.total_staged_bytes();
  if (!fits) {
    // Streamed through the cache in shard windows: at least one shard in use
    // and one staged ahead, so the two largest shards must fit at once.
    if (m.shards.size() < 2 || opts_.cache_bytes < window_need(1)) {
      const std::string shards =
          m.shards.size() < 2 ? "its one shard of " + std::to_string(shard_bytes_desc_.at(0)) + " bytes"
                              : "its two largest shards (" + std::to_string(shard_bytes_desc_[0]) + " + " +
                                    std::to_string(shard_bytes_desc_[1]) + " = " +
                                    std::to_string(window_need(1)) + " bytes: one in use, one staged ahead)";
      throw ConfigError(where + "cache capacity " + std::to_string(opts_.cache_bytes) +
                        " bytes is smaller than the dataset's " + std::to_string(m.total_staged_bytes()) +
                        " bytes and than " + shards + "; set data.cache_bytes to at least " +
                        std::to_string(m.shards.size() < 2 ? shard_bytes_desc_.at(0) : window_need(1)) +
                        " (the cache is shared by the node's " + std::to_string(opts_.local_ranks) +
                        " local ranks)");
    }
    if (opts_.shuffle && opts_.remainder != Remainder::kDrop)
      throw ConfigError(
          where + "cache capacity " + std::to_string(opts_.cache_bytes) +
          " bytes is smaller than the dataset's " + std::to_string(m.total_staged_bytes()) +
          " bytes: a shuffled token dataset with padding (Remainder::kPad) is cached whole; set "
          "data.cache_bytes to at least " +
          std::to_string(m.total_staged_bytes()));
    if (opts_.shuffle) {
      window_shards_ = 1;
      while (window_shards_ + 2 <= static_cast<int64_t>(m.shards.size()) &&
             window_need(window_shards_ + 1) <= opts_.cache_bytes)
        ++window_shards_;
    } else {
      in_order_ = true;  // evaluation: stream order, each batch's shards only (checked below)
    }
  }
  // Mapped shards stay pinned when the cache evicts (it does not when it holds all).
  stream_ = std::make_unique<TokenStream>(*cache_, opts_.staging_threads, /*pin=*/!fits);
  cache_->set_next_use([this](const std::string& shard) { return next_use(shard); });
  make_windows();
  if (batches_per_epoch() == 0)
    throw ConfigError(where + "the dataset holds " + std::to_string(stream_->tokens()) + " tokens, " +
                      std::to_string(windows_.windows()) + " windows of context " +
                      std::to_string(opts_.context) + " (each reads context + 1 tokens): " +
                      (windows_.windows() == 0
                           ? std::string("not one window")
                           : "fewer than one global batch of " + std::to_string(global_batch()) +
                                 " windows (batch " + std::to_string(opts_.batch_size) + " x world size " +
                                 std::to_string(opts_.world_size) + ")"));
  if (in_order_ && in_order_need() > opts_.cache_bytes)
    throw ConfigError(where + "cache capacity " + std::to_string(opts_.cache_bytes) +
                      " bytes is smaller than the dataset's " + std::to_string(m.total_staged_bytes()) +
                      " bytes and than the " + std::to_string(in_order_need()) +
                      " bytes of shards one global batch of " + std::to_string(global_batch()) +
                      " windows reads in stream order (evaluation); set data.cache_bytes to at least " +
                      std::to_string(in_order_need()));
}

int64_t TokenLoader::span_bytes(int64_t first, int64_t n) const {
  const auto& shards = manifest().shards;
  int64_t bytes = 0;
  const int64_t end = std::min(first + n, stream_->tokens());
  if (end <= first) return 0;
  for (int32_t s = stream_->shard_of(first); s <= stream_->shard_of(end - 1); ++s)
    bytes += shards[static_cast<size_t>(s)].staged_bytes();
  return bytes;
}

int64_t TokenLoader::in_order_need() const {
  // The shards each global batch of the stream order reads; the padded last one
  // reads the tail and, again, the head.
  const int64_t gb = global_batch(), t = opts_.context, windows = windows_.windows();
  int64_t need = 0;
  for (int64_t s = 0; s < batches_per_epoch(); ++s) {
    const int64_t p0 = s * gb, p1 = std::min((s + 1) * gb, windows);
    int64_t bytes = span_bytes(p0 * t, (p1 - p0) * t + 1);
    if ((s + 1) * gb > windows) bytes += span_bytes(0, ((s + 1) * gb - windows) * t + 1);
    need = std::max(need, bytes);
  }
  return need;
}

void TokenLoader::validate_manifest() const {
  const Manifest& m = manifest();
  const std::string where = "token loader: dataset " + opts_.url;
  if (m.vocab_size <= 0)
    throw ConfigError(where +
                      " is not a token dataset: its manifest has no vocab_size (docs/data-format.md)");
  // Manifest::from_json already refuses vocab_size beside another schema; this
  // keeps the loader's reading of the shards honest on its own.
  const bool ok = m.schema.size() == 1 && m.schema[0].name == "tokens" &&
                  (m.schema[0].dtype == "u16" || m.schema[0].dtype == "i32") && m.schema[0].shape.empty() &&
                  !m.schema[0].variable;
  if (!ok)
    throw ConfigError(where + ": a token dataset's schema must be one scalar field 'tokens' of u16 or i32");
  // Token ids are not checked against vocab_size here (per window it would cost
  // more than the copy); strata-pack tokens refuses to write one out of range.
}

void TokenLoader::start_at(int64_t epoch, int64_t step) {
  join_ahead();  // the look-ahead reads window_of_shard_
  ahead_shard_ = -1;
  current_window_ = -1;
  windows_.start_epoch(epoch);
  if (window_shards_ > 0) {
    window_of_shard_.assign(shard_tokens_.size(), ShardCache::kNever);
    for (int64_t w = 0; w < windows_.shard_windows_used(); ++w)
      for (int32_t s : windows_.shards_of_window(w)) window_of_shard_[static_cast<size_t>(s)] = w;
  }
  step_ = step;
  batches_ = 0;
  started_ = true;
}

void TokenLoader::start_epoch(int64_t epoch) {
  if (epoch < 0) throw ConfigError("token loader: epoch must be >= 0, got " + std::to_string(epoch));
  reset_metrics();
  start_at(epoch, 0);
}

void TokenLoader::reset_metrics() {
  wait_s_ = 0;
  base_ = StagingCounters::read(*source_, *cache_);
  base_staged_ = stream_->shards_staged();
}

bool TokenLoader::next(HostBatch& out) {
  if (!started_) start_epoch(0);
  if (step_ >= batches_per_epoch()) return false;
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t b = opts_.batch_size, t = opts_.context;
  const int64_t first = step_ * global_batch() + static_cast<int64_t>(opts_.rank) * b;
  if (window_shards_ > 0) {
    const int64_t w = windows_.shard_window_of_step(step_);
    if (w != current_window_.load()) enter_window(w);
  }
  // Windows of this rank's slice; the shards they reach are staged first.
  row_starts_.resize(static_cast<size_t>(b));
  std::vector<int32_t> missing;
  for (int64_t i = 0; i < b; ++i) {
    const int64_t start = windows_.start_at(first + i);
    row_starts_[static_cast<size_t>(i)] = start;
    stream_->missing(start, t + 1, missing);
  }
  if (in_order_) {  // the shards of this batch stay mapped; those behind it go
    std::vector<int32_t> keep;
    for (int64_t start : row_starts_)
      for (int32_t s = stream_->shard_of(start); s <= stream_->shard_of(start + t); ++s)
        if (std::find(keep.begin(), keep.end(), s) == keep.end()) keep.push_back(s);
    stream_->release_except(keep);
  }
  stream_->stage(missing);

  out.fields.resize(2);
  for (int f = 0; f < 2; ++f) {
    HostArray& a = out.fields[static_cast<size_t>(f)];
    a.name = f == 0 ? "input" : "target";
    a.dtype = DType::i64;
    a.shape = {b, t};
    HostBufferResource* memory = opts_.batch_memory ? opts_.batch_memory : std::pmr::new_delete_resource();
    if (a.bytes.resource() != memory) a.bytes = HostBytes(memory);  // a new HostBatch: once
    a.bytes.resize(static_cast<size_t>(b * t) * sizeof(int64_t));   // no reallocation when reused
  }
  int64_t* input = out.fields[0].as<int64_t>();
  int64_t* target = out.fields[1].as<int64_t>();
  for (int64_t i = 0; i < b; ++i) {
    const int64_t start = row_starts_[static_cast<size_t>(i)];
    int64_t* in = input + i * t;
    int64_t* tg = target + i * t;
    stream_->read(start, t, in);
    std::copy(in + 1, in + t, tg);            // target[j] = input[j + 1] ...
    stream_->read(start + t, 1, tg + t - 1);  // ... and the token after the window
  }
  out.size = b;
  out.valid = windows_.real_positions(first, b);
  ++step_;
  ++batches_;
  wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return true;
}

SourcePosition TokenLoader::position() const {
  return SourcePosition{{"epoch", std::max<int64_t>(windows_.epoch(), 0)},
                        {"step", step_},
                        {"seed", static_cast<int64_t>(opts_.seed)},
                        {"global_batch", global_batch()},
                        {"context", opts_.context},
                        {"window_shards", window_shards_},
                        {"world_size", opts_.world_size},
                        {"rank", opts_.rank}};
}

void TokenLoader::restore(const SourcePosition& pos) {
  auto get = [&](const char* key) {
    auto it = pos.find(key);
    if (it == pos.end()) throw ConfigError(std::string("token loader: saved position has no '") + key + "'");
    return it->second;
  };
  auto same = [&](const char* key, int64_t mine, const char* what) {
    if (get(key) != mine)
      throw ConfigError(std::string("token loader: position key '") + key + "' was saved as " +
                        std::to_string(get(key)) + ", this run has " + std::to_string(mine) + " (" + what +
                        ")");
  };
  same("seed", static_cast<int64_t>(opts_.seed), "the data seed");
  same("context", opts_.context, "the context length T");
  same("global_batch", global_batch(), "batch size x world size");
  // The shard windows are part of the order: a run resumed with another cache
  // size keeps the saved width when its cache holds it. A position without the
  // key was saved when every token dataset was cached whole (0).
  const auto saved = pos.find("window_shards");
  const int64_t ws = saved == pos.end() ? 0 : saved->second;
  if (ws != window_shards_) {
    const int64_t shards = static_cast<int64_t>(shard_tokens_.size());
    if (ws == 0 && opts_.shuffle && opts_.cache_bytes < manifest().total_staged_bytes())
      throw ConfigError(
          "token loader: position key 'window_shards' was saved as 0 (the dataset cached "
          "whole), this run's cache capacity " +
          std::to_string(opts_.cache_bytes) + " bytes is smaller than the dataset's " +
          std::to_string(manifest().total_staged_bytes()) + " bytes (data.cache_bytes)");
    if (ws < 0 || ws >= shards || (ws > 0 && window_need(ws) > opts_.cache_bytes))
      throw ConfigError("token loader: position key 'window_shards' was saved as " + std::to_string(ws) +
                        ", which this run's cache capacity " + std::to_string(opts_.cache_bytes) +
                        " bytes does not hold (" + std::to_string(window_need(ws)) +
                        " bytes with one shard staged ahead; data.cache_bytes)");
    join_ahead();
    ahead_shard_ = -1;
    stream_->release_except({});
    window_shards_ = ws;
    make_windows();
  }
  const int64_t epoch = get("epoch"), step = get("step");
  if (epoch < 0 || step < 0 || step > batches_per_epoch())
    throw ConfigError("token loader: saved position epoch " + std::to_string(epoch) + ", step " +
                      std::to_string(step) + " is outside an epoch of " +
                      std::to_string(batches_per_epoch()) + " steps");
  reset_metrics();  // figures restart with the resumed part of the epoch
  start_at(epoch, step);
}

DataMetrics TokenLoader::metrics() const {
  DataMetrics m;
  m.wait_seconds = wait_s_;
  m.batches = batches_;
  m.samples = batches_ * opts_.batch_size;
  m.sample_bytes = m.samples * opts_.context * 2 * static_cast<int64_t>(sizeof(int64_t));
  m.shards_staged = stream_->shards_staged() - base_staged_;
  if (window_shards_ > 0)  // the epoch's shard uses: each shard of a shard window it reads, once
    for (int64_t w = 0; w < windows_.shard_windows_used(); ++w)
      m.shard_uses += static_cast<int64_t>(windows_.shards_of_window(w).size());
  StagingCounters::read(*source_, *cache_).fill_since(base_, m);
  return m;
}

IoTotals TokenLoader::io_totals() const {
  const SourceStats& s = source_->stats();
  return {s.requests, s.bytes};
}

}  // namespace strata::data
