#pragma once
// One interface over the two translation model families, for the translation trainer and
// the `attn translate`, `attn eval` and `attn align` commands:
//   "rnn"          Seq2Seq (attn/models/seq2seq.h): GRU/LSTM encoder-decoder, Bahdanau or Luong
//   "transformer"  TransformerSeq2Seq (attn/models/transformer.h)
// Both read Batch (PAD 0, BOS 1, EOS 2) with one shared source/target vocabulary.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "attn/models/batch.h"
#include "attn/models/seq2seq.h"
#include "attn/models/transformer.h"
#include "attn/nn/module.h"

namespace attn::models {

// The two families, by the name checkpoints ("kind") and `--model` store. parse_translator_kind
// throws ValueError: unknown translation model 'x' (valid: rnn, transformer).
enum class TranslatorKind { rnn, transformer };
const char* to_string(TranslatorKind kind);  // "rnn" | "transformer"
TranslatorKind parse_translator_kind(const std::string& name);

// Sets the vocabulary size V of a `kind` configuration: an RNN's "vocab", a Transformer's
// "src_vocab" and "tgt_vocab" (one shared vocabulary).
void set_translator_vocab(TranslatorKind kind, nlohmann::json& config, int64_t vocab);

struct TranslatorDecodeOptions {
  int beam = 1;                       // 1: greedy; > 1: beam width
  int max_len = 100;                  // output tokens at most
  float length_penalty = 1.0f;        // beam: GNMT's α
  float coverage_penalty = 0.0f;      // beam: GNMT's β (BeamOptions)
  BeamStop stop = BeamStop::bound;    // beam: when a sentence stops (BeamOptions)
  BeamRules rules = BeamRules::attn;  // beam: whose scoring and stopping rules (BeamOptions)
  AttentionSelect select{};           // Transformer: which cross-attention the weights report
  // A model with the pointer-generator: the source in extended ids (B, S) and Vx
  // (Seq2Seq::greedy, TransformerSeq2Seq::greedy); undefined: no OOVs.
  Tensor src_ext = Tensor();
  int64_t extended_vocab = 0;
};

class Translator {
 public:
  virtual ~Translator() = default;
  virtual nn::Module& module() = 0;
  virtual TranslatorKind kind() const = 0;
  // The model behind the interface: the one of the family kind() names, null for the other.
  virtual Seq2Seq* rnn() { return nullptr; }
  virtual TransformerSeq2Seq* transformer() { return nullptr; }
  virtual nlohmann::json config_json() const = 0;
  virtual int64_t vocab() const = 0;
  // Mean cross-entropy over non-PAD targets with label smoothing ε (plus hard attention's
  // REINFORCE term for an RNN with --score hard, in training mode).
  virtual Tensor loss(const Batch& batch, float label_smoothing) = 0;
  // Greedy (beam 1) or beam decoding, with the weights over the source per output step:
  // the RNN's attention (multi-head: head-major H·S), the Transformer's cross-attention of
  // the selected layer / head.
  virtual DecodeResult decode(const Tensor& src, const Tensor& src_lengths, const TranslatorDecodeOptions& options) = 0;
  // Decoder layers and heads whose attention decode() can select (RNN: 1 layer, its heads).
  virtual int attention_layers() const = 0;
  virtual int attention_heads() const = 0;
  // Whether the attention decode() reports reads the source online (nn::StepAttention::online).
  virtual bool online_attention() const { return false; }
  // Every attention of a teacher-forced pass (encoder self, decoder self, cross) for
  // inspection; empty maps for the RNN, whose only attention decode() reports.
  virtual TransformerSeq2Seq::AttentionMaps attention_maps(const Batch& /*batch*/) { return {}; }
};

// kind rnn (config: Seq2SeqConfig JSON) or transformer (TransformerConfig JSON; its
// src_vocab / tgt_vocab must equal `vocab`). ValueError for a bad config.
std::unique_ptr<Translator> make_translator(TranslatorKind kind, const nlohmann::json& config);

}  // namespace attn::models
