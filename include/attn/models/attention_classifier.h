#pragma once
// The classifier Jain & Wallace (2019) tested, kind "bilstm-attn":
//
//   ids (B, S) → embedding (V, emb; row 0 = <pad>) → dropout → encoder → states (B, S, E)
//     encoder "lstm":    bidirectional LSTM (layers, H per direction), E = 2H
//     encoder "average": h_s = tanh(W e_s + b), one projection, no RNN, E = 2H
//   → attention pooling over the real tokens, a (B, S), context c = Σ_s a_s h_s (B, E)
//     pooling "additive": a = softmax_s(vᵀ tanh(W h_s + b))   (the additive attention op with
//                         a zero query)
//     pooling "dot":      a = softmax_s(qᵀ h_s), q (E) learned  (the Luong dot op)
//     pooling "uniform":  a_s = 1 / length, no parameters (Wiegreffe & Pinter's baseline:
//                         the attention frozen to uniform)
//   → dropout → Linear (E → classes) → logits (B, classes)
//
// The stages are public so that explain/ can hold the encoder states fixed and pool them
// with weights of its own (a permutation, a constant copy of the attention).
// Parameter names: "embedding.weight", "rnn.*" (torch.nn.LSTM names) or "projection.weight",
// "projection.bias"; "pooling.w", "pooling.bias", "pooling.v" (additive) or "pooling.query"
// (dot); "out.weight", "out.bias".
#include <functional>

#include "attn/models/classifier.h"
#include "attn/ops/softmax.h"

namespace attn::models {

// The configuration's choices, parsed from their names once; to_string gives the name the
// JSON stores. The parsers throw ValueError, e.g.
//   bilstm-attn config: 'encoder' must be lstm or average, got 'gru'
enum class PoolingEncoder { lstm, average };
const char* to_string(PoolingEncoder encoder);
PoolingEncoder parse_pooling_encoder(const std::string& name);
enum class PoolingScore { additive, dot, uniform };
const char* to_string(PoolingScore pooling);
PoolingScore parse_pooling_score(const std::string& name);

struct AttnClassifierConfig {
  int64_t vocab = 0;  // V (specials included), > 2
  int64_t emb = 300;
  int64_t hidden = 150;   // H: per direction for "lstm"; E = 2H for both encoders
  int layers = 1;         // "lstm" only
  int64_t attention = 0;  // A, the additive attention size (0: E)
  float dropout = 0.5f;   // embedding, and before the output layer; [0, 1)
  int64_t classes = 2;
  PoolingEncoder encoder = PoolingEncoder::lstm;
  PoolingScore pooling = PoolingScore::additive;
  uint64_t seed = 1;
  // The normaliser of the additive / dot pooling: softmax, or sparsemax / entmax15 / entmax(α)
  // (attn/ops/softmax.h). Stored in the JSON only when not softmax; refused with "uniform".
  Normalizer normalizer{};

  void validate() const;           // ValueError naming the field and its value
  nlohmann::json to_json() const;  // with "kind": "bilstm-attn"
  // A subset is fine; "kind" (if present) must be "bilstm-attn"; unknown keys and wrong
  // types throw ValueError.
  static AttnClassifierConfig from_json(const nlohmann::json& j);
  int64_t state_size() const { return 2 * hidden; }
};

struct AttentionPooling {
  Tensor context;  // (B, E)
  Tensor weights;  // (B, S), 0 beyond each length
};

class AttnClassifier : public nn::Module, public TextClassifier {
  AttnClassifierConfig config_;
  Rng rng_;

 public:
  explicit AttnClassifier(const AttnClassifierConfig& config);
  const AttnClassifierConfig& config() const { return config_; }

  // The stages. ids (B, S) → (B, S, emb), batch-major, after embedding dropout.
  Tensor embed(const Tensor& ids);
  // embeddings (B, S, emb), lengths (B) in [1, S] → states (B, S, E).
  Tensor encode(const Tensor& embeddings, const Tensor& lengths);
  // states (B, S, E) → the model's own attention and context.
  AttentionPooling pool(const Tensor& states, const Tensor& lengths);
  // Pools with given weights (B, S) (treated as given: no gradient flows to how they were
  // made) → context (B, E) = Σ_s weights_s states_s.
  Tensor pool_with(const Tensor& weights, const Tensor& states) const;
  // context (B, E) → logits (B, classes), after output dropout.
  Tensor output(const Tensor& context);

  // Wiegreffe & Pinter's frozen attention: when set, logits() pools with source(ids, lengths)
  // (B, S), 0 beyond each length, held constant (no gradient flows into how it was made), in
  // place of pool(). `attn train --attention-from M` sets M's own attention here.
  using AttentionSource = std::function<Tensor(const Tensor& ids, const Tensor& lengths)>;
  void set_attention_source(AttentionSource source) { attention_source_ = std::move(source); }
  bool has_attention_source() const { return static_cast<bool>(attention_source_); }

  // All stages; `attention` receives the pooling weights (detached).
  Tensor logits(const Tensor& ids, const Tensor& lengths, Tensor* attention = nullptr) override;
  nn::Module& module() override { return *this; }
  nlohmann::json config_json() const override { return config_.to_json(); }
  std::string kind() const override { return "bilstm-attn"; }
  int64_t vocab_size() const override { return config_.vocab; }
  int64_t classes() const override { return config_.classes; }
  std::string attention_description() const override {
    return std::string(to_string(config_.pooling)) + " attention pooling over the " + to_string(config_.encoder) +
           " encoder's states";
  }

  nn::Embedding embedding;
  std::unique_ptr<RnnStack> rnn;           // encoder "lstm"
  std::unique_ptr<nn::Linear> projection;  // encoder "average"
  Tensor pool_w, pool_bias, pool_v;        // pooling "additive": (A, E), (A), (A)
  Tensor pool_query;                       // pooling "dot": (E)
  nn::Linear out;

 private:
  nn::Module pooling_params_;  // "pooling.*"
  AttentionSource attention_source_;
  nn::Dropout embedding_dropout_, output_dropout_;
};

}  // namespace attn::models
