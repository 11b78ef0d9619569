#include <gtest/gtest.h>

#include "base/error.h"
#include "op_harness.h"

namespace strata::testing {
namespace {

OpAttrs shape_attr(Shape s) {
  OpAttrs a;
  a.shape = std::move(s);
  return a;
}
OpAttrs axes_attr(std::vector<int64_t> axes) {
  OpAttrs a;
  a.axes = std::move(axes);
  return a;
}
OpAttrs axis_attr(int64_t axis) {
  OpAttrs a;
  a.axis = axis;
  return a;
}
OpAttrs slice_attr(int64_t axis, int64_t start, int64_t end) {
  OpAttrs a;
  a.axis = axis;
  a.start = start;
  a.end = end;
  return a;
}

}  // namespace

STRATA_OP_CASES(reshape) {
  return {{"merge", {{{2, 3, 4}}}, shape_attr({6, 4})},
          {"flatten", {{{2, 3, 5}}}, shape_attr({-1})},
          {"infer-middle", {{{2, 3, 4}}}, shape_attr({4, -1, 3})},
          {"to-scalar", {{{1, 1}}}, shape_attr({})},
          {"large", {{{40, 1000}}}, shape_attr({1000, -1})}};
}

STRATA_OP_CASES(permute) {
  return {{"transpose", {{{5, 7}}}, axes_attr({1, 0})},
          {"rotate", {{{2, 3, 4}}}, axes_attr({2, 0, 1})},
          {"swap-last", {{{3, 4, 5}}}, axes_attr({0, 2, 1})},
          {"negative", {{{2, 3, 4}}}, axes_attr({-1, -3, -2})},
          {"identity", {{{3, 5}}}, axes_attr({0, 1})},
          {"4d-nchw-nhwc", {{{2, 3, 4, 5}}}, axes_attr({0, 2, 3, 1})},
          {"large-rotate", {{{32, 33, 40}}}, axes_attr({2, 0, 1})},
          {"large-keep-last", {{{20, 33, 64}}}, axes_attr({1, 0, 2})}};
}

STRATA_OP_CASES(concat) {
  return {{"axis0", {{{2, 3}}, {{4, 3}}}, axis_attr(0)},
          {"axis1", {{{2, 3, 4}}, {{2, 5, 4}}}, axis_attr(1)},
          {"last-negative", {{{3, 2}}, {{3, 7}}}, axis_attr(-1)},
          {"1d", {{{5}}, {{1}}}, axis_attr(0)},
          {"large", {{{80, 300}}, {{80, 213}}}, axis_attr(1)}};
}

STRATA_OP_CASES(slice) {
  return {
      {"middle", {{{4, 9}}}, slice_attr(1, 2, 7)},         {"first-axis", {{{6, 3, 2}}}, slice_attr(0, 1, 4)},
      {"negative", {{{3, 10}}}, slice_attr(-1, -4, -1)},   {"clamped-end", {{{5, 4}}}, slice_attr(0, 2, 100)},
      {"inner-axis", {{{2, 7, 3}}}, slice_attr(1, -5, 6)}, {"large", {{{100, 500}}}, slice_attr(1, 13, 413)}};
}

TEST(Reshape, NumelMismatchNamesBothShapes) {
  try {
    op_info(Op::reshape).infer({{{2, 3, 4}, DType::f32}}, shape_attr({5, 5}));
    FAIL() << "no ShapeError";
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("[2, 3, 4]"), std::string::npos) << m;
    EXPECT_NE(m.find("[5, 5]"), std::string::npos) << m;
  }
  EXPECT_THROW(op_info(Op::reshape).infer({{{2, 3, 4}, DType::f32}}, shape_attr({-1, -1})), ShapeError);
  EXPECT_THROW(op_info(Op::reshape).infer({{{2, 3, 4}, DType::f32}}, shape_attr({5, -1})), ShapeError);
}

TEST(Layout, BadArgumentsAreShapeErrors) {
  EXPECT_THROW(op_info(Op::permute).infer({{{2, 3}, DType::f32}}, axes_attr({0, 0})), ShapeError);
  EXPECT_THROW(op_info(Op::permute).infer({{{2, 3}, DType::f32}}, axes_attr({0})), ShapeError);
  EXPECT_THROW(op_info(Op::concat).infer({{{2, 3}, DType::f32}, {{3, 3}, DType::f32}}, axis_attr(1)),
               ShapeError);
  EXPECT_THROW(op_info(Op::slice).infer({{{2, 3}, DType::f32}}, slice_attr(2, 0, 1)), ShapeError);
}

}  // namespace strata::testing
