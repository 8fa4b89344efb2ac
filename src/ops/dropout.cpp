#include "attn/ops/dropout.h"

#include <fmt/format.h>

#include "attn/autodiff/tape.h"
#include "kernels/dropout.h"

namespace attn {

Tensor dropout(const Tensor& x, float p, uint64_t seed, bool training) {
  if (!x.defined()) throw ShapeError("dropout: 'x' expected a float32 tensor, got an undefined tensor");
  if (x.dtype() != DType::f32)
    throw ShapeError(std::string("dropout: 'x' expected dtype float32, got ") + dtype_name(x.dtype()));
  if (!(p >= 0.0f && p < 1.0f)) throw ValueError(fmt::format("dropout: p must be in [0, 1), got {}", p));
  if (p == 0.0f || !training) return x;
  const int64_t n = x.numel();
  Tensor y = Tensor::empty(x.shape());
  kernels::dropout_forward(x.f32(), y.f32(), n, p, seed);
  if (autodiff::needs_grad(x)) {
    // dx += dy ⊙ mask / (1 − p)
    autodiff::record("dropout", {y}, [x, y, n, p, seed]() mutable {
      kernels::dropout_backward(y.grad().f32(), x.grad_accumulator().f32(), n, p, seed);
    });
  }
  return y;
}

}  // namespace attn
