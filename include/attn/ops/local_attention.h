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
// Masks: lengths int32 (B), or options.key_padding_mask int32 (B, S) (nonzero = keep, as in
// attention.h and sdpa), or neither (all S positions real). With lengths the window is
// clipped to the real length L_b. With a mask, L_b is the mask's EXTENT, 1 + the last kept
// position (0 when nothing is kept): the window is clipped to it, local-p predicts
// p_t = L_b · sigmoid(...) with that L_b, and masked positions INSIDE the window are left out
// of the window softmax (weight exactly 0; the kept ones renormalise among themselves). So a
// padding mask (a kept prefix) gives exactly the lengths result; a window whose positions
// are all masked gives zero weights, a zero context and zero gradients.
//
// Dropout (options.dropout, training, rng): as in attention.h — inverted dropout on the
// weights w_t(s) before the context, the mask attn::dropout would draw for the dense (B, T, S)
// weights with seed rng->next(); the returned weights are the post-dropout ones.
//
// Parameters: nn::local_attention_init (attn/nn/attention_init.h) creates w (general), w_p and
// v_p Xavier-initialised.
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
  Tensor w_p;                // local-p only: (A, D)
  Tensor v_p;                // local-p only: (A)
  float temperature = 1.0f;  // τ > 0 divides the content scores
  bool need_weights = true;  // return the dense weights as a second output of the node
  Tensor key_padding_mask;   // int32 (B, S), nonzero = keep; exclusive with `lengths`
  float dropout = 0.0f;      // p in [0, 1): inverted dropout on the weights when training
  bool training = true;      // dropout applies only when training (and p > 0)
  Rng* rng = nullptr;        // dropout's seed source (one next() per call); required when it applies
};

// lengths int32 (B) or undefined (see Masks).
AttentionResult local_attention(const Tensor& query, const Tensor& keys, const Tensor& values, const Tensor& lengths,
                                const LocalOptions& options = {});

}  // namespace attn
