#include "data/loader/prefetch_pipeline.h"

#include <algorithm>
#include <chrono>

#include "base/error.h"

namespace strata::data {

PrefetchPipeline::PrefetchPipeline(ShardCache& cache, const std::vector<FieldSpec>& schema,
                                   const std::vector<FieldTransform>& transforms,
                                   std::vector<SampleRef> order, StagingPlan plan, PipelineConfig cfg)
    : cache_(cache),
      schema_(schema),
      transforms_(transforms),
      order_(std::move(order)),
      plan_(std::move(plan)),
      cfg_(cfg) {
  if (cfg_.batch < 1) throw ConfigError("loader: batch size must be >= 1");
  cfg_.ring = std::max(cfg_.ring, 1);
  cfg_.staging_threads = std::max(cfg_.staging_threads, 1);
  cfg_.decode_threads = std::max(cfg_.decode_threads, 1);
  nbatches_ = static_cast<int64_t>(order_.size()) / cfg_.batch;
  uses_.resize(plan_.uses().size());
  for (size_t i = 0; i < uses_.size(); ++i) uses_[i].remaining = plan_.uses()[i].samples;
  slots_.resize(static_cast<size_t>(cfg_.ring));
  if (!cfg_.memory) cfg_.memory = std::pmr::new_delete_resource();
  for (auto& s : slots_)
    for (const FieldTransform& t : transforms_) {
      s.fields.emplace_back(cfg_.memory);
      s.fields.back().resize(static_cast<size_t>(t.out_bytes() * cfg_.batch));
    }
  // Belady's clock for the cache: the next position at which a shard is read.
  cache_.set_next_use([this](const std::string& name) -> int64_t {
    auto it = shard_index_.find(name);
    if (it == shard_index_.end()) return ShardCache::kNever;
    int64_t nu = plan_.next_use(it->second, frontier());
    if (nu >= 0) return nu;
    const auto& after = cfg_.next_epoch_first_use;
    if (static_cast<size_t>(it->second) < after.size() && after[static_cast<size_t>(it->second)] >= 0)
      return plan_.positions() + after[static_cast<size_t>(it->second)];
    return ShardCache::kNever;
  });
  const auto& shards = cache_.manifest().shards;
  for (size_t i = 0; i < shards.size(); ++i) shard_index_[shards[i].name] = static_cast<int32_t>(i);
  for (int i = 0; i < cfg_.staging_threads; ++i) threads_.emplace_back([this] { stage_loop(); });
  for (int i = 0; i < cfg_.decode_threads; ++i) threads_.emplace_back([this] { decode_loop(); });
}

PrefetchPipeline::~PrefetchPipeline() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_stage_.notify_all();
  cv_decode_.notify_all();
  cv_consumer_.notify_all();
  for (auto& t : threads_) t.join();
  cache_.set_next_use(nullptr);
}

int64_t PrefetchPipeline::consumed() const {
  std::lock_guard<std::mutex> lk(mu_);
  return consumed_;
}
int64_t PrefetchPipeline::uses_staged() const {
  std::lock_guard<std::mutex> lk(mu_);
  return staged_;
}
int64_t PrefetchPipeline::frontier() const {
  // Called by the cache while a staging thread is inside acquire(); no lock order issue
  // because acquire() is never called with mu_ held.
  std::lock_guard<std::mutex> lk(mu_);
  return consumed_ * cfg_.batch;
}

void PrefetchPipeline::fail(std::exception_ptr e) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!error_) error_ = e;
  }
  cv_stage_.notify_all();
  cv_decode_.notify_all();
  cv_consumer_.notify_all();
}

void PrefetchPipeline::raise_demand(int64_t end) {
  // mu_ held. Uses now wanted by a batch stop counting against the look-ahead.
  demand_end_ = std::max(demand_end_, end);
  const auto& plan = plan_.uses();
  while (demand_uses_ < plan.size() && plan[demand_uses_].first < demand_end_) {
    if (uses_[demand_uses_].counted_ahead) {
      ahead_bytes_ -= plan[demand_uses_].bytes;
      uses_[demand_uses_].counted_ahead = false;
    }
    ++demand_uses_;
  }
}

void PrefetchPipeline::stage_loop() {
  const auto& plan = plan_.uses();
  for (;;) {
    size_t j;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_stage_.wait(lk, [&] {
        if (stop_ || error_) return true;
        if (next_stage_ >= plan.size()) return true;
        const ShardUse& u = plan[next_stage_];
        return u.first < demand_end_ || ahead_bytes_ + u.bytes <= cfg_.lookahead_bytes;
      });
      if (stop_ || error_ || next_stage_ >= plan.size()) return;
      j = next_stage_++;
      if (plan[j].first >= demand_end_) {
        ahead_bytes_ += plan[j].bytes;
        uses_[j].counted_ahead = true;
      }
      uses_[j].state = UseState::kStaging;
    }
    try {
      ShardCache::Pin pin = cache_.acquire(cache_.manifest().shards[static_cast<size_t>(plan[j].shard)]);
      {
        std::lock_guard<std::mutex> lk(mu_);
        uses_[j].pin = std::move(pin);
        uses_[j].state = UseState::kStaged;
        ++staged_;
      }
      cv_decode_.notify_all();
    } catch (...) {
      fail(std::current_exception());
      return;
    }
  }
}

void PrefetchPipeline::decode_loop() {
  for (;;) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_decode_.wait(lk, [&] {
      return stop_ || error_ || (next_batch_ < nbatches_ && next_batch_ < consumed_ + cfg_.ring);
    });
    if (stop_ || error_) return;
    int64_t k = next_batch_++;
    raise_demand((k + 1) * cfg_.batch);
    cv_stage_.notify_all();
    try {
      collate(k, slots_[static_cast<size_t>(k % cfg_.ring)], lk);
    } catch (...) {
      if (lk.owns_lock()) lk.unlock();
      fail(std::current_exception());
      return;
    }
  }
}

void PrefetchPipeline::collate(int64_t k, Slot& slot, std::unique_lock<std::mutex>& lk) {
  const int64_t p0 = k * cfg_.batch, p1 = p0 + cfg_.batch;
  // The uses this batch reads, with how many of its samples each provides.
  std::vector<std::pair<int32_t, int64_t>> needed;
  for (int64_t p = p0; p < p1; ++p) {
    int32_t u = plan_.use_at(p);
    auto it = std::find_if(needed.begin(), needed.end(), [u](auto& n) { return n.first == u; });
    if (it == needed.end())
      needed.emplace_back(u, 1);
    else
      it->second++;
  }
  std::vector<std::shared_ptr<const MappedShard>> data(plan_.uses().size() > 0 ? needed.size() : 0);
  for (size_t n = 0; n < needed.size(); ++n) {
    Use& use = uses_[static_cast<size_t>(needed[n].first)];
    cv_decode_.wait(lk, [&] {
      return stop_ || error_ || (use.state != UseState::kIdle && use.state != UseState::kStaging);
    });
    if (stop_ || error_) return;
    if (use.state == UseState::kStaged) {
      use.state = UseState::kLoading;
      std::filesystem::path path = use.pin.path();
      lk.unlock();
      const Manifest& m = cache_.manifest();
      const ShardInfo& info =
          m.shards[static_cast<size_t>(plan_.uses()[static_cast<size_t>(needed[n].first)].shard)];
      std::shared_ptr<const MappedShard> loaded;
      try {
        loaded = MappedShard::open(path.string(), schema_, true, ShardExpectation::of(info, m));
      } catch (const std::exception& e) {
        throw IoError("loader: reading shard " + info.name + " from the cache failed: " + e.what());
      }
      lk.lock();
      use.data = std::move(loaded);
      use.state = UseState::kLoaded;
      cv_decode_.notify_all();
    } else {
      cv_decode_.wait(lk, [&] { return stop_ || error_ || use.state == UseState::kLoaded; });
      if (stop_ || error_) return;
    }
    data[n] = use.data;
  }
  lk.unlock();

  const size_t nf = transforms_.size();
  int64_t scratch_bytes = -1;  // -1: no field augments
  for (auto& t : transforms_)
    if (t.augments()) scratch_bytes = std::max(scratch_bytes, t.in_bytes());
  std::vector<uint8_t> scratch(static_cast<size_t>(std::max<int64_t>(scratch_bytes, 0)));
  for (int64_t p = p0; p < p1; ++p) {
    const SampleRef& ref = order_[static_cast<size_t>(p)];
    int32_t u = plan_.use_at(p);
    size_t n = 0;
    while (needed[n].first != u) ++n;
    const MappedShard& sd = *data[n];
    if (ref.index >= sd.samples())
      throw IoError("shard " + cache_.manifest().shards[static_cast<size_t>(ref.shard)].name + " has " +
                    std::to_string(sd.samples()) + " samples, the manifest says more (sample " +
                    std::to_string(ref.index) + " asked for)");
    const uint64_t key =
        scratch_bytes < 0
            ? 0
            : augment_key(cfg_.seed, cfg_.epoch,
                          cfg_.shard_first_sample.at(static_cast<size_t>(ref.shard)) + ref.index);
    for (size_t f = 0; f < nf; ++f) {
      const FieldTransform& t = transforms_[f];
      if (t.dropped()) continue;
      uint8_t* dst = reinterpret_cast<uint8_t*>(slot.fields[f].data()) + (p - p0) * t.out_bytes();
      if (t.decodes())
        decode_image(t, f, sd, ref, dst, key, scratch.data());
      else if (t.augments())
        t.apply(sd.sample(f, ref.index), dst, key, scratch.data());
      else
        t.apply(sd.sample(f, ref.index), dst);
    }
  }
  data.clear();

  std::vector<Use> released;  // destroyed outside the lock (unpinning closes files)
  lk.lock();
  for (auto& [u, count] : needed) {
    Use& use = uses_[static_cast<size_t>(u)];
    use.remaining -= count;
    if (use.remaining == 0) {
      released.emplace_back(std::move(use));
      use.state = UseState::kReleased;
      use.data.reset();
    }
  }
  slot.ready = true;
  cv_consumer_.notify_one();
  lk.unlock();
  released.clear();
}

void PrefetchPipeline::decode_image(const FieldTransform& t, size_t f, const MappedShard& sd,
                                    const SampleRef& ref, uint8_t* dst, uint64_t key, uint8_t* scratch) {
  size_t size = 0;
  const uint8_t* src = sd.variable_sample(f, ref.index, &size);
  try {
    t.decode(src, size, dst, key, scratch);
  } catch (const IoError& e) {
    if (!t.skip_bad()) {
      std::string name;
      for (size_t g = 0; g < schema_.size(); ++g)
        if (schema_[g].variable && schema_[g].name == t.name_field()) {
          size_t n = 0;
          const uint8_t* s = sd.variable_sample(g, ref.index, &n);
          name = std::string(reinterpret_cast<const char*>(s), n);
        }
      throw IoError("loader: shard " + cache_.manifest().shards[static_cast<size_t>(ref.shard)].name +
                    " sample " + std::to_string(ref.index) +
                    (name.empty() ? " (no file name stored)" : " (file " + name + ")") +
                    ": the image cannot be decoded: " + e.what() +
                    " (data.skip_bad_images: true replaces such images with zeros and counts them)");
    }
    // The stand-in is an all-zero image (normalised like any other): the batch
    // keeps its shape, and the same sample is replaced the same way on a resume.
    std::vector<uint8_t> zeros(static_cast<size_t>(t.in_bytes()), 0);
    t.apply(zeros.data(), dst);
    std::lock_guard<std::mutex> lk(mu_);
    ++bad_images_;
  }
}

int64_t PrefetchPipeline::bad_images() const {
  std::lock_guard<std::mutex> lk(mu_);
  return bad_images_;
}

bool PrefetchPipeline::next(HostBatch& out, double* wait_s) {
  std::unique_lock<std::mutex> lk(mu_);
  if (error_) std::rethrow_exception(error_);
  if (consumed_ >= nbatches_) return false;
  Slot& slot = slots_[static_cast<size_t>(consumed_ % cfg_.ring)];
  if (!slot.ready) {
    auto t0 = std::chrono::steady_clock::now();
    cv_consumer_.wait(lk, [&] { return error_ || slot.ready; });
    if (wait_s) *wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (error_) std::rethrow_exception(error_);
  }
  const size_t nf = transforms_.size();
  size_t nout = 0;
  for (const FieldTransform& t : transforms_) nout += t.dropped() ? 0 : 1;
  if (out.fields.size() != nout) out.fields.assign(nout, HostArray{});
  size_t o = 0;
  for (size_t f = 0; f < nf; ++f) {
    if (transforms_[f].dropped()) continue;
    HostArray& a = out.fields[o++];
    a.name = transforms_[f].out_name();
    a.dtype = transforms_[f].out_dtype();
    a.shape.assign(1, cfg_.batch);
    a.shape.insert(a.shape.end(), transforms_[f].out_shape().begin(), transforms_[f].out_shape().end());
    // Swap rather than copy: the caller's old buffer becomes this slot's next
    // buffer, unless it is from other memory (a new HostBatch's first batch).
    a.bytes.swap(slot.fields[f]);
    if (slot.fields[f].resource() != cfg_.memory) slot.fields[f] = HostBytes(cfg_.memory);
    slot.fields[f].resize(static_cast<size_t>(transforms_[f].out_bytes() * cfg_.batch));
  }
  out.size = cfg_.batch;
  slot.ready = false;
  ++consumed_;
  lk.unlock();
  cv_decode_.notify_all();
  return true;
}

}  // namespace strata::data
