#pragma once
// Row selection ops for sequence models: per-row choice between two tensors (packed-sequence
// semantics in RNN encoders), swapping the two leading dimensions (time-major <-> batch-major)
// and gathering rows by index (beam search reordering). Each copies and records its backward.
#include <cstdint>
#include <vector>

#include "attn/tensor.h"

namespace attn {

// y[i] = keep[i] != 0 ? a[i] : b[i] for every row i of the first dimension.
//   keep  int32 (B)
//   a     float32 (B, ...)
//   b     float32 of a's shape, or undefined for zeros
//   y     a's shape
// Backward: da[i] += dy[i] where keep[i], db[i] += dy[i] where not.
// When every row is kept, a itself is returned (no copy; gradients flow to a).
Tensor where_rows(const Tensor& keep, const Tensor& a, const Tensor& b = Tensor());

// Swaps the first two dimensions: x (N0, N1, ...) -> (N1, N0, ...), rank >= 2, e.g. the
// time-major (S, B, E) encoder outputs to batch-major (B, S, E). Backward: the inverse swap.
Tensor transpose_01(const Tensor& x);

// y[i] = x[index[i]] for rows of the first dimension: x (N, ...), index int32 (M) with
// values in [0, N) -> (M, ...). Backward: dx[index[i]] += dy[i] (in order of i).
Tensor gather_rows(const Tensor& x, const Tensor& index);

}  // namespace attn
