#pragma once
// The pieces of coverage attention (See et al. 2017) that the attention modules compose:
//
//   add_outer(x, c, w)         x (B, S, A), c (B, S), w (A) -> (B, S, A): x + c ⊗ w. The
//                              coverage term w_c c_{t,i} of e = vᵀ tanh(W_h h_i + W_s s_t +
//                              w_c c_{t,i} + b), added to the projected keys W_h h_i.
//   coverage_overlap(a, c)     a, c (B, S) -> (B): Σ_i min(a_i, c_i), one step's coverage loss
//                              (See et al. eq. 12) before the weight λ.
//
// Gradients flow to every float input. coverage_overlap's subgradient at a tie a_i == c_i is
// torch.minimum's: half to each. Masked source positions have a = c = 0 and add nothing.
// Errors: wrong rank/shape/dtype → ShapeError naming the argument.
#include "attn/tensor.h"

namespace attn {

Tensor add_outer(const Tensor& x, const Tensor& c, const Tensor& w);
Tensor coverage_overlap(const Tensor& a, const Tensor& c);

}  // namespace attn
