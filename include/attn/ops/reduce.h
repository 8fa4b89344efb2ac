#pragma once
// Sums and means. Every sum accumulates in double in a fixed order (fixed chunks, fixed
// lanes), so results are bit-identical whatever the thread count.
#include <cstdint>
#include <vector>

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

// The first index of the largest of row[0, n) (ties go to the lower index, as greedy and
// beam decoding order them); 0 for n <= 1. Not recorded: a choice, not a value.
int32_t argmax(const float* row, int64_t n);
// argmax over the last dimension of a float32 x (..., N): one index per row, rows in
// order. ShapeError for another dtype or rank 0, ValueError for N = 0.
std::vector<int32_t> argmax_last(const Tensor& x);

}  // namespace attn
