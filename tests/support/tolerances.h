#pragma once
// The named tolerances of tensors_close (test_support.h), one set for every suite. atol is
// relative to the tensor's largest |value| (at least 1), rtol to the element. A test picks the
// one whose reason matches why its two numbers differ; an op that needs a looser one defines it
// next to its test and says why.
#include <gtest/gtest.h>

#include "attn/tensor.h"
#include "test_support.h"

namespace attn::testing {

struct Tolerance {
  float atol;
  float rtol;
};

// One float32 pass over a short row against a double reference (softmax, the sparse
// normalisers, an optimizer step): a few float ulps.
inline constexpr Tolerance kRowTol{1e-6f, 1e-5f};
// tensors_close's default: float32 sums of tens of terms against a double reference (an RNN
// cell, a Transformer layer), or the same computation on two paths (padding, cache vs full).
inline constexpr Tolerance kOpTol{1e-5f, 1e-4f};
// A fused kernel against a double reference (the attention ops, layer norm): it sums over S and
// E (or D) in its own blocked order.
inline constexpr Tolerance kFusedTol{2e-5f, 1e-4f};
// sdpa's tiled online softmax against a double reference: each tile's running max rescales the
// partial sums once more.
inline constexpr Tolerance kTiledTol{2e-5f, 2e-4f};
// Scores of several hundred against a double reference: exp of a max-subtracted float32 row
// keeps fewer significant bits of the small weights.
inline constexpr Tolerance kLargeScoreTol{1e-4f, 1e-3f};
// Gradients that sum O(S) or O(T) float terms against a double reference (sdpa's backward).
inline constexpr Tolerance kGradTol{1e-4f, 1e-3f};

inline ::testing::AssertionResult tensors_close(const Tensor& actual, const Tensor& expected, Tolerance tolerance) {
  return tensors_close(actual, expected, tolerance.atol, tolerance.rtol);
}

}  // namespace attn::testing
