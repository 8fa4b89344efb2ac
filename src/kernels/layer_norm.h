#pragma once
// Layer-norm CPU kernels over contiguous rows (rows, D): raw pointers and sizes, no
// checks, no allocation. Backward kernels accumulate (+=) into gradient buffers.
// gamma / beta may be null (no affine transform).
#include <cstdint>

#include "kernels/isa.h"

namespace attn::kernels {

// Per row: mean = Σx / D (shifted by x₀ for precision), var = Σ(x − mean)² / D (biased, two-pass), rstd = 1/√(var +
// eps), y = (x − mean) · rstd · γ + β. Writes mean[r] and rstd[r]. Threaded over rows.
ATTN_KERNEL(layer_norm_forward, void(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                                     float* rstd, int64_t rows, int64_t d, float eps));

// dx += rstd · (g − mean(g) − x̂ · mean(g ⊙ x̂)), g = dy ⊙ γ (γ = 1 when null),
// x̂ = (x − mean) · rstd. Threaded over rows.
ATTN_KERNEL(layer_norm_backward_input, void(const float* x, const float* gamma, const float* mean, const float* rstd,
                                            const float* dy, float* dx, int64_t rows, int64_t d));

// Rows are summed for dγ / dβ in fixed blocks of this many rows (independent of the
// thread count), then the block partials are summed in block order.
constexpr int64_t kLayerNormParamBlock = 64;
constexpr int64_t layer_norm_param_blocks(int64_t rows) {
  return (rows + kLayerNormParamBlock - 1) / kLayerNormParamBlock;
}

// dγ += Σ_rows dy ⊙ x̂, dβ += Σ_rows dy (either may be null). `scratch` holds
// 2 · layer_norm_param_blocks(rows) · d floats. Deterministic for any thread count.
ATTN_KERNEL(layer_norm_backward_params, void(const float* x, const float* mean, const float* rstd, const float* dy,
                                             float* dgamma, float* dbeta, int64_t rows, int64_t d, float* scratch));

}  // namespace attn::kernels
