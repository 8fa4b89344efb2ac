#pragma once
// CPU kernels of Luong local attention (local-m and local-p): raw pointers and sizes, no
// checks, no allocation. Backward kernels accumulate (+=) into gradient buffers; a null
// gradient pointer means "not wanted".
//
// Layout: a query block of B batch rows and T steps is N = B·T rows r = b·T + t. Row r
// attends over a window of consecutive source positions s_j = starts[r] + j,
// j < counts[r] <= K, inside the row's real length L_b = lengths[b]; window arrays are
// (N, K) row-major with K = min(2·D_w + 1, S) slots (D_w is Luong's half-width D) and
// slots j >= counts[r] hold 0. keys / values are (B, S, E), the query rows q (N, E)
// (the query itself for the dot score, q W for general).
//
// Key padding mask: `keep` (B, S) int32, nonzero = keep, may be null; a masked slot of a
// window is left out of the window softmax (weight exactly 0). Dropout on the weights:
// drop_p in [0, 1) with drop_seed; slot j of row r is kept when
// dropout_keep(drop_seed, r·S + s_j, drop_p) (the mask attn::dropout would draw for the dense
// (N, S) weights), kept weights scaled by 1 / (1 − drop_p); drop_p = 0 disables it. The
// window arrays hold the weights BEFORE dropout.
#include <cstdint>

#include "kernels/isa.h"

namespace attn::kernels {

// The window of each row: centre c_r (any integer, e.g. t, or floor(p_t)) gives
//   [max(0, c_r − D_w), min(L_b − 1, c_r + D_w)],
// starts[r] its first position and counts[r] its size (0 when empty: L_b = 0 or the
// centre lies more than D_w past the end).
ATTN_KERNEL(local_attention_windows, void(const int32_t* centres, const int32_t* lengths, int64_t B, int64_t T,
                                          int64_t D_w, int32_t* starts, int32_t* counts));

// One local-attention problem: the sizes, the inputs the forward and the backward share, and
// the score, Gaussian and dropout settings. N = B·T query rows.
struct LocalAttentionProblem {
  int64_t B = 0, T = 0, S = 0, E = 0, K = 0;  // batch, query steps, source positions, features, window slots
  const float* q = nullptr;                   // (N, E) content query rows
  const float* keys = nullptr;                // (B, S, E)
  const float* values = nullptr;              // (B, S, E)
  const int32_t* starts = nullptr;            // (N) each window's first position (local_attention_windows)
  const int32_t* counts = nullptr;            // (N) each window's size
  const float* p = nullptr;                   // (N) local-p positions p_r, or null (local-m: no Gaussian)
  const int32_t* keep = nullptr;              // (B, S) key padding mask, nonzero = keep, or null (forward only)
  float alpha = 1.0f;                         // score scale: 1 / temperature
  float gauss = 0.0f;                         // 1 / (2σ²) of the local-p Gaussian
  float drop_p = 0.0f;                        // dropout on the weights, in [0, 1); 0 = none
  uint64_t drop_seed = 0;
};

// Forward over every row:
//   e_j = q[r] · keys[b, s_j]                              content score
//   a_j = softmax_j(alpha · e_j) over the window            (max-subtracted)    -> soft (N, K)
//   (masked slots: a_j = 0, left out of the max and the sum)
//   w_j = a_j · g_j,  g_j = exp(−(s_j − p_r)² · gauss)      (local-p; g_j = 1 when p is null)
//                                                                               -> weights (N, K)
//   context[r] = Σ_j m_j w_j values[b, s_j]   (m_j the dropout factor, 1 without)  -> (N, E)
// An empty or fully masked window gives zero soft, weights and context.
ATTN_KERNEL(local_attention_forward,
            void(const LocalAttentionProblem& pr, float* soft, float* weights, float* context));

// Backward of local_attention_forward, batch rows in parallel (each batch row owns its
// keys / values gradient, rows t in order, so results do not depend on the thread count):
//   dw_j = m_j (dcontext[r] · values[b, s_j] + dweights[r, s_j])  (dweights dense (N, S), of the
//                                                                 post-dropout weights; may be null)
//   dvalues[b, s_j] += m_j w_j dcontext[r]
//   dp[r]           += Σ_j dw_j w_j (s_j − p_r) · 2 gauss         (∂g_j/∂p = g_j (s_j − p) / σ²)
//   da_j = dw_j g_j;  de_j = alpha · a_j (da_j − Σ_i a_i da_i)
//   dq[r]           += Σ_j de_j keys[b, s_j];   dkeys[b, s_j] += de_j q[r]
// soft and weights are the forward's; scratch is (N, K) floats the kernel may overwrite.
// dcontext, dweights and every output may be null.
// (Masked slots have a_j = w_j = 0 and get exactly 0: no mask needed here.)
struct LocalAttentionGrads {
  float* dq = nullptr;       // (N, E)
  float* dkeys = nullptr;    // (B, S, E)
  float* dvalues = nullptr;  // (B, S, E)
  float* dp = nullptr;       // (N), local-p only
};
ATTN_KERNEL(local_attention_backward,
            void(const LocalAttentionProblem& pr, const float* soft, const float* weights, const float* dcontext,
                 const float* dweights, float* scratch, const LocalAttentionGrads& grads));

// Scatters the window weights (N, K) into dense (N, S) rows (dense must be zeroed), times the
// dropout factor m_j (post-dropout weights; drop_p = 0: the weights as they are).
ATTN_KERNEL(local_attention_scatter_weights,
            void(const float* weights, const int32_t* starts, const int32_t* counts, float drop_p, uint64_t drop_seed,
                 int64_t N, int64_t S, int64_t K, float* dense));

// local-p aligned positions from the pre-activations pre = h W_pᵀ (N, A), in place:
//   h_r = tanh(pre_r) (written over pre);  u_r = v_p · h_r;  sg_r = sigmoid(u_r);
//   p_r = L_b · sg_r;  centres_r = min(floor(p_r), L_b − 1)  (0 when L_b = 0)
ATTN_KERNEL(local_attention_position_forward, void(float* pre, const float* v_p, const int32_t* lengths, int64_t B,
                                                   int64_t T, int64_t A, float* sg, float* p, int32_t* centres));
// du_r += dp_r · L_b sg_r (1 − sg_r);   dpre[r] += du_r · v_p ⊙ (1 − h_r²)
// (h from the forward, du (N) so the caller can form dv_p = Σ_r du_r h_r with one GEMM).
ATTN_KERNEL(local_attention_position_backward,
            void(const float* h, const float* v_p, const float* sg, const float* dp, const int32_t* lengths, int64_t B,
                 int64_t T, int64_t A, float* du, float* dpre));

}  // namespace attn::kernels
