// The attention-pooling sentence classifier ("bilstm-attn") of Jain & Wallace (2019).
#include "attn/models/attention_classifier.h"

#include <cmath>

#include "attn/nn/attention_init.h"
#include "attn/ops/attention.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/linear.h"
#include "attn/ops/select.h"
#include "attn/shape.h"
#include "config_json.h"

namespace attn::models {
using nlohmann::json;

// ---------------------------------------------------------------------------------------
// AttnClassifierConfig

const char* to_string(PoolingEncoder encoder) { return encoder == PoolingEncoder::average ? "average" : "lstm"; }
PoolingEncoder parse_pooling_encoder(const std::string& name) {
  if (name == "lstm") return PoolingEncoder::lstm;
  if (name == "average") return PoolingEncoder::average;
  throw ValueError("bilstm-attn config: 'encoder' must be lstm or average, got '" + name + "'");
}
const char* to_string(PoolingScore pooling) {
  return pooling == PoolingScore::dot ? "dot" : pooling == PoolingScore::uniform ? "uniform" : "additive";
}
PoolingScore parse_pooling_score(const std::string& name) {
  if (name == "additive") return PoolingScore::additive;
  if (name == "dot") return PoolingScore::dot;
  if (name == "uniform") return PoolingScore::uniform;
  throw ValueError("bilstm-attn config: 'pooling' must be additive, dot or uniform, got '" + name + "'");
}

void AttnClassifierConfig::validate() const {
  auto fail = [](const std::string& what) { throw ValueError("bilstm-attn config: " + what); };
  if (vocab < 3) fail("'vocab' must be >= 3 (<pad>, <unk> and a word), got " + std::to_string(vocab));
  if (emb < 1) fail("'emb' must be >= 1, got " + std::to_string(emb));
  if (hidden < 1) fail("'hidden' must be >= 1, got " + std::to_string(hidden));
  if (layers < 1) fail("'layers' must be >= 1, got " + std::to_string(layers));
  if (attention < 0) fail("'attention' must be >= 0 (0: the state size), got " + std::to_string(attention));
  if (classes < 2) fail("'classes' must be >= 2, got " + std::to_string(classes));
  if (!(dropout >= 0.0f && dropout < 1.0f)) fail("'dropout' must be in [0, 1), got " + std::to_string(dropout));
  check_normalizer("bilstm-attn config", normalizer);
  if (pooling == PoolingScore::uniform && normalizer.kind != NormalizerKind::softmax)
    fail(std::string("the ") + normalizer_name(normalizer.kind) +
         " normaliser needs pooling additive or dot, got uniform");
}

namespace {

struct ClassifierNames {
  std::string encoder, pooling;
};
using ClassifierForm = detail::ConfigForm<AttnClassifierConfig, ClassifierNames>;

ClassifierForm form_of(const AttnClassifierConfig& c) { return {c, {to_string(c.encoder), to_string(c.pooling)}, {}}; }

// The keys to_json always writes beside "kind", each with its field.
std::vector<detail::ConfigField> written(ClassifierForm& f) {
  return {{"vocab", &f.c.vocab},         {"emb", &f.c.emb},
          {"hidden", &f.c.hidden},       {"layers", &f.c.layers},
          {"attention", &f.c.attention}, {"dropout", &f.c.dropout},
          {"classes", &f.c.classes},     {"encoder", &f.names.encoder},
          {"pooling", &f.names.pooling}, {"seed", &f.c.seed}};
}

void parse_names(AttnClassifierConfig& c, const ClassifierNames& names) {
  c.encoder = parse_pooling_encoder(names.encoder);
  c.pooling = parse_pooling_score(names.pooling);
}

}  // namespace

json AttnClassifierConfig::to_json() const {
  ClassifierForm form = form_of(*this);
  json j = detail::write_config(written(form));
  j["kind"] = "bilstm-attn";
  detail::write_normalizer(j, normalizer);
  return j;
}

AttnClassifierConfig AttnClassifierConfig::from_json(const json& j) {
  ClassifierForm form = form_of(AttnClassifierConfig{});
  detail::read_config("bilstm-attn", j, detail::joined({written(form), form.normalizer.fields()}),
                      "bilstm-attn");  // the normaliser's keys are newer: last
  return form.parsed();
}

// ---------------------------------------------------------------------------------------
// AttnClassifier

namespace {
const AttnClassifierConfig& validated(const AttnClassifierConfig& c) {
  c.validate();
  return c;
}
}  // namespace

AttnClassifier::AttnClassifier(const AttnClassifierConfig& config)
    : config_(validated(config)),
      rng_(config.seed),
      embedding(config.vocab, config.emb, rng_, /*padding_idx=*/0),
      out(config.state_size(), config.classes, rng_),
      embedding_dropout_(config.dropout, splitmix64(config.seed ^ 0xE1B0ull)),
      output_dropout_(config.dropout, splitmix64(config.seed ^ 0x0C7ull)) {
  const int64_t E = config.state_size();
  register_module("embedding", embedding);
  if (config.encoder == PoolingEncoder::lstm) {
    rnn = std::make_unique<RnnStack>(/*lstm=*/true, config.emb, config.hidden, config.layers, /*bidirectional=*/true,
                                     rng_);
    register_module("rnn", *rnn);
  } else {
    projection = std::make_unique<nn::Linear>(config.emb, E, rng_);
    register_module("projection", *projection);
  }
  if (config.pooling == PoolingScore::additive) {
    // w_q (A, 1) multiplies a zero query: drawn (to keep the order fixed) and dropped.
    nn::AdditiveParams p = nn::additive_attention_init(1, E, config.attention ? config.attention : E, rng_);
    pool_w = pooling_params_.register_parameter("w", p.w_k);
    pool_bias = pooling_params_.register_parameter("bias", p.bias);
    pool_v = pooling_params_.register_parameter("v", p.v);
  } else if (config.pooling == PoolingScore::dot) {
    Tensor q = Tensor::empty({E});
    const float bound = 1.0f / std::sqrt(static_cast<float>(E));
    for (int64_t e = 0; e < E; ++e) q.f32()[e] = bound * (2.0f * rng_.uniform() - 1.0f);
    q.set_requires_grad(true);
    pool_query = pooling_params_.register_parameter("query", q);
  }
  register_module("pooling", pooling_params_);
  register_module("out", out);
  register_module("embedding_dropout", embedding_dropout_);
  register_module("output_dropout", output_dropout_);
}

Tensor AttnClassifier::embed(const Tensor& ids) {
  ShapeContract("AttnClassifier").check("ids", ids, {"B", "S"}, DType::i32);
  return embedding_dropout_.forward(embedding.forward(ids));  // (B, S, emb)
}

Tensor AttnClassifier::encode(const Tensor& embeddings, const Tensor& lengths) {
  ShapeContract contract("AttnClassifier");
  contract.bind("emb", config_.emb)
      .check("embeddings", embeddings, {"B", "S", "emb"})
      .check("lengths", lengths, {"B"}, DType::i32);
  const int64_t S = embeddings.dim(1);
  check_lengths_in_range("AttnClassifier", "lengths", lengths, S);
  if (projection) return tanh(projection->forward(embeddings));  // (B, S, E)
  Tensor keep;
  std::vector<char> all_kept;
  packed_keep_masks(lengths, S, keep, all_kept);
  return transpose_01(run_rnn_stack(*rnn, transpose_01(embeddings), keep, all_kept).outputs);  // (B, S, 2H)
}

AttentionPooling AttnClassifier::pool(const Tensor& states, const Tensor& lengths) {
  const int64_t B = states.dim(0), E = states.dim(2);
  if (config_.pooling == PoolingScore::uniform) {
    // Wiegreffe & Pinter's baseline: a_s = 1/length over the real tokens, a constant.
    const int64_t S = states.dim(1);
    Tensor weights = Tensor::zeros({B, S});
    for (int64_t b = 0; b < B; ++b) {
      const int32_t n = lengths.i32()[b];
      for (int64_t s = 0; s < n; ++s) weights.f32()[b * S + s] = 1.0f / static_cast<float>(n);
    }
    return {pool_with(weights, states), weights};
  }
  AttentionResult r;
  if (pool_v.defined()) {
    // vᵀ tanh(W h_s + b) is the additive op's score with W_q q = 0: a zero query (B, 1).
    const Tensor zero_query = Tensor::zeros({B, 1});
    const Tensor zero_w_q = Tensor::zeros({pool_w.dim(0), 1});
    AdditiveOptions o;
    o.normalizer = config_.normalizer;
    r = additive_attention(zero_query, additive_project_keys(states, pool_w), states, zero_w_q, pool_bias, pool_v,
                           lengths, o);
  } else {
    // qᵀ h_s: the learned query repeated over the batch, as ones (B, 1) · q (1, E).
    const Tensor query = linear(Tensor::full({B, 1}, 1.0f), pool_query.reshape({E, 1}));  // (B, E)
    LuongOptions o;
    o.normalizer = config_.normalizer;
    r = luong_attention(query, states, states, lengths, o);
  }
  return {r.context, r.weights};
}

Tensor AttnClassifier::pool_with(const Tensor& weights, const Tensor& states) const {
  const int64_t B = states.dim(0), S = states.dim(1), E = states.dim(2);
  ShapeContract("AttnClassifier::pool_with").bind("B", B).bind("S", S).check("weights", weights, {"B", "S"});
  return bmm(weights.detach().reshape({B, 1, S}), states).reshape({B, E});  // (B, E)
}

Tensor AttnClassifier::output(const Tensor& context) { return out.forward(output_dropout_.forward(context)); }

Tensor AttnClassifier::logits(const Tensor& ids, const Tensor& lengths, Tensor* attention) {
  const Tensor states = encode(embed(ids), lengths);
  AttentionPooling pooled;
  if (attention_source_) {
    const Tensor weights = attention_source_(ids, lengths).detach();  // (B, S)
    pooled = {pool_with(weights, states), weights};
  } else {
    pooled = pool(states, lengths);
  }
  if (attention) *attention = pooled.weights.detach().clone();
  return output(pooled.context);
}

}  // namespace attn::models
