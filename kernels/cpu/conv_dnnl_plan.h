// oneDNN's primitives for one conv2d slice shape (kernels/cpu/conv_dnnl.cpp):
// the forward, backward-data and backward-weights primitives on the layouts
// oneDNN picks, the reorders between those and strata's NCHW/OIHW, and per-thread
// buffers for reordered tensors and scratchpads. Only built with STRATA_DNNL.
#pragma once
#include <compare>
#include <cstddef>
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>

namespace strata::cpu {

// A slice's geometry: n images of x[n,c,h,w], w[o,c,kh,kw] -> y[n,o,ho,wo].
struct ConvKey {
  int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, ho, wo;
  auto operator<=>(const ConvKey&) const = default;
};

// A growable 64-byte-aligned buffer, kept between calls.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer();
  void* bytes(size_t n);
  template <typename T>
  T* get(int64_t elements) {
    return static_cast<T*>(bytes(static_cast<size_t>(elements) * sizeof(T)));
  }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

enum class Slot { weights, src, dst, dw_parts, scratchpad, count };

// One thread's buffers (strata's pool threads live as long as the process).
struct Workspace {
  AlignedBuffer slots[static_cast<int>(Slot::count)];
  AlignedBuffer& slot(Slot s) { return slots[static_cast<int>(s)]; }
};
Workspace& thread_workspace();

// One tensor's way between strata's plain layout and a primitive's.
class Relayout {
 public:
  Relayout() = default;
  Relayout(const dnnl::memory::desc& user, const dnnl::memory::desc& prim);
  // The tensor as the primitive reads it: `user` itself, or reordered into buf.
  const float* in(const float* user, AlignedBuffer& buf) const;
  // Where the primitive writes: `user` itself, or buf (then call out()).
  float* out_buffer(float* user, AlignedBuffer& buf) const;
  // Brings what the primitive wrote at `prim` into `user` (nothing when the same).
  void out(const float* prim, float* user) const;
  const dnnl::memory::desc& target() const { return prim_; }
  int64_t elements() const { return static_cast<int64_t>(prim_.get_size() / sizeof(float)); }

 private:
  dnnl::memory::desc user_, prim_;
  std::optional<dnnl::reorder> to_prim_, to_user_;
  size_t scratchpad_bytes_ = 0;
};

struct ConvPlan {
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights bwd_w;
  Relayout fwd_src, fwd_weights, fwd_dst;
  Relayout bwd_data_dy, bwd_weights_in, bwd_data_dx;
  Relayout bwd_w_src, bwd_w_dy, bwd_w_dw;
  dnnl::memory::desc bias;
  size_t scratchpad_bytes = 0;  // the largest any of the three primitives needs

  int64_t dw_elements() const { return bwd_w_dw.elements(); }
  void forward(const float* x, const float* w, const float* b, float* y) const;
  void backward_data(const float* dy, const float* w, float* dx) const;
  // dw in bwd_w_dw's primitive layout; db [o]
  void backward_weights(const float* x, const float* dy, float* dw, float* db) const;
};

// The plan for a slice shape, built on first use; nullptr when oneDNN has no
// implementation for it (remembered too). Call with OpenMP set to one thread.
const ConvPlan* find_plan(const ConvKey& k);
int64_t plan_count();

}  // namespace strata::cpu
