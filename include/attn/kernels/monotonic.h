#pragma once
// CPU kernels of monotonic attention (Raffel et al. 2017) and MoChA (Chiu & Raffel 2018)
// (attn/ops/monotonic.h). Raw pointers and sizes, no checks, no allocation; backward kernels
// accumulate (+=). Row b covers its first L_b = lengths[b] of S positions; entries past L_b are
// never read and written as 0 by the forward kernels. Each row is computed in double: a
// decoder step's row is O(S) (O(S·W) for MoChA) work, far below the energies' O(S·A), so
// these kernels are not compiled per ISA level.
#include <cstdint>

namespace attn::kernels {

// Raffel's expected alignment, in the paper's parallel form computed in log space:
//   p_j = σ(e_j),  L_j = Σ_{m<j} log(1 − p_m)   (the exclusive cumprod of 1 − p, as a log)
//   α_j = p_j · exp(L_j + logcumsumexp_{k≤j}(log prev_k − L_k))
// i.e. α_j = p_j Σ_{k≤j} prev_k Π_{m=k}^{j−1} (1 − p_m), without ever dividing by the
// vanishing cumprod (the clamped cumprod of the paper's appendix loses mass once it underflows).
// energies, prev, alpha (B, S).
void monotonic_alignment_forward(const float* energies, const float* prev, const int32_t* lengths, int64_t B, int64_t S,
                                 float* alpha);
// With q_j = α_j / p_j = (1 − p_{j−1}) q_{j−1} + prev_j and the reverse recurrence
// G_j = dα_j p_j + (1 − p_j) G_{j+1}:
//   dprev_j += G_j,   de_j += p_j (1 − p_j) q_j (dα_j − G_{j+1})
// (∂α_j/∂p_m for m < j is −α_j/(1 − p_m); the products R keep it free of that division).
// Either gradient pointer may be null.
void monotonic_alignment_backward(const float* energies, const float* prev, const float* dalpha, const int32_t* lengths,
                                  int64_t B, int64_t S, float* denergies, float* dprev);

// Chiu & Raffel's expected chunk attention, window j = [j − W + 1, j] ∩ [0, L):
//   β_k = Σ_{j=k}^{k+W−1} α_j · exp(u_k − LSE_j),  LSE_j = log Σ_{l ∈ window j} exp(u_l)
// alpha, u (chunk energies), beta (B, S).
void mocha_chunk_forward(const float* alpha, const float* u, const int32_t* lengths, int64_t B, int64_t S, int64_t W,
                         float* beta);
// s_{k,j} = exp(u_k − LSE_j):  dα_j += Σ_{k ∈ window j} dβ_k s_{k,j} =: h_j,
//                              du_l += Σ_{j : l ∈ window j} α_j s_{l,j} (dβ_l − h_j).
// Either gradient pointer may be null.
void mocha_chunk_backward(const float* alpha, const float* u, const float* dbeta, const int32_t* lengths, int64_t B,
                          int64_t S, int64_t W, float* dalpha, float* du);

// Hard monotonic attention at inference: row b reads its positions from start[b] on and stops
// at the first j with e_j > 0 (p_j > 0.5): selected[b] = j, or −1 when none up to L_b is.
void monotonic_select(const float* energies, const int32_t* lengths, const int32_t* start, int64_t B, int64_t S,
                      int32_t* selected);
// MoChA's online chunk: weights[b] = softmax of u over [j − W + 1, j] ∩ [0, L) for j =
// selected[b] (max-subtracted), 0 elsewhere; an all-zero row where selected[b] = −1.
void mocha_hard_weights(const float* u, const int32_t* selected, int64_t B, int64_t S, int64_t W, float* weights);

}  // namespace attn::kernels
