// The CUDA backend's host-side arithmetic and bookkeeping, checked on every
// machine (unit label): the conv algorithm cache, the split plans and index maps
// of the deterministic reductions, and -- in a CUDA build, since descriptors are
// host objects -- cuDNN's output shape for our descriptors against the shape rule.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/conv_algo_cache.h"
#include "kernels/cuda/reduce_plan.h"
#include "kernels/op_table.h"

#if STRATA_HAVE_CUDA
#include "base/error.h"
#include "kernels/cuda/cudnn_desc.h"
#endif

namespace strata::cuda {
namespace {

ConvKey key(int64_t n, int64_t stride, DType dt = DType::f32, ConvPass p = ConvPass::forward) {
  ConvKey k;
  k.pass = p;
  k.dtype = dt;
  k.n = n;
  k.c = 3;
  k.h = k.w = 8;
  k.o = 4;
  k.kh = k.kw = 3;
  k.stride_h = k.stride_w = stride;
  return k;
}

TEST(ConvAlgoCache, SearchesOncePerProblem) {
  ConvAlgoCache cache;
  int searches = 0;
  auto find = [&] {
    ++searches;
    return ConvAlgo{searches, 0, 64u * static_cast<size_t>(searches), true};
  };
  ConvAlgo first = cache.get(key(2, 1), find);
  ConvAlgo again = cache.get(key(2, 1), find);
  EXPECT_EQ(searches, 1);
  EXPECT_EQ(again.algo, first.algo);
  EXPECT_EQ(again.workspace, first.workspace);
  // every field of the problem is part of the key
  cache.get(key(3, 1), find);
  cache.get(key(2, 2), find);
  cache.get(key(2, 1, DType::f16), find);
  cache.get(key(2, 1, DType::f32, ConvPass::backward_filter), find);
  ConvKey tf32 = key(2, 1);
  tf32.allow_tf32 = true;
  cache.get(tf32, find);
  ConvKey other_device = key(2, 1);
  other_device.device = 1;
  cache.get(other_device, find);
  EXPECT_EQ(searches, 7);
  ConvAlgoCacheStats s = cache.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 7u);
  EXPECT_EQ(s.entries, 7u);
}

TEST(ConvAlgoCache, AFailedSearchCachesNothing) {
  ConvAlgoCache cache;
  int searches = 0;
  auto failing = [&]() -> ConvAlgo {
    ++searches;
    throw std::runtime_error("no algorithm");
  };
  EXPECT_THROW(cache.get(key(2, 1), failing), std::runtime_error);
  EXPECT_THROW(cache.get(key(2, 1), failing), std::runtime_error);
  EXPECT_EQ(searches, 2);
  EXPECT_EQ(cache.stats().entries, 0u);
}

// Every element of every output lies in exactly one non-empty block.
TEST(ReducePlan, SplitsCoverEachOutputWithoutEmptyBlocks) {
  for (int64_t outputs : {1, 3, 64, 1000, 100000})
    for (int64_t total : {1, 2, 255, 256, 4096, 100003, 12845056})
      for (int sms : {1, 108, 132}) {
        SplitPlan p = plan_splits(outputs, total, sms, 256);
        std::string what =
            std::to_string(outputs) + " x " + std::to_string(total) + " on " + std::to_string(sms);
        ASSERT_GE(p.splits, 1) << what;
        ASSERT_LE(p.splits, 1024) << what;
        EXPECT_GE(p.splits * p.chunk, total) << what;
        EXPECT_LT((p.splits - 1) * p.chunk, total) << what;
        // small problems stay in one block; large ones fill the device
        if (total <= 1024) {
          EXPECT_EQ(p.splits, 1) << what;
        }
        if (total >= 256 * 4 * 1024 && outputs < sms) {
          EXPECT_GE(outputs * p.splits, 4 * sms) << what;
        }
      }
  EXPECT_EQ(plan_splits(0, 10, 132, 256).splits, 1);
  EXPECT_EQ(plan_splits(5, 0, 132, 256).chunk, 0);
}

// The channel walk of the reductions visits each element of its channel once.
TEST(ReducePlan, ChannelWalkEnumeratesExactlyTheChannel) {
  for (int64_t N : {1, 3})
    for (int64_t C : {1, 4})
      for (int64_t S : {1, 5, 12}) {
        std::vector<int> seen(static_cast<size_t>(N * C * S), 0);
        for (int64_t c = 0; c < C; ++c)
          for (int64_t j = 0; j < N * S; ++j) {
            int64_t i = channel_element(j, c, C, S);
            ASSERT_GE(i, 0);
            ASSERT_LT(i, N * C * S);
            EXPECT_EQ(channel_of(i, C, S), c) << "N " << N << " C " << C << " S " << S << " j " << j;
            ++seen[static_cast<size_t>(i)];
          }
        for (int v : seen) EXPECT_EQ(v, 1);
      }
}

#if STRATA_HAVE_CUDA

// The descriptors need no device: cuDNN's output size for our descriptors must
// be the op's shape rule (catches swapped pad/stride or H/W arguments).
TEST(CudnnDescriptors, OutputShapeMatchesTheShapeRule) {
  struct Case {
    Shape x, w;
    int64_t sh, sw, ph, pw;
  };
  for (const Case& c :
       {Case{{2, 3, 9, 8}, {4, 3, 3, 3}, 1, 1, 1, 1}, Case{{2, 4, 11, 10}, {6, 4, 3, 3}, 2, 2, 1, 1},
        Case{{1, 3, 7, 6}, {2, 3, 3, 3}, 2, 2, 1, 1}, Case{{2, 2, 6, 7}, {3, 2, 2, 3}, 2, 1, 0, 1},
        Case{{1, 1, 2, 3}, {2, 1, 3, 3}, 1, 2, 2, 1}, Case{{3, 5, 13, 4}, {2, 5, 5, 1}, 3, 1, 2, 0}}) {
    for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
      OpAttrs a;
      a.stride[0] = c.sh;
      a.stride[1] = c.sw;
      a.padding[0] = c.ph;
      a.padding[1] = c.pw;
      Shape want = op_info(Op::conv2d).infer({{c.x, dt}, {c.w, dt}, {{c.w[0]}, dt}}, a)[0].shape;
      TensorDesc x;
      FilterDesc w;
      ConvDesc conv;
      x.set_nchw(dt, c.x[0], c.x[1], c.x[2], c.x[3], "conv2d");
      w.set(dt, c.w[0], c.w[1], c.w[2], c.w[3], "conv2d");
      conv.set_2d(c.ph, c.pw, c.sh, c.sw, CUDNN_DATA_FLOAT, "conv2d");
      int n = 0, o = 0, h = 0, wd = 0;
      ASSERT_EQ(cudnnGetConvolution2dForwardOutputDim(conv.get(), x.get(), w.get(), &n, &o, &h, &wd),
                CUDNN_STATUS_SUCCESS);
      EXPECT_EQ((Shape{n, o, h, wd}), want) << shape_str(c.x) << " * " << shape_str(c.w);
    }
  }
}

TEST(CudnnDescriptors, SizesBeyondIntAreAnErrorNamingTheOp) {
  TensorDesc x;
  try {
    x.set_nchw(DType::f16, 1, 1, int64_t(1) << 16, int64_t(1) << 16, "conv2d");
    FAIL() << "a 2^32-element tensor was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv2d"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cudnn_data_type(DType::f64, "conv2d"), Error);
}

#endif

}  // namespace
}  // namespace strata::cuda
