#pragma once
// Masked pooling over the time axis of batch-major sequences, as sentence classifiers
// pool RNN states over the real (unpadded) positions:
//
//   x        (B, S, E) float32
//   lengths  (B) int32, each in [0, S]; position s of row b is real when s < lengths[b]
//   y        (B, E)
//
// A row of length 0 (fully masked) gives y = 0 and receives zero gradient, never NaN.
// Errors: wrong rank/shape/dtype → ShapeError ("masked_max_time: 'lengths' expected
// (B=4), got (3)"); a length outside [0, S] → ValueError naming it and its batch index.
// Matches PyTorch's x.masked_fill(~mask, -inf).max(1) (values and gradient: first index
// on ties) and (x * mask).sum(1) / lengths.
#include "attn/tensor.h"

namespace attn {

// y[b, e] = max_{s < L_b} x[b, s, e]. Backward: the gradient goes to the argmax position
// (the first one on ties).
Tensor masked_max_time(const Tensor& x, const Tensor& lengths);

// As masked_max_time, and the winning positions: argmax (B, E) int32 (-1 for length 0).
struct MaxTimeResult {
  Tensor values;  // (B, E)
  Tensor argmax;  // (B, E) int32
};
MaxTimeResult masked_max_time_with_indices(const Tensor& x, const Tensor& lengths);

// y[b, e] = (1 / L_b) Σ_{s < L_b} x[b, s, e]. Backward: dx[b, s, e] += dy[b, e] / L_b, s < L_b.
Tensor masked_mean_time(const Tensor& x, const Tensor& lengths);

}  // namespace attn
