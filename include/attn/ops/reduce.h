#pragma once
// Sums and means. Every sum accumulates in double in a fixed order (fixed chunks, fixed
// lanes), so results are bit-identical whatever the thread count.
#include "attn/tensor.h"

namespace attn {

// Σ of all elements: x any shape -> a scalar of shape (). The sum of no elements is 0.
Tensor sum(const Tensor& x);
// Mean of all elements -> shape (). ValueError for an empty tensor.
Tensor mean(const Tensor& x);

// Σ over the last dimension: x (..., N) -> (...), rank >= 1 (a rank-1 x gives shape ()).
Tensor sum_last(const Tensor& x);
// Mean over the last dimension: x (..., N) -> (...). ValueError when N == 0.
Tensor mean_last(const Tensor& x);

}  // namespace attn
