// The metric ops' CPU implementation (kernels/metric_ops.h) against a direct
// count: ties, half logits, top-5, the accumulate-don't-overwrite contract and
// the errors. The CUDA implementation is compared with this one in
// tests/train/trainer/test_device_step.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "base/error.h"
#include "kernels/metric_ops.h"
#include "kernels/runtime/half.h"

namespace strata {
namespace {

TensorView view_of(std::vector<float>& v, Shape shape) { return TensorView{v.data(), DType::f32, shape}; }
TensorView view_of(std::vector<int64_t>& v) {
  return TensorView{v.data(), DType::i64, {static_cast<int64_t>(v.size())}};
}
TensorView view_of(double& d) { return TensorView{&d, DType::f64, {}}; }

// Rows: label top alone; label tied with a lower index (a miss); label tied
// with a higher index (a hit); label third (a top-5 hit, top-1 miss); label
// sixth of six (a miss for both).
struct Batch {
  std::vector<float> logits = {
      5, 1, 0, 0, 0, 0,  // label 0: top
      2, 2, 0, 0, 0, 0,  // label 1: tied with class 0 -> not top
      3, 3, 0, 0, 0, 0,  // label 0: tied with class 1 -> top
      1, 4, 2, 3, 0, 0,  // label 2: two above -> top-5 only
      6, 5, 4, 3, 2, 1,  // label 5: five above -> neither
  };
  std::vector<int64_t> labels = {0, 1, 0, 2, 5};
};

TEST(MetricOps, CountsTopOneAndTopFiveUnderTheTieRule) {
  Batch b;
  double top1 = 0, top5 = 0;
  dev::count_hits(view_of(b.logits, {5, 6}), view_of(b.labels), view_of(top1), view_of(top5));
  EXPECT_EQ(top1, 2.0);  // rows 0 and 2
  EXPECT_EQ(top5, 4.0);  // all but row 4
}

TEST(MetricOps, AddsToTheAccumulatorsAndLeavesTopFiveOutWhenUndefined) {
  Batch b;
  double top1 = 10;
  dev::count_hits(view_of(b.logits, {5, 6}), view_of(b.labels), view_of(top1), TensorView{});
  dev::count_hits(view_of(b.logits, {5, 6}), view_of(b.labels), view_of(top1), TensorView{});
  EXPECT_EQ(top1, 14.0);
}

TEST(MetricOps, ReadsHalfLogitsAsFloats) {
  Batch b;
  for (DType dt : {DType::f16, DType::bf16}) {
    std::vector<uint16_t> h(b.logits.size());
    for (size_t i = 0; i < h.size(); ++i)
      h[i] = dt == DType::f16 ? float_to_f16_bits(b.logits[i]) : float_to_bf16_bits(b.logits[i]);
    double top1 = 0, top5 = 0;
    dev::count_hits(TensorView{h.data(), dt, {5, 6}}, view_of(b.labels), view_of(top1), view_of(top5));
    EXPECT_EQ(top1, 2.0) << dtype_name(dt);
    EXPECT_EQ(top5, 4.0) << dtype_name(dt);
  }
}

TEST(MetricOps, AddScaledAccumulatesInDouble) {
  float loss = 0.1f;
  double acc = 1.0;
  dev::add_scaled(TensorView{&loss, DType::f32, {}}, 128.0, view_of(acc));
  EXPECT_EQ(acc, 1.0 + 128.0 * static_cast<double>(0.1f));  // the product item() * n gave
}

TEST(MetricOps, RefusesBadShapesLabelsAndAccumulators) {
  Batch b;
  double top1 = 0;
  float f = 0;
  EXPECT_THROW(dev::count_hits(view_of(b.logits, {30}), view_of(b.labels), view_of(top1), TensorView{}),
               Error);
  std::vector<int64_t> bad = {0, 1, 0, 2, 6};  // class 6 of 6
  try {
    dev::count_hits(view_of(b.logits, {5, 6}), view_of(bad), view_of(top1), TensorView{});
    FAIL() << "an out-of-range label was counted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("label 6 of row 4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dev::add_scaled(TensorView{&f, DType::f32, {}}, 1.0, TensorView{&f, DType::f32, {}}), Error);
}

}  // namespace
}  // namespace strata
