#pragma once
// The attention family of RNN encoder-decoders, each one fused tape node with a
// hand-written backward:
//
//   additive_attention   Bahdanau:      e_{t,s} = vᵀ tanh(W_q q_t + k̃_s + b),  k̃ = K W_kᵀ
//   luong_attention      Luong:         dot qᵀk | general qᵀ W k | concat vᵀ tanh(W [q; k])
//   location_attention   Luong location: e_t = W_a q_t + b_a (over the first S positions)
//   location_aware_attention  Chorowski et al. 2015: e_{t,s} = vᵀ tanh(W_q q_t + k̃_s + U f_{t,s} + b),
//                        f_t = F * a_{t−1} the previous alignment convolved (composed of
//                        location_aware_features, linear, add and additive_attention)
//
// then a_{t,s} = softmax_s(e_{t,s} / τ) over the real source positions (max-subtracted;
// masked positions get weight exactly 0) and c_t = Σ_s a_{t,s} values_s. options.normalizer
// replaces the softmax by sparsemax, entmax15 or α-entmax (attn/ops/softmax.h), whose weights
// are exactly 0 below a threshold; ValueError for α <= 1 or NaN, and with smoothing or a
// learned scale (which assume the softmax).
//
// Shapes: the query is one decoder step (B, D) or a block of steps (B, T, D); the context is
// (B, E) or (B, T, E) and the weights (B, S) or (B, T, S) accordingly. There is no
// broadcasting.
//
// Masking — exactly one of these, or neither (then all S positions are real):
// - lengths int32 (B), 0 <= lengths[b] <= S: positions s >= lengths[b] are masked. This is the
//   positional `lengths` argument; pass an undefined Tensor() to use the mask instead.
// - options.key_padding_mask int32 (B, S), NONZERO = KEEP, 0 = masked — the convention of
//   attn::sdpa and nn::MultiheadAttention (PyTorch's key_padding_mask is the opposite,
//   True = ignore: pass `1 - mask`). Any pattern is allowed, not only a padded suffix. A mask
//   equal to the one lengths describe gives bit-identical results.
// A row with no real position gets all-zero weights, a zero context and zero gradients
// (never NaN). Both given, a mask that is not int32, or lengths out of range: ValueError; a
// mask of any shape but (B, S): ShapeError.
//
// Dropout on the weights (options.dropout = p in [0, 1), applied when options.training):
// inverted dropout — the mask of attn::dropout(weights, p, seed), seed = options.rng->next()
// drawn once per call (rng is required then, and untouched otherwise) — between the softmax
// and the context: c_t = Σ_s dropout(a)_{t,s} values_s. As in nn::MultiheadAttention and
// PyTorch's nn.MultiheadAttention, the RETURNED weights are the ones actually used, i.e.
// AFTER dropout (rows then do not sum to 1; hard_attention_sample rejects them: sample from
// weights computed with dropout = 0). Gradients flow through the kept entries, scaled by
// 1 / (1 − p).
//
// Parameters: nn::additive_attention_init, nn::luong_attention_init and
// nn::location_attention_init (attn/nn/attention_init.h) create them Xavier-initialised; the
// decoder's step-attention modules (attn/nn/step_attention.h) hold them.
#include "attn/ops/softmax.h"
#include "attn/random.h"
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
  Tensor g;                  // () scalar, required when normalize, must be undefined otherwise
  float temperature = 1.0f;  // τ > 0: scores are divided by τ
  bool need_weights = true;  // return the weights as a second output of the node
  // Chorowski et al.'s smoothing: a_s = σ(e_s / τ) / Σ_j σ(e_j / τ) over the real positions
  // instead of the softmax (flatter weights: σ does not single out the maximum as exp does).
  bool smoothing = false;
  Normalizer normalizer{};  // softmax (default), sparsemax, entmax15, entmax(α)
  Tensor key_padding_mask;  // int32 (B, S), nonzero = keep; exclusive with `lengths`
  float dropout = 0.0f;     // p in [0, 1): inverted dropout on the weights when training
  bool training = true;     // dropout applies only when training (and p > 0)
  Rng* rng = nullptr;       // dropout's seed source (one next() per call); required when it applies
};

// k̃ = K W_kᵀ, computed once per source sequence and reused at every decoder step (one GEMM,
// its own tape node). keys (B, S, E), w_k (A, E) -> (B, S, A).
Tensor additive_project_keys(const Tensor& keys, const Tensor& w_k);

// query (B, D) or (B, T, D); projected_keys (B, S, A) from additive_project_keys; values
// (B, S, E); w_q (A, D); bias (A); v (A); lengths int32 (B) or undefined (see Masking).
// Gradients: query, projected_keys, values, w_q, bias, v, options.g.
AttentionResult additive_attention(const Tensor& query, const Tensor& projected_keys, const Tensor& values,
                                   const Tensor& w_q, const Tensor& bias, const Tensor& v, const Tensor& lengths,
                                   const AdditiveOptions& options = {});

// additive_attention's backward from a saved forward, off the tape (attn.torch's autograd
// Function keeps the weights its forward returned): the same kernels in the same order as the
// tape's backward, for the defaults only (no normalize, temperature 1, no dropout, no mask but
// lengths). u = Q W_qᵀ + b is recomputed (one GEMM). Shapes as additive_attention; weights
// (B[, T], S), dcontext (B[, T], E), dweights like weights or undefined; lengths undefined: every
// row has S keys. Throws ShapeError on a shape that does not fit.
struct AdditiveGradients {
  Tensor query, projected_keys, values, w_q, bias, v;
};
AdditiveGradients additive_attention_backward(const Tensor& query, const Tensor& projected_keys, const Tensor& values,
                                              const Tensor& w_q, const Tensor& bias, const Tensor& v,
                                              const Tensor& lengths, const Tensor& weights, const Tensor& dcontext,
                                              const Tensor& dweights);

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
  Normalizer normalizer{};  // softmax (default), sparsemax, entmax15, entmax(α); softmax with `scale`
  Tensor key_padding_mask;  // int32 (B, S), nonzero = keep; exclusive with `lengths`
  float dropout = 0.0f;     // p in [0, 1): inverted dropout on the weights when training
  bool training = true;     // dropout applies only when training (and p > 0)
  Rng* rng = nullptr;       // dropout's seed source (one next() per call); required when it applies
};

// query (B, D) or (B, T, D); keys (B, S, E); values (B, S, E); lengths int32 (B) or undefined.
// Gradients: query, keys, values, w, v, scale.
AttentionResult luong_attention(const Tensor& query, const Tensor& keys, const Tensor& values, const Tensor& lengths,
                                const LuongOptions& options = {});

// ---- Luong location ---------------------------------------------------------------------------------

struct LocationOptions {
  float temperature = 1.0f;
  bool need_weights = true;
  Normalizer normalizer{};  // softmax (default), sparsemax, entmax15, entmax(α)
  Tensor key_padding_mask;  // int32 (B, S), nonzero = keep; exclusive with `lengths`
  float dropout = 0.0f;     // p in [0, 1): inverted dropout on the weights when training
  bool training = true;     // dropout applies only when training (and p > 0)
  Rng* rng = nullptr;       // dropout's seed source (one next() per call); required when it applies
};

// a_t = softmax over the first S positions of (W_a q_t + b_a), masked to lengths.
// query (B, D) or (B, T, D); values (B, S, E); w_a (S_max, D) with S <= S_max; b_a (S_max)
// or undefined; lengths int32 (B) or undefined. Gradients: query, values, w_a, b_a (rows >= S
// get none).
AttentionResult location_attention(const Tensor& query, const Tensor& values, const Tensor& w_a, const Tensor& b_a,
                                   const Tensor& lengths, const LocationOptions& options = {});

// ---- Chorowski location-aware ----------------------------------------------------------------------

// f = F * a_{t−1}: the previous alignment convolved with K filters of odd width r, zero
// padded and centred (PyTorch's conv1d(prev[:, None], filters[:, None], padding=r // 2), a
// cross-correlation: f[b, s, k] = Σ_j filters[k, j] prev[b, s + j − r/2]). The convolution is
// an im2col of prev (kernels/location_aware.h) and one GEMM.
// prev_weights (B, S), filters (K, r) with r odd -> (B, S, K). Gradients: prev_weights, filters.
Tensor location_aware_features(const Tensor& prev_weights, const Tensor& filters);

struct LocationAwareOptions {
  float sharpening = 1.0f;  // β > 0: a = softmax(β e) (Chorowski's sharpening; 1 = plain softmax)
  bool smoothing = false;   // σ(β e) normalised instead of the softmax (AdditiveOptions::smoothing)
  Normalizer normalizer{};  // softmax (default), sparsemax, entmax15, entmax(α) of β e
  bool need_weights = true;
};

// One decoder step of location-aware attention (Chorowski et al. 2015, eq. 5-9):
//   f = location_aware_features(prev_weights, filters)          (B, S, K)
//   e_s = vᵀ tanh(W_q q + k̃_s + U f_s + b),  k̃ = additive_project_keys(values or keys, w_k)
//   a = softmax(β e) over the real positions (or smoothing), c = Σ_s a_s values_s.
// query (B, D); projected_keys (B, S, A); values (B, S, E); prev_weights (B, S), the previous
// step's weights (zero past each row's length); w_q (A, D); bias (A); v (A); filters (K, r), r
// odd; w_loc = U (A, K); lengths int32 (B) in [0, S]. A row of length 0 gets zero weights and
// context. Gradients: every tensor argument, prev_weights included (training backpropagates
// through the alignment of the step before).
AttentionResult location_aware_attention(const Tensor& query, const Tensor& projected_keys, const Tensor& values,
                                         const Tensor& prev_weights, const Tensor& w_q, const Tensor& bias,
                                         const Tensor& v, const Tensor& filters, const Tensor& w_loc,
                                         const Tensor& lengths, const LocationAwareOptions& options = {});

}  // namespace attn
