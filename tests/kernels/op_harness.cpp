#include "op_harness.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>

#include "base/error.h"
#include "elementwise_error.h"
#include "kernels/runtime/allocator.h"
#include "kernels/runtime/half.h"
#include "op_placement.h"

namespace strata::testing {

std::map<Op, CaseFn>& case_registry() {
  static std::map<Op, CaseFn> r;
  return r;
}

const char* backend_name(BackendKind b) {
  return b == BackendKind::cpu ? "cpu" : b == BackendKind::cuda ? "cuda" : "cuda-sim";
}
Device backend_device(BackendKind b) { return b == BackendKind::cpu ? Device::cpu : Device::cuda; }

namespace {
const Backend* g_cuda_sim = nullptr;

size_t g_sim_shift = 0;

// The emulated device's memory: one exact-size heap block per buffer (no
// cache), so that AddressSanitizer reports a kernel reading or writing past it;
// with a shift, each buffer starts that many bytes into its block, so that no
// buffer is 16-byte aligned and the launchers' scalar paths run.
class ExactHostMemory final : public Allocator {
 public:
  void* allocate(size_t bytes) override {
    return static_cast<char*>(::operator new(bytes + g_sim_shift + 1)) + g_sim_shift;
  }
  void deallocate(void* p, size_t) override { ::operator delete(static_cast<char*>(p) - g_sim_shift); }
  Device device() const override { return Device::cuda; }
  const char* name() const override { return "cuda-sim memory"; }
  AllocatorStats stats() const override { return {}; }
};
ExactHostMemory g_sim_memory;
void sim_copy(const TensorView& src, const TensorView& dst) {
  std::memcpy(dst.data, src.data, static_cast<size_t>(src.numel()));
}
}  // namespace

void set_cuda_sim_backend(const Backend& table) { g_cuda_sim = &table; }
void set_cuda_sim_shift(size_t bytes) { g_sim_shift = bytes; }

Buffer::Buffer(DType dt, Shape shape) {
  size_t n = static_cast<size_t>(shape_numel(shape)) * dtype_size(dt);
  bytes.resize(n + kGuardBytes);
  view = TensorView{bytes.data(), dt, std::move(shape)};
  fill_unwritten();
  fill_sentinel();
}

namespace {

template <typename T>
void fill_bits(void* p, size_t n, T bits) {
  for (size_t i = 0; i < n; ++i) std::memcpy(static_cast<std::byte*>(p) + i * sizeof(T), &bits, sizeof(T));
}

}  // namespace

void Buffer::fill_unwritten() {
  size_t n = static_cast<size_t>(view.numel());
  switch (view.dtype) {  // the quiet NaN of each floating format
    case DType::f64:
      return fill_bits<uint64_t>(view.data, n, 0x7ff8000000000000ull);
    case DType::f32:
      return fill_bits<uint32_t>(view.data, n, 0x7fc00000u);
    case DType::f16:
      return fill_bits<uint16_t>(view.data, n, 0x7e00u);
    case DType::bf16:
      return fill_bits<uint16_t>(view.data, n, 0x7fc0u);
    default:
      std::fill(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(view.bytes()), kGarbage);
  }
}

void Buffer::fill_sentinel() {
  std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(view.bytes()), bytes.end(), kSentinel);
}

bool Buffer::sentinel_intact() const {
  return std::all_of(bytes.begin() + static_cast<std::ptrdiff_t>(view.bytes()), bytes.end(),
                     [](std::byte b) { return b == kSentinel; });
}

std::vector<double> Buffer::to_double() const {
  size_t n = static_cast<size_t>(view.numel());
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    switch (view.dtype) {
      case DType::f64:
        v[i] = view.as<double>()[i];
        break;
      case DType::f32:
        v[i] = view.as<float>()[i];
        break;
      case DType::f16:
        v[i] = f16_bits_to_float(view.as<uint16_t>()[i]);
        break;
      case DType::bf16:
        v[i] = bf16_bits_to_float(view.as<uint16_t>()[i]);
        break;
      case DType::i64:
        v[i] = static_cast<double>(view.as<int64_t>()[i]);
        break;
      case DType::i32:
        v[i] = view.as<int32_t>()[i];
        break;
      case DType::u8:
        v[i] = view.as<uint8_t>()[i];
        break;
      case DType::u16:
        v[i] = view.as<uint16_t>()[i];
        break;
    }
  }
  return v;
}

void Buffer::from_double(const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); ++i) {
    switch (view.dtype) {
      case DType::f64:
        view.as<double>()[i] = v[i];
        break;
      case DType::f32:
        view.as<float>()[i] = static_cast<float>(v[i]);
        break;
      case DType::f16:
        view.as<uint16_t>()[i] = float_to_f16_bits(static_cast<float>(v[i]));
        break;
      case DType::bf16:
        view.as<uint16_t>()[i] = float_to_bf16_bits(static_cast<float>(v[i]));
        break;
      case DType::i64:
        view.as<int64_t>()[i] = static_cast<int64_t>(v[i]);
        break;
      case DType::i32:
        view.as<int32_t>()[i] = static_cast<int32_t>(v[i]);
        break;
      case DType::u8:
        view.as<uint8_t>()[i] = static_cast<uint8_t>(v[i]);
        break;
      case DType::u16:
        view.as<uint16_t>()[i] = static_cast<uint16_t>(v[i]);
        break;
    }
  }
}

DType input_dtype(bool fp32, DType dt) {
  if (dt == DType::f64) return DType::f64;
  return fp32 ? DType::f32 : dt;
}

OpInputs make_inputs(Op op, const OpCase& c, DType dt, uint64_t seed) {
  OpInputs r;
  std::mt19937_64 rng(seed * 1000003ull + static_cast<uint64_t>(op));
  for (auto& spec : c.inputs) {
    Buffer b(spec.integer ? DType::i64 : input_dtype(spec.fp32, dt), spec.shape);
    std::vector<double> v(static_cast<size_t>(shape_numel(spec.shape)));
    if (spec.integer) {
      std::uniform_int_distribution<int64_t> u(0, spec.int_high - 1);
      for (auto& x : v) x = static_cast<double>(u(rng));
    } else {
      std::uniform_real_distribution<double> u(spec.lo, spec.hi);
      for (auto& x : v) {
        do x = u(rng);
        while (std::fabs(x) < spec.min_abs);
      }
    }
    b.from_double(v);
    r.buffers.push_back(std::move(b));
    r.fp32.push_back(spec.fp32);
  }
  return r;
}

namespace {

bool is_fp32(const OpInputs& in, size_t i) { return i < in.fp32.size() && in.fp32[i]; }

}  // namespace

OpInputs convert_inputs(const OpInputs& src, DType dt) {
  OpInputs r;
  for (size_t i = 0; i < src.buffers.size(); ++i) {
    const Buffer& b = src.buffers[i];
    Buffer c(is_floating(b.view.dtype) ? input_dtype(is_fp32(src, i), dt) : b.view.dtype, b.view.shape);
    c.from_double(b.to_double());
    r.buffers.push_back(std::move(c));
    r.fp32.push_back(is_fp32(src, i));
  }
  return r;
}

std::vector<OutputSpec> output_specs(Op op, const OpAttrs& a, const OpInputs& in, DType dt) {
  std::vector<OutputSpec> specs;
  for (size_t i = 0; i < in.buffers.size(); ++i) {
    const TensorView& v = in.buffers[i].view;
    specs.push_back({v.shape, is_floating(v.dtype) ? input_dtype(is_fp32(in, i), dt) : v.dtype});
  }
  return op_info(op).infer(specs, a);
}

std::vector<double> round_to(DType dt, const std::vector<double>& v) {
  Buffer b(dt, {static_cast<int64_t>(v.size())});
  b.from_double(v);
  return b.to_double();
}

namespace {

// One run: `backend` empty for the reference (f64, its table called directly),
// else through kernel_forward/kernel_backward on that backend's device.
OpRun run(std::optional<BackendKind> backend, Op op, const OpAttrs& a, const OpInputs& in_src, DType dt,
          const std::vector<double>* grad_out) {
  const OpInfo& info = op_info(op);
  bool reference = !backend;
  if (reference) dt = DType::f64;
  OpInputs in = convert_inputs(in_src, dt);  // private copy: batch_norm writes its running stats
  auto outs = output_specs(op, a, in, dt);
  OpRun r;
  for (auto& o : outs)
    r.outputs.emplace_back(reference && is_floating(o.dtype) ? DType::f64 : o.dtype, o.shape);
  const bool sim = backend == BackendKind::cuda_sim;
  if (sim && !g_cuda_sim) throw Error("op harness: a cuda-sim run in a binary without the emulated backend");
  std::optional<Placement> placed;
  if (sim)
    placed.emplace(Device::cuda, g_sim_memory, &sim_copy);
  else
    placed.emplace(reference ? Device::cpu : backend_device(*backend));
  Placement& place = *placed;
  std::vector<TensorView> iv, ov;
  for (auto& b : in.buffers) iv.push_back(place.place(b));
  for (auto& b : r.outputs) ov.push_back(place.place(b));
  if (reference)
    reference_backend().ops[static_cast<size_t>(op)].forward(a, iv.data(), ov.data());
  else if (sim)
    g_cuda_sim->ops[static_cast<size_t>(op)].forward(a, iv.data(), ov.data());
  else
    kernel_forward(op, a, iv.data(), ov.data());
  for (auto& b : r.outputs) place.fetch(b);
  if (!grad_out) return r;
  Buffer go(r.outputs[0].view.dtype, r.outputs[0].view.shape);
  go.from_double(*grad_out);
  r.grad_inputs.resize(static_cast<size_t>(info.inputs));
  for (int i = 0; i < info.inputs; ++i)
    if (info.differentiable & (1u << i)) r.grad_inputs[i] = Buffer(iv[i].dtype, iv[i].shape);
  std::vector<TensorView> gv;
  for (auto& b : r.grad_inputs) gv.push_back(place.place(b));
  TensorView gov = place.place(go);
  if (reference)
    reference_backend().ops[static_cast<size_t>(op)].backward(a, iv.data(), ov.data(), gov, gv.data());
  else if (sim)
    g_cuda_sim->ops[static_cast<size_t>(op)].backward(a, iv.data(), ov.data(), gov, gv.data());
  else
    kernel_backward(op, a, iv.data(), ov.data(), gov, gv.data());
  for (auto& b : r.grad_inputs) place.fetch(b);
  return r;
}

}  // namespace

OpRun run_reference(Op op, const OpAttrs& a, const OpInputs& in, const std::vector<double>* grad_out) {
  return run(std::nullopt, op, a, in, DType::f64, grad_out);
}

OpRun run_backend(BackendKind b, Op op, const OpAttrs& a, const OpInputs& in, DType dt,
                  const std::vector<double>* grad_out) {
  return run(b, op, a, in, dt, grad_out);
}

double scaled_error(const std::vector<double>& x, const std::vector<double>& y, double floor_override) {
  return elementwise_error(x, y, floor_override);
}

}  // namespace strata::testing
