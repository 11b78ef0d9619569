// The oneDNN conv2d path against strata's im2col + GEMM kernels on the same
// inputs (the op suite checks whichever the cpu backend picks against the f64
// reference; this one holds both CPU paths to each other, slicing included): odd
// shapes, uneven batch slices over the pool, one thread, calls from inside a
// parallel region, plan reuse, the calls it must decline, and OpenMP's thread
// setting left as it was.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "host_f32.h"
#include "kernels/cpu/conv.h"
#include "kernels/runtime/parallel.h"

namespace strata {
namespace {

struct Case {
  std::string name;
  int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw;
};

struct ConvRun {
  std::vector<float> y, dx, dw, db;
};

class ConvInputs {
 public:
  explicit ConvInputs(const Case& c) : c_(c) {
    a_.stride[0] = c.sh;
    a_.stride[1] = c.sw;
    a_.padding[0] = c.ph;
    a_.padding[1] = c.pw;
    ho_ = (c.h + 2 * c.ph - c.kh) / c.sh + 1;
    wo_ = (c.w + 2 * c.pw - c.kw) / c.sw + 1;
    x_ = random_vec(c.n * c.c * c.h * c.w, 1);
    w_ = random_vec(c.o * c.c * c.kh * c.kw, 2);
    b_ = random_vec(c.o, 3);
    dy_ = random_vec(c.n * c.o * ho_ * wo_, 4);
  }

  // Runs forward and backward through the chosen path; false if it declined.
  bool run(bool dnnl, ConvRun& r) {
    auto nan = std::numeric_limits<float>::quiet_NaN();  // outputs start as NaN: every value must be written
    r.y.assign(static_cast<size_t>(c_.n * c_.o * ho_ * wo_), nan);
    r.dx.assign(x_.size(), nan);
    r.dw.assign(w_.size(), nan);
    r.db.assign(b_.size(), nan);
    TensorView in[3] = {view(x_, {c_.n, c_.c, c_.h, c_.w}), view(w_, {c_.o, c_.c, c_.kh, c_.kw}),
                        view(b_, {c_.o})};
    TensorView out[1] = {view(r.y, {c_.n, c_.o, ho_, wo_})};
    TensorView gout = view(dy_, out[0].shape);
    TensorView gin[3] = {view(r.dx, in[0].shape), view(r.dw, in[1].shape), view(r.db, in[2].shape)};
    if (!dnnl) {
      cpu::conv2d_im2col_forward(a_, in, out);
      cpu::conv2d_im2col_backward(a_, in, out, gout, gin);
      return true;
    }
    if (!cpu::conv2d_dnnl_forward(a_, in, out)) return false;
    EXPECT_TRUE(cpu::conv2d_dnnl_backward(a_, in, out, gout, gin)) << c_.name;
    return true;
  }

 private:
  Case c_;
  OpAttrs a_;
  int64_t ho_, wo_;
  std::vector<float> x_, w_, b_, dy_;
};

void expect_close(const std::vector<float>& want, const std::vector<float>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  double scale = 1e-6;
  for (float v : want) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(want[i], got[i], 1e-5 * scale) << what << " at " << i;  // f32 sums in another order
}

void expect_paths_agree(const Case& c) {
  ConvInputs inputs(c);
  ConvRun im2col, dnnl;
  inputs.run(false, im2col);
  ASSERT_TRUE(inputs.run(true, dnnl)) << c.name << ": oneDNN declined";
  expect_close(im2col.y, dnnl.y, c.name + " y");
  expect_close(im2col.dx, dnnl.dx, c.name + " dx");
  expect_close(im2col.dw, dnnl.dw, c.name + " dw");
  expect_close(im2col.db, dnnl.db, c.name + " db");
}

const std::vector<Case> kCases = {
    {"cnn-second-layer", 4, 32, 14, 14, 64, 3, 3, 1, 1, 1, 1},
    {"odd-channels", 3, 9, 9, 7, 5, 3, 3, 1, 1, 1, 1},
    {"stride2-pad", 2, 8, 7, 6, 2, 3, 3, 2, 2, 1, 1},
    {"nonsquare", 2, 8, 6, 7, 3, 2, 3, 2, 1, 0, 1},
    {"1x1", 3, 12, 3, 5, 5, 1, 1, 1, 1, 0, 0},
    {"1x1-stride2", 2, 16, 5, 5, 8, 1, 1, 2, 2, 0, 0},
    {"5x5-pad2", 2, 8, 11, 11, 16, 5, 5, 1, 1, 2, 2},
    {"uneven-slices", 5, 8, 6, 6, 8, 3, 3, 1, 1, 1, 1},
};

class ConvDnnl : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu::dnnl_conv_available())
      GTEST_SKIP() << "built without oneDNN (STRATA_DNNL=OFF or libdnnl-dev absent)";
    set_num_threads(2);
  }
  void TearDown() override { set_num_threads(0); }
};

TEST_F(ConvDnnl, MatchesIm2colOnTwoThreads) {
  for (const auto& c : kCases) expect_paths_agree(c);
}

TEST_F(ConvDnnl, MatchesIm2colOnOneThreadAndWhenNested) {
  set_num_threads(1);
  for (const auto& c : kCases) expect_paths_agree(c);
  set_num_threads(2);
  parallel_run(2, [&](int64_t i) { expect_paths_agree(kCases[static_cast<size_t>(i)]); });
}

TEST_F(ConvDnnl, ReusesPlansAndCountsCalls) {
  Case c{"reuse", 6, 8, 8, 8, 4, 3, 3, 1, 1, 1, 1};
  ConvInputs inputs(c);
  ConvRun r;
  ASSERT_TRUE(inputs.run(true, r));
  auto before = cpu::dnnl_conv_stats();
  ASSERT_TRUE(inputs.run(true, r));
  auto after = cpu::dnnl_conv_stats();
  EXPECT_EQ(after.plans, before.plans) << "the same shape built a second plan";
  EXPECT_EQ(after.calls, before.calls + 2) << "forward and backward";
}

TEST_F(ConvDnnl, DeclinesFewerImagesThanThreads) {
  Case c{"one-image", 1, 8, 8, 8, 4, 3, 3, 1, 1, 1, 1};
  ConvInputs inputs(c);
  ConvRun r;
  auto before = cpu::dnnl_conv_stats();
  EXPECT_FALSE(inputs.run(true, r));
  EXPECT_EQ(cpu::dnnl_conv_stats().declined, before.declined + 1);
}

TEST_F(ConvDnnl, DeclinesFewInputChannels) {
  Case c{"cnn-first-layer", 4, 1, 28, 28, 32, 3, 3, 1, 1, 1, 1};
  ConvInputs inputs(c);
  ConvRun r;
  EXPECT_FALSE(inputs.run(true, r));
}

TEST_F(ConvDnnl, DeclinesPaddingBeyondSame) {
  Case c{"pad-exceeds-kernel", 2, 8, 2, 3, 4, 3, 3, 1, 2, 2, 1};
  ConvInputs inputs(c);
  ConvRun r;
  EXPECT_FALSE(inputs.run(true, r));
}

TEST_F(ConvDnnl, DeclinesAnOutputThatSkipsTrailingRows) {
  // 6 rows, kernel 3, stride 2: the output covers rows 0-4 and never reads row 5
  Case c{"floor", 2, 8, 6, 6, 2, 3, 3, 2, 2, 0, 0};
  ConvInputs inputs(c);
  ConvRun r;
  EXPECT_FALSE(inputs.run(true, r));
}

TEST_F(ConvDnnl, LeavesOpenMpThreadCountAsItWas) {
  omp_set_num_threads(3);
  expect_paths_agree(kCases[0]);
  EXPECT_EQ(omp_get_max_threads(), 3);
  omp_set_num_threads(2);
}

}  // namespace
}  // namespace strata
