// The schema table: every key of TrainConfig, bound to its field. Adding a field
// to train_config.h without a row here fails the field-count test in
// tests/train/config; the docs drift test then asks for docs/configuration.md to be
// regenerated.
#include "train/config/schema.h"

#include "train/make_optimizer.h"
#include "train/make_schedule.h"
#include "train/trainer/task.h"

namespace strata {
namespace {

Range at_least(double lo) { return Range{lo, std::nullopt, false, false}; }
Range above(double lo) { return Range{lo, std::nullopt, true, false}; }
Range closed(double lo, double hi) { return Range{lo, hi, false, false}; }
Range half_open(double lo, double hi) { return Range{lo, hi, false, true}; }
Range open(double lo, double hi) { return Range{lo, hi, true, true}; }
Range open_closed(double lo, double hi) { return Range{lo, hi, true, false}; }
Range any() { return Range{}; }

#define STRATA_BIND(member) [](TrainConfig& c) -> FieldRef { return &c.member; }

ConfigKey key(std::string path, ValueKind kind, Range range, std::function<FieldRef(TrainConfig&)> f,
              std::string doc) {
  return ConfigKey{std::move(path), kind, {}, range, std::move(doc), std::move(f)};
}
ConfigKey choice(std::string path, std::vector<std::string> values, std::function<FieldRef(TrainConfig&)> f,
                 std::string doc) {
  return ConfigKey{std::move(path), ValueKind::Enum, std::move(values), {}, std::move(doc), std::move(f)};
}

std::vector<ConfigKey> build_schema() {
  using K = ValueKind;
  // The enumerations below come from the factories' own lists, so the schema
  // cannot accept a name the factory refuses (or miss one it accepts).
  const std::vector<std::string> monitors = monitor_names();
  return {
      // model
      key("model.name", K::String, any(), STRATA_BIND(model.name),
          "Architecture: a name in the model registry (models/registry.h, docs/models.md); an unknown name "
          "is refused with the registered ones before training"),
      key("model.hidden", K::IntList, at_least(1), STRATA_BIND(model.hidden),
          "MLP hidden layer widths, input to output"),
      key("model.channels", K::IntList, at_least(1), STRATA_BIND(model.channels),
          "CNN conv-BN-ReLU-pool block widths, one block per entry; ResNet stage widths"),
      key("model.blocks", K::IntList, at_least(1), STRATA_BIND(model.blocks),
          "ResNet: residual blocks per stage, one entry per model.channels entry"),
      key("model.dropout", K::Float, half_open(0, 1), STRATA_BIND(model.dropout),
          "Dropout probability before each hidden/classifier layer"),
      key("model.num_classes", K::Int, at_least(2), STRATA_BIND(model.num_classes),
          "Number of output classes"),
      key("model.vocab_size", K::Int, at_least(1), STRATA_BIND(model.vocab_size),
          "GPT: token vocabulary size (ids in [0, vocab_size); the tied head has this many logits)"),
      key("model.context", K::Int, at_least(1), STRATA_BIND(model.context),
          "GPT: longest sequence, the number of learned positions"),
      key("model.layers", K::Int, at_least(1), STRATA_BIND(model.layers), "GPT: transformer blocks"),
      key("model.heads", K::Int, at_least(1), STRATA_BIND(model.heads),
          "GPT: attention heads per block (must divide model.width)"),
      key("model.width", K::Int, at_least(1), STRATA_BIND(model.width),
          "GPT: embedding width; the MLP is 4x wide"),
      // data
      key("data.train_url", K::String, any(), STRATA_BIND(data.train_url),
          "Training shards: file://DIR, s3://BUCKET/PREFIX or http(s):// (a directory holding "
          "manifest.json)"),
      key("data.test_url", K::String, any(), STRATA_BIND(data.test_url),
          "Test shards, same forms; empty = no test evaluation"),
      key("data.val_url", K::String, any(), STRATA_BIND(data.val_url),
          "Validation shards, same forms; empty = validate on test_url (then early stopping watches the test "
          "set)"),
      key("data.cache_dir", K::String, any(), STRATA_BIND(data.cache_dir),
          "Node-local directory where shards are staged"),
      key("data.cache_bytes", K::Bytes, at_least(0), STRATA_BIND(data.cache_bytes),
          "The node's cache budget for all of the job's datasets (train, val, test; an integer or a size "
          "such as 1GiB, 512MB): each evaluation dataset gets the bytes it needs at once, the training "
          "dataset the rest; too small for their needs stops the run at start naming each "
          "(docs/cache-sizing.md)"),
      choice("data.cache_lifetime", {"job", "persistent"}, STRATA_BIND(data.cache_lifetime),
             "job: cache emptied when the run ends; persistent: kept for later runs"),
      key("data.batch_size", K::Int, at_least(1), STRATA_BIND(data.batch_size),
          "Samples per batch on each rank"),
      key("data.shuffle_window", K::Int, at_least(0), STRATA_BIND(data.shuffle_window),
          "Shards whose samples are shuffled together (windows of this many permuted shards); 0 = as many "
          "as data.cache_bytes holds: the widest window whose worst case (the batches in flight spanning "
          "two windows, plus data.lookahead_bytes, for every local rank) fits the cache, the whole epoch "
          "when the dataset fits; strata-train prints the width, a run resumed mid-epoch keeps its "
          "checkpoint's (docs/loader.md)"),
      key("data.lookahead_bytes", K::Bytes, at_least(0), STRATA_BIND(data.lookahead_bytes),
          "How far ahead of use the stager downloads shards"),
      key("data.staging_threads", K::Int, at_least(1), STRATA_BIND(data.staging_threads),
          "Parallel shard downloads per node"),
      key("data.download_stall_timeout_s", K::Float, above(0), STRATA_BIND(data.download_stall_timeout_s),
          "A shard download by another job on the node that makes no progress this long (a stopped job) "
          "is done again by this one"),
      key("data.decode_threads", K::Int, at_least(1), STRATA_BIND(data.decode_threads),
          "Threads decoding and batching samples per rank"),
      key("data.normalize_mean", K::FloatList, any(), STRATA_BIND(data.normalize_mean),
          "Per-channel mean subtracted from inputs scaled to [0, 1]; empty = no normalisation"),
      key("data.normalize_std", K::FloatList, above(0), STRATA_BIND(data.normalize_std),
          "Per-channel std inputs are divided by; same length as normalize_mean"),
      choice("data.remainder", {"drop", "pad"}, STRATA_BIND(data.remainder),
             "Last incomplete batch of an epoch: drop it, or pad it (padded samples carry no loss)"),
      key("data.augment_crop_padding", K::Int, at_least(0), STRATA_BIND(data.augment_crop_padding),
          "Training images: pad by this many zero pixels, crop back at a random offset; 0 = off"),
      key("data.augment_hflip", K::Bool, any(), STRATA_BIND(data.augment_hflip),
          "Training images: mirror left-right with probability 1/2"),
      key("data.image_size", K::Int, at_least(0), STRATA_BIND(data.image_size),
          "Encoded images (strata-pack files): decode each JPEG/PNG to image_channels x image_size x "
          "image_size (training: RandomResizedCrop; evaluation: shorter side resized to "
          "image_size / eval_resize_ratio, centre crop); 0 = the dataset holds fixed-size images, used as "
          "stored (docs/loader.md)"),
      key("data.image_channels", K::Int, closed(1, 3), STRATA_BIND(data.image_channels),
          "Encoded images: 3 = RGB, 1 = greyscale (ITU-R 601 luma)"),
      key("data.augment_crop_scale", K::FloatList, open_closed(0, 1), STRATA_BIND(data.augment_crop_scale),
          "Encoded training images: RandomResizedCrop's range of the crop's area as a fraction of the image "
          "(torchvision's scale)"),
      key("data.augment_crop_ratio", K::FloatList, above(0), STRATA_BIND(data.augment_crop_ratio),
          "Encoded training images: RandomResizedCrop's range of the crop's aspect ratio, width / height, "
          "drawn log-uniformly (torchvision's ratio)"),
      key("data.augment_color_jitter", K::FloatList, closed(0, 1), STRATA_BIND(data.augment_color_jitter),
          "Encoded training images: ColorJitter brightness, contrast, saturation (each factor uniform in "
          "[1-v, 1+v], applied in this order); 0 = off"),
      key("data.eval_resize_ratio", K::Float, open_closed(0, 1), STRATA_BIND(data.eval_resize_ratio),
          "Encoded evaluation images: the shorter side is resized to image_size / this, then the centre "
          "image_size x image_size is cropped (torchvision's 256 -> 224)"),
      key("data.skip_bad_images", K::Bool, any(), STRATA_BIND(data.skip_bad_images),
          "Encoded images: an image that cannot be decoded becomes an all-zero image, counted in the data "
          "rows' bad_images, instead of stopping the run with an error naming shard, sample and file"),
      key("data.encryption_key_file", K::String, any(), STRATA_BIND(data.encryption_key_file),
          "File holding the key of encrypted datasets (32 raw bytes or 64 hex digits); \"\" = the file "
          "STRATA_DATA_KEY_FILE names, else the key in STRATA_DATA_KEY. A value that is a key itself is "
          "refused: a config is written to resolved.yaml and every checkpoint"),
      // data.s3: set here, these win over the environment and ~/.aws/config, as the AWS CLI's
      // --endpoint-url, --region and --profile do (docs/object-store.md)
      key("data.s3.endpoint", K::String, any(), STRATA_BIND(data.s3_endpoint),
          "S3 endpoint URL, e.g. https://obs.cn-north-4.myhuaweicloud.com; \"\" = AWS_ENDPOINT_URL_S3, "
          "AWS_ENDPOINT_URL, the profile's endpoint_url, else AWS's regional endpoint"),
      key("data.s3.region", K::String, any(), STRATA_BIND(data.s3_region),
          "SigV4 signing region; \"\" = AWS_REGION, AWS_DEFAULT_REGION, the profile's region, else "
          "us-east-1"),
      choice(
          "data.s3.addressing_style", {"", "path", "virtual", "auto"}, STRATA_BIND(data.s3_addressing_style),
          "path: host/bucket/key; virtual: bucket.host/key (Huawei OBS, AWS); auto: virtual for AWS and OBS "
          "endpoints, path otherwise; \"\" = the profile's s3.addressing_style, else auto"),
      key("data.s3.ca_bundle", K::String, any(), STRATA_BIND(data.s3_ca_bundle),
          "PEM file of CAs trusted for https:// endpoints (TLS is always verified); \"\" = AWS_CA_BUNDLE, "
          "the "
          "profile's ca_bundle, else the system's CAs"),
      key("data.s3.profile", K::String, any(), STRATA_BIND(data.s3_profile),
          "AWS profile in ~/.aws/config and ~/.aws/credentials; set, it replaces AWS_PROFILE and the "
          "AWS_ACCESS_KEY_ID keys; \"\" = AWS_PROFILE, else default"),
      key("data.s3.connections", K::Int, closed(1, 64), STRATA_BIND(data.s3_connections),
          "s3:// shards larger than data.s3.part_bytes are fetched in ranged GETs over up to this many "
          "connections each (per staging thread); 1 = one plain GET per shard"),
      key("data.s3.part_bytes", K::Bytes, at_least(1 << 20), STRATA_BIND(data.s3_part_bytes),
          "Size of one ranged GET of a large s3:// shard; a shard of at most this size takes one request"),
      key("data.s3.max_attempts", K::Int, closed(1, 100), STRATA_BIND(data.s3_max_attempts),
          "Tries of one S3 request (the first included) through timeouts, connection errors and 5xx, with "
          "exponential backoff and full jitter (0.1 s doubling to 5 s); past them the run stops naming the "
          "object"),
      key("data.s3.stall_timeout_s", K::Float, above(0), STRATA_BIND(data.s3_stall_timeout_s),
          "A transfer moving under 1 KB/s for this many seconds is abandoned and tried again"),
      // optimizer
      choice("optimizer.name", optimizer_names(), STRATA_BIND(optimizer.name), "Optimizer"),
      key("optimizer.lr", K::Float, above(0), STRATA_BIND(optimizer.lr),
          "Base learning rate (the schedule scales it)"),
      key("optimizer.momentum", K::Float, half_open(0, 1), STRATA_BIND(optimizer.momentum), "SGD momentum"),
      key("optimizer.nesterov", K::Bool, any(), STRATA_BIND(optimizer.nesterov), "SGD Nesterov momentum"),
      key("optimizer.dampening", K::Float, closed(0, 1), STRATA_BIND(optimizer.dampening),
          "SGD momentum dampening"),
      key("optimizer.weight_decay", K::Float, at_least(0), STRATA_BIND(optimizer.weight_decay),
          "Weight decay (decoupled for AdamW, L2 for SGD)"),
      key("optimizer.beta1", K::Float, half_open(0, 1), STRATA_BIND(optimizer.beta1),
          "AdamW first-moment decay"),
      key("optimizer.beta2", K::Float, half_open(0, 1), STRATA_BIND(optimizer.beta2),
          "AdamW second-moment decay"),
      key("optimizer.eps", K::Float, above(0), STRATA_BIND(optimizer.eps), "AdamW denominator epsilon"),
      key("optimizer.decay_groups", K::Bool, any(), STRATA_BIND(optimizer.decay_groups),
          "AdamW: no weight decay on biases, norm parameters and embeddings (the GPT-2 recipe)"),
      // schedule
      choice("schedule.name", schedule_names(), STRATA_BIND(schedule.name),
             "Learning-rate schedule, stepped once per optimizer step"),
      key("schedule.warmup_steps", K::Int, at_least(0), STRATA_BIND(schedule.warmup_steps),
          "Linear warmup steps before the schedule (not used by onecycle)"),
      key("schedule.warmup_start_factor", K::Float, closed(0, 1), STRATA_BIND(schedule.warmup_start_factor),
          "LR factor at the first warmup step"),
      key("schedule.step_size", K::Int, at_least(1), STRATA_BIND(schedule.step_size),
          "step: multiply by gamma every step_size steps"),
      key("schedule.milestones", K::IntList, at_least(0), STRATA_BIND(schedule.milestones),
          "multistep: steps at which the LR is multiplied by gamma"),
      key("schedule.gamma", K::Float, above(0), STRATA_BIND(schedule.gamma),
          "Decay factor of step, multistep and exponential (per step)"),
      key("schedule.min_lr", K::Float, at_least(0), STRATA_BIND(schedule.min_lr),
          "Final LR of cosine and linear; floor of plateau"),
      key("schedule.max_lr", K::Float, at_least(0), STRATA_BIND(schedule.max_lr),
          "onecycle peak LR; 0 = optimizer.lr"),
      key("schedule.pct_start", K::Float, open(0, 1), STRATA_BIND(schedule.pct_start),
          "onecycle: fraction of steps spent rising"),
      key("schedule.div_factor", K::Float, above(0), STRATA_BIND(schedule.div_factor),
          "onecycle: the first LR is max_lr / div_factor"),
      key("schedule.final_div_factor", K::Float, above(0), STRATA_BIND(schedule.final_div_factor),
          "onecycle: the last LR is the first / final_div_factor"),
      key("schedule.total_steps", K::Int, at_least(0), STRATA_BIND(schedule.total_steps),
          "Steps the schedule spans; 0 = derived from trainer.epochs (or trainer.max_steps)"),
      choice("schedule.plateau_monitor", monitors, STRATA_BIND(schedule.plateau_monitor),
             "plateau: metric watched after each evaluation"),
      key("schedule.plateau_patience", K::Int, at_least(0), STRATA_BIND(schedule.plateau_patience),
          "plateau: evaluations without improvement before the LR is cut"),
      key("schedule.plateau_factor", K::Float, open(0, 1), STRATA_BIND(schedule.plateau_factor),
          "plateau: LR multiplier on a cut"),
      key("schedule.plateau_threshold", K::Float, at_least(0), STRATA_BIND(schedule.plateau_threshold),
          "plateau: relative change that counts as an improvement"),
      key("schedule.plateau_cooldown", K::Int, at_least(0), STRATA_BIND(schedule.plateau_cooldown),
          "plateau: evaluations after a cut before bad ones count again"),
      choice("schedule.plateau_mode", {"min", "max"}, STRATA_BIND(schedule.plateau_mode),
             "plateau: whether lower or higher is better"),
      // precision
      choice("precision.dtype", {"fp32", "fp16", "bf16"}, STRATA_BIND(precision.dtype),
             "Compute dtype of matmul/conv inputs and activations; master weights stay fp32"),
      key("precision.init_scale", K::Float, above(0), STRATA_BIND(precision.init_scale),
          "fp16: initial loss scale"),
      key("precision.growth_factor", K::Float, above(1), STRATA_BIND(precision.growth_factor),
          "fp16: scale multiplier after growth_interval clean steps"),
      key("precision.backoff_factor", K::Float, open(0, 1), STRATA_BIND(precision.backoff_factor),
          "fp16: scale multiplier on inf/NaN (the step is skipped)"),
      key("precision.growth_interval", K::Int, at_least(1), STRATA_BIND(precision.growth_interval),
          "fp16: clean steps before the scale grows"),
      key("precision.allow_tf32", K::Bool, any(), STRATA_BIND(precision.allow_tf32),
          "CUDA: f32 GEMMs and convolutions may use TF32 Tensor Cores (10-bit mantissa inputs)"),
      key("precision.min_scale", K::Float, above(0), STRATA_BIND(precision.min_scale),
          "fp16: the run stops when overflows cut the loss scale below this"),
      // trainer
      key("trainer.epochs", K::Int, at_least(1), STRATA_BIND(trainer.epochs), "Passes over the training set"),
      key("trainer.accumulate", K::Int, at_least(1), STRATA_BIND(trainer.accumulate),
          "Micro-batches accumulated per optimizer step"),
      key("trainer.eval_every_epochs", K::Int, at_least(0), STRATA_BIND(trainer.eval_every_epochs),
          "Evaluate every N epochs; 0 = never"),
      key("trainer.eval_every_steps", K::Int, at_least(0), STRATA_BIND(trainer.eval_every_steps),
          "Also evaluate every N optimizer steps; 0 = never"),
      key("trainer.threads", K::Int, at_least(0), STRATA_BIND(trainer.threads),
          "CPU compute threads per rank; 0 = the node's cores / its local ranks (the cores a rank is bound "
          "to, when fewer). A CPU run repeats bit for bit at the same count, machine and world size "
          "(docs/training.md, Determinism)"),
      key("trainer.max_steps", K::Int, at_least(0), STRATA_BIND(trainer.max_steps),
          "Stop after this many optimizer steps; 0 = no limit. Mid-epoch, the last step is checkpointed "
          "when checkpointing is on"),
      key("trainer.peak_flops", K::Float, at_least(0), STRATA_BIND(trainer.peak_flops),
          "Peak FLOP/s of one rank's device (measure it with strata-bench gemm); MFU is reported against it; "
          "0 = not reported"),
      // clipping
      key("clipping.max_norm", K::Float, at_least(0), STRATA_BIND(clipping.max_norm),
          "Clip the global gradient L2 norm to this; 0 = off"),
      // early_stopping
      key("early_stopping.enabled", K::Bool, any(), STRATA_BIND(early_stopping.enabled),
          "Stop when the monitored metric stops improving"),
      choice(
          "early_stopping.monitor", monitors, STRATA_BIND(early_stopping.monitor),
          "Validation metric watched (also ranks checkpoints for checkpoint.keep_best); the trainer refuses "
          "one its task does not report"),
      choice("early_stopping.mode", {"min", "max"}, STRATA_BIND(early_stopping.mode),
             "Whether lower or higher is better"),
      key("early_stopping.patience", K::Int, at_least(1), STRATA_BIND(early_stopping.patience),
          "Evaluations without improvement before stopping"),
      key("early_stopping.min_delta", K::Float, at_least(0), STRATA_BIND(early_stopping.min_delta),
          "Smallest change that counts as an improvement"),
      key("early_stopping.restore_best", K::Bool, any(), STRATA_BIND(early_stopping.restore_best),
          "Restore the best weights when training stops"),
      // checkpoint
      key("checkpoint.every_steps", K::Int, at_least(0), STRATA_BIND(checkpoint.every_steps),
          "Save every N optimizer steps; 0 = never"),
      key("checkpoint.every_epochs", K::Int, at_least(0), STRATA_BIND(checkpoint.every_epochs),
          "Save every N epochs; 0 = never"),
      key("checkpoint.keep_last", K::Int, at_least(0), STRATA_BIND(checkpoint.keep_last),
          "Most recent checkpoints kept (by step); 0 = keep all. A file that cannot be read is never "
          "deleted: a save of its step renames it to <name>.unreadable"),
      key("checkpoint.keep_best", K::Bool, any(), STRATA_BIND(checkpoint.keep_best),
          "Also keep the best checkpoint by early_stopping.monitor"),
      key("checkpoint.async", K::Bool, any(), STRATA_BIND(checkpoint.async_save),
          "true: a save blocks the step loop only while the state is copied to host memory; writing the "
          "file (and uploading it, with an s3:// run directory) runs in the background, one save at a "
          "time (a save that finds the previous one still running waits for it, and says so in "
          "metrics.jsonl). The checkpoints are the same bytes as with false"),
      key("checkpoint.preempt_grace_s", K::Float, above(0), STRATA_BIND(checkpoint.preempt_grace_s),
          "With an s3:// run directory: after SIGTERM, SIGINT or SIGUSR1 the final checkpoint must be "
          "uploaded and committed within this many seconds of the signal, else strata-train exits with "
          "status 75 at that moment (the store's newest committed checkpoint is then the one before); "
          "keep it under the pool's grace period (Kubernetes: terminationGracePeriodSeconds, 30 by default)"),
      key("checkpoint.resume", K::String, any(), STRATA_BIND(checkpoint.resume),
          "\"\" = start fresh; auto = the newest checkpoint in the run directory that loads, naming each "
          "one skipped and why (none there: start fresh; some there, none loads: the run stops); else a "
          "checkpoint path"),
      // outputs: a run directory in the object store
      key("outputs.staging_dir", K::String, any(), STRATA_BIND(outputs.staging_dir),
          "With --run-dir s3://BUCKET/PREFIX: the node-local directory the run writes in before its files "
          "go to the store; \"\" = <data.cache_dir>/runs/BUCKET/PREFIX"),
      key("outputs.sync_every_s", K::Float, above(0), STRATA_BIND(outputs.sync_every_s),
          "With an s3:// run directory: seconds between uploads of the run's changed files (train.log, "
          "metrics.jsonl, TensorBoard events, plots; one PUT per changed file); checkpoints go up when saved "
          "and everything at the end, summary.json last"),
      key("outputs.part_bytes", K::Bytes, at_least(64 << 10), STRATA_BIND(outputs.part_bytes),
          "A file of the run larger than this goes to the store as a multipart upload of parts this size "
          "(S3 and OBS need at least 5MiB)"),
      key("outputs.connections", K::Int, closed(1, 64), STRATA_BIND(outputs.connections),
          "Parts of one multipart upload in flight"),
      key("outputs.s3.endpoint", K::String, any(), STRATA_BIND(outputs.s3_endpoint),
          "S3 endpoint of an s3:// run directory; \"\" = data.s3.endpoint, then the AWS chain"),
      key("outputs.s3.region", K::String, any(), STRATA_BIND(outputs.s3_region),
          "Its signing region; \"\" = data.s3.region, then the AWS chain"),
      key("outputs.s3.profile", K::String, any(), STRATA_BIND(outputs.s3_profile),
          "Its AWS profile; \"\" = data.s3.profile, then the AWS chain"),
      key("outputs.s3.ca_bundle", K::String, any(), STRATA_BIND(outputs.s3_ca_bundle),
          "Its CA bundle; \"\" = data.s3.ca_bundle, then the AWS chain"),
      // logging
      key("logging.every_steps", K::Int, at_least(1), STRATA_BIND(logging.every_steps),
          "Log training metrics every N optimizer steps"),
      key("logging.tensorboard", K::Bool, any(), STRATA_BIND(logging.tensorboard),
          "Write TensorBoard event files into the run directory"),
      choice("logging.console", {"auto", "plain", "off"}, STRATA_BIND(logging.console),
             "Console output: auto = progress bar on a terminal, plain lines otherwise"),
      key("logging.prometheus_port", K::Int, closed(0, 65535), STRATA_BIND(logging.prometheus_port),
          "Prometheus endpoint of each rank: rank r listens on this port + its local rank; 0 = off"),
      key("logging.prometheus_address", K::String, any(), STRATA_BIND(logging.prometheus_address),
          "Address the Prometheus endpoint binds (0.0.0.0 = every interface)"),
      // distributed
      choice("distributed.backend", {"auto", "single", "mpi", "nccl"}, STRATA_BIND(distributed.backend),
             "Communicator: auto = one process single, several ranks NCCL when every rank has a GPU, else "
             "MPI (docs/distributed.md)"),
      choice("distributed.reduce_dtype", {"f32", "bf16", "f16"}, STRATA_BIND(distributed.reduce_dtype),
             "Dtype gradients are allreduced in: bf16/f16 halve the bytes on the wire (converted in the "
             "bucket and back; docs/data-parallel.md)"),
      // top level
      key("seed", K::Int, at_least(0), STRATA_BIND(seed),
          "Seed of every random stream (init, shuffle, dropout, split)"),
      choice("device", {"auto", "cpu", "cuda"}, STRATA_BIND(device),
             "Where the model trains: auto = the rank's GPU when it sees one (STRATA_DEVICE, else the local "
             "rank modulo the visible GPUs), else the CPU; cuda = a GPU or an error (docs/gpu.md)"),
  };
}

#undef STRATA_BIND

}  // namespace

const std::vector<ConfigKey>& config_schema() {
  static const std::vector<ConfigKey> schema = build_schema();
  return schema;
}

const std::vector<ConfigSection>& config_sections() {
  static const std::vector<ConfigSection> sections = {
      {"model", "Network architecture"},
      {"data", "Datasets, the node-local shard cache and the loader"},
      {"optimizer", "Optimizer and its hyperparameters"},
      {"schedule", "Learning-rate schedule"},
      {"precision", "Mixed precision and the fp16 loss scaler"},
      {"trainer", "Training loop"},
      {"clipping", "Gradient clipping"},
      {"early_stopping", "Early stopping on a validation metric"},
      {"checkpoint", "Checkpoints in <run-dir>/checkpoints"},
      {"outputs", "A run directory in the object store (--run-dir s3://BUCKET/PREFIX)"},
      {"logging", "Metrics, TensorBoard and console output"},
      {"distributed", "Data-parallel communication"},
      {"", "Top-level keys"},
  };
  return sections;
}

}  // namespace strata
