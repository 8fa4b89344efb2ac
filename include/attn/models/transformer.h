#pragma once
// Transformer models built from attn/nn/transformer.h:
//
//   TransformerSeq2Seq     encoder-decoder for translation (Batch conventions of
//                          attn/models/batch.h: PAD 0, BOS 1, EOS 2), greedy and beam decoding
//                          with a key/value cache, cross-attention weights for alignment
//   TransformerLM          decoder-only causal language model, sampling with a KV cache
//   TransformerClassifier  encoder-only: [CLS] + tokens -> N self-attention layers -> the
//                          [CLS] state -> linear head; the [CLS] attention for inspection
//
// Embeddings are scaled by √D and added to positions (sinusoidal or learned), then dropout.
// Token embeddings start as N(0, 1/D) with a zero PAD (id 0) row, as fairseq and Marian do
// when scaling by √D (so tied output logits start at unit scale); PAD gets no gradient
// through the lookup. Every layer stack draws its own seed from `seed`.
// Parameter names: "src_embedding.weight", "tgt_embedding.weight" (one shared
// "embedding.weight" with share_embeddings), "positions.weight" (learned only),
// "encoder.layers.0.self_attn.in_proj_weight", ..., "decoder.layers.0.multihead_attn...",
// "generator.weight" / ".bias" (absent with tie_output: the target embedding is used).
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "attn/models/batch.h"
#include "attn/models/seq2seq.h"
#include "attn/nn/layers.h"
#include "attn/nn/module.h"
#include "attn/nn/transformer.h"
#include "attn/random.h"

namespace attn::models {

// The configuration's choices, parsed from their names once; to_string gives the name the
// JSON stores. The parsers throw ValueError listing the valid names, e.g.
//   transformer config: unknown activation 'tanh' (valid: relu, gelu)
using nn::FfnActivation;  // defined beside the layers that apply it
using nn::to_string;
FfnActivation parse_ffn_activation(const std::string& name);
enum class PositionKind { sinusoidal, learned };
const char* to_string(PositionKind positions);
PositionKind parse_position_kind(const std::string& name);

struct TransformerConfig {
  int64_t src_vocab = 0, tgt_vocab = 0;  // Seq2Seq / LM: tgt_vocab; classifier: src_vocab
  int64_t classes = 2;                   // classifier only
  int64_t d_model = 256, heads = 4, ffn = 1024;
  int encoder_layers = 3, decoder_layers = 3;  // LM: decoder_layers; classifier: encoder_layers
  float dropout = 0.1f;
  bool norm_first = true;
  FfnActivation activation = FfnActivation::relu;
  PositionKind positions = PositionKind::sinusoidal;
  int64_t max_len = 256;          // longest sequence positions cover
  bool share_embeddings = false;  // one embedding for source and target (shared vocab)
  bool tie_output = true;         // generator weight = target embedding
  uint64_t seed = 1;
  // The normaliser of every attention (self and cross): softmax, or sparsemax / entmax15 /
  // entmax(α). Stored in the JSON ("normalizer", "alpha") only when not softmax.
  Normalizer normalizer{};
  // TransformerSeq2Seq only: the pointer-generator (See et al. 2017) over the last decoder
  // layer's cross-attention averaged over heads, as OpenNMT-py's copy attention; stored in the
  // JSON ("pointer": true) only when on, so checkpoints without it keep their form.
  bool pointer = false;

  nn::TransformerLayerOptions layer_options() const;
  void validate() const;  // ValueError naming the field
  nlohmann::json to_json() const;
  static TransformerConfig from_json(const nlohmann::json& j);  // subset, rejects unknown keys
};

// Which cross-attention the decoding results report, per step, over the source:
// layer -1 = the last; head -1 = the average over heads.
struct AttentionSelect {
  int layer = -1;
  int head = -1;
};

// TransformerSeq2Seq's per-sequence state of incremental decoding, greedy and beam alike:
// created by start_decoding(), advanced by decode_step(), reordered with beam search's
// hypotheses (BeamSearch::reorder) or cut to the rows still decoding (greedy) through the
// nn::DecodingState interface that the RNN decoder's DecoderState shares. n decoder rows,
// M = n / cache.group memory rows.
struct TransformerDecodingState final : nn::DecodingState {
  Tensor memory;               // (M, S, D) the encoder output, read by the first step only (the cache then holds it)
  nn::KvCache cache;           // per layer the self keys and values (n, H, t, Dh) and the cross ones (M, H, S, Dh)
  Tensor src_ext;              // the pointer: each row's source in extended ids (n, S) int32; else undefined
  int64_t extended_vocab = 0;  // the pointer: Vx, the ids a step scores; else V
  // Row i becomes row index[i]: the cache (its self keys and values in the next step's append)
  // and src_ext.
  void reorder(const Tensor& index) override;
};

// One decode_step's output for n rows.
struct TransformerStepOutput {
  Tensor scores;                            // the pointer: log P (n, 1, Vx); else the logits (n, 1, V)
  Tensor p_gen;                             // the pointer: p_gen (n); else undefined
  std::vector<nn::LayerAttention> weights;  // per decoder layer, the selected ones' cross_weights (n, H, 1, S)
};

class TransformerSeq2Seq : public nn::Module {
  TransformerConfig config_;
  Rng rng_;

 public:
  explicit TransformerSeq2Seq(const TransformerConfig& config);
  const TransformerConfig& config() const { return config_; }

  // Teacher forcing: logits (B, T, V) for batch.tgt_in. With the pointer: log P (B, T, Vx)
  // of the mixture over the extended vocabulary of batch.src_ext (the source itself when
  // undefined), Vx = max(V, batch.extended_vocab), as Seq2Seq's.
  Tensor logits(const Batch& batch);
  // Mean cross-entropy over non-PAD targets, with label smoothing ε (the pointer: the
  // mixture's NLL of batch.tgt_out_ext when defined; ValueError for ε != 0, as Seq2Seq).
  Tensor loss(const Batch& batch, float label_smoothing = 0.0f);

  // Encoder states (B, S, D) for src (B, S), src_lengths (B); weights (when given) per
  // encoder layer.
  Tensor encode(const Tensor& src, const Tensor& src_lengths, std::vector<nn::LayerAttention>* weights = nullptr);
  // attn explain: the source token embeddings √D·E[src] (B, S, D), without positions or
  // dropout, and the teacher-forced logits (B, T, V) of batch.tgt_in computed from them
  // (batch.src is not read); logits(batch) = logits_from_source_embeddings(embed_source(src), batch).
  Tensor embed_source(const Tensor& src) const;
  Tensor logits_from_source_embeddings(const Tensor& source_embeddings, const Batch& batch);

  // No recording (NoGradGuard inside); call eval() first to switch dropout off.
  // attention[b][t] holds S weights of the selected layer/head (zeros past row b's length).
  // Both step the decoder with its KV cache; greedy drops finished rows from the batch.
  // Decoding ends after min(max_len, config.max_len) steps (positions end there).
  // ValueError for max_len / width < 1, a negative or non-finite length penalty, and a
  // layer or head outside [-1, L) / [-1, H).
  // With the pointer, src_ext (B, S) and extended_vocab as Seq2Seq::greedy: outputs may hold
  // ids >= V (copied OOVs, fed back as UNK) and result.copy holds 1 − p_gen of each token.
  DecodeResult greedy(const Tensor& src, const Tensor& src_lengths, int max_len, AttentionSelect select = {},
                      const Tensor& src_ext = Tensor(), int64_t extended_vocab = 0);
  DecodeResult beam(const Tensor& src, const Tensor& src_lengths, const BeamOptions& options,
                    AttentionSelect select = {}, const Tensor& src_ext = Tensor(), int64_t extended_vocab = 0);
  // The steps greedy and beam take (no recording: call them under a NoGradGuard, after eval()).
  // start_decoding encodes src (B, S) and starts the cache with `group` decoder rows per
  // source row (beam: K hypotheses; src_ext (B, S) expanded to them with the pointer).
  // decode_step feeds tokens (n) int32 (ids >= V as UNK) at position cache.steps and computes
  // the cross-attention of the layers `select` and the pointer need.
  TransformerDecodingState start_decoding(const Tensor& src, const Tensor& src_lengths, int64_t group = 1,
                                          const Tensor& src_ext = Tensor(), int64_t extended_vocab = 0);
  TransformerStepOutput decode_step(const Tensor& tokens, TransformerDecodingState& state, AttentionSelect select);
  // Teacher-forced cross-attention of every layer for inspection: per layer (B, H, T, S),
  // not recorded (in training mode with dropout they are the dropped weights: eval() first).
  std::vector<Tensor> cross_attention(const Batch& batch);
  // Every attention of that teacher-forced pass, per layer (for `attn view`).
  struct AttentionMaps {
    std::vector<Tensor> encoder_self;  // (B, H, S, S)
    std::vector<Tensor> decoder_self;  // (B, H, T, T), zero above the diagonal
    std::vector<Tensor> cross;         // (B, H, T, S)
  };
  AttentionMaps attention_maps(const Batch& batch);

  std::unique_ptr<nn::Embedding> src_embedding, tgt_embedding, embedding;  // embedding: shared
  nn::PositionalEncoding positions;
  nn::TransformerEncoder encoder;
  nn::TransformerDecoder decoder;
  std::unique_ptr<nn::Linear> generator;  // absent with tie_output
  // The pointer only: p_gen = σ(w_cᵀ c_t + w_sᵀ s_t + w_xᵀ x_t + b) over [c_t; s_t; x_t] (3D):
  // c_t the last decoder layer's cross-attention output, s_t the decoder output before the
  // projection, x_t the decoder input (embedding + position). "pointer_gate.weight" (1, 3D), ".bias".
  std::unique_ptr<nn::Linear> pointer_gate;

 private:
  // The pointer's log P (B, T, Vx) (ops/pointer.h; transformer_pointer.cpp): logits (B, T, V),
  // h = s_t (B, T, D), x = x_t (B, T, D), copy the last layer's LayerAttention (cross_weights
  // (B, H, T, S), averaged over heads: the copy distribution; cross_output (B, T, D) = c_t),
  // src_ext (B, S) int32. p_gen (when given) receives p_gen (B·T).
  Tensor pointer_output(const Tensor& logits, const Tensor& h, const Tensor& x, const nn::LayerAttention& copy,
                        const Tensor& src_ext, int64_t extended_vocab, Tensor* p_gen = nullptr) const;
  // The teacher-forced output of batch.tgt_in over memory (B, S, D): logits (B, T, V), or the
  // pointer's log P (B, T, Vx) over src_ext's extended ids.
  Tensor teacher_forced_output(const Tensor& memory, const Batch& batch, const Tensor& src_ext, int64_t extended_vocab);
  const nn::Embedding& source_embedding() const;  // src_embedding, or the shared one
  const nn::Embedding& target_embedding() const;  // tgt_embedding, or the shared one
  Tensor output_logits(const Tensor& h) const;    // (..., D) → (..., V)
  // Decoder states (B, T, D) of teacher forcing; weights (when given) per decoder layer.
  Tensor decode_teacher_forced(const Batch& batch, std::vector<nn::LayerAttention>* weights,
                               std::vector<nn::LayerAttention>* encoder_weights = nullptr);
  AttentionSelect checked_select(const char* op, AttentionSelect select) const;
  nn::Dropout dropout_;
};

struct SampleOptions {
  int max_len = 200;         // new tokens at most
  float temperature = 1.0f;  // > 0; 0 = greedy (argmax)
  int top_k = 0;             // 0 = the whole vocabulary
  int32_t stop_id = -1;      // stop a row when it samples this id (e.g. EOS); -1 = never
  uint64_t seed = 1;
};

class TransformerLM : public nn::Module {
  TransformerConfig config_;
  Rng rng_;

 public:
  explicit TransformerLM(const TransformerConfig& config);
  const TransformerConfig& config() const { return config_; }
  // ids (B, T) int32, lengths (B) or undefined → logits (B, T, V), position t predicts t + 1.
  Tensor logits(const Tensor& ids, const Tensor& lengths = Tensor());
  // Mean next-token cross-entropy: inputs ids[:, :-1] predict ids[:, 1:]; PAD targets ignored.
  Tensor loss(const Tensor& ids);
  // Continues `prefix` (non-empty ids) one token at a time with the KV cache; returns the
  // new tokens (up to and including stop_id). At most config.max_len - prefix.size() + 1 new
  // tokens (positions end at max_len). Draws: softmax(logits / temperature) over the top_k
  // ids (ties by lower id), one Rng(seed) uniform per token. No recording.
  std::vector<int32_t> sample(const std::vector<int32_t>& prefix, const SampleOptions& options);
  // The causal self-attention of every layer for ids (B, T): per layer (B, H, T, T), zero
  // above the diagonal. Not recorded (eval() first to switch dropout off).
  std::vector<Tensor> self_attention(const Tensor& ids);

  nn::Embedding embedding;
  nn::PositionalEncoding positions;
  nn::CausalTransformer decoder;
  std::unique_ptr<nn::Linear> generator;  // absent with tie_output

 private:
  Tensor output_logits(const Tensor& h) const;  // (..., D) → (..., V)
  nn::Dropout dropout_;
};

class TransformerClassifier : public nn::Module {
  TransformerConfig config_;
  Rng rng_;

 public:
  explicit TransformerClassifier(const TransformerConfig& config);
  const TransformerConfig& config() const { return config_; }
  // ids (B, S) int32 (no [CLS]: it is prepended inside), lengths (B) in [1, S] →
  // logits (B, classes). x_0 = cls, x_{1+s} = √D·E[ids_s], plus positions 0..S (so S + 1 <=
  // max_len), dropout, encoder with key lengths + 1, the state at position 0, head.
  // With cls_attention, it receives the last layer's head-averaged attention of [CLS] over
  // [CLS] + tokens: (B, S + 1), zero at padding, not recorded.
  Tensor logits(const Tensor& ids, const Tensor& lengths, Tensor* cls_attention = nullptr);
  // Every layer's self-attention for inspection (rollout, per-head statistics): per layer
  // (B, H, S + 1, S + 1), queries by keys over [CLS] + tokens, zero at padded keys; not
  // recorded (in training mode with dropout they are the dropped weights: eval() first).
  std::vector<Tensor> self_attention(const Tensor& ids, const Tensor& lengths);
  // The pieces of logits(), for importance measures that differentiate with respect to the
  // token embeddings: embed(ids) = √D·E[ids] (B, S, D), recorded; logits_from_embeddings
  // takes those (or any (B, S, D) values) in their place, [CLS] and positions added inside,
  // and gives every layer's weights when `weights` is given.
  Tensor embed(const Tensor& ids);
  Tensor logits_from_embeddings(const Tensor& embeddings, const Tensor& lengths,
                                std::vector<nn::LayerAttention>* weights = nullptr);

  nn::Embedding embedding;
  Tensor cls;  // (D) the learned [CLS] vector, registered as "cls"
  nn::PositionalEncoding positions;
  nn::TransformerEncoder encoder;
  nn::Linear head;

 private:
  nn::Dropout dropout_;
};

}  // namespace attn::models
