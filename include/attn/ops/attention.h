#pragma once
// The attention family of RNN encoder-decoders, each one fused tape node with a
// hand-written backward:
//
//   additive_attention   Bahdanau:      e_{t,s} = vᵀ tanh(W_q q_t + k̃_s + b),  k̃ = K W_kᵀ
//   luong_attention      Luong:         dot qᵀk | general qᵀ W k | concat vᵀ tanh(W [q; k])
//   location_attention   Luong location: e_t = W_a q_t + b_a (over the first S positions)
//
// then a_{t,s} = softmax_s(e_{t,s} / τ) over the real source positions s < lengths[b]
// (max-subtracted; positions s >= lengths[b] get weight 0) and c_t = Σ_s a_{t,s} values_s.
//
// Shapes: the query is one decoder step (B, D) or a block of steps (B, T, D); the context is
// (B, E) or (B, T, E) and the weights (B, S) or (B, T, S) accordingly. lengths is int32 (B)
// with 0 <= lengths[b] <= S; a row with length 0 gets all-zero weights, a zero context and
// zero gradients (never NaN). There is no broadcasting.
#include "attn/tensor.h"

namespace attn {

struct AttentionResult {
  Tensor context;  // (B, E) or (B, T, E)
  Tensor weights;  // (B, S) or (B, T, S); undefined unless options.need_weights
};

// ---- Bahdanau (additive) ------------------------------------------------------------------------

struct AdditiveOptions {
  // "Normed Bahdanau" (TF BahdanauAttention(normalize=True)): v is replaced by g · v / ‖v‖,
  // with g the learned scalar below; gradients flow to g and v.
  bool normalize = false;
  Tensor g;                 // () scalar, required when normalize, must be undefined otherwise
  float temperature = 1.0f; // τ > 0: scores are divided by τ
  bool need_weights = true; // return the weights as a second output of the node
};

// k̃ = K W_kᵀ, computed once per source sequence and reused at every decoder step (one GEMM,
// its own tape node). keys (B, S, E), w_k (A, E) -> (B, S, A).
Tensor additive_project_keys(const Tensor& keys, const Tensor& w_k);

// query (B, D) or (B, T, D); projected_keys (B, S, A) from additive_project_keys; values
// (B, S, E); w_q (A, D); bias (A); v (A); lengths int32 (B).
// Gradients: query, projected_keys, values, w_q, bias, v, options.g.
AttentionResult additive_attention(const Tensor& query, const Tensor& projected_keys, const Tensor& values,
                                   const Tensor& w_q, const Tensor& bias, const Tensor& v, const Tensor& lengths,
                                   const AdditiveOptions& options = {});

// ---- Luong (multiplicative) -------------------------------------------------------------------------

enum class LuongScore {
  dot,      // qᵀ k                      (D must equal E)
  general,  // qᵀ W k,     w (D, E)
  concat,   // vᵀ tanh(W [q; k]),  w (A, D+E), v (A)
};

struct LuongOptions {
  LuongScore score = LuongScore::dot;
  Tensor w;      // general: (D, E); concat: (A, D+E); undefined for dot
  Tensor v;      // concat: (A); undefined otherwise
  Tensor scale;  // optional learned scalar () multiplying the scores ("scaled Luong")
  float temperature = 1.0f;
  bool need_weights = true;
};

// query (B, D) or (B, T, D); keys (B, S, E); values (B, S, E); lengths int32 (B).
// Gradients: query, keys, values, w, v, scale.
AttentionResult luong_attention(const Tensor& query, const Tensor& keys, const Tensor& values,
                                const Tensor& lengths, const LuongOptions& options = {});

// ---- Luong location ---------------------------------------------------------------------------------

struct LocationOptions {
  float temperature = 1.0f;
  bool need_weights = true;
};

// a_t = softmax over the first S positions of (W_a q_t + b_a), masked to lengths.
// query (B, D) or (B, T, D); values (B, S, E); w_a (S_max, D) with S <= S_max; b_a (S_max)
// or undefined; lengths int32 (B). Gradients: query, values, w_a, b_a (rows >= S get none).
AttentionResult location_attention(const Tensor& query, const Tensor& values, const Tensor& w_a,
                                   const Tensor& b_a, const Tensor& lengths, const LocationOptions& options = {});

}  // namespace attn
