#pragma once
// CPU kernels of the attention family (Bahdanau additive, Luong dot / general / concat /
// location): raw pointers and sizes, no checks, no allocation. Backward kernels accumulate
// (+=) into gradient buffers; a null gradient pointer means "not wanted".
//
// Layout shared by every kernel: a query block of B batch rows and T steps is N = B·T rows
// r = b·T + t; row r attends over the first L_b = lengths[b] of the S source positions
// (positions s >= L_b are masked). Scores and weights are (B, T, S) row-major; a one-step
// query is T = 1. A key padding mask `keep` (B, S) int32 (nonzero = keep, may be null)
// additionally masks positions s < L_b with keep[b, s] == 0 (the op passes L_b = 1 + the
// last kept position, so a mask never makes a kernel read past its extent).
#include <cstdint>

#include "kernels/isa.h"

namespace attn::kernels {

// The weights of a score row, a_{r, s} = normalise_s(alpha · scores[r, s]) over the kept s < L_b,
// come from the masked-normaliser primitive (kernels/normalizer.h) with
// NormalizerRows{.rows = B·T, .n = S, .group = T, .extents = lengths, .mask = keep}.

// context[b, t] = Σ_{s<L_b} weights[b, t, s] · values[b, s]            // (B, T, E)
// (one GEMM per batch row over its real length; L_b = 0 gives a zero context).
ATTN_KERNEL(attention_context_forward, void(const float* weights, const float* values, const int32_t* lengths,
                                            int64_t B, int64_t T, int64_t S, int64_t E, float* context));
// dweights[b, t, s] += dcontext[b, t] · values[b, s];  dvalues[b, s] += Σ_t weights[b, t, s] dcontext[b, t]
// for s < L_b. Either gradient pointer may be null.
ATTN_KERNEL(attention_context_backward,
            void(const float* weights, const float* values, const float* dcontext, const int32_t* lengths, int64_t B,
                 int64_t T, int64_t S, int64_t E, float* dweights, float* dvalues));

// Dot scores: scores[b, t, s] = q[b, t] · keys[b, s] for s < L_b (others untouched).
// q (B, T, E), keys (B, S, E).
ATTN_KERNEL(attention_dot_scores_forward, void(const float* q, const float* keys, const int32_t* lengths, int64_t B,
                                               int64_t T, int64_t S, int64_t E, float* scores));
// dq[b, t] += Σ_{s<L_b} dscores[b, t, s] keys[b, s];  dkeys[b, s] += Σ_t dscores[b, t, s] q[b, t].
ATTN_KERNEL(attention_dot_scores_backward,
            void(const float* q, const float* keys, const float* dscores, const int32_t* lengths, int64_t B, int64_t T,
                 int64_t S, int64_t E, float* dq, float* dkeys));

// Additive scores without materialising (B, T, S, A):
//   scores[b, t, s] = Σ_a v_a tanh(u[b, t, a] + keys[b, s, a]) for s < L_b (others untouched).
// u (B, T, A) is the projected query (bias folded in), keys (B, S, A) the projected keys.
ATTN_KERNEL(attention_additive_scores_forward,
            void(const float* u, const float* keys, const float* v, const int32_t* lengths, int64_t B, int64_t T,
                 int64_t S, int64_t A, float* scores));
// Recomputes h = tanh(u[b, t] + keys[b, s]); with g = dscores[b, t, s] v ⊙ (1 - h²):
//   du[b, t] += Σ_s g;  dkeys[b, s] += Σ_t g;  dv_partial[b] += Σ_{t,s} dscores[b, t, s] h.
// dv_partial is (B, A): one partial per batch row, so the caller can reduce it over b in a
// fixed order (results do not depend on the thread count). Any output may be null.
ATTN_KERNEL(attention_additive_scores_backward,
            void(const float* u, const float* keys, const float* v, const float* dscores, const int32_t* lengths,
                 int64_t B, int64_t T, int64_t S, int64_t A, float* du, float* dkeys, float* dv_partial));

// Small helpers the attention ops share.
// y[r, :] += bias for each of `rows` rows of n.
ATTN_KERNEL(attention_add_bias_rows, void(float* y, const float* bias, int64_t rows, int64_t n));
// The gradient of a temperature-like factor alpha in weights = softmax(alpha · scores), per
// unit of dL/dz summed over rows: Σ_{r, s<L_b} dz[r, s] · scores[r, s] with dz = a (da − Σ a da)
// the softmax backward. Computed in double in the centred form
//   Σ_s a_s (da_s − ā)(e_s − ē),  ā = Σ a da / Σ a,  ē = Σ a e / Σ a,
// equal to it when Σ a = 1, so near-one-hot rows do not lose the result to cancellation in
// float dz (a ≈ 1 makes da − Σ a da tiny). Rows whose weights are all 0 add nothing.
ATTN_KERNEL(attention_softmax_scale_grad, double(const float* weights, const float* dweights, const float* scores,
                                                 const int32_t* lengths, int64_t B, int64_t T, int64_t S));
// x *= alpha
ATTN_KERNEL(attention_scale_inplace, void(float* x, float alpha, int64_t n));

}  // namespace attn::kernels
