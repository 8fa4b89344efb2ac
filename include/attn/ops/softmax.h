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
#include <string>

#include "attn/tensor.h"

namespace attn {

// y = exp(x − max) / Σ exp(x − max) over kept positions.           // (..., N) -> (..., N)
// Backward: dx = y ⊙ (dy − Σ dy⊙y).
Tensor softmax(const Tensor& x, const Tensor& mask = Tensor());

// y = x − max − log Σ exp(x − max) over kept positions.            // (..., N) -> (..., N)
// Backward: dx = dy − softmax ⊙ Σ dy (sums over kept positions).
Tensor log_softmax(const Tensor& x, const Tensor& mask = Tensor());

// ---- the sparse normalisers --------------------------------------------------------------------
//
// Same contract as softmax (x (..., N), mask of exactly x's shape or undefined; masked positions
// and -inf scores output exactly 0 and get no gradient; a fully masked row, or one whose kept
// scores are all -inf, outputs zeros and gets zero gradient, never NaN), but their rows hold
// exact zeros wherever a score falls below the row's threshold τ:
//   sparsemax      y = [x − τ]₊                  (Martins & Astudillo 2016; sort-based, exact)
//   entmax15       y = [x/2 − τ]₊²               (Peters et al. 2019; sort-based, exact)
//   entmax_bisect  y = [(α−1) x − τ]₊^{1/(α−1)}  (α > 1; τ by 50 bisection steps, rows renormalised)
// each with Σ y = 1 over the kept positions, as the `entmax` package (1.3) computes them. A NaN
// or +inf among a row's kept scores makes that row NaN on its kept positions.
// Backward (Peters et al. 2019): g = y^{2−α} on the support (1 for sparsemax, √y for entmax15),
//   dx = g ⊙ (dy − Σ g dy / Σ g).

// Which normaliser turns scores into weights; α is read by `entmax` only.
enum class NormalizerKind { softmax, sparsemax, entmax15, entmax };
struct Normalizer {
  NormalizerKind kind = NormalizerKind::softmax;
  float alpha = 1.5f;  // entmax's α: finite and > 1 (α = 2 gives sparsemax's weights)
  bool operator==(const Normalizer&) const = default;
};

// "softmax", "sparsemax", "entmax15", "entmax".
const char* normalizer_name(NormalizerKind kind);
// The inverse of normalizer_name; ValueError naming the choices otherwise.
NormalizerKind parse_normalizer(const std::string& name);
// ValueError from `op` unless the normaliser's α is finite and > 1 (checked for every kind,
// so a bad --alpha is refused even where the kind ignores it).
void check_normalizer(const std::string& op, const Normalizer& normalizer);

Tensor sparsemax(const Tensor& x, const Tensor& mask = Tensor());                   // (..., N) -> (..., N)
Tensor entmax15(const Tensor& x, const Tensor& mask = Tensor());                    // (..., N) -> (..., N)
Tensor entmax_bisect(const Tensor& x, float alpha, const Tensor& mask = Tensor());  // (..., N) -> (..., N)
// softmax, sparsemax, entmax15 or entmax_bisect(normalizer.alpha), as `normalizer` says.
Tensor normalize(const Tensor& x, const Normalizer& normalizer, const Tensor& mask = Tensor());

}  // namespace attn
