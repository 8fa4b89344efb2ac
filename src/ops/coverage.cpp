#include "attn/ops/coverage.h"

#include "attn/autodiff/tape.h"
#include "kernels/coverage.h"

namespace attn {

Tensor add_outer(const Tensor& x, const Tensor& c, const Tensor& w) {
  ShapeContract contract("add_outer");
  contract.check("x", x, {"B", "S", "A"}).check("c", c, {"B", "S"}).check("w", w, {"A"});
  const int64_t R = x.dim(0) * x.dim(1), A = x.dim(2);
  Tensor y = Tensor::empty(x.shape());  // (B, S, A)
  kernels::add_outer_forward(x.f32(), c.f32(), w.f32(), y.f32(), R, A);
  if (autodiff::needs_grad(x, c, w)) {
    // dx += dy; dc[r] += Σ_a dy[r, a] w[a]; dw[a] += Σ_r dy[r, a] c[r]
    autodiff::record("add_outer", {y}, [x, c, w, y, R, A]() mutable {
      const float* dy = y.grad().f32();
      float* dx = x.requires_grad() ? x.grad_accumulator().f32() : nullptr;
      float* dc = c.requires_grad() ? c.grad_accumulator().f32() : nullptr;
      if (dx || dc) kernels::add_outer_backward_rows(dy, w.f32(), dx, dc, R, A);
      if (w.requires_grad()) kernels::add_outer_backward_w(dy, c.f32(), w.grad_accumulator().f32(), R, A);
    });
  }
  return y;
}

Tensor coverage_overlap(const Tensor& a, const Tensor& c) {
  ShapeContract contract("coverage_overlap");
  contract.check("a", a, {"B", "S"}).check("c", c, {"B", "S"});
  const int64_t B = a.dim(0), S = a.dim(1);
  Tensor y = Tensor::empty({B});  // (B)
  kernels::min_sum_forward(a.f32(), c.f32(), y.f32(), B, S);
  if (autodiff::needs_grad(a, c)) {
    // da += dy [a < c] (½ at ties); dc += dy [c < a] (½ at ties)
    autodiff::record("coverage_overlap", {y}, [a, c, y, B, S]() mutable {
      float* da = a.requires_grad() ? a.grad_accumulator().f32() : nullptr;
      float* dc = c.requires_grad() ? c.grad_accumulator().f32() : nullptr;
      kernels::min_sum_backward(a.f32(), c.f32(), y.grad().f32(), da, dc, B, S);
    });
  }
  return y;
}

}  // namespace attn
