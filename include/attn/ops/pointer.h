#pragma once
// The pointer-generator's output distribution (See et al. 2017, eq. 9), one fused op:
//
//   pointer_log_probs(logits, p_gen, attention, src_ids, extended_vocab) -> (N, Vx)
//     logits     (N, V)   the vocabulary distribution's logits, P_vocab = softmax(logits)
//     p_gen      (N)      the generation probability, each in [0, 1]
//     attention  (N, S)   the copy distribution a over the source (padding: a = 0)
//     src_ids    (N, S)   int32: each source position's id in the extended vocabulary
//                         [0, Vx): its vocabulary id, or V + k for the batch's k-th OOV token
//     extended_vocab      Vx >= V: V plus the batch's source OOV tokens
//
//   P(w) = p_gen · P_vocab(w) + (1 − p_gen) · Σ_{i: src_i = w} a_i     (P_vocab(w) = 0 for w >= V)
//   out  = log(max(P, kPointerFloor))
//
// Worked in probabilities, then one log with a floor: p_gen of exactly 0 or 1, and a token with
// no mass (an extended id the row's source lacks, a vocabulary word underflowing to 0), give
// log(kPointerFloor) and zero gradient, never -inf or NaN. Above the floor the gradient is the
// exact one of log P. Σ_w P(w) = 1 when each attention row sums to 1, so cross_entropy on the
// output (its log_softmax is then the identity) is the negative log-likelihood of the mixture.
// Gradients flow to logits, p_gen and attention.
// Errors: wrong rank/shape/dtype → ShapeError naming the argument; extended_vocab < V, a
// source id outside [0, Vx), p_gen outside [0, 1] (or NaN) → ValueError.
#include <cstdint>

#include "attn/tensor.h"

namespace attn {

// 1e-30: far below any probability a model assigns on purpose (log = −69.1), and large enough
// that the gradient 1 / P stays finite in float32 for any reasonable upstream gradient.
inline constexpr float kPointerFloor = 1e-30f;

Tensor pointer_log_probs(const Tensor& logits, const Tensor& p_gen, const Tensor& attention, const Tensor& src_ids,
                         int64_t extended_vocab);

}  // namespace attn
