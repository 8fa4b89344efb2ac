#pragma once
// Inverted dropout.
#include <cstdint>

#include "attn/tensor.h"

namespace attn {

// x (any shape) float32 → same shape. In training, element i (flat, row-major index) is
// kept with probability 1 − p — exactly when attn::uniform_at(seed, i) >= p — and kept
// values are scaled by 1 / (1 − p), so E[y] = x. The mask depends only on (seed, i):
// the same seed gives the same mask whatever the thread count; callers pass a fresh seed
// per call site and step (the same seed on two tensors drops the same flat positions).
// p == 0 or training == false returns x itself (identity, no copy; gradients flow to x).
// Backward: dx = dy ⊙ mask / (1 − p), the mask regenerated from the seed.
// Errors: p outside [0, 1) or NaN → ValueError; x not float32 → ShapeError.
Tensor dropout(const Tensor& x, float p, uint64_t seed, bool training = true);

}  // namespace attn
