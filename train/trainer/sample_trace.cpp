// STRATA_TRACE_SAMPLE_IDS=1: every rank appends one line per training
// micro-batch to RUN_DIR/sample_ids/rank-<R>.txt,
//   start K step S epoch E micro M rank R world W ids ID ID ...
// K is the start's index in the world-size history, S the optimizer step the
// micro-batch belongs to, M its index in the epoch. A sample's id is its `id`
// field (i64) when the dataset has one, else a 64-bit FNV-1a hash of all its
// fields' bytes (the same sample gives the same hash on every rank count). For
// checking that a relaunch on another rank count consumes the samples an
// uninterrupted run does (tests/reliability/elastic.sh); costs a hash per sample.
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "base/error.h"
#include "train/trainer/trainer.h"

namespace strata {
namespace {

uint64_t fnv1a(const uint8_t* p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace

void Trainer::open_sample_trace(const TrainState& s) {
  sample_trace_.reset();
  const char* env = std::getenv("STRATA_TRACE_SAMPLE_IDS");
  if (!env || !*env || std::string(env) == "0") return;
  const std::filesystem::path dir = std::filesystem::path(run_dir_) / "sample_ids";
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / ("rank-" + std::to_string(comm_.rank()) + ".txt");
  sample_trace_ = std::make_unique<std::ofstream>(file, std::ios::app);
  if (!*sample_trace_) throw IoError("STRATA_TRACE_SAMPLE_IDS: cannot open " + file.string());
  trace_start_ = static_cast<int64_t>(s.world_sizes.size()) - 1;
}

void Trainer::trace_samples(const HostBatch& b, const TrainState& s) {
  std::ostringstream line;
  line << "start " << trace_start_ << " step " << s.step << " epoch " << s.epoch << " micro " << s.micro
       << " rank " << comm_.rank() << " world " << comm_.size() << " ids";
  const HostArray* id = nullptr;
  for (const HostArray& f : b.fields)
    if (f.name == "id" && f.dtype == DType::i64) id = &f;
  for (int64_t i = 0; i < b.size; ++i) {
    uint64_t v = 0;
    if (id) {
      v = static_cast<uint64_t>(id->as<int64_t>()[i]);
    } else {
      v = 14695981039346656037ull;
      for (const HostArray& f : b.fields) {
        const size_t per = f.bytes.size() / static_cast<size_t>(b.size);
        v = fnv1a(reinterpret_cast<const uint8_t*>(f.bytes.data()) + per * static_cast<size_t>(i), per, v);
      }
    }
    line << ' ' << v;
  }
  *sample_trace_ << line.str() << '\n' << std::flush;
}

}  // namespace strata
