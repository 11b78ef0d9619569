// strata-train --config FILE [--run-dir DIR] [--dry-run | --print-config] [key=value ...]
// Wiring only: config -> communicator, loaders, model, Trainer. The loop lives in
// train/trainer; see docs/configuration.md for every key.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <future>
#include <map>
#include <string>
#include <vector>

#include "apps/command_line.h"
#include "base/error.h"
#include "core/batch_memory.h"
#include "core/random.h"
#include "data/format/data_key.h"
#include "data/loader/loader.h"
#include "data/loader/node_budget.h"
#include "data/loader/token_loader.h"
#include "data/store/run_store.h"
#include "data/store/s3_endpoint.h"
#include "distributed/data_parallel.h"
#include "distributed/device_choice.h"
#include "distributed/launch_env.h"
#include "kernels/cuda/runtime.h"
#include "models/registry.h"
#include "train/config/load.h"
#include "train/config/to_yaml.h"
#include "train/trainer/config_checks.h"
#include "train/trainer/stop_signal.h"
#include "train/trainer/trainer.h"

namespace fs = std::filesystem;
using namespace strata;

namespace {

std::string format_metric(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4f", v);
  return b;
}

std::string default_run_dir(const std::string& config) {
  std::time_t t = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&t));
  return "runs/" + fs::path(config).stem().string() + "-" + stamp;
}

using DataKeyPtr = std::shared_ptr<const data::DataKey>;

// What the image and the token loaders share: the dataset, the node-local cache
// (STRATA_CACHE_DIR overrides data.cache_dir), the seed, this rank's place, the batch.
template <class Options>
void set_shared_loader_options(Options& o, const TrainConfig& c, const std::string& url,
                               const Communicator& comm, const DataKeyPtr& key) {
  o.url = url;
  o.key = key;  // every dataset of a job with a key must be encrypted with it
  const char* cache_env = std::getenv("STRATA_CACHE_DIR");
  o.cache_dir = cache_env && *cache_env ? cache_env : c.data.cache_dir;
  o.cache_bytes = c.data.cache_bytes;
  o.lifetime =
      c.data.cache_lifetime == "persistent" ? data::CacheLifetime::kPersistent : data::CacheLifetime::kJob;
  o.seed = static_cast<uint64_t>(c.seed);
  o.rank = comm.rank();
  o.world_size = comm.size();
  o.local_ranks = comm.local_size();
  o.batch_size = c.data.batch_size;
  o.staging_threads = static_cast<int>(c.data.staging_threads);
  o.download_stall_timeout_s = c.data.download_stall_timeout_s;
  // data.s3.*; what is left "" comes from the AWS configuration chain.
  o.source.endpoint = c.data.s3_endpoint;
  o.source.region = c.data.s3_region;
  o.source.addressing = data::parse_addressing_style(c.data.s3_addressing_style, "data.s3.addressing_style");
  o.source.ca_bundle = c.data.s3_ca_bundle;
  o.source.profile = c.data.s3_profile;
  o.source.parts.connections = static_cast<int>(c.data.s3_connections);
  o.source.parts.part_bytes = c.data.s3_part_bytes;
  o.source.retry.max_attempts = static_cast<int>(c.data.s3_max_attempts);
  o.source.retry.low_speed_timeout_s = c.data.s3_stall_timeout_s;
}

data::LoaderOptions loader_options(const TrainConfig& c, const std::string& url, const Communicator& comm,
                                   bool train, Device device, const DataKeyPtr& key) {
  data::LoaderOptions o;
  set_shared_loader_options(o, c, url, comm, key);
  o.batch_memory = batch_memory_for(device);  // pinned for a GPU: the copy stream reads it
  o.shuffle = train;
  o.shuffle_window = c.data.shuffle_window;  // 0: the widest window the cache holds (docs/loader.md)
  // evaluation must see every sample: pad the last global batch instead of dropping it
  o.remainder = !train || c.data.remainder == "pad" ? data::Remainder::kPad : data::Remainder::kDrop;
  o.lookahead_bytes = c.data.lookahead_bytes;
  o.decode_threads = static_cast<int>(c.data.decode_threads);
  data::NormalizeU8 n;
  n.field = "image";
  n.mean.assign(c.data.normalize_mean.begin(), c.data.normalize_mean.end());
  n.std.assign(c.data.normalize_std.begin(), c.data.normalize_std.end());
  if (n.mean.empty()) n.mean = {0.0f};
  if (n.std.empty()) n.std = {1.0f};
  // For a GPU the pixels travel as u8 (a quarter of the bytes) and the task
  // normalises them on the device, with the same mean and std (TaskOptions).
  if (device == Device::cpu) o.normalize.push_back(n);
  if (c.data.image_size > 0) {  // encoded images (strata-pack files): decoded in the decode threads
    if (c.data.augment_crop_padding > 0)
      throw ConfigError(
          "config keys 'data.image_size' and 'data.augment_crop_padding' exclude each other: encoded images "
          "are cropped by RandomResizedCrop (data.augment_crop_scale, data.augment_crop_ratio)");
    data::ImageDecodeOptions im;
    im.size = c.data.image_size;
    im.channels = c.data.image_channels;
    im.random_crop = train;  // training: RandomResizedCrop; evaluation: resize + centre crop
    im.crop_scale = {c.data.augment_crop_scale.at(0), c.data.augment_crop_scale.at(1)};
    im.crop_ratio = {c.data.augment_crop_ratio.at(0), c.data.augment_crop_ratio.at(1)};
    im.hflip = train && c.data.augment_hflip ? 0.5 : 0.0;
    if (train)
      im.color_jitter = {c.data.augment_color_jitter.at(0), c.data.augment_color_jitter.at(1),
                         c.data.augment_color_jitter.at(2)};
    im.resize_ratio = c.data.eval_resize_ratio;
    im.skip_bad = c.data.skip_bad_images;
    o.image = im;
    return o;
  }
  // Augmentation is for the training split only: evaluation sees the images as stored.
  if (train && (c.data.augment_crop_padding > 0 || c.data.augment_hflip))
    o.augment.push_back(data::AugmentU8{"image", c.data.augment_crop_padding, c.data.augment_hflip});
  return o;
}

data::TokenLoaderOptions token_loader_options(const TrainConfig& c, const std::string& url,
                                              const Communicator& comm, bool train, Device device,
                                              const DataKeyPtr& key) {
  data::TokenLoaderOptions o;
  set_shared_loader_options(o, c, url, comm, key);
  o.batch_memory = batch_memory_for(device);
  o.context = c.model.context;
  o.shuffle = train;
  o.remainder = train ? data::Remainder::kDrop : data::Remainder::kPad;  // evaluation sees every window
  return o;
}

// The run's data: what the task reads, and what the model must know of it.
struct Sources {
  std::unique_ptr<BatchSource> train, val, test;
  TaskOptions task;   // sample shape (images) or bytes per token (tokens)
  std::string note;   // what rank 0 says of the data at the start ("" = nothing)
  IoTotals probe_io;  // the budget probes' requests (their manifests), for summary.json
};

template <class Loaders>
IoTotals sum_io(const Loaders& loaders) {
  IoTotals t;
  for (const auto& l : loaders) {
    t.remote_requests += l->io_totals().remote_requests;
    t.remote_bytes += l->io_totals().remote_bytes;
  }
  return t;
}

// Opening a dataset fails on a bad URL, a missing manifest or an unreachable
// store: the error names the config key that gave the URL.
template <class Open>
auto open_dataset(const std::string& key, const std::string& url, Open open) {
  try {
    return open();
  } catch (const Error& e) {
    throw Error(key + " '" + url + "': " + e.what());
  }
}

// data.cache_bytes is the node's budget for all of the job's datasets
// (docs/cache-sizing.md, "One budget for the node"). Each dataset is first
// opened with no cap (a probe: the manifest only, nothing staged) to learn the
// bytes it needs at once; data::split_node_budget gives the evaluation datasets
// their need and the training dataset the rest, or names them all when the
// budget is too small. The probes stay open until the datasets are reopened
// with their caps, so that a job cache is not emptied, nor a persistent one
// re-verified, in between.
struct DatasetSpec {
  std::string key, url;
  bool train = false;
};

constexpr int64_t kProbeCap = int64_t{1} << 60;

std::vector<DatasetSpec> job_datasets(const TrainConfig& cfg) {
  std::vector<DatasetSpec> ds{{"data.train_url", cfg.data.train_url, true}};
  if (!cfg.data.test_url.empty()) ds.push_back({"data.test_url", cfg.data.test_url, false});
  if (!cfg.data.val_url.empty()) ds.push_back({"data.val_url", cfg.data.val_url, false});
  return ds;
}

// Where a dataset's loader goes in Sources.
std::unique_ptr<BatchSource>& slot(Sources& s, const DatasetSpec& d) {
  if (d.train) return s.train;
  return d.key == "data.test_url" ? s.test : s.val;
}

Sources image_sources(const TrainConfig& cfg, const Communicator& comm, Device device,
                      const DataKeyPtr& data_key) {
  Sources s;
  auto open = [&](const DatasetSpec& d, int64_t cap, bool probe) {
    return open_dataset(d.key, d.url, [&] {
      auto o = loader_options(cfg, d.url, comm, d.train, device, data_key);
      o.cache_bytes = cap;
      if (probe && o.shuffle_window == 0) o.shuffle_window = 1;  // the narrowest window: the least need
      return std::make_unique<data::Loader>(std::move(o));
    });
  };
  const auto datasets = job_datasets(cfg);
  std::vector<std::unique_ptr<data::Loader>> probes;
  std::vector<data::DatasetNeed> needs;
  for (const auto& d : datasets) {
    probes.push_back(open(d, kProbeCap, true));
    needs.push_back({d.key, d.url, probes.back()->required_cache_bytes(0), d.train});
  }
  const auto caps = data::split_node_budget(needs, cfg.data.cache_bytes);
  std::vector<std::unique_ptr<data::Loader>> loaders;
  for (size_t i = 0; i < datasets.size(); ++i) loaders.push_back(open(datasets[i], caps[i], false));
  s.probe_io = sum_io(probes);
  probes.clear();
  auto& train = loaders[0];
  // used when u8 pixels reach the task (a GPU run); on the CPU the loader has normalised them
  s.task.input_mean.assign(cfg.data.normalize_mean.begin(), cfg.data.normalize_mean.end());
  s.task.input_std.assign(cfg.data.normalize_std.begin(), cfg.data.normalize_std.end());
  std::vector<int64_t> shape;
  if (cfg.data.image_size > 0) {
    shape = {cfg.data.image_channels, cfg.data.image_size, cfg.data.image_size};
  } else {
    for (const auto& f : train->manifest().schema)
      if (f.variable && f.name == "bytes")
        throw ConfigError("data.train_url '" + cfg.data.train_url +
                          "' holds encoded images (strata-pack files): set data.image_size (and "
                          "data.image_channels) to decode them (docs/loader.md, \"Image decoding\")");
    shape = train->manifest().field("image").shape;
    if (shape.size() == 2) shape.insert(shape.begin(), 1);  // (H, W) -> (1, H, W)
  }
  s.task.sample_shape = shape;
  // The window data.shuffle_window 0 resolved to depends on the cache and the
  // ranks per node: say it, so that a run can pin it when those change.
  s.note =
      "data: samples shuffled across windows of " + std::to_string(train->shuffle_window()) + " of " +
      std::to_string(train->manifest().shards.size()) + " shards" +
      (cfg.data.shuffle_window == 0 ? " (data.shuffle_window 0: the widest data.cache_bytes holds)" : "");
  for (size_t i = 0; i < datasets.size(); ++i) slot(s, datasets[i]) = std::move(loaders[i]);
  return s;
}

Sources token_sources(const TrainConfig& cfg, const Communicator& comm, Device device,
                      const DataKeyPtr& data_key) {
  Sources s;
  auto open = [&](const DatasetSpec& d, int64_t cap) {
    auto l = open_dataset(d.key, d.url, [&] {
      auto o = token_loader_options(cfg, d.url, comm, d.train, device, data_key);
      o.cache_bytes = cap;
      return std::make_unique<data::TokenLoader>(std::move(o));
    });
    if (l->vocab_size() > cfg.model.vocab_size)
      throw ConfigError(d.key + ": " + d.url + " holds token ids up to " +
                        std::to_string(l->vocab_size() - 1) + ", beyond model.vocab_size " +
                        std::to_string(cfg.model.vocab_size));
    return l;
  };
  const auto datasets = job_datasets(cfg);
  std::vector<std::unique_ptr<data::TokenLoader>> probes;
  std::vector<data::DatasetNeed> needs;
  for (const auto& d : datasets) {
    probes.push_back(open(d, kProbeCap));
    needs.push_back({d.key, d.url, probes.back()->min_cache_bytes(), d.train});
  }
  const auto caps = data::split_node_budget(needs, cfg.data.cache_bytes);
  std::vector<std::unique_ptr<data::TokenLoader>> loaders;
  for (size_t i = 0; i < datasets.size(); ++i) loaders.push_back(open(datasets[i], caps[i]));
  s.probe_io = sum_io(probes);
  probes.clear();
  auto& train = loaders[0];
  // byte-level datasets (strata-pack tokens --text) have one byte per token
  s.task.bytes_per_token = train->vocab_size() == 256 ? 1.0 : 0.0;
  if (train->window_shards() > 0)  // a corpus larger than its share of the cache (docs/cache-sizing.md)
    s.note = "data: the train corpus (" + std::to_string(train->manifest().total_staged_bytes()) +
             " bytes) is larger than its share of data.cache_bytes (" + std::to_string(caps[0]) + " of " +
             std::to_string(cfg.data.cache_bytes) + "): streamed through the cache in shard windows of " +
             std::to_string(train->window_shards()) + " of " +
             std::to_string(train->manifest().shards.size()) + " shards, each fetched once per epoch";
  for (size_t i = 0; i < datasets.size(); ++i) slot(s, datasets[i]) = std::move(loaders[i]);
  return s;
}

const char* kDescription =
    "Trains the model a YAML config describes, data-parallel over MPI when launched with several ranks.\n"
    "Every config key and its default: docs/configuration.md; the command line: docs/cli.md.\n"
    "Environment: STRATA_CACHE_DIR overrides data.cache_dir (a node-local cache per node).";

// --dry-run: the config and every check that needs no data; the resolved YAML
// on stdout; no run directory, no data read, no communicator.
int dry_run(const TrainConfig& cfg, const std::string& config, bool quiet) {
  if (cfg.data.train_url.empty()) throw ConfigError(config + ": data.train_url is required");
  const models::ModelEntry& entry = models::model_entry(cfg.model.name);  // an unknown name fails here
  const std::vector<std::string> checked = check_config_without_data(cfg, *make_task(entry.task, {}));
  const DataKeyPtr key = data::resolve_data_key(cfg.data.encryption_key_file, "data.encryption_key_file");
  std::fputs(to_yaml(cfg).c_str(), stdout);
  if (quiet) return 0;
  std::fprintf(stderr, "strata-train: dry run: %s is valid (every key, the checks between keys)\n",
               config.c_str());
  std::fprintf(stderr, "  model %s: a known model of the %s task\n", cfg.model.name.c_str(),
               entry.task.c_str());
  for (const std::string& line : checked) std::fprintf(stderr, "  %s\n", line.c_str());
  if (key)
    std::fprintf(stderr, "  data key: id %s, from %s (the datasets must be encrypted with it)\n",
                 key->id().c_str(), key->origin().c_str());
  std::fprintf(stderr,
               "  not read: the data (sample shape, vocabulary, steps per epoch are checked when a run "
               "starts, before its run directory is made)\n"
               "  no run directory was created\n");
  return 0;
}

// --run-dir s3://BUCKET/PREFIX: the run writes into a node-local staging
// directory and a RunStore (data/store/run_store.h) makes the store hold it.
bool is_store_url(const std::string& dir) { return dir.rfind("s3://", 0) == 0; }

// A preempted run whose final checkpoint did not reach the store in its grace
// period (EX_TEMPFAIL: resuming goes on from the checkpoint before it).
constexpr int kExitUploadIncomplete = 75;

std::string staging_dir_for(const TrainConfig& c, const std::string& url) {
  if (!c.outputs.staging_dir.empty()) return c.outputs.staging_dir;
  const char* cache_env = std::getenv("STRATA_CACHE_DIR");
  const std::string cache = cache_env && *cache_env ? cache_env : c.data.cache_dir;
  std::string rest = url.substr(5);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  return (fs::path(cache) / "runs" / rest).string();
}

// The outputs.s3.* keys, each "" falling back to data.s3.*'s, then the AWS chain.
data::SourceOptions outputs_source_options(const TrainConfig& c) {
  auto pick = [](const std::string& own, const std::string& data) { return own.empty() ? data : own; };
  data::SourceOptions o;
  o.endpoint = pick(c.outputs.s3_endpoint, c.data.s3_endpoint);
  o.region = pick(c.outputs.s3_region, c.data.s3_region);
  o.profile = pick(c.outputs.s3_profile, c.data.s3_profile);
  o.ca_bundle = pick(c.outputs.s3_ca_bundle, c.data.s3_ca_bundle);
  o.addressing = data::parse_addressing_style(c.data.s3_addressing_style, "data.s3.addressing_style");
  o.upload.part_bytes = c.outputs.part_bytes;
  o.upload.connections = static_cast<int>(c.outputs.connections);
  o.parts.connections = static_cast<int>(c.data.s3_connections);
  o.parts.part_bytes = c.data.s3_part_bytes;
  o.retry.max_attempts = static_cast<int>(c.data.s3_max_attempts);
  o.retry.low_speed_timeout_s = c.data.s3_stall_timeout_s;
  return o;
}

// Rank 0 clears what a killed process left in the store; with resume=auto,
// rank 0 and then the first rank of every other node fetch the newest
// committed checkpoint into the staging directory. Returns rank 0's store.
std::unique_ptr<data::RunStore> open_run_store(const TrainConfig& c, const std::string& url,
                                               const std::string& staging, Communicator& comm) {
  auto say = [](const std::string& line) {  // flushed: the line must survive a SIGKILL that follows
    std::printf("strata-train: %s\n", line.c_str());
    std::fflush(stdout);
  };
  auto make = [&](data::RunStore::Log log) {
    data::StoreRotation r{c.checkpoint.keep_last, c.checkpoint.keep_best, c.early_stopping.mode};
    return std::make_unique<data::RunStore>(data::open_source(url, outputs_source_options(c)), staging, r,
                                            std::move(log));
  };
  std::unique_ptr<data::RunStore> store;
  if (comm.rank() == 0) {
    store = make(say);
    store->clean_up_after_a_crash();
    store->fetch_logs({"train.log", "metrics.jsonl"});
    if (c.checkpoint.resume == "auto" && !store->fetch_latest())
      say("run store: " + url + " commits no checkpoint yet");
  }
  comm.barrier();
  if (c.checkpoint.resume == "auto" && comm.rank() != 0 && comm.local_rank() == 0)
    make([](const std::string& line) {
      std::fprintf(stderr, "strata-train: %s\n", line.c_str());
    })->fetch_latest();
  comm.barrier();
  return store;
}

int run(int argc, char** argv) {
  std::string config, run_dir;
  std::vector<std::string> overrides;
  bool dry = false, print_config = false;
  CLI::App app(kDescription, "strata-train");
  cli::add_version_flag(app);
  app.add_option("--config", config, "YAML training config (see docs/configuration.md)")
      ->required()
      ->option_text("FILE");
  app.add_option(
         "--run-dir", run_dir,
         "Where logs, checkpoints, run.json and summary.json go (default: runs/<config name>-<date>-<time>)")
      ->option_text("DIR");
  app.add_flag("--dry-run", dry,
               "Check the config (every key, the checks between keys that need no data), print the resolved "
               "YAML, create no run directory");
  app.add_flag("--print-config", print_config, "Print the resolved YAML after the same checks, nothing else");
  app.add_option("overrides", overrides, "Config overrides, e.g. optimizer.lr=0.01 model.hidden=[512,256]")
      ->option_text("KEY=VALUE ...")
      ->check(CLI::Validator(
          [](std::string& a) {
            return a.find('=') == std::string::npos ? "expected key=value, got '" + a + "'" : "";
          },
          "KEY=VALUE"));
  if (int rc = cli::parse(app, argc, argv); rc >= 0) return rc;
  TrainConfig cfg = load_config(config, overrides);
  if (dry || print_config) return dry_run(cfg, config, print_config && !dry);
  // the rank's device first: NCCL and every allocation need it current
  const DeviceChoice device = use_device(cfg.device, read_launch_env());
  auto comm = make_communicator(cfg.distributed.backend, device.device);
  if (run_dir.empty()) run_dir = default_run_dir(config);
  if (comm->size() > 1) {  // every rank uses rank 0's directory name
    std::vector<char> buf(512, 0);
    if (comm->rank() == 0) run_dir.copy(buf.data(), buf.size() - 1);
    comm->broadcast(buf.data(), buf.size(), DType::u8, 0);
    run_dir = buf.data();
  }
  std::string store_url;  // the run directory when it is in the object store
  if (is_store_url(run_dir)) {
    store_url = run_dir;
    run_dir = staging_dir_for(cfg, store_url);
  }
  manual_seed(static_cast<uint64_t>(cfg.seed));
  cuda::set_allow_tf32(cfg.precision.allow_tf32);
  if (cfg.data.train_url.empty()) throw ConfigError(config + ": data.train_url is required");
  const models::ModelEntry& entry = models::model_entry(cfg.model.name);  // an unknown name fails here
  // The data key, if any: data.encryption_key_file, else STRATA_DATA_KEY_FILE, else STRATA_DATA_KEY.
  const DataKeyPtr key = data::resolve_data_key(cfg.data.encryption_key_file, "data.encryption_key_file");
  Sources data = entry.task == "causal_lm" ? token_sources(cfg, *comm, device.device, key)
                                           : image_sources(cfg, *comm, device.device, key);
  const models::ModelSpec spec = models::spec_from_config(cfg, data.task.sample_shape);
  auto model = entry.build(spec);
  model->to(device.device);  // initialised on the host from the seed, so every device starts alike

  // Several ranks: same model checked and rank 0's weights broadcast, gradients
  // synced in buckets overlapping backward, buffers averaged before eval/checkpoints.
  std::unique_ptr<DataParallel> ddp;
  if (comm->size() > 1)
    ddp = std::make_unique<DataParallel>(*comm, model, BucketOptions::from_config(cfg.distributed));
  std::unique_ptr<data::RunStore> store;
  if (!store_url.empty()) store = open_run_store(cfg, store_url, run_dir, *comm);
  Trainer trainer(cfg, run_dir, model, make_task(entry.task, data.task), *comm);
  if (store) {
    // Each upload's figures become a checkpoint_upload row of metrics.jsonl.
    auto figures = [](const data::RunStore::Published& p) {
      const double mb = static_cast<double>(p.commit.bytes) / 1e6;
      return std::map<std::string, double>{
          {"bytes", static_cast<double>(p.commit.bytes)},
          {"upload_seconds", p.upload_seconds},
          {"upload_mb_per_s", p.upload_seconds > 0 ? mb / p.upload_seconds : 0.0}};
    };
    trainer.set_on_checkpoint_saved([&store, &cfg, figures](const fs::path& file, int64_t step,
                                                            std::optional<double> metric) {
      if (!stop_requested()) return figures(store->publish(file, step, metric));
      // Preempted: the upload has until checkpoint.preempt_grace_s after the signal.
      timespec now{};
      clock_gettime(CLOCK_MONOTONIC, &now);
      const double left =
          cfg.checkpoint.preempt_grace_s -
          (static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec) - stop_requested_at());
      auto upload = std::async(std::launch::async, [&] { return store->publish(file, step, metric); });
      if (upload.wait_for(std::chrono::duration<double>(std::max(left, 0.0))) == std::future_status::ready)
        return figures(upload.get());
      std::fprintf(stderr,
                   "strata-train: the final checkpoint %s did not reach %s within checkpoint.preempt_grace_s "
                   "(%g s) of signal %d; the newest checkpoint the store commits is an earlier one\n",
                   file.filename().c_str(), store->url().c_str(), cfg.checkpoint.preempt_grace_s,
                   stop_requested());
      std::fflush(nullptr);
      std::_Exit(kExitUploadIncomplete);
    });
    store->start_periodic_sync(cfg.outputs.sync_every_s);
  }
  trainer.set_flops_per_item(entry.train_flops(spec));
  trainer.add_setup_io(data.probe_io);
  RunRecord record;
  record.command_line.assign(argv, argv + argc);
  record.overrides = overrides;
  record.config_file = config;
  trainer.set_run_record(std::move(record));
  BucketedGradientSync* bucketed = nullptr;
  if (ddp) {
    auto sync = ddp->make_gradient_sync();
    bucketed = sync.get();
    trainer.set_gradient_sync(std::move(sync));
    trainer.set_buffer_sync([&ddp] { ddp->sync_buffers(); });
  }
  const std::string where = store_url.empty() ? run_dir : store_url + " (staged in " + run_dir + ")";
  if (comm->rank() == 0)
    std::printf("strata-train: %s, %ld parameters, %s, %d rank(s) on %s, run directory %s\n",
                cfg.model.name.c_str(), static_cast<long>(model->num_parameters()),
                cfg.precision.dtype.c_str(), comm->size(), device.label.c_str(), where.c_str());
  if (comm->rank() == 0 && !data.note.empty()) std::printf("%s\n", data.note.c_str());
  TrainSummary s = trainer.fit(*data.train, data.val.get(), data.test.get());
  if (store) {  // everything the run wrote, summary.json last: it says the run is whole
    store->finish({"summary.json"});
    std::printf("strata-train: run store: %s holds the run (%.1f MB moved to and from it)\n",
                store_url.c_str(), store->bytes_transferred() / 1e6);
  }
  if (comm->rank() == 0) {
    if (s.interrupted_by_signal) {
      std::printf("interrupted at step %ld; resume with checkpoint.resume=auto --run-dir %s\n",
                  static_cast<long>(s.steps), store_url.empty() ? run_dir.c_str() : store_url.c_str());
    } else {
      std::string
          figures;  // "test accuracy 0.9012  test loss 0.2811" / "test loss 1.52  test perplexity 4.6 ..."
      for (auto& [name, value] : s.test_metrics)
        if (name != "top5" && std::isfinite(value))
          figures += "test " + name + " " + format_metric(value) + "  ";
      std::printf("%s(%ld epochs, %ld steps, %.0f %ss/s%s, data wait %.2f%%%s)\n", figures.c_str(),
                  static_cast<long>(s.epochs), static_cast<long>(s.steps), s.items_per_second,
                  s.item_unit.c_str(), s.mfu ? (", MFU " + format_metric(100 * *s.mfu) + "%").c_str() : "",
                  100 * s.data_wait_fraction, s.stopped_early ? ", stopped early" : "");
    }
    if (bucketed && bucketed->stats().steps > 0) {
      const GradSyncStats& g = bucketed->stats();
      std::printf(
          "gradient sync: %zu bucket(s), %ld steps, comm %.3f s, waited after backward %.3f s (%.0f%% "
          "hidden)\n",
          bucketed->num_buckets(), static_cast<long>(g.steps), g.comm_seconds, g.wait_seconds,
          g.comm_seconds > 0 ? 100.0 * std::max(0.0, 1.0 - g.wait_seconds / g.comm_seconds) : 0.0);
    }
    std::printf("run directory: %s\n", where.c_str());
  }
  // A stopped job's ranks exit non-zero (128 + the signal), and the first to
  // exit makes mpirun tear the job down: the others get SIGTERM one grace
  // (odls_base_sigkill_timeout) later, SIGKILL after another. No rank may go
  // before rank 0 has saved and committed the final checkpoint.
  if (s.interrupted_by_signal && comm->size() > 1) {
    std::fflush(stdout);
    comm->barrier();
  }
  return s.interrupted_by_signal ? 128 + s.interrupted_by_signal : 0;
}

}  // namespace

int main(int argc, char** argv) {
  strata::take_stop_signals_on_a_thread();  // before MPI, the loader and the pool start threads
  try {
    return run(argc, argv);
  } catch (const strata::Error& e) {
    std::fprintf(stderr, "strata-train: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata-train: internal error: %s\n", e.what());
    return 1;
  }
}
