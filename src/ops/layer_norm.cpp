#include "attn/ops/layer_norm.h"

#include <fmt/format.h>

#include <cmath>

#include "attn/autodiff/tape.h"
#include "kernels/layer_norm.h"

namespace attn {

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, LayerNormOptions options) {
  if (!x.defined()) throw ShapeError("layer_norm: 'x' expected (..., D), got an undefined tensor");
  if (x.dtype() != DType::f32)
    throw ShapeError(std::string("layer_norm: 'x' expected dtype float32, got ") + dtype_name(x.dtype()));
  if (x.rank() == 0) throw ShapeError("layer_norm: 'x' expected (..., D) with rank >= 1, got a scalar ()");
  if (!(options.eps >= 0.0f) || std::isinf(options.eps))
    throw ValueError(fmt::format("layer_norm: eps must be finite and >= 0, got {}", options.eps));
  const int64_t d = x.shape().last();
  ShapeContract c("layer_norm");
  c.bind("D", d);
  if (gamma.defined()) c.check("gamma", gamma, {"D"});
  if (beta.defined()) c.check("beta", beta, {"D"});
  const int64_t rows = x.numel() == 0 ? 0 : x.numel() / d;

  Tensor y = Tensor::empty(x.shape());
  Tensor mean = Tensor::empty({rows});  // (rows)
  Tensor rstd = Tensor::empty({rows});  // (rows)
  const float* gp = gamma.defined() ? gamma.f32() : nullptr;
  const float* bp = beta.defined() ? beta.f32() : nullptr;
  kernels::layer_norm_forward(x.f32(), gp, bp, y.f32(), mean.f32(), rstd.f32(), rows, d, options.eps);

  if (autodiff::needs_grad(x, gamma, beta)) {
    autodiff::record("layer_norm", {y}, [x, gamma, beta, y, mean, rstd, rows, d]() mutable {
      const float* dy = y.grad().f32();
      // dx += rstd · (g − mean(g) − x̂ · mean(g ⊙ x̂)), g = dy ⊙ γ
      if (x.requires_grad())
        kernels::layer_norm_backward_input(x.f32(), gamma.defined() ? gamma.f32() : nullptr, mean.f32(), rstd.f32(), dy,
                                           x.grad_accumulator().f32(), rows, d);
      // dγ += Σ dy ⊙ x̂, dβ += Σ dy
      const bool want_gamma = gamma.requires_grad();
      const bool want_beta = beta.requires_grad();
      if (want_gamma || want_beta) {
        Tensor scratch = Tensor::empty({2 * kernels::layer_norm_param_blocks(rows) * d});
        kernels::layer_norm_backward_params(
            x.f32(), mean.f32(), rstd.f32(), dy, want_gamma ? gamma.grad_accumulator().f32() : nullptr,
            want_beta ? beta.grad_accumulator().f32() : nullptr, rows, d, scratch.f32());
      }
    });
  }
  return y;
}

}  // namespace attn
