#pragma once
// Luong local attention (Luong, Pham & Manning 2015, §3.2), one fused tape node with a
// hand-written backward. Each decoder step t of batch row b attends only to a window of
// source positions around an aligned position p_t:
//
//   window    [c_t − D_w, c_t + D_w] ∩ [0, L_b − 1]     (D_w = options.window, Luong's D;
//                                                       L_b = lengths[b], the real length)
//   content   e_{t,s} = q_tᵀ k_s (dot)  |  q_tᵀ W k_s (general, W = options.w (D, E))
//   softmax   a_t(s) = softmax over the window of e_{t,s} / τ   (exactly 0 outside it)
//
// local-m (LocalMode::monotonic): p_t = t, or options.positions when given; c_t = p_t and
//   the weights are a_t. A window with no real position (L_b = 0, or p_t − D_w ≥ L_b, which
//   happens with the default p_t = t when the target runs more than D_w past the source)
//   gives zero weights and a zero context. Pass clamped positions to avoid that.
// local-p (LocalMode::predictive): the position is predicted from the query (the decoder
//   state h_t):
//     p_t = L_b · sigmoid(v_pᵀ tanh(W_p h_t)),   W_p = options.w_p (A, D), v_p = options.v_p (A)
//   with L_b the row's REAL source length (not the padded S), so p_t ∈ [0, L_b]. The window is
//   centred at c_t = min(floor(p_t), L_b − 1) (floor, not round, so the centre is always a
//   real position), and the weights are
//     w_t(s) = a_t(s) · exp(−(s − p_t)² / (2σ²)),   σ = D_w / 2,
//   with the Gaussian NOT renormalised (as in the paper: the weights of a row sum to < 1).
//   Gradients reach W_p and v_p through p_t in the Gaussian (floor(p_t) is piecewise
//   constant and contributes nothing).
//
// context c_t = Σ_s w_t(s) values_s. Shapes as the global attention ops (attn/ops/attention.h):
// query (B, D) or (B, T, D); keys, values (B, S, E); lengths int32 (B) in [0, S]; context
// (B, E) or (B, T, E); weights (B, S) or (B, T, S), dense, exactly 0 outside the window.
//
// Cost: O(B·T·K·E) time with K = min(2·D_w + 1, S) (plus the GEMMs of the general score and
// of W_p); the node keeps O(B·T·K) window state, never a (B, T, S) array unless the dense
// weights are asked for (need_weights). Gradients: query, keys, values, w, w_p, v_p.
#include "attn/ops/attention.h"

namespace attn {

enum class LocalMode {
  monotonic,   // local-m: p_t = t (or options.positions)
  predictive,  // local-p: p_t = L_b · sigmoid(v_pᵀ tanh(W_p h_t)), Gaussian-weighted window
};

struct LocalOptions {
  LocalMode mode = LocalMode::monotonic;
  int window = 10;                         // D_w >= 0 (local-p: >= 1, σ = D_w / 2)
  LuongScore score = LuongScore::general;  // dot or general (concat is not supported)
  Tensor w;                                // general: (D, E); undefined for dot
  // local-m only: int32 aligned positions in [0, S). For a block query (B, T, D): (T), shared by
  // every batch row, or (B, T). For a one-step query (B, D): (1) shared, or (B) / (B, 1) one per
  // row. Undefined: p_t = t (a one-step query is step 0).
  Tensor positions;
  Tensor w_p;  // local-p only: (A, D)
  Tensor v_p;  // local-p only: (A)
  float temperature = 1.0f;  // τ > 0 divides the content scores
  bool need_weights = true;  // return the dense weights as a second output of the node
};

AttentionResult local_attention(const Tensor& query, const Tensor& keys, const Tensor& values,
                                const Tensor& lengths, const LocalOptions& options = {});

}  // namespace attn
