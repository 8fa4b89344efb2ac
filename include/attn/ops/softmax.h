#pragma once
// Softmax and log-softmax over the last dimension, with an optional keep-mask.
//
//   x     (..., N) float32
//   mask  int32 of EXACTLY x's shape (nonzero = keep, 0 = masked out), or undefined for
//         "keep everything". No other mask shape is accepted (no broadcasting): anything
//         else is a ShapeError.
//
// Both are max-subtracted, so inputs of any finite magnitude are stable.
// Masked positions output exactly 0 and receive no gradient (their x may hold anything).
// A fully masked row outputs all zeros and receives zero gradient, never NaN — for
// softmax AND log_softmax (PyTorch would give NaN from a -inf mask). A row whose kept
// entries are all -inf (an additive -inf mask instead of `mask`) outputs zeros too; its
// softmax gradient is zero, its log_softmax gradient is not meaningful — use `mask`.
#include "attn/tensor.h"

namespace attn {

// y = exp(x − max) / Σ exp(x − max) over kept positions.           // (..., N) -> (..., N)
// Backward: dx = y ⊙ (dy − Σ dy⊙y).
Tensor softmax(const Tensor& x, const Tensor& mask = Tensor());

// y = x − max − log Σ exp(x − max) over kept positions.            // (..., N) -> (..., N)
// Backward: dx = dy − softmax ⊙ Σ dy (sums over kept positions).
Tensor log_softmax(const Tensor& x, const Tensor& mask = Tensor());

}  // namespace attn
