#pragma once
// Sentence classifiers over word ids, and one interface the trainer, `attn eval` and
// `attn classify` use for every kind:
//
//   kind "bilstm"           BiLstmClassifier (this file)
//   kind "bilstm-attn"      AttnClassifier (attn/models/attention_classifier.h)
//   kind "transformer-cls"  TransformerClassifier (attn/models/transformer.h), to be plugged
//                           into make_classifier (see the marked place in classifier.cpp)
//
// BiLstmClassifier:
//   ids (B, S) → embedding (V, emb; row 0 = <pad> gets no gradient) → dropout
//   → bidirectional LSTM (layers, hidden H per direction, packed semantics; dropout between
//     layers) → [masked max over time; masked mean over time] of the real positions (B, 4H)
//   → dropout → Linear (4H → classes) → logits (B, classes)
// Parameter names: "embedding.weight", "rnn.weight_ih_l0", "rnn.weight_hh_l0_reverse", ...
// (torch.nn.LSTM names), "out.weight", "out.bias".
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/models/memory_estimate.h"
#include "attn/models/seq2seq.h"
#include "attn/nn/layers.h"
#include "attn/nn/module.h"
#include "attn/random.h"

namespace attn::models {

// A text classifier the training and inspection tools can hold without knowing its kind.
class TextClassifier {
 public:
  virtual ~TextClassifier() = default;
  virtual nn::Module& module() = 0;
  // ids (B, S) int32 in [0, vocab), lengths (B) int32 in [1, S] → logits (B, classes).
  // With `attention`, it receives per-token weights (B, S) over the real tokens (each row
  // sums to 1 over s < length, 0 elsewhere), computed without recording, or stays
  // undefined when the model has none.
  virtual Tensor logits(const Tensor& ids, const Tensor& lengths, Tensor* attention = nullptr) = 0;
  // The configuration document, including "kind" (stored in checkpoints).
  virtual nlohmann::json config_json() const = 0;
  virtual std::string kind() const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual int64_t classes() const = 0;
  // What `attention` means for this kind, one line for users ("[CLS] attention", ...).
  virtual std::string attention_description() const = 0;
  // The longest token sequence logits() takes (0: any); the trainer and classify keep the
  // first max_tokens() tokens of a longer text.
  virtual int64_t max_tokens() const { return 0; }
  // Self-attention models (transformer-cls): every layer's weights (B, H, N, N) for ids and
  // lengths as logits() takes them, with N = S + 1 ([CLS] first), not recorded. Empty for
  // the kinds without self-attention.
  virtual std::vector<Tensor> self_attention(const Tensor& /*ids*/, const Tensor& /*lengths*/) { return {}; }
};

struct BiLstmConfig {
  int64_t vocab = 0;     // word vocabulary size V (specials included), > 2
  int64_t emb = 300;     // embedding size
  int64_t hidden = 150;  // H per direction
  int layers = 1;
  float dropout = 0.5f;  // embedding, between layers, before the output layer; [0, 1)
  int64_t classes = 2;
  uint64_t seed = 1;

  // ValueError naming the field and its value.
  void validate() const;
  // {"kind": "bilstm", "vocab": .., "emb": .., "hidden": .., "layers": .., "dropout": ..,
  //  "classes": .., "seed": ..}
  nlohmann::json to_json() const;
  // A subset is fine (defaults elsewhere); "kind" (if present) must be "bilstm"; unknown
  // keys and wrong types throw ValueError; the result is validated.
  static BiLstmConfig from_json(const nlohmann::json& j);
};

class BiLstmClassifier : public nn::Module, public TextClassifier {
  BiLstmConfig config_;
  Rng rng_;

 public:
  explicit BiLstmClassifier(const BiLstmConfig& config);
  const BiLstmConfig& config() const { return config_; }

  // attention (when asked): for each position s, the evidence the max-pooled features won
  // at s give for the predicted class c: Σ_{e: argmax_e = s} max(0, (W[c, e] − mean_k W[k, e]) · y_e),
  // normalised over the row's real tokens (all 0 when no feature supports c).
  Tensor logits(const Tensor& ids, const Tensor& lengths, Tensor* attention = nullptr) override;
  nn::Module& module() override { return *this; }
  nlohmann::json config_json() const override { return config_.to_json(); }
  std::string kind() const override { return "bilstm"; }
  int64_t vocab_size() const override { return config_.vocab; }
  int64_t classes() const override { return config_.classes; }
  // kBiLstmMaxTokens (attn/models/memory_estimate.h): a longer text keeps its first tokens.
  int64_t max_tokens() const override;
  std::string attention_description() const override {
    return "share of the max-pooled features won at each token, weighted by their support for the predicted label";
  }

  nn::Embedding embedding;
  RnnStack rnn;
  nn::Linear out;

 private:
  nn::Dropout embedding_dropout_, layer_dropout_, output_dropout_;
};

// The kinds make_classifier knows: "bilstm, bilstm-attn, transformer-cls".
std::string classifier_kinds();
// Builds a classifier of `kind` from its configuration document (as config_json() gives,
// with or without "kind"). ValueError for an unknown kind (listing the known ones) or a
// bad configuration.
std::unique_ptr<TextClassifier> make_classifier(const std::string& kind, const nlohmann::json& config);
// `config` with the vocabulary size set under the key the kind uses ("vocab" for bilstm,
// "src_vocab" for transformer-cls) and "classes".
nlohmann::json classifier_config_with_vocab(const std::string& kind, nlohmann::json config, int64_t vocab,
                                            int64_t classes);

}  // namespace attn::models
