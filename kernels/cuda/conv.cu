// conv2d on CUDA through cuDNN 9: x[N,C,H,W], w[O,C,kh,kw], b[O] -> y[N,O,Ho,Wo],
// NCHW, f32/f16/bf16 storage with FP32 accumulation (compute type FLOAT), one
// group, dilation 1, stride and padding per axis from OpAttrs. Each pass (forward,
// backward data, backward filter) asks cuDNN's heuristic once per problem --
// pass, dtype, shapes, stride, padding, TF32 permission, device -- for its
// algorithms in order of expected speed (cudnnGet*Algorithm_v7, no timing), and
// caches the first deterministic one that obeys the math rule (Tensor Cores for
// f16/bf16, and for f32 only when context().allow_tf32, else FMA math so f32 is
// exact to FP32 rounding) within a fixed workspace cap: conv_algo_pick.h, which
// says why a choice that every process makes alike matters (a resumed run must
// compute the bits the run it resumes did). Workspaces come from cuda::Scratch on the context stream. cuDNN
// writes y, dx and dw (beta = 0: no zero-fill needed); the bias and its gradient
// are conv_bias.cu's kernels (an elementwise pass over y; a deterministic
// per-channel sum of dy), which the host SIMT emulator also runs.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/backends.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/conv_algo_cache.h"
#include "kernels/cuda/conv_algo_pick.h"
#include "kernels/cuda/conv_bias.h"
#include "kernels/cuda/cudnn_desc.h"
#include "kernels/cuda/half_io.cuh"

namespace strata::cuda {
namespace {

// Algorithms wanting more workspace are not used. A constant, not a share of the
// memory free at the time, so that every process picks alike (conv_algo_pick.h).
constexpr size_t kMaxWorkspace = size_t(1) << 30;
const char* kOp = "conv2d";

ConvAlgoCache& algo_cache() {
  static ConvAlgoCache cache;
  return cache;
}

// ---------------------------------------------------------------- problem and algorithm search

struct Geometry {
  DType dtype;
  int64_t n, c, h, w, o, kh, kw, ho, wo;
  int64_t sh, sw, ph, pw;
  Geometry(const TensorView& x, const TensorView& wt, const TensorView& y, const OpAttrs& a)
      : dtype(x.dtype),
        n(x.shape[0]),
        c(x.shape[1]),
        h(x.shape[2]),
        w(x.shape[3]),
        o(wt.shape[0]),
        kh(wt.shape[2]),
        kw(wt.shape[3]),
        ho(y.shape[2]),
        wo(y.shape[3]),
        sh(a.stride[0]),
        sw(a.stride[1]),
        ph(a.padding[0]),
        pw(a.padding[1]) {}
  std::string str() const {
    return std::string(dtype_name(dtype)) + " x " + shape_str({n, c, h, w}) + ", w " +
           shape_str({o, c, kh, kw}) + ", y " + shape_str({n, o, ho, wo}) + ", stride (" +
           std::to_string(sh) + ", " + std::to_string(sw) + "), padding (" + std::to_string(ph) + ", " +
           std::to_string(pw) + ")";
  }
  ConvKey key(ConvPass pass, bool tf32, int device) const {
    return ConvKey{pass, dtype, n, c, h, w, o, kh, kw, sh, sw, ph, pw, tf32, device};
  }
};

struct Problem {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  explicit Problem(const Geometry& g) {
    x.set_nchw(g.dtype, g.n, g.c, g.h, g.w, kOp);
    y.set_nchw(g.dtype, g.n, g.o, g.ho, g.wo, kOp);
    w.set(g.dtype, g.o, g.c, g.kh, g.kw, kOp);
    conv.set_2d(g.ph, g.pw, g.sh, g.sw, CUDNN_DATA_FLOAT, kOp);  // FP32 accumulation for every dtype
  }
};

// f32 without TF32 permission must stay on FMA kernels (CUDNN_DEFAULT_MATH allows TF32 on Ampere+).
bool strict_fp32(DType dt, bool tf32) { return dt == DType::f32 && !tf32; }
cudnnMathType_t search_math(DType dt, bool tf32) {
  return strict_fp32(dt, tf32) ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
}

// The chosen candidate of cuDNN's heuristic list (conv_algo_pick.h has the rule).
template <typename Perf>
ConvAlgo pick(const std::vector<Perf>& perf, int count, DType dt, bool tf32, const char* pass) {
  std::vector<ConvCandidate> c;
  for (int i = 0; i < count; ++i) {
    const Perf& p = perf[static_cast<size_t>(i)];
    c.push_back(ConvCandidate{static_cast<int>(p.algo), static_cast<int>(p.mathType), p.memory,
                              p.status == CUDNN_STATUS_SUCCESS, p.determinism == CUDNN_DETERMINISTIC});
  }
  std::optional<size_t> i = pick_conv_candidate(c, ConvPickRule{strict_fp32(dt, tf32), kMaxWorkspace});
  if (!i)
    throw Error(std::string("cuDNN's heuristic offers no usable ") + pass + " algorithm (" +
                std::to_string(count) + " listed)");
  const ConvCandidate& best = c[*i];
  cudnnMathType_t math = strict_fp32(dt, tf32) ? CUDNN_FMA_MATH : static_cast<cudnnMathType_t>(best.math);
  return ConvAlgo{best.algo, static_cast<int>(math), best.workspace, best.deterministic};
}

struct Call {
  Context& ctx;
  cudnnHandle_t handle;
  bool tf32;
  Call() : ctx(context()), handle(ctx.cudnn()), tf32(ctx.allow_tf32) {}
};

// The algorithm of one pass, from the cache or, the first time a problem is
// seen, from cuDNN's heuristic: count(&max) asks how many results to expect and
// list(max, &got, perf) fills them (the pass's cudnnGet*Algorithm_v7). Leaves
// p.conv set to the chosen math type.
template <typename Perf, typename Count, typename List>
ConvAlgo chosen_algo(const Call& call, const Geometry& g, Problem& p, ConvPass pass, const char* name,
                     Count&& count, List&& list) {
  ConvAlgo algo = algo_cache().get(g.key(pass, call.tf32, call.ctx.device), [&] {
    p.conv.set_math(search_math(g.dtype, call.tf32));
    int max = 0, got = 0;
    count(&max);
    std::vector<Perf> perf(static_cast<size_t>(max));
    list(max, &got, perf.data());
    return pick(perf, got, g.dtype, call.tf32, name);
  });
  p.conv.set_math(static_cast<cudnnMathType_t>(algo.math));
  return algo;
}

// Adds the op, the pass and the problem to any error from `fn`.
template <typename Fn>
void with_context(const char* pass, const Geometry& g, Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    throw Error(std::string(kOp) + " " + pass + " (" + g.str() + "): " + e.what());
  }
}

}  // namespace

// ---------------------------------------------------------------- launchers

void conv2d_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  Geometry g(in[0], in[1], out[0], a);
  if (out[0].numel() == 0) return;
  with_context("forward", g, [&] {
    Call call;
    any_float(in[2].data, in[2].dtype, kOp, "bias");  // a bad dtype is refused before cuDNN runs
    if (g.c == 0) {                                   // a sum over no input channel: y is the bias alone
      STRATA_CUDA_CHECK(cudaMemsetAsync(out[0].data, 0, out[0].bytes(), call.ctx.stream));
    } else {
      Problem p(g);
      ConvAlgo algo = chosen_algo<cudnnConvolutionFwdAlgoPerf_t>(
          call, g, p, ConvPass::forward, "forward",
          [&](int* max) {
            STRATA_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(call.handle, max));
          },
          [&](int max, int* got, cudnnConvolutionFwdAlgoPerf_t* perf) {
            STRATA_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
                call.handle, p.x.get(), p.w.get(), p.conv.get(), p.y.get(), max, got, perf));
          });
      Scratch ws(algo.workspace);
      float one = 1.0f, zero = 0.0f;
      STRATA_CUDNN_CHECK(cudnnConvolutionForward(call.handle, &one, p.x.get(), in[0].data, p.w.get(),
                                                 in[1].data, p.conv.get(),
                                                 static_cast<cudnnConvolutionFwdAlgo_t>(algo.algo), ws.data(),
                                                 ws.bytes(), &zero, p.y.get(), out[0].data));
    }
    conv_bias::add(in[2], out[0]);
  });
}

void conv2d_backward(const OpAttrs& a, const TensorView* in, const TensorView*, const TensorView& gout,
                     TensorView* gin) {
  Geometry g(in[0], in[1], gout, a);
  with_context("backward", g, [&] {
    Call call;
    bool empty = gout.numel() == 0 || g.c == 0;  // no product to differentiate: dw = 0 (dx is empty or 0)
    float one = 1.0f, zero = 0.0f;
    if (empty) {
      for (int i = 0; i < 2; ++i)
        if (gin[i].defined() && gin[i].numel() > 0)
          STRATA_CUDA_CHECK(cudaMemsetAsync(gin[i].data, 0, gin[i].bytes(), call.ctx.stream));
    } else {
      Problem p(g);
      if (gin[0].defined()) {
        ConvAlgo algo = chosen_algo<cudnnConvolutionBwdDataAlgoPerf_t>(
            call, g, p, ConvPass::backward_data, "backward-data",
            [&](int* max) {
              STRATA_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(call.handle, max));
            },
            [&](int max, int* got, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
              STRATA_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                  call.handle, p.w.get(), p.y.get(), p.conv.get(), p.x.get(), max, got, perf));
            });
        Scratch ws(algo.workspace);
        STRATA_CUDNN_CHECK(
            cudnnConvolutionBackwardData(call.handle, &one, p.w.get(), in[1].data, p.y.get(), gout.data,
                                         p.conv.get(), static_cast<cudnnConvolutionBwdDataAlgo_t>(algo.algo),
                                         ws.data(), ws.bytes(), &zero, p.x.get(), gin[0].data));
      }
      if (gin[1].defined()) {
        ConvAlgo algo = chosen_algo<cudnnConvolutionBwdFilterAlgoPerf_t>(
            call, g, p, ConvPass::backward_filter, "backward-filter",
            [&](int* max) {
              STRATA_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(call.handle, max));
            },
            [&](int max, int* got, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
              STRATA_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                  call.handle, p.x.get(), p.y.get(), p.conv.get(), p.w.get(), max, got, perf));
            });
        Scratch ws(algo.workspace);
        STRATA_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
            call.handle, &one, p.x.get(), in[0].data, p.y.get(), gout.data, p.conv.get(),
            static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo.algo), ws.data(), ws.bytes(), &zero, p.w.get(),
            gin[1].data));
      }
    }
    if (gin[2].defined()) conv_bias::grad(gout, gin[2]);
  });
}

ConvAlgoCacheStats conv_algo_cache_stats() { return algo_cache().stats(); }

}  // namespace strata::cuda
