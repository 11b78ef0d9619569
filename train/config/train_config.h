// TrainConfig: the typed configuration of one training run, one struct per YAML
// section. The default member initialisers below are the defaults; the schema
// (schema.cpp) binds every field to its dotted key, type, validator and doc line,
// and the parser, resolved.yaml writer and docs generator all read that schema.
// Enumerated keys are kept as validated strings (the schema lists their values),
// so a new value needs one edit in the schema, not an enum plus name tables.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace strata {

struct ModelConfig {
  std::string name = "mlp";                  // mlp | cnn | resnet | gpt
  std::vector<int64_t> hidden = {256, 128};  // MLP hidden widths
  std::vector<int64_t> channels = {32, 64};  // CNN conv block widths / ResNet stage widths
  std::vector<int64_t> blocks = {2, 2};      // ResNet residual blocks per stage
  double dropout = 0.0;
  int64_t num_classes = 10;
  // GPT (models/gpt.cpp)
  int64_t vocab_size = 256;
  int64_t context = 128;
  int64_t layers = 4;
  int64_t heads = 4;
  int64_t width = 128;
  bool operator==(const ModelConfig&) const = default;
};

struct DataConfig {
  std::string train_url;
  std::string test_url;
  std::string val_url;
  std::string cache_dir = "/tmp/strata-cache";
  int64_t cache_bytes = int64_t{4} << 30;
  std::string cache_lifetime = "job";  // job | persistent
  int64_t batch_size = 128;            // per rank
  int64_t shuffle_window = 0;
  int64_t lookahead_bytes = int64_t{512} << 20;
  int64_t staging_threads = 4;
  // another process's download making no progress this long is redone here
  double download_stall_timeout_s = 120;
  int64_t decode_threads = 2;
  std::vector<double> normalize_mean;
  std::vector<double> normalize_std;
  std::string remainder = "drop";    // drop | pad
  int64_t augment_crop_padding = 0;  // training split only; 0 = no random crop
  bool augment_hflip = false;
  // Encoded images (strata-pack files; docs/loader.md, "Image decoding"): 0 = the
  // dataset holds fixed-size images, used as stored
  int64_t image_size = 0;
  int64_t image_channels = 3;
  std::vector<double> augment_crop_scale{0.08, 1.0};             // RandomResizedCrop scale
  std::vector<double> augment_crop_ratio{3.0 / 4.0, 4.0 / 3.0};  // RandomResizedCrop ratio
  std::vector<double> augment_color_jitter{0.0, 0.0, 0.0};       // brightness, contrast, saturation
  double eval_resize_ratio = 0.875;                              // evaluation: crop / resized shorter side
  bool skip_bad_images = false;
  // A path to the data key of encrypted datasets; the key itself never goes in
  // a config (docs/data-format.md, "Encrypted datasets")
  std::string encryption_key_file;
  // data.s3.*: "" = from the AWS configuration chain (docs/object-store.md)
  std::string s3_endpoint;
  std::string s3_region;
  std::string s3_addressing_style;  // "" | path | virtual | auto
  std::string s3_ca_bundle;
  std::string s3_profile;
  int64_t s3_connections = 4;                // data.s3.connections
  int64_t s3_part_bytes = int64_t{8} << 20;  // data.s3.part_bytes
  int64_t s3_max_attempts = 6;               // data.s3.max_attempts
  double s3_stall_timeout_s = 30;            // data.s3.stall_timeout_s
  bool operator==(const DataConfig&) const = default;
};

struct OptimizerConfig {
  std::string name = "adamw";  // sgd | adamw
  double lr = 1e-3;
  double momentum = 0.9;
  bool nesterov = false;
  double dampening = 0.0;
  double weight_decay = 0.01;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  bool decay_groups = false;  // adamw: no weight decay on biases, norms, embeddings
  bool operator==(const OptimizerConfig&) const = default;
};

struct ScheduleConfig {
  std::string name = "constant";  // constant|step|multistep|exponential|cosine|linear|onecycle|plateau
  int64_t warmup_steps = 0;
  double warmup_start_factor = 0.0;
  int64_t step_size = 1000;
  std::vector<int64_t> milestones;
  double gamma = 0.1;
  double min_lr = 0.0;
  double max_lr = 0.0;
  double pct_start = 0.3;
  double div_factor = 25.0;       // onecycle: initial lr = max_lr / div_factor
  double final_div_factor = 1e4;  // onecycle: final lr = initial lr / final_div_factor
  int64_t total_steps = 0;
  std::string plateau_monitor = "val_loss";
  int64_t plateau_patience = 10;
  double plateau_factor = 0.1;
  double plateau_threshold = 1e-4;
  int64_t plateau_cooldown = 0;
  std::string plateau_mode = "min";  // min | max
  bool operator==(const ScheduleConfig&) const = default;
};

struct PrecisionConfig {
  std::string dtype = "fp32";  // fp32 | fp16 | bf16
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool allow_tf32 = false;  // CUDA f32 GEMM/conv on TF32 Tensor Cores
  double min_scale = 1.0;   // below it the run stops: gradients overflow even unscaled
  bool operator==(const PrecisionConfig&) const = default;
};

struct TrainerConfig {
  int64_t epochs = 10;
  int64_t accumulate = 1;
  int64_t eval_every_epochs = 1;
  int64_t eval_every_steps = 0;
  int64_t threads = 0;
  int64_t max_steps = 0;
  double peak_flops = 0;  // per rank, for MFU; 0 = not reported
  bool operator==(const TrainerConfig&) const = default;
};

struct ClippingConfig {
  double max_norm = 0.0;
  bool operator==(const ClippingConfig&) const = default;
};

struct EarlyStoppingConfig {
  bool enabled = false;
  std::string monitor = "val_loss";
  std::string mode = "min";  // min | max
  int64_t patience = 5;
  double min_delta = 0.0;
  bool restore_best = true;
  bool operator==(const EarlyStoppingConfig&) const = default;
};

struct CheckpointConfig {
  int64_t every_steps = 0;
  int64_t every_epochs = 1;
  int64_t keep_last = 3;
  bool keep_best = true;
  std::string resume;           // "" | auto | PATH
  bool async_save = false;      // checkpoint.async
  double preempt_grace_s = 25;  // checkpoint.preempt_grace_s
  bool operator==(const CheckpointConfig&) const = default;
};

// Where the run lives when --run-dir is s3://BUCKET/PREFIX (data/store/run_store.h).
struct OutputsConfig {
  std::string staging_dir;  // "" = <data.cache_dir>/runs/<bucket>/<prefix>
  double sync_every_s = 30;
  int64_t part_bytes = int64_t{16} << 20;
  int64_t connections = 8;
  std::string s3_endpoint, s3_region, s3_profile, s3_ca_bundle;  // "" = data.s3.*'s
  bool operator==(const OutputsConfig&) const = default;
};

struct LoggingConfig {
  int64_t every_steps = 50;
  bool tensorboard = true;
  std::string console = "auto";  // auto | plain | off
  int64_t prometheus_port = 0;   // 0 = no endpoint; rank r listens on port + local rank
  std::string prometheus_address = "127.0.0.1";
  bool operator==(const LoggingConfig&) const = default;
};

struct DistributedConfig {
  std::string backend = "auto";      // auto | single | mpi | nccl
  std::string reduce_dtype = "f32";  // f32 | bf16 | f16: the dtype gradients are reduced in
  bool operator==(const DistributedConfig&) const = default;
};

struct TrainConfig {
  ModelConfig model;
  DataConfig data;
  OptimizerConfig optimizer;
  ScheduleConfig schedule;
  PrecisionConfig precision;
  TrainerConfig trainer;
  ClippingConfig clipping;
  EarlyStoppingConfig early_stopping;
  CheckpointConfig checkpoint;
  OutputsConfig outputs;
  LoggingConfig logging;
  DistributedConfig distributed;
  int64_t seed = 42;
  std::string device = "auto";  // auto | cpu | cuda
  bool operator==(const TrainConfig&) const = default;
};

}  // namespace strata
