#pragma once
// Layer normalisation over the last dimension, as torch.nn.LayerNorm / F.layer_norm.
#include "attn/tensor.h"

namespace attn {

struct LayerNormOptions {
  float eps = 1e-5f;  // added to the (biased) variance; must be >= 0 and finite
};

// x (..., D), gamma (D) or undefined, beta (D) or undefined → (..., D)
//   y = (x − mean) / √(var + eps) ⊙ γ + β, mean and biased var over the last dimension.
// gamma / beta may each be undefined (no scale / no shift). Mean and 1/√(var + eps) are
// saved per row for backward. Backward:
//   dx = rstd · (g − mean(g) − x̂ · mean(g ⊙ x̂)),  g = dy ⊙ γ,  x̂ = (x − mean) · rstd
//   dγ = Σ_rows dy ⊙ x̂,  dβ = Σ_rows dy   (summed in a fixed order: thread-count independent)
// Errors: shapes/dtypes → ShapeError; eps negative, NaN or inf → ValueError.
Tensor layer_norm(const Tensor& x, const Tensor& gamma = Tensor(), const Tensor& beta = Tensor(),
                  LayerNormOptions options = {});

}  // namespace attn
