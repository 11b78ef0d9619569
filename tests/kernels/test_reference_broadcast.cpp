// The f64 reference's broadcasting (kernels/reference/common.h) against values
// worked out by hand, so that it is checked against something other than the
// fast backends' stride plan (kernels/broadcast.h), which it no longer shares.
#include <gtest/gtest.h>

#include <vector>

#include "base/error.h"
#include "kernels/backends.h"
#include "kernels/reference/common.h"

namespace strata::reference {
namespace {

TEST(ReferenceBroadcast, OutputShapesByHand) {
  EXPECT_EQ(broadcast_shape({2, 1, 3}, {4, 1}, "t"), (Shape{2, 4, 3}));
  EXPECT_EQ(broadcast_shape({3}, {2, 3}, "t"), (Shape{2, 3}));
  EXPECT_EQ(broadcast_shape({5, 1}, {1, 6}, "t"), (Shape{5, 6}));
  EXPECT_EQ(broadcast_shape({}, {2, 2}, "t"), (Shape{2, 2}));
  EXPECT_THROW(broadcast_shape({2, 3}, {3, 2}, "t"), ShapeError);
  EXPECT_THROW(broadcast_shape({4}, {2, 3}, "t"), ShapeError);
}

// out (2, 4, 3) from a (2, 1, 3) and b (4, 1). Output element i has the
// multi-index (i / 12, i / 3 % 4, i % 3); a reads (i0, 0, i2) = 3 * i0 + i2,
// b reads (i1, 0) = i1. Worked out for a few i:
//   i = 0  -> (0,0,0): a 0, b 0      i = 5  -> (0,1,2): a 2, b 1
//   i = 11 -> (0,3,2): a 2, b 3      i = 13 -> (1,0,1): a 4, b 0
//   i = 23 -> (1,3,2): a 5, b 3
TEST(ReferenceBroadcast, SourceIndicesByHand) {
  const Shape out{2, 4, 3}, a{2, 1, 3}, b{4, 1};
  const int64_t table[][3] = {{0, 0, 0}, {5, 2, 1}, {11, 2, 3}, {13, 4, 0}, {23, 5, 3}};
  for (const auto& row : table) {
    EXPECT_EQ(broadcast_source(out, a, row[0]), row[1]) << "a at output " << row[0];
    EXPECT_EQ(broadcast_source(out, b, row[0]), row[2]) << "b at output " << row[0];
  }
  // a scalar operand always reads element 0; an operand of the output's shape reads i
  for (int64_t i = 0; i < 24; ++i) {
    EXPECT_EQ(broadcast_source(out, {}, i), 0);
    EXPECT_EQ(broadcast_source(out, out, i), i);
  }
}

// The reference add and its backward on those shapes, every element by hand:
// a = 0..5 as (2, 1, 3), b = 10, 20, 30, 40 as (4, 1).
TEST(ReferenceBroadcast, AddAndItsGradientByHand) {
  std::vector<double> a{0, 1, 2, 3, 4, 5}, b{10, 20, 30, 40}, y(24, -1), ones(24, 1), ga(6, -1), gb(4, -1);
  TensorView in[2] = {{a.data(), DType::f64, {2, 1, 3}, Device::cpu},
                      {b.data(), DType::f64, {4, 1}, Device::cpu}};
  TensorView out[1] = {{y.data(), DType::f64, {2, 4, 3}, Device::cpu}};
  const auto& add = reference_backend().ops[static_cast<size_t>(Op::add)];
  add.forward({}, in, out);
  for (int64_t i0 = 0; i0 < 2; ++i0)
    for (int64_t i1 = 0; i1 < 4; ++i1)
      for (int64_t i2 = 0; i2 < 3; ++i2)
        EXPECT_EQ(y[(i0 * 4 + i1) * 3 + i2], a[i0 * 3 + i2] + b[i1]) << i0 << "," << i1 << "," << i2;
  TensorView g{ones.data(), DType::f64, {2, 4, 3}, Device::cpu};
  TensorView gin[2] = {{ga.data(), DType::f64, {2, 1, 3}, Device::cpu},
                       {gb.data(), DType::f64, {4, 1}, Device::cpu}};
  add.backward({}, in, out, g, gin);
  // each a element is read by the 4 rows of b; each b element by the 6 elements of a
  for (double v : ga) EXPECT_EQ(v, 4);
  for (double v : gb) EXPECT_EQ(v, 6);
}

}  // namespace
}  // namespace strata::reference
