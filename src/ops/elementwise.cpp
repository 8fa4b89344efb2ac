#include "attn/ops/elementwise.h"

#include "attn/autodiff/tape.h"
#include "kernels/elementwise.h"

namespace attn {
namespace {

// Both operands of a binary op: float32 and the same shape.
void check_same_shape(const char* op, const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) throw ShapeError(std::string(op) + ": undefined operand");
  if (a.dtype() != DType::f32 || b.dtype() != DType::f32)
    throw ShapeError(std::string(op) + ": operands must be float32, got " + dtype_name(a.dtype()) + " and " +
                     dtype_name(b.dtype()));
  if (a.shape() != b.shape())
    throw ShapeError(std::string(op) + ": 'b' expected " + a.shape().str() +
                     " (the shape of 'a', no broadcasting), got " + b.shape().str());
}

void check_float(const char* op, const Tensor& x) {
  if (!x.defined()) throw ShapeError(std::string(op) + ": 'x' is undefined");
  if (x.dtype() != DType::f32)
    throw ShapeError(std::string(op) + ": 'x' expected float32, got " + dtype_name(x.dtype()));
}

using UnaryForward = void (*)(const float*, float*, int64_t);
using UnaryBackward = void (*)(const float*, const float*, float*, int64_t);

// A unary op whose backward needs either its input (relu, gelu) or its output (tanh,
// sigmoid): `backward_from_output` says which one is passed to the backward kernel.
Tensor unary(const char* op, const Tensor& x, UnaryForward forward, UnaryBackward backward_kernel,
             bool backward_from_output) {
  check_float(op, x);
  Tensor y = Tensor::empty(x.shape());
  forward(x.f32(), y.f32(), x.numel());
  if (autodiff::needs_grad(x)) {
    autodiff::record(op, {y}, [x, y, backward_kernel, backward_from_output]() mutable {
      const Tensor& saved = backward_from_output ? y : x;
      backward_kernel(saved.f32(), y.grad().f32(), x.grad_accumulator().f32(), x.numel());
    });
  }
  return y;
}

using BinaryForward = void (*)(const float*, const float*, float*, int64_t);
using BinaryBackward = void (*)(float*, const float*, const float*, int64_t);

// A binary op of two same-shaped operands: y = forward(a, b); its backward calls
// backward_kernel(da, dy, b) and backward_kernel(db, dy, a) for the operands that need a gradient.
Tensor binary(const char* op, const Tensor& a, const Tensor& b, BinaryForward forward, BinaryBackward backward_kernel) {
  check_same_shape(op, a, b);
  Tensor y = Tensor::empty(a.shape());
  forward(a.f32(), b.f32(), y.f32(), a.numel());
  if (autodiff::needs_grad(a, b)) {
    autodiff::record(op, {y}, [a, b, y, backward_kernel]() mutable {
      const float* dy = y.grad().f32();
      if (a.requires_grad()) backward_kernel(a.grad_accumulator().f32(), dy, b.f32(), a.numel());
      if (b.requires_grad()) backward_kernel(b.grad_accumulator().f32(), dy, a.f32(), b.numel());
    });
  }
  return y;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  // da += dy, db += dy
  return binary("add", a, b, kernels::add, [](float* d_operand, const float* dy, const float*, int64_t n) {
    kernels::add_into(d_operand, dy, n);
  });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  // da += dy * b, db += dy * a
  return binary("mul", a, b, kernels::mul, kernels::mul_add_into);
}

Tensor scale(const Tensor& x, float alpha) {
  check_float("scale", x);
  Tensor y = Tensor::zeros(x.shape());
  kernels::scale_add_into(y.f32(), x.f32(), alpha, x.numel());
  if (autodiff::needs_grad(x)) {
    // dx += alpha * dy
    autodiff::record("scale", {y}, [x, y, alpha]() mutable {
      kernels::scale_add_into(x.grad_accumulator().f32(), y.grad().f32(), alpha, x.numel());
    });
  }
  return y;
}

Tensor tanh(const Tensor& x) { return unary("tanh", x, kernels::tanh_forward, kernels::tanh_backward, true); }
Tensor sigmoid(const Tensor& x) {
  return unary("sigmoid", x, kernels::sigmoid_forward, kernels::sigmoid_backward, true);
}
Tensor exp(const Tensor& x) { return unary("exp", x, kernels::exp_forward, kernels::exp_backward, true); }
Tensor log(const Tensor& x) {
  check_float("log", x);
  const float* p = x.f32();
  for (int64_t i = 0, n = x.numel(); i < n; ++i)
    if (!(p[i] >= 0.0f))
      throw ValueError("log: 'x' must be >= 0 (log of a negative number or NaN is NaN), got " + std::to_string(p[i]) +
                       " at flat index " + std::to_string(i));
  return unary("log", x, kernels::log_forward, kernels::log_backward, false);
}
Tensor relu(const Tensor& x) { return unary("relu", x, kernels::relu_forward, kernels::relu_backward, false); }
Tensor gelu(const Tensor& x) { return unary("gelu", x, kernels::gelu_forward, kernels::gelu_backward, false); }

}  // namespace attn
