// Builds and runs the oneDNN primitives of conv_dnnl_plan.h. Every primitive and
// reorder takes a user scratchpad (the thread's own buffer), so that one
// primitive runs on several pool threads at once without oneDNN's shared one.
#if defined(STRATA_DNNL)

#include "kernels/cpu/conv_dnnl_plan.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>

#include "base/error.h"

namespace strata::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

memory scratchpad(size_t bytes) {
  memory::desc d({static_cast<memory::dim>(std::max<size_t>(bytes, 1))}, memory::data_type::u8, Tag::x);
  return memory(d, engine(), thread_workspace().slot(Slot::scratchpad).bytes(std::max<size_t>(bytes, 64)));
}

memory wrap(const memory::desc& d, const float* p) { return memory(d, engine(), const_cast<float*>(p)); }

void execute(const dnnl::primitive& p, std::unordered_map<int, memory> args, size_t scratchpad_bytes) {
  args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad(scratchpad_bytes));
  p.execute(thread_stream(), args);
}

size_t scratchpad_size(const dnnl::primitive_desc_base& pd) { return pd.scratchpad_desc().get_size(); }

std::unique_ptr<ConvPlan> build(const ConvKey& k) {
  memory::dims strides{k.sh, k.sw}, pad_l{k.ph, k.pw};
  // oneDNN wants the right/bottom padding that makes its output size ours
  memory::dims pad_r{(k.ho - 1) * k.sh + k.kh - k.h - k.ph, (k.wo - 1) * k.sw + k.kw - k.w - k.pw};
  if (pad_r[0] < 0 || pad_r[1] < 0) return nullptr;  // rows or columns the output never reads
  // Padding beyond "same" ((k-1)/2 a side): oneDNN 2.6's GEMM-based backward-weights
  // left the weight gradient NaN on a 3x3 padded by 2 (tests/kernels/test_conv_dnnl.cpp).
  auto beyond_same = [](int64_t pad, int64_t kernel) { return pad > (kernel - 1) / 2; };
  if (beyond_same(k.ph, k.kh) || beyond_same(pad_r[0], k.kh) || beyond_same(k.pw, k.kw) ||
      beyond_same(pad_r[1], k.kw))
    return nullptr;
  auto f32 = memory::data_type::f32;
  memory::desc x_user({k.n, k.c, k.h, k.w}, f32, Tag::nchw), w_user({k.o, k.c, k.kh, k.kw}, f32, Tag::oihw),
      b_user({k.o}, f32, Tag::x), y_user({k.n, k.o, k.ho, k.wo}, f32, Tag::nchw);
  memory::desc x_any({k.n, k.c, k.h, k.w}, f32, Tag::any), w_any({k.o, k.c, k.kh, k.kw}, f32, Tag::any),
      y_any({k.n, k.o, k.ho, k.wo}, f32, Tag::any);
  auto alg = dnnl::algorithm::convolution_direct;
  auto attr = user_scratchpad();
  dnnl::convolution_forward::primitive_desc fwd(
      {dnnl::prop_kind::forward_training, alg, x_any, w_any, b_user, y_any, strides, pad_l, pad_r}, attr,
      engine());
  dnnl::convolution_backward_data::primitive_desc bwd_data({alg, x_any, w_any, y_any, strides, pad_l, pad_r},
                                                           attr, engine(), fwd);
  dnnl::convolution_backward_weights::primitive_desc bwd_w(
      {alg, x_any, w_any, b_user, y_any, strides, pad_l, pad_r}, attr, engine(), fwd);
  auto p = std::make_unique<ConvPlan>();
  p->bias = b_user;
  p->scratchpad_bytes = std::max({scratchpad_size(fwd), scratchpad_size(bwd_data), scratchpad_size(bwd_w)});
  p->fwd = dnnl::convolution_forward(fwd);
  p->bwd_data = dnnl::convolution_backward_data(bwd_data);
  p->bwd_w = dnnl::convolution_backward_weights(bwd_w);
  p->fwd_src = Relayout(x_user, fwd.src_desc());
  p->fwd_weights = Relayout(w_user, fwd.weights_desc());
  p->fwd_dst = Relayout(y_user, fwd.dst_desc());
  p->bwd_data_dy = Relayout(y_user, bwd_data.diff_dst_desc());
  p->bwd_weights_in = Relayout(w_user, bwd_data.weights_desc());
  p->bwd_data_dx = Relayout(x_user, bwd_data.diff_src_desc());
  p->bwd_w_src = Relayout(x_user, bwd_w.src_desc());
  p->bwd_w_dy = Relayout(y_user, bwd_w.diff_dst_desc());
  p->bwd_w_dw = Relayout(w_user, bwd_w.diff_weights_desc());
  return p;
}

std::mutex g_plans_mutex;
std::map<ConvKey, std::unique_ptr<ConvPlan>> g_plans;  // nullptr: oneDNN declined the shape

}  // namespace

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

void* AlignedBuffer::bytes(size_t n) {
  if (n > size_) {
    size_t rounded = (n + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) throw std::bad_alloc();
    std::free(data_);
    data_ = p;
    size_ = rounded;
  }
  return data_;
}

Workspace& thread_workspace() {
  thread_local Workspace ws;
  return ws;
}

Relayout::Relayout(const memory::desc& user, const memory::desc& prim) : user_(user), prim_(prim) {
  if (user == prim) return;
  auto attr = user_scratchpad();
  dnnl::reorder::primitive_desc there(engine(), user, engine(), prim, attr),
      back(engine(), prim, engine(), user, attr);
  scratchpad_bytes_ = std::max(scratchpad_size(there), scratchpad_size(back));
  to_prim_.emplace(there);
  to_user_.emplace(back);
}

const float* Relayout::in(const float* user, AlignedBuffer& buf) const {
  if (!to_prim_) return user;
  float* dst = buf.get<float>(elements());
  execute(*to_prim_, {{DNNL_ARG_FROM, wrap(user_, user)}, {DNNL_ARG_TO, wrap(prim_, dst)}},
          scratchpad_bytes_);
  return dst;
}

float* Relayout::out_buffer(float* user, AlignedBuffer& buf) const {
  return to_user_ ? buf.get<float>(elements()) : user;
}

void Relayout::out(const float* prim, float* user) const {
  if (to_user_)
    execute(*to_user_, {{DNNL_ARG_FROM, wrap(prim_, prim)}, {DNNL_ARG_TO, wrap(user_, user)}},
            scratchpad_bytes_);
}

void ConvPlan::forward(const float* x, const float* w, const float* b, float* y) const {
  execute(fwd,
          {{DNNL_ARG_SRC, wrap(fwd_src.target(), x)},
           {DNNL_ARG_WEIGHTS, wrap(fwd_weights.target(), w)},
           {DNNL_ARG_BIAS, wrap(bias, b)},
           {DNNL_ARG_DST, wrap(fwd_dst.target(), y)}},
          scratchpad_bytes);
}

void ConvPlan::backward_data(const float* dy, const float* w, float* dx) const {
  execute(bwd_data,
          {{DNNL_ARG_DIFF_DST, wrap(bwd_data_dy.target(), dy)},
           {DNNL_ARG_WEIGHTS, wrap(bwd_weights_in.target(), w)},
           {DNNL_ARG_DIFF_SRC, wrap(bwd_data_dx.target(), dx)}},
          scratchpad_bytes);
}

void ConvPlan::backward_weights(const float* x, const float* dy, float* dw, float* db) const {
  execute(bwd_w,
          {{DNNL_ARG_SRC, wrap(bwd_w_src.target(), x)},
           {DNNL_ARG_DIFF_DST, wrap(bwd_w_dy.target(), dy)},
           {DNNL_ARG_DIFF_WEIGHTS, wrap(bwd_w_dw.target(), dw)},
           {DNNL_ARG_DIFF_BIAS, wrap(bias, db)}},
          scratchpad_bytes);
}

const ConvPlan* find_plan(const ConvKey& k) {
  std::lock_guard<std::mutex> lock(g_plans_mutex);
  auto it = g_plans.find(k);
  if (it == g_plans.end()) {
    std::unique_ptr<ConvPlan> p;
    try {
      p = build(k);
    } catch (const dnnl::error&) {  // no implementation for this shape: im2col takes it
      p = nullptr;
    }
    it = g_plans.emplace(k, std::move(p)).first;
  }
  return it->second.get();
}

int64_t plan_count() {
  std::lock_guard<std::mutex> lock(g_plans_mutex);
  int64_t n = 0;
  for (auto& [k, p] : g_plans) n += p != nullptr;
  return n;
}

}  // namespace strata::cpu

#endif
