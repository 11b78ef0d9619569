// Tensor basics: construction, dtype conversion, strides and contiguity, clone vs
// shared handles, copy_, and the errors a user meets.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "core/ops.h"
#include "core/random.h"
#include "core/tensor.h"

using namespace strata;

TEST(Tensor, ConstructionAndMetadata) {
  Tensor z = Tensor::zeros({2, 3});
  EXPECT_EQ(z.dim(), 2);
  EXPECT_EQ(z.numel(), 6);
  EXPECT_EQ(z.size(-1), 3);
  EXPECT_EQ(z.dtype(), DType::f32);
  EXPECT_EQ(z.str(), "Tensor[f32, [2, 3]]");
  for (float v : z.to_float_vector()) EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(Tensor::full({4}, 2.5).to_float_vector(), std::vector<float>(4, 2.5f));
  EXPECT_DOUBLE_EQ(Tensor::scalar(7.0).item(), 7.0);
  EXPECT_EQ(Tensor::scalar(1.0).dim(), 0);
  Tensor i = Tensor::from_vector_i64({1, -2, 3}, {3});
  EXPECT_EQ(i.dtype(), DType::i64);
  EXPECT_EQ(i.to_i64_vector(), (std::vector<int64_t>{1, -2, 3}));
}

TEST(Tensor, DtypeConversionRoundTrips) {
  std::vector<float> v{0.0f, 1.0f, -2.5f, 0.333333f, 65504.0f, 1e-3f};
  Tensor a = Tensor::from_vector(v, {6});
  Tensor h = a.to(DType::f16), b = a.to(DType::bf16), d = a.to(DType::f64);
  EXPECT_EQ(h.dtype(), DType::f16);
  auto hv = h.to(DType::f32).to_float_vector(), bv = b.to_float_vector(), dv = d.to_float_vector();
  for (size_t k = 0; k < v.size(); ++k) {
    EXPECT_NEAR(hv[k], v[k], std::abs(v[k]) * 1e-3 + 1e-6) << k;  // 11-bit mantissa
    EXPECT_NEAR(bv[k], v[k], std::abs(v[k]) * 8e-3 + 1e-6) << k;  // 8-bit mantissa
    EXPECT_EQ(dv[k], v[k]);
  }
  // exactly representable values survive f16 exactly; ints truncate toward zero
  EXPECT_EQ(Tensor::from_vector({-2.5f}, {1}, DType::f16).item(), -2.5);
  EXPECT_EQ(Tensor::from_vector({2.75f, -1.5f}, {2}).to(DType::i32).to_i64_vector(),
            (std::vector<int64_t>{2, -1}));
  // f16 overflows to inf (round to nearest even past the largest finite value)
  EXPECT_TRUE(std::isinf(Tensor::from_vector({1e6f}, {1}, DType::f16).item()));
}

TEST(Tensor, StridesContiguityAndViews) {
  Tensor t = Tensor::from_vector({0, 1, 2, 3, 4, 5}, {2, 3});
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{3, 1}));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(contiguous_strides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  Tensor v = t.view_as_shape({3, 2});
  EXPECT_EQ(v.shape(), (Shape{3, 2}));
  EXPECT_TRUE(v.storage() == t.storage());  // a view shares storage
  v.data<float>()[0] = 42.0f;
  EXPECT_EQ(t.to_float_vector()[0], 42.0f);
  EXPECT_TRUE(t.contiguous().same(t));  // already contiguous: the same handle
  EXPECT_THROW(t.view_as_shape({4, 2}), ShapeError);
  EXPECT_THROW(t.size(2), ShapeError);
}

TEST(Tensor, CloneIsDeepHandleCopyIsShallow) {
  Tensor a = Tensor::from_vector({1, 2, 3}, {3});
  Tensor shallow = a;
  Tensor deep = a.clone();
  EXPECT_TRUE(shallow.same(a));
  EXPECT_FALSE(deep.same(a));
  a.fill_(9.0);
  EXPECT_EQ(shallow.to_float_vector(), std::vector<float>(3, 9.0f));
  EXPECT_EQ(deep.to_float_vector(), (std::vector<float>{1, 2, 3}));
}

TEST(Tensor, CopyConvertsAndChecks) {
  Tensor dst = Tensor::zeros({2, 2});
  dst.copy_(Tensor::from_vector({1, 2, 3, 4}, {4}, DType::bf16));  // same numel, other shape and dtype
  EXPECT_EQ(dst.to_float_vector(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_THROW(dst.copy_(Tensor::zeros({3})), ShapeError);
}

TEST(Tensor, ErrorsSayWhatFailed) {
  EXPECT_THROW(Tensor::from_vector({1, 2, 3}, {2, 2}), ShapeError);
  EXPECT_THROW(Tensor::zeros({-1, 2}), ShapeError);
  EXPECT_THROW(Tensor::zeros({2}).item(), ShapeError);
  EXPECT_THROW(Tensor::zeros({2}, DType::i64).set_requires_grad(true), Error);
  try {
    add(Tensor::zeros({2, 3}), Tensor::zeros({4}));
    FAIL() << "broadcasting [2, 3] with [4] should fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
  }
}

TEST(Tensor, SeededRandomIsReproducible) {
  Generator g1(7), g2(7), g3(8);
  auto a = Tensor::uniform({100}, -1, 1, g1).to_float_vector();
  auto b = Tensor::uniform({100}, -1, 1, g2).to_float_vector();
  auto c = Tensor::uniform({100}, -1, 1, g3).to_float_vector();
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (float x : a) {
    EXPECT_GE(x, -1.0f);
    EXPECT_LT(x, 1.0f);
  }
  Generator g4(3);
  std::string s = g4.state();
  auto n1 = Tensor::normal({10}, 0, 1, g4).to_float_vector();
  g4.set_state(s);
  EXPECT_EQ(Tensor::normal({10}, 0, 1, g4).to_float_vector(), n1);
}
