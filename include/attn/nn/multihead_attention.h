#pragma once
// Multi-head attention modules.
//
// MultiheadAttention: torch.nn.MultiheadAttention(batch_first=True) with the same
// parameters, names, layouts and initialisation, so a state_dict can be copied either way:
//
//   q = query W_qᵀ + b_q   (B, T, D)      k = key W_kᵀ + b_k   (B, S, D)
//   v = value W_vᵀ + b_v   (B, S, D)      split into H heads of Dh = D / H
//   o_h = softmax(q_h k_hᵀ / (√Dh · τ) + attn_bias + mask) v_h      (B, H, T, Dh)
//   out = concat_h(o_h) W_oᵀ + b_o   (B, T, D)
//
// Parameters (registration order = PyTorch's state_dict order):
//   kdim == vdim == D: in_proj_weight (3D, D) = [W_q; W_k; W_v]
//   otherwise (or separate_projections):
//                      q_proj_weight (D, D), k_proj_weight (D, kdim), v_proj_weight (D, vdim)
//   in_proj_bias (3D) = [b_q; b_k; b_v]          (only with bias)
//   out_proj.weight (D, D), out_proj.bias (D)    (bias only with bias)
// Initialisation as PyTorch: out_proj gets nn.Linear's default (drawn first), then
// xavier_uniform_ on the in-projection weight(s); in_proj_bias and out_proj.bias are zero.
//
// The attention itself is the fused sdpa op (never materialises the (T, S) scores unless
// weights are asked for). Self-attention, forward(x, x, x) with the very same tensor, runs
// the packed projection as ONE linear to (B, T, 3D); forward(q, kv, kv) with a shared
// key/value tensor and packed weights projects keys and values with one linear to (B, S, 2D).
//
// Dropout on the attention weights (options.dropout > 0, training mode): the fused kernel
// cannot drop weights inside its online softmax, so this path materialises the weights
// (B, H, T, S) from sdpa (need_weights), applies inverted dropout, and multiplies by v with
// one batched GEMM. Memory is then O(T·S) per head. In eval mode, or with dropout == 0,
// the fused path is used. As in PyTorch, the weights returned in training with dropout are
// the ones actually used, i.e. after dropout.
//
// MultiheadGeneralAttention: Luong's `general` score per head. Each head h scores with its
// own bilinear matrix W_h (Dq_h, Dk_h) on its slice of the (optionally projected) query and
// keys:  e_{t,s} = scale · q_{h,t}ᵀ W_h k_{h,s} / τ,  softmax over s, context Σ_s a v_{h,s};
// heads concatenated, optionally followed by an output projection. With one head, no
// projections and scale 1 it is exactly luong_attention(general) with w = W_0.
//
// Masks (MhaCallOptions), combinable:
//   key_lengths       int32 (B): keys s >= key_lengths[b] are masked, 0 <= length <= S.
//   key_padding_mask  int32 (B, S): NONZERO = KEEP. Note: PyTorch's key_padding_mask is the
//                     opposite (True = ignore); convert with keep = ~torch_mask. Exclusive
//                     with key_lengths.
//   causal            query t sees keys s <= t + (S - T) (bottom-right aligned; the usual
//                     lower triangle when T == S).
//   attn_bias         float32 (T, S), added to the scores of every batch row and head, or one
//                     per (b, h): (B·H, T, S) or (B, H, T, S), like PyTorch's float attn_mask;
//                     it may require grad (a learned bias; ops/sdpa.h).
// A query row that sees no key gets zero weights and a zero attention output (so `out` is
// out_proj.bias there), and zero gradients; never NaN (PyTorch gives NaN).
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "attn/nn/layers.h"
#include "attn/nn/module.h"
#include "attn/ops/softmax.h"
#include "attn/random.h"
#include "attn/tensor.h"

namespace attn::nn {

struct MultiheadAttentionOptions {
  int64_t embed_dim = 0;  // D
  int64_t num_heads = 1;  // H; D must be divisible by H
  int64_t kdim = 0;       // size of the key features; 0 means embed_dim
  int64_t vdim = 0;       // size of the value features; 0 means embed_dim
  bool bias = true;       // in_proj_bias and out_proj.bias
  float dropout = 0.0f;   // on the attention weights, in training mode; in [0, 1)
  uint64_t seed = 0;      // initial weights and the dropout stream
  // q_proj_weight, k_proj_weight, v_proj_weight even when kdim == vdim == D (the names of
  // the RNN decoder's multihead attention, whose kdim is E; PyTorch packs them then).
  bool separate_projections = false;
  // The normaliser of the scores: softmax (the fused SDPA kernel), or sparsemax / entmax15 /
  // entmax(α) (sdpa's materialised path; attn/ops/sdpa.h).
  Normalizer normalizer{};
};

struct MhaCallOptions {
  Tensor key_lengths{};       // int32 (B), or undefined
  Tensor key_padding_mask{};  // int32 (B, S), nonzero = keep (PyTorch: True = ignore), or undefined
  bool causal = false;
  Tensor attn_bias{};        // float32 (T, S), (B·H, T, S) or (B, H, T, S), additive, or undefined
  float temperature = 1.0f;  // τ > 0 divides the scores (not the bias)
  bool need_weights = false;
  std::vector<int> heads{};      // return weights only for these heads (in this order); empty = all
  bool average_weights = false;  // average the returned weights over the (selected) heads
  // With attention dropout in training: return the weights before dropout (a distribution
  // over the keys, what a copy mechanism reads) instead of the dropped ones the output used.
  bool weights_before_dropout = false;
};

struct MhaResult {
  Tensor out{};      // (B, T, D)
  Tensor weights{};  // need_weights: (B, H, T, S), (B, H', T, S) for selected heads, or (B, T, S)
                     // averaged; undefined otherwise. Gradients flow through it when used.
};

class MultiheadAttention : public Module {
  // Declared first: initialised before out_proj, which draws its weights from rng_.
  MultiheadAttentionOptions options_;
  Rng rng_;

 public:
  explicit MultiheadAttention(const MultiheadAttentionOptions& options);

  // query (B, T, D), key (B, S, kdim), value (B, S, vdim) → MhaResult.
  // Throws ShapeError for a wrong shape ("multihead_attention: 'query' expected (B, T, D=16),
  // got (2, 5, 8)"), ValueError for a bad mask value, both masks, a selected head out of
  // range, heads/average_weights without need_weights, or temperature <= 0.
  MhaResult forward(const Tensor& query, const Tensor& key, const Tensor& value, const MhaCallOptions& call = {});

  const MultiheadAttentionOptions& options() const { return options_; }
  int64_t head_dim() const { return options_.embed_dim / options_.num_heads; }

  // forward() in pieces, for incremental decoding with a key/value cache (nn/transformer.h):
  // project once, keep the heads, attend later. Each checks its inputs (ShapeError/ValueError
  // as forward) and records gradients like forward. forward(q, k, v, call) equals
  // attend_heads(project_query(q), project_kv(k, v).first, project_kv(k, v).second, call).
  //
  // query (B, T, D) → q (B, H, T, Dh).
  Tensor project_query(const Tensor& query) const;
  // key (B, S, kdim), value (B, S, vdim) → k, v (B, H, S, Dh); one GEMM to (B, S, 2D) when
  // key.same(value) and the weights are packed.
  std::pair<Tensor, Tensor> project_kv(const Tensor& key, const Tensor& value) const;
  // Self-attention projections of x (B, T, D) → {q, k, v} each (B, H, T, Dh); one GEMM to
  // (B, T, 3D) with packed weights. ValueError when kdim or vdim differ from D.
  std::vector<Tensor> project_qkv(const Tensor& x) const;
  // q (B, H, T, Dh), k (B, H, S, Dh), v (B, H, S, Dh) already projected → out (B, T, D) =
  // out_proj(merge_heads(attention)), weights as forward. The masks in `call` refer to S.
  MhaResult attend_heads(const Tensor& q, const Tensor& k, const Tensor& v, const MhaCallOptions& call = {});
  // attend_heads(project_query(query), k, v, call): query (B, T, D).
  MhaResult attend_projected(const Tensor& query, const Tensor& k, const Tensor& v, const MhaCallOptions& call = {});

  // Undefined when not used by this configuration (None in PyTorch).
  Tensor in_proj_weight;                               // (3D, D) when kdim == vdim == D
  Tensor q_proj_weight, k_proj_weight, v_proj_weight;  // otherwise
  Tensor in_proj_bias;                                 // (3D) with bias
  Linear out_proj;                                     // D → D

 private:
  Tensor project_query_(const Tensor& query) const;
  std::pair<Tensor, Tensor> project_kv_(const Tensor& key, const Tensor& value) const;
  MhaResult attend_heads_(const Tensor& q, const Tensor& k, const Tensor& v, const MhaCallOptions& call);
  Rng dropout_rng_;
};

struct MultiheadGeneralAttentionOptions {
  int64_t embed_dim = 0;  // D: query features (the model size when projecting)
  int64_t num_heads = 1;  // H
  int64_t kdim = 0;       // key features; 0 means embed_dim
  int64_t vdim = 0;       // value features; 0 means embed_dim
  bool in_proj = true;    // project q, k, v to D features first (then Dq_h = Dk_h = Dv_h = D/H)
  bool out_proj = true;   // final Linear(Dc → D), Dc = D with in_proj, vdim without
  bool bias = true;       // biases of the projections
  float scale = 1.0f;     // multiplies the scores; 1 is Luong's unscaled general score,
                          // 0 means 1 / sqrt(Dk_h)
  float dropout = 0.0f;   // on the attention weights, in training mode
  uint64_t seed = 0;
};

// Parameters: with in_proj: q_proj_weight (D, D), k_proj_weight (D, kdim), v_proj_weight
// (D, vdim) and in_proj_bias (3D) with bias; always bilinear_weight (H, Dq_h, Dk_h), each
// head xavier_uniform_; with out_proj: out_proj.weight (D, Dc), out_proj.bias (D).
// Without in_proj, D, kdim and vdim must each be divisible by H; the output is (B, T, vdim)
// without out_proj.
class MultiheadGeneralAttention : public Module {
 public:
  explicit MultiheadGeneralAttention(const MultiheadGeneralAttentionOptions& options);

  // query (B, T, D), key (B, S, kdim), value (B, S, vdim) → out (B, T, D or vdim), weights
  // as MultiheadAttention.
  MhaResult forward(const Tensor& query, const Tensor& key, const Tensor& value, const MhaCallOptions& call = {});

  const MultiheadGeneralAttentionOptions& options() const { return options_; }

  Tensor q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias;  // with in_proj
  Tensor bilinear_weight;                                            // (H, Dq_h, Dk_h)
  std::unique_ptr<Linear> out_proj;                                  // with out_proj

 private:
  MultiheadGeneralAttentionOptions options_;
  Rng rng_;
  Rng dropout_rng_;
};

}  // namespace attn::nn
