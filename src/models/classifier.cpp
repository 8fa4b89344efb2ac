// Sentence classifiers: the BiLSTM baseline and the kind-independent factory.
#include "attn/models/classifier.h"

#include <cmath>

#include "attn/autodiff/tape.h"
#include "attn/models/attention_classifier.h"
#include "attn/models/memory_estimate.h"
#include "attn/models/transformer.h"
#include "attn/ops/pool.h"
#include "attn/ops/select.h"
#include "attn/ops/shape_ops.h"
#include "config_json.h"

namespace attn::models {
using nlohmann::json;

// ---------------------------------------------------------------------------------------
// BiLstmConfig

void BiLstmConfig::validate() const {
  check_config_bounds(*this);  // upper bounds (memory_estimate.cpp)
  auto positive = [](const char* name, int64_t v) {
    if (v < 1) throw ValueError(std::string("bilstm config: '") + name + "' must be >= 1, got " + std::to_string(v));
  };
  if (vocab < 3)
    throw ValueError("bilstm config: 'vocab' must be >= 3 (<pad>, <unk> and a word), got " + std::to_string(vocab));
  positive("emb", emb);
  positive("hidden", hidden);
  positive("layers", layers);
  if (classes < 2) throw ValueError("bilstm config: 'classes' must be >= 2, got " + std::to_string(classes));
  if (!(dropout >= 0.0f && dropout < 1.0f))
    throw ValueError("bilstm config: 'dropout' must be in [0, 1), got " + std::to_string(dropout));
}

json BiLstmConfig::to_json() const {
  return {{"kind", "bilstm"}, {"vocab", vocab},     {"emb", emb},         {"hidden", hidden},
          {"layers", layers}, {"dropout", dropout}, {"classes", classes}, {"seed", seed}};
}

BiLstmConfig BiLstmConfig::from_json(const json& j) {
  BiLstmConfig c;
  detail::read_config("bilstm", j,
                      {{"vocab", &c.vocab},
                       {"emb", &c.emb},
                       {"hidden", &c.hidden},
                       {"layers", &c.layers},
                       {"dropout", &c.dropout},
                       {"classes", &c.classes},
                       {"seed", &c.seed}},
                      "bilstm");
  c.validate();
  return c;
}

// ---------------------------------------------------------------------------------------
// BiLstmClassifier

BiLstmClassifier::BiLstmClassifier(const BiLstmConfig& config)
    : config_(validated_config(config)),
      rng_(config.seed),
      embedding(config.vocab, config.emb, rng_, /*padding_idx=*/0),
      rnn(/*lstm=*/true, config.emb, config.hidden, config.layers, /*bidirectional=*/true, rng_),
      out(4 * config.hidden, config.classes, rng_),
      embedding_dropout_(config.dropout, splitmix64(config.seed ^ 0xE1B0ull)),
      layer_dropout_(config.dropout, splitmix64(config.seed ^ 0x1A7E5ull)),
      output_dropout_(config.dropout, splitmix64(config.seed ^ 0x0C7ull)) {
  register_module("embedding", embedding);
  register_module("rnn", rnn);
  register_module("out", out);
  register_module("embedding_dropout", embedding_dropout_);
  register_module("layer_dropout", layer_dropout_);
  register_module("output_dropout", output_dropout_);
}

int64_t BiLstmClassifier::max_tokens() const { return kBiLstmMaxTokens; }

Tensor BiLstmClassifier::logits(const Tensor& ids, const Tensor& lengths, Tensor* attention) {
  ShapeContract contract("BiLstmClassifier");
  contract.check("ids", ids, {"B", "S"}, DType::i32).check("lengths", lengths, {"B"}, DType::i32);
  const int64_t B = ids.dim(0), S = ids.dim(1), H = rnn.hidden;
  check_training_memory(config_, B, S);
  check_lengths_in_range("BiLstmClassifier", "lengths", lengths, S);
  Tensor keep;
  std::vector<char> all_kept;
  packed_keep_masks(lengths, S, keep, all_kept);

  Tensor x = embedding_dropout_.forward(embedding.forward(time_major_ids(ids)));  // (S, B, emb)
  RnnStackOutput stack = run_rnn_stack(rnn, x, keep, all_kept, &layer_dropout_);
  const Tensor states = transpose_01(stack.outputs);                       // (B, S, 2H)
  MaxTimeResult max_pool = masked_max_time_with_indices(states, lengths);  // (B, 2H)
  const Tensor mean_pool = masked_mean_time(states, lengths);              // (B, 2H)
  const Tensor pooled = concat({max_pool.values, mean_pool});              // (B, 4H)
  Tensor result = out.forward(output_dropout_.forward(pooled));            // (B, classes)

  if (attention) {
    const int64_t C = config_.classes, F = 2 * H, P = 4 * H;
    Tensor weights = Tensor::zeros({B, S});  // (B, S)
    const float* W = out.weight.f32();       // (C, 4H)
    const float* y = max_pool.values.f32();
    const int32_t* arg = max_pool.argmax.i32();
    const float* lg = result.f32();
    float* a = weights.f32();
    for (int64_t b = 0; b < B; ++b) {
      int64_t c = 0;
      for (int64_t k = 1; k < C; ++k)
        if (lg[b * C + k] > lg[b * C + c]) c = k;
      for (int64_t e = 0; e < F; ++e) {
        double mean_w = 0.0;
        for (int64_t k = 0; k < C; ++k) mean_w += W[k * P + e];
        mean_w /= static_cast<double>(C);
        const double support = (W[c * P + e] - mean_w) * y[b * F + e];
        if (support > 0.0 && arg[b * F + e] >= 0) a[b * S + arg[b * F + e]] += static_cast<float>(support);
      }
      double total = 0.0;
      for (int64_t s = 0; s < S; ++s) total += a[b * S + s];
      if (total > 0.0)
        for (int64_t s = 0; s < S; ++s) a[b * S + s] = static_cast<float>(a[b * S + s] / total);
    }
    *attention = weights;
  }
  return result;
}

// ---------------------------------------------------------------------------------------
// The factory

// The Transformer classifier behind the TextClassifier interface: its [CLS] attention,
// without the [CLS] column and renormalised over the real tokens, is the attention.
class TransformerTextClassifier : public TextClassifier {
 public:
  explicit TransformerTextClassifier(const TransformerConfig& config) : model_(config) {}
  nn::Module& module() override { return model_; }
  Tensor logits(const Tensor& ids, const Tensor& lengths, Tensor* attention) override {
    Tensor cls;  // (B, S + 1)
    Tensor y = model_.logits(ids, lengths, attention ? &cls : nullptr);
    if (attention) {
      const int64_t B = ids.dim(0), S = ids.dim(1);
      Tensor tokens = Tensor::zeros({B, S});
      for (int64_t b = 0; b < B; ++b) {
        const float* row = cls.f32() + b * (S + 1) + 1;
        const int32_t length = lengths.i32()[b];
        double total = 0.0;
        for (int32_t s = 0; s < length; ++s) total += row[s];
        for (int32_t s = 0; s < length; ++s)
          tokens.f32()[b * S + s] = total > 0 ? static_cast<float>(row[s] / total) : 1.0f / static_cast<float>(length);
      }
      *attention = tokens;
    }
    return y;
  }
  json config_json() const override {
    json j = model_.config().to_json();
    j["kind"] = "transformer-cls";
    return j;
  }
  std::string kind() const override { return "transformer-cls"; }
  int64_t vocab_size() const override { return model_.config().src_vocab; }
  int64_t classes() const override { return model_.config().classes; }
  std::string attention_description() const override {
    return "[CLS] attention of the last layer, averaged over heads, renormalised over the tokens";
  }
  int64_t max_tokens() const override { return model_.config().max_len - 1; }  // [CLS] takes a position
  std::vector<Tensor> self_attention(const Tensor& ids, const Tensor& lengths) override {
    return model_.self_attention(ids, lengths);
  }

 private:
  TransformerClassifier model_;
};

std::string classifier_kinds() { return "bilstm, bilstm-attn, transformer-cls"; }

std::unique_ptr<TextClassifier> make_classifier(const std::string& kind, const json& config) {
  if (kind == "bilstm") return std::make_unique<BiLstmClassifier>(BiLstmConfig::from_json(config));
  if (kind == "bilstm-attn") return std::make_unique<AttnClassifier>(AttnClassifierConfig::from_json(config));
  if (kind == "transformer-cls") {
    json c = config;
    if (c.is_object()) c.erase("kind");
    return std::make_unique<TransformerTextClassifier>(TransformerConfig::from_json(c));
  }
  throw ValueError("unknown classifier kind '" + kind + "' (valid: " + classifier_kinds() + ")");
}

json classifier_config_with_vocab(const std::string& kind, json config, int64_t vocab, int64_t classes) {
  if (config.is_null()) config = json::object();
  if (!config.is_object()) throw ValueError("classifier config: expected a JSON object, got " + config.dump());
  // These come from the data and the chosen model: a value given here would be overwritten.
  for (const char* fixed : {"kind", "vocab", "src_vocab", "classes"})
    if (config.contains(fixed))
      throw ValueError(std::string("classifier config: '") + fixed +
                       "' is set by the data and the model kind, not by the configuration (remove it)");
  config["kind"] = kind;
  config[kind == "transformer-cls" ? "src_vocab" : "vocab"] = vocab;
  config["classes"] = classes;
  return config;
}

}  // namespace attn::models
