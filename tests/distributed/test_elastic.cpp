// Elastic resume (run with 4 ranks): the trainer + data::Loader on a small
// packed dataset. 4 ranks x batch 8 train 3 steps and checkpoint; ranks 0 and 1
// (a 2-rank communicator) x batch 16 resume from it. The global batches they
// see -- the `id` field of every sample, each rank's slice in rank order --
// must be the uninterrupted 4-rank run's, across the epoch boundary too, and the
// weights must end where that run's do.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "data/format/manifest.h"
#include "data/format/shard.h"
#include "data/loader/loader.h"
#include "data/store/file_source.h"
#include "ddp_fixture.h"
#include "distributed/data_parallel.h"
#include "train/trainer/trainer.h"
#include "trainer_fixture.h"

namespace strata::testing {
namespace {
namespace fs = std::filesystem;

constexpr int64_t kFeat = 8, kClasses = 4, kShards = 4,
                  kPerShard = 64;  // 256 samples: 8 global batches of 32

// Fields: image f32[8] (from the id), label i64 (= id % 4), id i64.
void write_dataset(const fs::path& dir) {
  fs::create_directories(dir);
  data::Manifest m;
  m.schema = {{"image", "f32", {kFeat}, false}, {"label", "i64", {}, false}, {"id", "i64", {}, false}};
  for (int s = 0; s < kShards; ++s) {
    std::string name = "shard-" + std::to_string(s) + ".h5";
    data::ShardWriter w((dir / name).string(), m.schema);
    for (int i = 0; i < kPerShard; ++i) {
      int64_t id = s * kPerShard + i, label = (id * 7 + id / 5) % kClasses;
      float x[kFeat];
      for (int k = 0; k < kFeat; ++k)
        x[k] = std::sin(0.37f * static_cast<float>(id * (k + 1))) + (k == label ? 1.0f : 0.0f);
      w.add({{x, sizeof x}, {&label, sizeof label}, {&id, sizeof id}});
    }
    w.finish();
    m.shards.push_back({name, kPerShard, static_cast<int64_t>(fs::file_size(dir / name)),
                        data::checksum_file((dir / name).string())});
  }
  std::ofstream(dir / "manifest.json") << m.to_json();
}

// Forwards to the loader, keeping the ids of every batch it hands out.
class Recording : public BatchSource {
 public:
  explicit Recording(data::Loader& l) : l_(l) {}
  void start_epoch(int64_t e) override { l_.start_epoch(e); }
  bool next(HostBatch& b) override {
    if (!l_.next(b)) return false;
    const auto& id = b.field("id");
    ids.insert(ids.end(), id.as<int64_t>(), id.as<int64_t>() + b.size);
    return true;
  }
  int64_t batches_per_epoch() const override { return l_.batches_per_epoch(); }
  SourcePosition position() const override { return l_.position(); }
  void restore(const SourcePosition& p) override { l_.restore(p); }
  DataMetrics metrics() const override { return l_.metrics(); }
  std::vector<int64_t> ids;

 private:
  data::Loader& l_;
};

// The run's global batches: step s = rank 0's slice, rank 1's, ...
std::vector<std::vector<int64_t>> global_batches(Communicator& comm, const std::vector<int64_t>& mine,
                                                 int64_t batch) {
  size_t n = mine.size();
  std::vector<int64_t> all(n * static_cast<size_t>(comm.size()));
  comm.allgather(mine.data(), all.data(), n, DType::i64);
  std::vector<std::vector<int64_t>> steps(n / static_cast<size_t>(batch));
  for (size_t s = 0; s < steps.size(); ++s)
    for (int r = 0; r < comm.size(); ++r) {
      auto from =
          all.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(r) * n + s * static_cast<size_t>(batch));
      steps[s].insert(steps[s].end(), from, from + batch);
    }
  return steps;
}

struct Result {
  std::shared_ptr<Module> model;
  std::vector<std::vector<int64_t>> batches;
};

Result run(Communicator& comm, const fs::path& root, const std::string& name, int64_t batch,
           int64_t max_steps, int64_t ckpt_every, bool resume) {
  TrainConfig c = quiet_config();
  c.model.hidden = {16};
  c.model.num_classes = kClasses;
  c.trainer.epochs = 2;
  c.trainer.max_steps = max_steps;
  c.checkpoint.every_steps = ckpt_every;
  c.checkpoint.resume = resume ? "auto" : "";
  data::LoaderOptions o;
  o.url = (root / "data").string();
  o.cache_dir = root / ("cache-" + name + "-np" + std::to_string(comm.size()));
  o.cache_bytes = 64 << 20;
  o.seed = 11;
  o.rank = comm.rank();
  o.world_size = comm.size();
  o.local_ranks = comm.size();
  o.batch_size = batch;
  o.shuffle = true;
  o.shuffle_window = 2;
  o.lookahead_bytes = 1 << 20;
  o.staging_threads = 1;
  o.decode_threads = 1;
  data::Loader loader(o);
  Recording rec(loader);
  auto model = build(c, {kFeat});
  DataParallel ddp(comm, model);
  Trainer t(c, (root / ("run-" + name)).string(), model, {kFeat}, comm);
  t.set_gradient_sync(ddp.make_gradient_sync());
  t.set_buffer_sync([&] { ddp.sync_buffers(); });
  t.fit(rec, nullptr, nullptr);
  return {model, global_batches(comm, rec.ids, batch)};
}

// Ranks outside a sub-run wait here without spinning on the cores it needs.
void idle_barrier() {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  for (int done = 0; !done;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

TEST(ElasticResume, FourRanksCheckpointResumeOnTwoWithTheSameGlobalOrder) {
  MpiCommunicator& comm = world();
  if (comm.size() != 4) GTEST_SKIP() << "needs 4 ranks (mpirun -np 4), got " << comm.size();
  int64_t pid = ::getpid();
  comm.broadcast(&pid, 1, DType::i64, 0);
  fs::path root = fs::temp_directory_path() / ("strata-ddp-elastic-" + std::to_string(pid));
  if (comm.rank() == 0) {
    fs::remove_all(root);
    write_dataset(root / "data");
  }
  comm.barrier();

  Result full = run(comm, root, "full", 8, 0, 0, false);  // 2 epochs x 8 global batches of 32
  ASSERT_EQ(full.batches.size(), 16u);
  Result first = run(comm, root, "elastic", 8, 3, 3, false);  // 3 steps, checkpoint at step 3
  ASSERT_EQ(first.batches.size(), 3u);
  for (size_t s = 0; s < 3; ++s) EXPECT_EQ(first.batches[s], full.batches[s]) << "4-rank step " << s;

  // Ranks 0 and 1 resume the run on their own communicator with batch 16.
  MPI_Comm two_comm;
  MPI_Comm_split(MPI_COMM_WORLD, comm.rank() < 2 ? 0 : MPI_UNDEFINED, comm.rank(), &two_comm);
  int64_t failures = 0;
  if (comm.rank() < 2) {
    MpiCommunicator two(MpiOptions::from_env(), two_comm);
    Result rest = run(two, root, "elastic", 16, 0, 0, true);
    EXPECT_EQ(rest.batches.size(), 13u);
    for (size_t s = 0; s < rest.batches.size() && s + 3 < full.batches.size(); ++s) {
      EXPECT_EQ(rest.batches[s], full.batches[s + 3])
          << "global step " << s + 3 << " after the resume on 2 ranks";
      if (rest.batches[s] != full.batches[s + 3]) ++failures;
    }
    double d = max_rel_diff(*rest.model, *full.model);
    EXPECT_LT(d, 1e-4) << "weights after resuming on 2 ranks vs the uninterrupted 4-rank run";
    if (two.rank() == 0)
      std::printf(
          "[ddp] elastic 4 -> 2 ranks: %zu resumed global batches, %ld differ from the 4-rank run; weights "
          "max rel diff %.3g\n",
          rest.batches.size(), static_cast<long>(failures), d);
    MPI_Comm_free(&two_comm);
  }
  idle_barrier();
  comm.allreduce(&failures, 1, DType::i64, ReduceOp::sum);
  EXPECT_EQ(failures, 0);
  comm.barrier();
  if (comm.rank() == 0) fs::remove_all(root);
}

}  // namespace
}  // namespace strata::testing
