#pragma once
// Transformer blocks (Vaswani et al. 2017) with torch.nn.TransformerEncoderLayer /
// TransformerDecoderLayer semantics (batch_first=True) and parameter names, so a
// state_dict copies either way:
//
//   encoder layer, post-LN (norm_first=false):  x = LN1(x + Drop(SelfAttn(x)));  x = LN2(x + Drop(FFN(x)))
//   encoder layer, pre-LN  (norm_first=true):   x = x + Drop(SelfAttn(LN1(x)));  x = x + Drop(FFN(LN2(x)))
//   decoder layer adds cross-attention over the encoder memory between the two:
//     post-LN: x = LN1(x + Drop(CausalSelfAttn(x)));  x = LN2(x + Drop(CrossAttn(x, mem)));  x = LN3(x + Drop(FFN(x)))
//     pre-LN:  x = x + Drop(CausalSelfAttn(LN1(x)));  x = x + Drop(CrossAttn(LN2(x), mem)); x = x + Drop(FFN(LN3(x)))
//   FFN(x) = linear2(Drop(act(linear1(x)))), act = relu | gelu
//
// Parameter names (as PyTorch): self_attn.in_proj_weight, self_attn.in_proj_bias,
// self_attn.out_proj.{weight,bias}, [multihead_attn.* (decoder)], linear1.{weight,bias},
// linear2.{weight,bias}, norm1/norm2[/norm3].{weight,bias}. Stacks: layers.<i>.* and, for
// pre-LN stacks, a final norm.{weight,bias} (as nn.TransformerEncoder(norm=LayerNorm)).
//
// Masks: key_lengths int32 (B) (keys s >= length are padding); the decoder's
// self-attention is causal. A query row with no visible key gives zeros, never NaN.
//
// Incremental decoding: KvCache keeps, per decoder layer, the projected self-attention
// keys and values of every step so far (B, H, t, Dh) and the cross-attention keys and
// values of the memory (B, H, S, Dh), computed once. Decoding step t then costs O(t) per
// layer instead of recomputing the O(t²) prefix; the result equals the full causal
// forward pass on the same prefix (tests/nn/transformer_test.cpp checks it). Appending a
// step copies the (B, H, t, Dh) cache into a (B, H, t + 1, Dh) one (sdpa needs contiguous
// keys), O(t) per step like the attention itself. step() runs under its own NoGradGuard:
// it never records gradients, whatever the caller's grad mode.
//
// Seeds: every layer of a stack gets its own seed derived from options.seed and its index
// (so layers start different, unlike PyTorch's deep-copied clones); inside a layer each
// MultiheadAttention, the linear1/linear2 initialisation and each Dropout draw from their
// own stream derived from that seed. Same options → same weights and dropout masks.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attn/nn/decoding_state.h"
#include "attn/nn/layers.h"
#include "attn/nn/module.h"
#include "attn/nn/multihead_attention.h"
#include "attn/random.h"
#include "attn/tensor.h"

namespace attn::nn {

// The feed-forward activation, chosen once from its name.
enum class FfnActivation { relu, gelu };
const char* to_string(FfnActivation activation);
// ValueError "<who>: unknown activation '<name>' (valid: relu, gelu)".
FfnActivation parse_ffn_activation(const std::string& name, const std::string& who);

struct TransformerLayerOptions {
  int64_t d_model = 256;   // D
  int64_t heads = 4;       // H, dividing D
  int64_t ffn = 1024;      // F, the feed-forward width
  float dropout = 0.1f;    // on attention weights, residual branches and inside the FFN
  bool norm_first = true;  // pre-LN (true) or post-LN (false, the 2017 paper and PyTorch's default)
  FfnActivation activation = FfnActivation::relu;
  float eps = 1e-5f;        // layer norm epsilon
  uint64_t seed = 1;        // initial weights and dropout streams
  Normalizer normalizer{};  // of every attention's scores (MultiheadAttentionOptions::normalizer)
  void validate() const;    // ValueError naming the bad field
};

// Attention weights of one block, for inspection (need_weights): (B, H, T, S).
struct LayerAttention {
  Tensor self_weights;   // (B, H, T, T) (decoder: causal, so zero above the diagonal)
  Tensor cross_weights;  // decoder only: (B, H, T, S)
  Tensor cross_output;   // decoder only: the cross-attention's output (B, T, D), before dropout and the residual
};

struct LayerKvCache;

class TransformerEncoderLayer : public Module {
  // Declared first: validated and seeded before the members below are built.
  TransformerLayerOptions options_;
  Rng rng_;  // linear1, then linear2 (nn.Linear's default init)

 public:
  explicit TransformerEncoderLayer(const TransformerLayerOptions& options);
  // x (B, S, D), key_lengths (B) int32 or undefined → (B, S, D). With weights given,
  // weights->self_weights receives the self-attention weights (B, H, S, S).
  Tensor forward(const Tensor& x, const Tensor& key_lengths, LayerAttention* weights = nullptr);
  // As forward, with causal self-attention (position t sees keys s <= t), for decoder-only
  // stacks (CausalTransformer).
  Tensor forward_causal(const Tensor& x, const Tensor& key_lengths, LayerAttention* weights = nullptr);
  // One causal step: x (B, 1, D) at position t = cache.self_k's length; appends this step's
  // keys and values to cache.self_k / self_v (cross_* unused) → (B, 1, D). No gradients.
  Tensor step(const Tensor& x, LayerKvCache& cache, LayerAttention* weights = nullptr);

  MultiheadAttention self_attn;
  Linear linear1, linear2;
  LayerNorm norm1, norm2;
  const TransformerLayerOptions& options() const { return options_; }

 private:
  Tensor run(const Tensor& x, const Tensor& key_lengths, bool causal, LayerAttention* weights);
  Tensor feed_forward(const Tensor& h);
  Dropout dropout_, dropout1_, dropout2_;
};

// One decoder layer's incremental state. M = B / group memory rows (KvCache::group).
struct LayerKvCache {
  Tensor self_k, self_v;    // (B, H, t, Dh): every step so far
  Tensor cross_k, cross_v;  // (M, H, S, Dh): the memory, projected once
};
struct KvCache final : DecodingState {
  std::vector<LayerKvCache> layers;
  Tensor memory_lengths;  // (M) int32
  int64_t steps = 0;      // t: positions already in the cache
  // Decoder rows per memory row: rows g·group .. g·group + group - 1 attend to memory row g
  // (beam search: the hypotheses of one source row share its memory, so its cross keys and
  // values are projected, kept and attended once, the hypotheses as `group` queries).
  int64_t group = 1;
  // Keeps only the batch rows `rows` (int32 (B'), values in [0, B)), in that order (beam
  // search reorders hypotheses with it): the self keys and values by rows, the memory rows
  // (cross keys, values, memory_lengths) by rows[g·group] / group. With group > 1, B' is a
  // multiple of group and each group of `rows` comes from one memory row. ShapeError for rows
  // not int32 (B'), ValueError naming a row outside [0, B) or a group that mixes memory rows.
  // The caller reorders its own memory tensor (it is read again only if the cross keys were
  // never projected).
  void select_rows(const Tensor& rows);
  // select_rows without the self keys and values (TransformerDecoder::step with rows gathers
  // them in the copy that appends its step).
  void select_memory_rows(const Tensor& rows);
  // DecodingState (beam search, greedy's finished rows): select_rows(index), the memory rows
  // now (errors as select_rows), the self keys and values at the next TransformerDecoder::step,
  // gathered in the copy that appends its step (one copy of the cache instead of two).
  void reorder(const Tensor& index) override;
  // A reorder whose self keys and values are still to gather: int32 (B') into the rows that
  // self_k / self_v hold; undefined when none is pending. gather_pending() gathers them now
  // (select_rows, select_memory_rows and CausalTransformer::step do so first).
  Tensor pending_rows;
  void gather_pending();
};

class TransformerDecoderLayer : public Module {
  TransformerLayerOptions options_;  // declared first, as in TransformerEncoderLayer
  Rng rng_;

 public:
  explicit TransformerDecoderLayer(const TransformerLayerOptions& options);
  // Full (teacher-forced) pass: x (B, T, D), memory (B, S, D), memory_lengths (B) or
  // undefined → (B, T, D); causal self-attention. copy (with weights given): only the cross
  // weights and output, the weights taken before attention dropout (a pointer's copy
  // distribution: each row sums to 1 in training too); they are recorded for gradients.
  Tensor forward(const Tensor& x, const Tensor& memory, const Tensor& memory_lengths, LayerAttention* weights = nullptr,
                 bool copy = false);
  // One step: x (B, 1, D) at position t (the cache's length); appends this step's keys and
  // values to `cache` (cross keys/values are projected from `memory` (M, S, D), M = B / group,
  // on the first call, when cache.cross_k is undefined; later calls do not read memory) →
  // (B, 1, D). Never records gradients (a NoGradGuard inside). With weights given:
  // self_weights (B, H, 1, t + 1), cross_weights (B, H, 1, S); with self_weights false, the
  // cross weights alone (what a search keeps). memory_lengths (M); group as KvCache::group.
  // rows (int32 (B), when defined): batch row b continues the self cache's row rows[b] (the
  // cache still holds the previous batch; gathered in the same copy as the append).
  Tensor step(const Tensor& x, const Tensor& memory, LayerKvCache& cache, const Tensor& memory_lengths,
              LayerAttention* weights = nullptr, bool self_weights = true, int64_t group = 1,
              const Tensor& rows = Tensor());

  MultiheadAttention self_attn, multihead_attn;
  Linear linear1, linear2;
  LayerNorm norm1, norm2, norm3;
  const TransformerLayerOptions& options() const { return options_; }

 private:
  Tensor feed_forward(const Tensor& h);
  Dropout dropout_, dropout1_, dropout2_, dropout3_;
};

// N encoder layers (+ the final norm for pre-LN).
class TransformerEncoder : public Module {
 public:
  TransformerEncoder(const TransformerLayerOptions& options, int layers);
  // x (B, S, D), key_lengths (B) or undefined → (B, S, D). weights (when given) gets one
  // LayerAttention per layer.
  Tensor forward(const Tensor& x, const Tensor& key_lengths, std::vector<LayerAttention>* weights = nullptr);
  std::vector<std::unique_ptr<TransformerEncoderLayer>> layers;
  std::unique_ptr<LayerNorm> norm;  // pre-LN only

 private:
  Module layer_list_;  // registered as "layers", holding "0", "1", ...
};

// N decoder layers (+ the final norm for pre-LN). A decoder-only LM has no memory: it uses
// CausalTransformer below.
class TransformerDecoder : public Module {
 public:
  TransformerDecoder(const TransformerLayerOptions& options, int layers);
  // copy_layer >= 0 (with weights given): only that layer's entry is filled, as
  // TransformerDecoderLayer::forward's copy (the pointer-generator's copy distribution).
  Tensor forward(const Tensor& x, const Tensor& memory, const Tensor& memory_lengths,
                 std::vector<LayerAttention>* weights = nullptr, int copy_layer = -1);
  // An empty cache for this decoder (one LayerKvCache per layer); memory_lengths (M) int32
  // or undefined is kept in the cache and used by every step. group: decoder rows per memory
  // row (KvCache::group; >= 1, else ValueError).
  KvCache start(const Tensor& memory_lengths, int64_t group = 1) const;
  // x (B, 1, D) → (B, 1, D) at position cache.steps; cache.steps += 1. memory (M, S, D),
  // M = B / cache.group, is projected on the first step only. No gradients (NoGradGuard inside). cross_layer >= 0 (with
  // weights given): only that layer's cross_weights are computed, the rest of *weights stays
  // undefined (the searches keep one layer's alignment; the others cost a second pass each).
  // A reorder left by cache.reorder() (cache.pending_rows, B rows, else ShapeError) is done in
  // the copy that appends this step's keys and values.
  Tensor step(const Tensor& x, const Tensor& memory, KvCache& cache, std::vector<LayerAttention>* weights = nullptr,
              int cross_layer = -1);
  std::vector<std::unique_ptr<TransformerDecoderLayer>> layers;
  std::unique_ptr<LayerNorm> norm;  // pre-LN only

 private:
  Module layer_list_;
};

// Decoder-only stack (GPT-style): encoder layers with causal self-attention and a KV cache.
class CausalTransformer : public Module {
 public:
  CausalTransformer(const TransformerLayerOptions& options, int layers);
  // x (B, T, D), lengths (B) or undefined → (B, T, D); position t sees positions <= t.
  Tensor forward(const Tensor& x, const Tensor& lengths, std::vector<LayerAttention>* weights = nullptr);
  // An empty cache: per layer self_k / self_v (B, H, 0, Dh).
  KvCache start(int64_t batch) const;
  // x (B, 1, D) → (B, 1, D); cache.steps += 1. No gradients (NoGradGuard inside).
  Tensor step(const Tensor& x, KvCache& cache);
  std::vector<std::unique_ptr<TransformerEncoderLayer>> layers;
  std::unique_ptr<LayerNorm> norm;  // pre-LN only

 private:
  Module layer_list_;
};

// Token positions. sinusoidal: the fixed table PE(p, 2i) = sin(p / 10000^(2i/D)),
// PE(p, 2i+1) = cos(...) (no parameters); learned: a parameter "weight" (max_len, D),
// N(0, 1)·0.02 at start. forward(x (B, T, D), offset) = x + PE[offset .. offset + T).
// ValueError when offset < 0 or offset + T > max_len; ShapeError for x not (B, T, D).
// kind, max_len >= 1 and d_model >= 1 are checked at construction (ValueError).
class PositionalEncoding : public Module {
 public:
  PositionalEncoding(const std::string& kind, int64_t max_len, int64_t d_model, Rng& rng);
  Tensor forward(const Tensor& x, int64_t offset = 0) const;
  std::string kind;
  int64_t max_len, d_model;
  Tensor weight;  // learned: (max_len, D); sinusoidal: the table, not a parameter
};

}  // namespace attn::nn
