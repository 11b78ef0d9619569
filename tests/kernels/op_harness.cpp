#include "op_harness.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "kernels/half.h"

namespace strata::testing {

Buffer::Buffer(DType dt, Shape shape) {
  size_t n = static_cast<size_t>(shape_numel(shape)) * dtype_size(dt);
  bytes.assign(n + kGuardBytes, std::byte{0});
  view = TensorView{bytes.data(), dt, std::move(shape)};
  fill_sentinel();
}

void Buffer::fill_sentinel() {
  for (size_t i = view.bytes(); i < bytes.size(); ++i) bytes[i] = std::byte{0xA5};
}

bool Buffer::sentinel_intact() const {
  for (size_t i = view.bytes(); i < bytes.size(); ++i)
    if (bytes[i] != std::byte{0xA5}) return false;
  return true;
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
    }
  }
}

OpInputs make_inputs(Op op, const OpCase& c, DType dt, uint64_t seed) {
  OpInputs r;
  std::mt19937_64 rng(seed * 1000003ull + static_cast<uint64_t>(op));
  for (auto& spec : c.inputs) {
    Buffer b(spec.integer ? DType::i64 : dt, spec.shape);
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
  }
  return r;
}

OpInputs convert_inputs(const OpInputs& src, DType dt) {
  OpInputs r;
  for (auto& b : src.buffers) {
    Buffer c(is_floating(b.view.dtype) ? dt : b.view.dtype, b.view.shape);
    c.from_double(b.to_double());
    r.buffers.push_back(std::move(c));
  }
  return r;
}

namespace {

OpRun run(Op op, const OpAttrs& a, const OpInputs& in_src, DType dt, const std::vector<double>* grad_out,
          bool reference) {
  const OpInfo& info = op_info(op);
  OpInputs in = convert_inputs(in_src, dt);  // private copy: batch_norm writes its running stats
  std::vector<OutputSpec> specs;
  for (auto& b : in.buffers) specs.push_back({b.view.shape, b.view.dtype});
  auto outs = info.infer(specs, a);
  OpRun r;
  std::vector<TensorView> iv, ov;
  for (auto& b : in.buffers) iv.push_back(b.view);
  for (auto& o : outs) {
    r.outputs.emplace_back(is_floating(o.dtype) ? dt : o.dtype, o.shape);
    ov.push_back(r.outputs.back().view);
  }
  if (reference)
    reference_backend().ops[static_cast<size_t>(op)].forward(a, iv.data(), ov.data());
  else
    cpu_forward(op, a, iv.data(), ov.data());
  if (!grad_out) return r;
  Buffer go(dt, outs[0].shape);
  go.from_double(*grad_out);
  std::vector<TensorView> gv(static_cast<size_t>(info.inputs));
  r.grad_inputs.resize(static_cast<size_t>(info.inputs));
  for (int i = 0; i < info.inputs; ++i) {
    if (info.differentiable & (1u << i)) {
      r.grad_inputs[i] = Buffer(dt, in.buffers[i].view.shape);
      gv[i] = r.grad_inputs[i].view;
    }
  }
  if (reference)
    reference_backend().ops[static_cast<size_t>(op)].backward(a, iv.data(), ov.data(), go.view, gv.data());
  else
    cpu_backward(op, a, iv.data(), ov.data(), go.view, gv.data());
  return r;
}

}  // namespace

OpRun run_reference(Op op, const OpAttrs& a, const OpInputs& in, const std::vector<double>* grad_out) {
  return run(op, a, in, DType::f64, grad_out, true);
}

OpRun run_cpu(Op op, const OpAttrs& a, const OpInputs& in, DType dt, const std::vector<double>* grad_out) {
  return run(op, a, in, dt, grad_out, false);
}

double scaled_error(const std::vector<double>& x, const std::vector<double>& y) {
  double m = 1.0, e = 0.0;
  for (size_t i = 0; i < y.size(); ++i) {
    m = std::max(m, std::fabs(y[i]));
    double d = std::fabs(x[i] - y[i]);
    if (std::isnan(x[i]) != std::isnan(y[i])) d = INFINITY;
    e = std::max(e, d);
  }
  return e / m;
}

}  // namespace strata::testing
