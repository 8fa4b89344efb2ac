#include "attn/ops/softmax.h"

#include "attn/autodiff/tape.h"
#include "kernels/softmax.h"

namespace attn {
namespace {

// x: float32 of rank >= 1; mask: undefined or int32 of exactly x's shape.
void check_softmax_args(const char* op, const Tensor& x, const Tensor& mask) {
  const std::string name(op);
  if (!x.defined()) throw ShapeError(name + ": 'x' expected (..., N), got an undefined tensor");
  if (x.dtype() != DType::f32) throw ShapeError(name + ": 'x' expected dtype float32, got " + dtype_name(x.dtype()));
  if (x.rank() == 0) throw ShapeError(name + ": 'x' expected (..., N) with rank >= 1, got a scalar ()");
  if (!mask.defined()) return;
  if (mask.dtype() != DType::i32)
    throw ShapeError(name + ": 'mask' expected dtype int32, got " + dtype_name(mask.dtype()));
  if (mask.shape() != x.shape())
    throw ShapeError(name + ": 'mask' expected " + x.shape().str() + " (exactly the shape of 'x', no broadcasting), got " +
                     mask.shape().str());
}

}  // namespace

Tensor softmax(const Tensor& x, const Tensor& mask) {
  check_softmax_args("softmax", x, mask);
  const int64_t n = x.shape().last();
  const int64_t rows = x.numel() == 0 ? 0 : x.numel() / n;
  Tensor y = Tensor::empty(x.shape());
  kernels::softmax_forward(x.f32(), mask.defined() ? mask.i32() : nullptr, y.f32(), rows, n);
  if (autodiff::needs_grad(x)) {
    // dx += y ⊙ (dy − Σ dy⊙y); masked positions have y = 0 and so get nothing.
    autodiff::record("softmax", {y}, [x, y, rows, n]() mutable {
      kernels::softmax_backward(y.f32(), y.grad().f32(), x.grad_accumulator().f32(), rows, n);
    });
  }
  return y;
}

Tensor log_softmax(const Tensor& x, const Tensor& mask) {
  check_softmax_args("log_softmax", x, mask);
  const int64_t n = x.shape().last();
  const int64_t rows = x.numel() == 0 ? 0 : x.numel() / n;
  Tensor y = Tensor::empty(x.shape());
  kernels::log_softmax_forward(x.f32(), mask.defined() ? mask.i32() : nullptr, y.f32(), rows, n);
  if (autodiff::needs_grad(x)) {
    // dx += dy − exp(y) Σ_kept dy on kept positions
    autodiff::record("log_softmax", {y}, [x, y, mask, rows, n]() mutable {
      kernels::log_softmax_backward(y.f32(), mask.defined() ? mask.i32() : nullptr, y.grad().f32(),
                                    x.grad_accumulator().f32(), rows, n);
    });
  }
  return y;
}

}  // namespace attn
