// conv2d through oneDNN (libdnnl, what PyTorch runs on CPUs): forward,
// backward-data and backward-weights (+ bias) on oneDNN's blocked layouts, with
// reorders from and to strata's NCHW/OIHW at the boundary (measured faster than
// oneDNN on plain NCHW, which falls back to its own im2col + GEMM; docs/kernels.md).
//
// Threading stays strata's: the batch is cut into one slice per pool thread and
// each thread runs oneDNN single-threaded on its slice (omp_set_num_threads(1)
// around every call), so no OpenMP team ever spins beside the pool's workers
// (kernels/runtime/parallel.h says why that matters here); weight gradients are per-slice
// partials summed at the end. Primitives are built once per slice shape and kept.
#include "kernels/cpu/conv.h"

#if !defined(STRATA_DNNL)

namespace strata::cpu {
bool dnnl_conv_available() { return false; }
bool conv2d_dnnl_forward(const OpAttrs&, const TensorView*, TensorView*) { return false; }
bool conv2d_dnnl_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&,
                          TensorView*) {
  return false;
}
DnnlConvStats dnnl_conv_stats() { return {}; }
}  // namespace strata::cpu

#else

#include <omp.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/conv_dnnl_plan.h"

// One OpenMP thread per call is how the slices stay strata's threads; a oneDNN
// threaded by TBB or a threadpool would run each slice on threads of its own.
#if DNNL_CPU_THREADING_RUNTIME != DNNL_RUNTIME_OMP && DNNL_CPU_THREADING_RUNTIME != DNNL_RUNTIME_SEQ
#error "kernels/cpu/conv_dnnl.cpp needs a oneDNN threaded by OpenMP (Debian's libdnnl-dev) or sequential"
#endif

namespace strata::cpu {
namespace {

std::atomic<int64_t> g_calls{0}, g_declined{0};

// oneDNN's calls on this thread use one OpenMP thread; the old setting comes back after.
class OmpSerial {
 public:
  OmpSerial() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OmpSerial() { omp_set_num_threads(saved_); }
  OmpSerial(const OmpSerial&) = delete;
  OmpSerial& operator=(const OmpSerial&) = delete;

 private:
  int saved_;
};

// The batch cut into `count` slices of nearly equal size.
struct Slices {
  int64_t n, count;
  int64_t begin(int64_t i) const { return i * (n / count) + std::min(i, n % count); }
  int64_t size(int64_t i) const { return n / count + (i < n % count ? 1 : 0); }
};

ConvKey key_of(const OpAttrs& a, const TensorView* in, const TensorView& out, int64_t n) {
  return {
      n,           in[0].size(1), in[0].size(2), in[0].size(3), in[1].size(0), in[1].size(2), in[1].size(3),
      a.stride[0], a.stride[1],   a.padding[0],  a.padding[1],  out.size(2),   out.size(3)};
}

// The plans of every slice size (at most two), or an empty vector when oneDNN
// does not take the call.
std::vector<const ConvPlan*> plans_for(const OpAttrs& a, const TensorView* in, const TensorView& out,
                                       const Slices& sl) {
  std::vector<const ConvPlan*> plans;
  for (int64_t i = 0; i < sl.count; ++i) {
    const ConvPlan* p = find_plan(key_of(a, in, out, sl.size(i)));
    if (!p) return {};
    plans.push_back(p);
  }
  return plans;
}

// Fewer input channels than oneDNN's AVX2 channel block (8) leave the blocked
// layout mostly padding: on the CNN's first layer (1 channel, 28x28, 128 images)
// oneDNN took 3.2 ms forward and 19.6 ms backward against im2col's 2.5 and 3.1.
constexpr int64_t kMinChannels = 8;

// Slices over the pool: one per thread, or none (decline) when there are fewer
// images than threads or too few input channels.
bool slicing(const TensorView& x, Slices& sl) {
  int64_t n = x.size(0), threads = in_parallel() ? 1 : num_threads();
  if (n < threads || x.size(1) < kMinChannels) return false;
  sl = {n, threads};
  return true;
}

}  // namespace

bool dnnl_conv_available() { return true; }

bool conv2d_dnnl_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  Slices sl{};
  if (!slicing(in[0], sl)) return ++g_declined, false;
  OmpSerial serial;
  auto plans = plans_for(a, in, out[0], sl);
  if (plans.empty()) return ++g_declined, false;
  ++g_calls;
  const ConvPlan& p0 = *plans[0];
  Workspace& caller = thread_workspace();
  const float* w = p0.fwd_weights.in(F(in[1]), caller.slot(Slot::weights));
  int64_t x_image = in[0].numel() / sl.n, y_image = out[0].numel() / sl.n;
  parallel_run(sl.count, [&](int64_t i) {
    OmpSerial serial_here;
    const ConvPlan& p = *plans[static_cast<size_t>(i)];
    Workspace& ws = thread_workspace();
    const float* x = p.fwd_src.in(F(in[0]) + sl.begin(i) * x_image, ws.slot(Slot::src));
    float* y_user = F(out[0]) + sl.begin(i) * y_image;
    float* y = p.fwd_dst.out_buffer(y_user, ws.slot(Slot::dst));
    p.forward(x, w, F(in[2]), y);
    p.fwd_dst.out(y, y_user);
  });
  return true;
}

bool conv2d_dnnl_backward(const OpAttrs& a, const TensorView* in, const TensorView* out,
                          const TensorView& gout, TensorView* gin) {
  Slices sl{};
  if (!slicing(in[0], sl)) return ++g_declined, false;
  OmpSerial serial;
  auto plans = plans_for(a, in, out[0], sl);
  if (plans.empty()) return ++g_declined, false;
  ++g_calls;
  const ConvPlan& p0 = *plans[0];
  bool want_dx = gin[0].defined(), want_dw = gin[1].defined(), want_db = gin[2].defined();
  Workspace& caller = thread_workspace();
  const float* w = want_dx ? p0.bwd_weights_in.in(F(in[1]), caller.slot(Slot::weights)) : nullptr;
  // per-slice partial weight and bias gradients, in the layout oneDNN writes
  int64_t dw_len = p0.dw_elements(), db_len = in[1].size(0);
  float* dw_parts =
      want_dw || want_db ? caller.slot(Slot::dw_parts).get<float>((dw_len + db_len) * sl.count) : nullptr;
  int64_t x_image = in[0].numel() / sl.n, y_image = gout.numel() / sl.n;
  parallel_run(sl.count, [&](int64_t i) {
    OmpSerial serial_here;
    const ConvPlan& p = *plans[static_cast<size_t>(i)];
    Workspace& ws = thread_workspace();
    const float* dy_user = F(gout) + sl.begin(i) * y_image;
    const float* dy = nullptr;  // dy in bwd_data's layout, reused by bwd_w when it wants the same
    if (want_dx) {
      float* dx_user = F(gin[0]) + sl.begin(i) * x_image;
      dy = p.bwd_data_dy.in(dy_user, ws.slot(Slot::dst));
      float* dx = p.bwd_data_dx.out_buffer(dx_user, ws.slot(Slot::src));
      p.backward_data(dy, w, dx);
      p.bwd_data_dx.out(dx, dx_user);
    }
    if (want_dw || want_db) {
      const float* x = p.bwd_w_src.in(F(in[0]) + sl.begin(i) * x_image, ws.slot(Slot::src));
      if (!dy || !(p.bwd_w_dy.target() == p.bwd_data_dy.target()))
        dy = p.bwd_w_dy.in(dy_user, ws.slot(Slot::dst));
      float* part = dw_parts + i * (dw_len + db_len);
      p.backward_weights(x, dy, part, part + dw_len);
    }
  });
  if (want_dw || want_db) {  // sum the partials into slice 0's, then out to OIHW and [O]
    for (int64_t i = 1; i < sl.count; ++i) {
      const float* src = dw_parts + i * (dw_len + db_len);
      for (int64_t k = 0; k < dw_len + db_len; ++k) dw_parts[k] += src[k];
    }
    if (want_dw) p0.bwd_w_dw.out(dw_parts, F(gin[1]));
    if (want_db) std::copy(dw_parts + dw_len, dw_parts + dw_len + db_len, F(gin[2]));
  }
  return true;
}

DnnlConvStats dnnl_conv_stats() { return {g_calls.load(), g_declined.load(), plan_count()}; }

}  // namespace strata::cpu

#endif
