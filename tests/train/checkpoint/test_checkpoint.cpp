// Checkpoints: bit-exact round trip, clear errors for truncated, foreign and
// ill-typed files, atomic save, auto-resume ignoring temp files, rotation.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include "base/error.h"
#include "core/random.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/checkpoint_rotation.h"

using namespace strata;
namespace fs = std::filesystem;

namespace {

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("strata-ckpt-test-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  return std::memcmp(a.contiguous().raw_data(), b.contiguous().raw_data(),
                     a.numel() * dtype_size(a.dtype())) == 0;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

Checkpoint sample(int64_t step, double metric = std::nan("")) {
  Generator gen(1234);
  Checkpoint ck;
  Tensor w = Tensor::normal({4, 3}, 0.0, 1.0, gen);
  float* d = w.data<float>();
  d[0] = -0.0f;
  d[1] = std::numeric_limits<float>::denorm_min();
  d[2] = std::numeric_limits<float>::infinity();
  d[3] = std::numeric_limits<float>::quiet_NaN();
  ck.model["fc.weight"] = w;
  ck.model["fc.bias"] = Tensor::normal({3}, 0.0, 1.0, gen);
  ck.model["bn.running_mean"] = Tensor::scalar(0.25);
  ck.model["bn.num_batches_tracked"] = Tensor::from_vector_i64({42}, {});
  ck.model["empty"] = Tensor::zeros({0, 5});
  ck.optimizer["fc.weight.exp_avg"] = Tensor::normal({4, 3}, 0.0, 1.0, gen);
  ck.optimizer["fc.weight.exp_avg_sq"] = Tensor::uniform({4, 3}, 0.0, 1.0, gen);
  ck.ints[ckpt_key::step] = step;
  ck.ints[ckpt_key::epoch] = 3;
  ck.ints[ckpt_key::patience_counter] = 2;
  ck.ints[ckpt_key::scaler_growth_tracker] = 1999;
  ck.scalars[ckpt_key::best_metric] = 0.1 + 0.2;
  ck.scalars[ckpt_key::scaler_scale] = 32768.0;
  if (!std::isnan(metric)) ck.scalars[ckpt_key::metric] = metric;
  Generator g(99);
  for (int i = 0; i < 10; ++i) g.next_u64();
  ck.rng["default"] = g.state();
  ck.rng["dropout"] = Generator(7).state();
  ck.resolved_yaml = "model:\n  name: résumé-mlp\n  hidden: [64, 32]\n# ünïcode ✓\n";
  ck.loader = {{"epoch", 3}, {"position", 640}, {"seed", -1}};
  ck.schedule = {"plateau",
                 {{"lr", 0.001}, {"best", std::numeric_limits<double>::infinity()}, {"num_bad_epochs", 2}}};
  return ck;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const IoError& e) {
    return e.what();
  }
  return "(no IoError thrown)";
}

std::set<std::string> files_in(const fs::path& dir) {
  std::set<std::string> out;
  for (auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

}  // namespace

TEST(Checkpoint, RoundTripIsBitExact) {
  TempDir dir;
  Checkpoint a = sample(1234);
  fs::path p = dir.path() / "a.h5";
  save_checkpoint(a, p);
  EXPECT_EQ(files_in(dir.path()), std::set<std::string>{"a.h5"});  // no temp file left behind
  Checkpoint b = load_checkpoint(p);
  EXPECT_EQ(b.source, p.string());
  ASSERT_EQ(a.model.size(), b.model.size());
  for (auto& [n, t] : a.model) EXPECT_TRUE(same_bits(t, b.model_tensor(n))) << n;
  ASSERT_EQ(a.optimizer.size(), b.optimizer.size());
  for (auto& [n, t] : a.optimizer) EXPECT_TRUE(same_bits(t, b.optimizer_tensor(n))) << n;
  EXPECT_EQ(a.ints, b.ints);
  ASSERT_EQ(a.scalars.size(), b.scalars.size());
  for (auto& [k, v] : a.scalars) EXPECT_TRUE(same_bits(v, b.scalar_value(k))) << k;
  EXPECT_EQ(a.rng, b.rng);
  EXPECT_EQ(a.resolved_yaml, b.resolved_yaml);
  EXPECT_EQ(a.loader, b.loader);
  EXPECT_EQ(a.schedule.name, b.schedule.name);
  EXPECT_EQ(a.schedule.values, b.schedule.values);
  EXPECT_EQ(b.model_tensor("bn.num_batches_tracked").dtype(), DType::i64);
  EXPECT_EQ(b.model_tensor("bn.running_mean").dim(), 0);

  // The RNG state resumes the same stream.
  Generator g(99), h(0);
  for (int i = 0; i < 10; ++i) g.next_u64();
  h.set_state(b.rng_state("default"));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(g.next_u64(), h.next_u64());

  // Saving over an existing file replaces it.
  a.ints[ckpt_key::step] = 1235;
  save_checkpoint(a, p);
  EXPECT_EQ(load_checkpoint(p).int_value(ckpt_key::step), 1235);
}

TEST(Checkpoint, LowerPrecisionTensorsAreStoredAsFp32) {
  TempDir dir;
  Checkpoint a;
  a.model["h"] = Tensor::from_vector({1.5f, -2.25f}, {2}, DType::f16);
  a.ints[ckpt_key::step] = 0;
  save_checkpoint(a, dir.path() / "h.h5");
  Tensor t = load_checkpoint(dir.path() / "h.h5").model_tensor("h");
  EXPECT_EQ(t.dtype(), DType::f32);
  EXPECT_EQ(t.to_float_vector(), (std::vector<float>{1.5f, -2.25f}));
}

TEST(Checkpoint, MissingAndIllTypedEntriesAreNamed) {
  TempDir dir;
  Checkpoint a = sample(5);
  a.scalars["lr"] = 0.5;
  fs::path p = dir.path() / "m.h5";
  save_checkpoint(a, p);
  Checkpoint b = load_checkpoint(p);
  std::string e = error_of([&] { b.int_value("global_step"); });
  EXPECT_NE(e.find(p.string()), std::string::npos) << e;
  EXPECT_NE(e.find("missing /trainer/global_step"), std::string::npos) << e;
  e = error_of([&] { b.int_value("lr"); });
  EXPECT_NE(e.find("/trainer/lr is float64, expected int64"), std::string::npos) << e;
  e = error_of([&] { b.scalar_value(ckpt_key::step); });
  EXPECT_NE(e.find("/trainer/step is int64, expected float64"), std::string::npos) << e;
  e = error_of([&] { b.model_tensor("fc2.weight"); });
  EXPECT_NE(e.find("missing /model/fc2.weight"), std::string::npos) << e;
  e = error_of([&] { b.rng_state("cuda"); });
  EXPECT_NE(e.find("missing /rng/cuda"), std::string::npos) << e;
  e = error_of([&] { b.loader_value("shard"); });
  EXPECT_NE(e.find("missing /loader/shard"), std::string::npos) << e;

  // A float64 model tensor written by another tool is rejected by name on load.
  {
    hid_t f = H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    hsize_t dims[1] = {2};
    hid_t s = H5Screate_simple(1, dims, nullptr);
    hid_t d = H5Dcreate2(f, "/model/bad", H5T_IEEE_F64LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    double v[2] = {1, 2};
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    H5Dclose(d);
    H5Sclose(s);
    H5Fclose(f);
  }
  e = error_of([&] { load_checkpoint(p); });
  EXPECT_NE(e.find(p.string()), std::string::npos) << e;
  EXPECT_NE(e.find("/model/bad has the wrong type"), std::string::npos) << e;
}

TEST(Checkpoint, TruncatedFileIsRejected) {
  TempDir dir;
  fs::path p = dir.path() / "whole.h5";
  save_checkpoint(sample(7), p);
  const auto size = fs::file_size(p);
  for (auto keep : {size / 2, size - 1}) {
    fs::path t = dir.path() / ("cut-" + std::to_string(keep) + ".h5");
    fs::copy_file(p, t);
    fs::resize_file(t, keep);
    std::string e = error_of([&] { load_checkpoint(t); });
    EXPECT_NE(e.find(t.string()), std::string::npos) << e;
    EXPECT_NE(e.find("truncated"), std::string::npos) << e;
    EXPECT_THROW(read_checkpoint_info(t), IoError);
  }
}

TEST(Checkpoint, ForeignFilesAreRejected) {
  TempDir dir;
  fs::path txt = dir.path() / "notes.h5";
  std::ofstream(txt) << "not hdf5 at all\n";
  EXPECT_NE(error_of([&] { load_checkpoint(txt); }).find("cannot open as HDF5"), std::string::npos);
  fs::path other = dir.path() / "other.h5";
  hid_t f = H5Fcreate(other.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Fclose(f);
  EXPECT_NE(error_of([&] { load_checkpoint(other); }).find("not a strata checkpoint"), std::string::npos);
  EXPECT_NE(error_of([&] { load_checkpoint(dir.path() / "nope.h5"); }).find("no such file"),
            std::string::npos);
}

TEST(Checkpoint, FailedSaveLeavesNothing) {
  TempDir dir;
  Checkpoint a = sample(1);
  a.model["bad/name"] = Tensor::zeros({1});
  fs::path p = dir.path() / "x.h5";
  std::string e = error_of([&] { save_checkpoint(a, p); });
  EXPECT_NE(e.find("/model/bad/name"), std::string::npos) << e;
  EXPECT_TRUE(files_in(dir.path()).empty());
  EXPECT_THROW(save_checkpoint(sample(1), dir.path() / "missing-dir" / "x.h5"), IoError);
}

TEST(Checkpoint, AutoResumeIgnoresTempAndBrokenFiles) {
  TempDir dir;
  EXPECT_FALSE(find_latest_checkpoint(dir.path()).has_value());
  EXPECT_FALSE(find_latest_checkpoint(dir.path() / "absent").has_value());
  save_checkpoint(sample(10), dir.path() / "ckpt-000000010.h5");
  save_checkpoint(sample(5), dir.path() / "ckpt-000000005.h5");
  // A newer checkpoint that a crashed writer left under its temporary name.
  save_checkpoint(sample(20), dir.path() / "tmp-src.h5");
  fs::rename(dir.path() / "tmp-src.h5", dir.path() / "ckpt-000000020.h5.tmp.4242");
  // A newer one that was cut short, and one that is not HDF5.
  save_checkpoint(sample(30), dir.path() / "ckpt-000000030.h5");
  fs::resize_file(dir.path() / "ckpt-000000030.h5", 1000);
  std::ofstream(dir.path() / "ckpt-000000040.h5") << "garbage";
  auto latest = find_latest_checkpoint(dir.path());
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->filename(), "ckpt-000000010.h5");
}

TEST(Checkpoint, RotationKeepsLastKAndBest) {
  TempDir dir;
  fs::path d = dir.path() / "checkpoints";
  {
    CheckpointRotation rot(d, {.keep_last = 2, .keep_best = true, .mode = "min"});
    const std::vector<double> metrics = {5, 3, 4, 6, 7, 8};
    for (size_t i = 0; i < metrics.size(); ++i) rot.save(sample(static_cast<int64_t>(i + 1), metrics[i]));
    EXPECT_EQ(files_in(d),
              (std::set<std::string>{"ckpt-000000002.h5", "ckpt-000000005.h5", "ckpt-000000006.h5"}));
    ASSERT_TRUE(rot.best().has_value());
    EXPECT_EQ(rot.best()->step, 2);
    EXPECT_EQ(rot.latest()->step, 6);
  }
  // A restarted run adopts the files already there, and leaves foreign files alone.
  std::ofstream(d / "notes.txt") << "keep me";
  save_checkpoint(sample(99), d / "manual.h5");
  {
    CheckpointRotation rot(d, {.keep_last = 2, .keep_best = true, .mode = "min"});
    EXPECT_EQ(rot.entries().size(), 3u);
    rot.save(sample(7, 2.0));  // the new best
    EXPECT_EQ(files_in(d),
              (std::set<std::string>{"ckpt-000000006.h5", "ckpt-000000007.h5", "manual.h5", "notes.txt"}));
    EXPECT_EQ(rot.best()->step, 7);
  }
  EXPECT_EQ(find_latest_checkpoint(d)->filename(), "manual.h5");  // step 99
}

TEST(Checkpoint, RotationMaxModeAndNoMetric) {
  TempDir dir;
  CheckpointRotation rot(dir.path(), {.keep_last = 1, .keep_best = true, .mode = "max"});
  rot.save(sample(1, 0.9));
  rot.save(sample(2, 0.5));
  rot.save(sample(3));  // no metric: never the best
  EXPECT_EQ(files_in(dir.path()), (std::set<std::string>{"ckpt-000000001.h5", "ckpt-000000003.h5"}));
  CheckpointRotation last_only(dir.path(), {.keep_last = 1, .keep_best = false, .mode = "max"});
  last_only.prune();
  EXPECT_EQ(files_in(dir.path()), (std::set<std::string>{"ckpt-000000003.h5"}));
}

// A fresh run saving into a directory of newer checkpoints keeps what it saved
// (an s3:// run directory publishes each save right after it: it must be there).
TEST(Checkpoint, RotationKeepsTheCheckpointItJustSaved) {
  TempDir dir;
  {
    CheckpointRotation old_run(dir.path(), {.keep_last = 2, .keep_best = false, .mode = "min"});
    for (int64_t step : {100, 200, 300}) old_run.save(sample(step));
  }
  CheckpointRotation rot(dir.path(), {.keep_last = 2, .keep_best = false, .mode = "min"});
  const auto saved = rot.save(sample(10));
  EXPECT_TRUE(std::filesystem::exists(saved));
  EXPECT_EQ(files_in(dir.path()),
            (std::set<std::string>{"ckpt-000000010.h5", "ckpt-000000200.h5", "ckpt-000000300.h5"}));
}

TEST(Checkpoint, RotationKeepLastZeroKeepsAll) {
  TempDir dir;
  CheckpointRotation rot(dir.path(), {.keep_last = 0, .keep_best = true, .mode = "min"});
  for (int64_t step = 1; step <= 4; ++step) rot.save(sample(step, static_cast<double>(step)));
  EXPECT_EQ(files_in(dir.path()), (std::set<std::string>{"ckpt-000000001.h5", "ckpt-000000002.h5",
                                                         "ckpt-000000003.h5", "ckpt-000000004.h5"}));
}

// A file named like a checkpoint that cannot be read is neither adopted, nor
// deleted, nor overwritten by a save of its step: its bytes stay in `dir`.
TEST(Checkpoint, RotationKeepsWhatItCannotRead) {
  TempDir dir;
  save_checkpoint(sample(2), dir.path() / "ckpt-000000002.h5");
  fs::resize_file(dir.path() / "ckpt-000000002.h5", 1000);
  std::ofstream(dir.path() / "ckpt-000000001.h5") << "garbage";
  CheckpointRotation rot(dir.path(), {.keep_last = 1, .keep_best = false, .mode = "min"});
  EXPECT_TRUE(rot.entries().empty());
  for (int64_t step = 1; step <= 4; ++step) rot.save(sample(step));
  std::map<std::string, uintmax_t> sizes;
  for (auto& e : fs::directory_iterator(dir.path()))
    sizes[e.path().filename().string()] = fs::file_size(e.path());
  EXPECT_EQ(sizes.count("ckpt-000000004.h5"), 1u);
  int kept_truncated = 0, kept_garbage = 0;
  for (auto& [name, size] : sizes) {
    kept_truncated += name.rfind("ckpt-000000002.h5", 0) == 0 && size == 1000;
    kept_garbage += name.rfind("ckpt-000000001.h5", 0) == 0 && size == 7;
  }
  EXPECT_EQ(kept_truncated, 1);
  EXPECT_EQ(kept_garbage, 1);
}

// What resume is told of each file it cannot read: the reason, with the sizes
// a truncated copy has and should have.
TEST(Checkpoint, ScanSaysWhyAFileCannotBeRead) {
  TempDir dir;
  const fs::path d = dir.path();
  save_checkpoint(sample(10), d / "ckpt-000000010.h5");
  const auto whole = fs::file_size(d / "ckpt-000000010.h5");
  save_checkpoint(sample(20), d / "ckpt-000000020.h5");
  fs::resize_file(d / "ckpt-000000020.h5", whole / 2);
  std::ofstream(d / "ckpt-000000030.h5") << "garbage";
  std::ofstream(d / "ckpt-000000040.h5").close();
  hid_t f = H5Fcreate((d / "ckpt-000000050.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Fclose(f);
  const CheckpointScan scan = scan_checkpoints(d);
  ASSERT_EQ(scan.readable.size(), 1u);
  EXPECT_EQ(scan.readable[0].step, 10);
  std::map<std::string, std::string> why;
  for (auto& u : scan.unreadable) why[u.path.filename().string()] = u.reason;
  EXPECT_EQ(why["ckpt-000000020.h5"], "cannot open as HDF5: truncated: " + std::to_string(whole / 2) +
                                          " bytes of the " + std::to_string(whole) +
                                          " its HDF5 superblock records");
  EXPECT_EQ(why["ckpt-000000030.h5"], "cannot open as HDF5: not an HDF5 file (7 bytes, no HDF5 signature)");
  EXPECT_EQ(why["ckpt-000000040.h5"], "cannot open as HDF5: empty (0 bytes)");
  EXPECT_NE(why["ckpt-000000050.h5"].find("not a strata checkpoint"), std::string::npos)
      << why["ckpt-000000050.h5"];
  EXPECT_EQ(why.size(), 4u);
}
