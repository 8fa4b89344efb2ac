#pragma once
// Monotonic attention (Raffel et al. 2017, "Online and linear-time attention by enforcing
// monotonic alignments") and MoChA (Chiu & Raffel 2018, "Monotonic chunkwise attention"),
// the ops that nn::MonotonicAttention (attn/nn/step_attention.h) composes, one decoder step at a
// time. Shapes: query (B, D), projected keys (B, S, A), energies and weights (B, S), lengths
// int32 (B) in [0, S]; positions s >= L_b get 0 and take no gradient. A row of length 0 is all
// zeros with zero gradient.
//
// Training uses the expected alignment (differentiable); inference the hard, online one:
//   additive_energy          e_s = vᵀ tanh(W_q q + k̃_s + b) + r      (the selection and the chunk energies)
//   monotonic_alignment      α_j = p_j Σ_{k≤j} α_{i−1,k} Π_{m=k}^{j−1} (1 − p_m), p = σ(e)
//   mocha_chunk_attention    β_k = Σ_{j=k}^{k+W−1} α_j exp(u_k) / Σ_{l=j−W+1}^{j} exp(u_l)
//   monotonic_select         the first j >= start with p_j > 0.5 (the hard attention's stop)
//   monotonic_hard_weights   softmax of u over the chunk [j − W + 1, j] ending at the stop
//   monotonic_online_step    the three above, in the online algorithm's O(frames read) work
// The alignment α does not sum to 1: 1 − Σ α is the probability that the attention ran past
// the end without stopping (a zero context, as the paper's c_i = 0).
#include <cstdint>

#include "attn/tensor.h"

namespace attn {

// e_s = vᵀ tanh(W_q q + k̃_s + b) + r over s < L_b, 0 past it: query (B, D), projected_keys
// (B, S, A), w_q (A, D), bias (A), v (A), r (1) or undefined (no offset) -> (B, S).
// Gradients: every tensor argument.
Tensor additive_energy(const Tensor& query, const Tensor& projected_keys, const Tensor& w_q, const Tensor& bias,
                       const Tensor& v, const Tensor& r, const Tensor& lengths);

// Raffel's expected alignment of step i from the energies (B, S) and the previous step's
// alignment prev (B, S) (the one-hot δ_0 before the first step). Computed in the parallel
// (cumprod / cumsum) form in log space, so no cumprod is ever divided by (the plain form's
// cumsum(α_{i−1} / cumprod(1 − p)) overflows once the cumprod underflows; kernels/monotonic.h).
// Gradients: energies and prev.
Tensor monotonic_alignment(const Tensor& energies, const Tensor& prev, const Tensor& lengths);

// Chiu & Raffel's expected chunk attention β (B, S) from the monotonic alignment alpha (B, S)
// and the chunk energies u (B, S), chunk width W >= 1 (ValueError otherwise). Σ_k β_k = Σ_j α_j.
// Gradients: alpha and chunk_energies.
Tensor mocha_chunk_attention(const Tensor& alpha, const Tensor& chunk_energies, const Tensor& lengths, int64_t chunk);

// Hard monotonic attention (no gradient): int32 (B), the first position j in [start_b, L_b)
// with energies[b, j] > 0 (p > 0.5), or −1 when there is none. start int32 (B), >= 0.
Tensor monotonic_select(const Tensor& energies, const Tensor& lengths, const Tensor& start);

// The weights (B, S) of hard attention at `selected` (int32 (B) from monotonic_select, each in
// [−1, S)): the softmax of the chunk energies (B, S) over [j − W + 1, j], chunk W >= 1 (MoChA;
// W = 1 is the one-hot of the stop, monotonic attention's); all zeros where selected is −1.
// No gradient.
Tensor monotonic_hard_weights(const Tensor& selected, const Tensor& chunk_energies, int64_t chunk);

// An additive energy of monotonic_online_step: e_j = vᵀ tanh(W_q q + k̃_j + b) [+ r], as
// additive_energy's arguments: projected_keys (B, S, A), w_q (A, D), bias (A), v (A), r (1) or
// undefined.
struct MonotonicEnergy {
  Tensor projected_keys, w_q, bias, v, r;
};

struct MonotonicOnlineOptions {
  MonotonicEnergy selection;  // e, with the offset r
  MonotonicEnergy chunk;      // MoChA: u (its own parameters, the same A; no offset); undefined keys: monotonic
  int64_t chunk_width = 1;    // MoChA: W >= 1
  bool need_weights = false;  // fill the (B, S) weights too
};

struct MonotonicOnlineResult {
  Tensor selected;  // int32 (B): the stop j, or −1 where no frame in [start_b, L_b) fires
  Tensor context;   // (B, E): Σ weights_l values_l over the chunk; zeros where selected is −1
  Tensor weights;   // (B, S): zero outside the chunk; only with need_weights, else undefined
};

// One decoder step of hard monotonic attention (MoChA with options.chunk) at inference, doing the
// online algorithm's work (Raffel et al. 2017, §2.3): row b computes e_j only at j = start_b,
// start_b + 1, ... up to the first j with e_j > 0 (p_j > 0.5) or L_b, then MoChA's u only at the
// W frames of the chunk ending there. Over a whole output each frame is read about once: O((T +
// U·W)·A) after the keys' projection, against the O(T·U·A) of scoring every frame each step.
// Equal to monotonic_select over additive_energy, then monotonic_hard_weights (u for MoChA, the
// one-hot of the stop for monotonic attention) and the weights' mix of the values, with the same
// stops and weights bit for bit. query (B, D), values (B, S, E), lengths int32 (B) in [0, S],
// start int32 (B) >= 0 (ValueError otherwise). No gradient: inference only (training uses the
// expected alignment, monotonic_alignment / mocha_chunk_attention).
MonotonicOnlineResult monotonic_online_step(const Tensor& query, const Tensor& values, const Tensor& lengths,
                                            const Tensor& start, const MonotonicOnlineOptions& options);

}  // namespace attn
