#pragma once
// The one masked-normaliser row primitive: softmax, the normalised sigmoid (Chorowski's
// smoothing), sparsemax, entmax-1.5 and α-entmax, forward and backward, over rows with an
// extent and a keep mask. Raw pointers and sizes, no checks, no allocation; backward kernels
// accumulate (+=) into the input gradient. Every attention weight in attn comes from here.
//
// With z = scale · x over the kept positions of a row (mask[i] != 0 and z_i > −inf):
//   softmax        y = exp(z − max) / Σ exp(z − max)
//   sigmoid        y = σ(z) / Σ σ(z)
//   sparsemax      y = [z − τ]₊,              τ with Σ y = 1, sort-based, exact  (Martins & Astudillo 2016)
//   entmax15       y = [z/2 − τ]₊²,           τ sort-based, exact               (Peters et al. 2019)
//   entmax_bisect  y = [(α−1) z − τ]₊^{1/(α−1)}, τ by 50 bisection steps, then y / Σ y
//                  (the `entmax` package's EntmaxBisectFunction; α > 1, α = 2 is sparsemax)
// Positions not kept (masked, past the extent, or z = −inf) output exactly 0 and get no
// gradient; their x is never read into the result (it may hold anything). A row with no
// kept position outputs all zeros and gets zero gradient, never NaN (the `entmax`
// package's issues #16, #17, #30). NaN or +inf among the kept scores gives NaN on the kept
// positions (sort-based kinds; softmax propagates them as before).
//
// Backward, all but sigmoid (Peters et al. 2019, §3): with g_i = y_i^{2−α} on the support
// (y_i > 0) and 0 elsewhere (α = 1 softmax: g = y; α = 2 sparsemax: g = 1 on the support),
//   dx_i += scale · g_i (dy_i − Σ_j g_j dy_j / Σ_j g_j).
// sigmoid: dx_i += scale · y_i (1 − σ(z_i)) (dy_i − Σ_j y_j dy_j)  (reads x).
#include <cstdint>

#include "kernels/isa.h"

namespace attn::kernels {

enum class NormalizerKind : int32_t { softmax, sigmoid, sparsemax, entmax15, entmax_bisect };

struct Normalizer {
  NormalizerKind kind = NormalizerKind::softmax;
  float scale = 1.0f;  // z = scale · x: 1/τ of a temperature, β of a sharpening
  float alpha = 1.5f;  // entmax_bisect's α > 1; the other kinds ignore it
};

// Which of a block of rows are normalised over what. Row r (of `rows`, stride n) uses
// extent L = extents[r / group] (null: n) and mask row mask + (r / group) · n (null: keep
// all): it normalises its kept positions i < L and writes 0 at i >= L. `group` rows share
// one extent and mask row: the T query steps of one batch row (group = T), or every row its
// own (group = 1).
struct NormalizerRows {
  int64_t rows = 0;
  int64_t n = 0;
  int64_t group = 1;
  const int32_t* extents = nullptr;  // (rows / group), each in [0, n], or null
  const int32_t* mask = nullptr;     // (rows / group, n), nonzero = keep, or null
};

// One row of n: y = normalise(scale · x) over the kept positions (mask may be null), 0
// elsewhere. y must not alias x for the sort-based kinds (sparsemax, entmax15): they sort in
// y. softmax, sigmoid and entmax_bisect allow y == x.
ATTN_KERNEL(normalizer_row_forward,
            void(const Normalizer& norm, const float* x, const int32_t* mask_or_null, float* y, int64_t n));
// dx += scale · Jᵀ dy from the forward's y (and x, for sigmoid only; x may be null otherwise).
ATTN_KERNEL(normalizer_row_backward,
            void(const Normalizer& norm, const float* x, const float* y, const float* dy, float* dx, int64_t n));

// The same over a block of rows (NormalizerRows), threaded over rows; results do not depend
// on the thread count. x, y, dy, dx are (rows, n).
ATTN_KERNEL(normalizer_forward, void(const Normalizer& norm, const NormalizerRows& rows, const float* x, float* y));
ATTN_KERNEL(normalizer_backward, void(const Normalizer& norm, const NormalizerRows& rows, const float* x,
                                      const float* y, const float* dy, float* dx));

}  // namespace attn::kernels
