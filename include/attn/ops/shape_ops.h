#pragma once
// Copying shape ops: concat and split along the last dimension, stacking along a new first
// dimension, and swapping the last two dimensions. Every op copies (attn tensors are
// contiguous) and records its backward.
#include <cstdint>
#include <vector>

#include "attn/tensor.h"

namespace attn {

// Concatenates along the LAST dimension: parts (..., N_i) with identical leading
// dimensions (and rank >= 1) give (..., Σ N_i). Backward: each part gets its band of dy.
Tensor concat(const std::vector<Tensor>& parts);

// Splits x (..., N) along the last dimension into parts (..., sizes[i]); the sizes are
// >= 0 and sum to N. Any subset of the outputs may receive a gradient; dx gets each
// output's gradient in its band (zeros elsewhere).
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes);

// Stacks T tensors of one shape (...) along a new first dimension: (T, ...). A decoder
// stacks its T steps of (B, D) into (T, B, D). Backward: part t gets dy[t].
Tensor stack_rows(const std::vector<Tensor>& parts);

// x with the dimensions `shape` (a copy; the same numel, float32): (T, B, H) -> (T·B, H),
// (1, B, H) -> (B, H). Backward: dx += dy, element for element.
Tensor reshape(const Tensor& x, const Shape& shape);

// Swaps the last two dimensions (a copy): x (..., M, N) gives (..., N, M), rank >= 2.
Tensor transpose_last2(const Tensor& x);
// Concatenates adjacent time steps, the time reduction of a pyramidal encoder (Chan et al.
// 2016, LAS): x (S, B, E) time-major gives (⌈S/2⌉, B, 2E) with y[i, b] = [x[2i, b]; x[2i+1, b]],
// the second half zero for the last pair of an odd S. Backward: dx[2i] += dy[i][:, :E],
// dx[2i+1] += dy[i][:, E:].
Tensor pair_frames(const Tensor& x);

}  // namespace attn
