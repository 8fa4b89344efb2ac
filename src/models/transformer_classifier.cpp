// TransformerClassifier: [CLS] + tokens → encoder → the [CLS] state → linear head.
#include <cmath>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/models/memory_estimate.h"
#include "attn/models/transformer.h"
#include "attn/ops/select.h"
#include "attn/ops/shape_ops.h"
#include "attn/shape.h"
#include "transformer_common.h"

namespace attn::models {
namespace {

const TransformerConfig& validated(const TransformerConfig& c) {
  c.validate();
  if (c.pointer)
    throw ValueError("TransformerClassifier: pointer applies to the encoder-decoder (TransformerSeq2Seq) only");
  if (c.src_vocab < 1)
    throw ValueError(fmt::format("TransformerClassifier: src_vocab must be >= 1, got {}", c.src_vocab));
  if (c.encoder_layers < 1)
    throw ValueError(fmt::format("TransformerClassifier: encoder_layers must be >= 1, got {}", c.encoder_layers));
  TransformerConfig used = c;  // a classifier has no decoder
  used.decoder_layers = 0;
  used.tgt_vocab = 0;
  check_parameter_memory(used, "Transformer classifier");
  return c;
}

// The [CLS] vector starts as N(0, 0.02²), like BERT's token embeddings.
Tensor initial_cls(int64_t dim, Rng& rng) {
  Tensor t = Tensor::empty({dim});
  float* p = t.f32();
  for (int64_t i = 0; i < dim; ++i) p[i] = 0.02f * rng.normal();
  return t;
}

}  // namespace

TransformerClassifier::TransformerClassifier(const TransformerConfig& config)
    : config_(validated(config)),
      rng_(config.seed),
      embedding(config_.src_vocab, config_.d_model, rng_, kPad),
      cls(initial_cls(config_.d_model, rng_)),
      positions(to_string(config_.positions), config_.max_len, config_.d_model, rng_),
      encoder(detail::stack_options(config_, rng_), config_.encoder_layers),
      head(config_.d_model, config_.classes, rng_),
      dropout_(config_.dropout, rng_.next()) {
  detail::init_scaled_embedding(embedding, rng_);
  cls = register_parameter("cls", cls);
  register_module("embedding", embedding);
  register_module("positions", positions);
  register_module("encoder", encoder);
  register_module("head", head);
  register_module("dropout", dropout_);
}

Tensor TransformerClassifier::embed(const Tensor& ids) {
  return scale(embedding.forward(ids), std::sqrt(static_cast<float>(config_.d_model)));  // (B, S, D)
}

// x_0 = cls, x_{1+s} = embeddings_s (s < S); x += PE[0 .. S]; dropout. [CLS] sits at
// position 0, the tokens at 1..S, so a row's result does not depend on the padding after it.
Tensor TransformerClassifier::logits_from_embeddings(const Tensor& embeddings, const Tensor& lengths,
                                                     std::vector<nn::LayerAttention>* weights) {
  ShapeContract c("TransformerClassifier.logits");
  c.bind("D", config_.d_model);
  c.check("embeddings", embeddings, {"B", "S", "D"});
  c.check("lengths", lengths, {"B"}, DType::i32);
  const int64_t B = c["B"], S = c["S"], D = config_.d_model;
  check_length_values(c.op(), "lengths", lengths, 1, "S", S);
  check_training_memory(config_, B, S + 1, 0);
  if (S + 1 > config_.max_len)
    throw ValueError(fmt::format("{}: S={} plus [CLS] exceeds max_len={}", c.op(), S, config_.max_len));

  const Tensor cls_rows = gather_rows(cls.reshape({1, D}), Tensor::zeros({B}, DType::i32));  // (B, D)
  Tensor x = concat({cls_rows, embeddings.reshape({B, S * D})}).reshape({B, S + 1, D});      // (B, S + 1, D)
  x = dropout_.forward(positions.forward(x, 0));
  Tensor key_lengths = Tensor::empty({B}, DType::i32);  // (B): [CLS] + the row's tokens
  for (int64_t b = 0; b < B; ++b) key_lengths.i32()[b] = lengths.i32()[b] + 1;

  const Tensor h = encoder.forward(x, key_lengths, weights);               // (B, S + 1, D)
  const Tensor first = split(h.reshape({B, (S + 1) * D}), {D, S * D})[0];  // (B, D)
  return head.forward(first);                                              // (B, classes)
}

Tensor TransformerClassifier::logits(const Tensor& ids, const Tensor& lengths, Tensor* cls_attention) {
  ShapeContract c("TransformerClassifier.logits");
  c.check("ids", ids, {"B", "S"}, DType::i32);
  std::vector<nn::LayerAttention> weights;
  const Tensor out = logits_from_embeddings(embed(ids), lengths, cls_attention ? &weights : nullptr);
  if (cls_attention) {
    // The last layer's weights (B, H, S + 1, S + 1): row 0 averaged over the heads.
    const Tensor& w = weights.back().self_weights;
    const int64_t B = w.dim(0), H = w.dim(1), N = w.dim(2);
    Tensor a = Tensor::zeros({B, N});
    for (int64_t b = 0; b < B; ++b)
      for (int64_t hh = 0; hh < H; ++hh) {
        const float* row = w.f32() + ((b * H + hh) * N) * N;  // query 0
        for (int64_t s = 0; s < N; ++s) a.f32()[b * N + s] += row[s] / static_cast<float>(H);
      }
    *cls_attention = a;
  }
  return out;
}

std::vector<Tensor> TransformerClassifier::self_attention(const Tensor& ids, const Tensor& lengths) {
  autodiff::NoGradGuard no_grad;
  std::vector<nn::LayerAttention> weights;
  ShapeContract("TransformerClassifier.self_attention").check("ids", ids, {"B", "S"}, DType::i32);
  logits_from_embeddings(embed(ids), lengths, &weights);
  std::vector<Tensor> layers;
  for (const nn::LayerAttention& w : weights) layers.push_back(w.self_weights);
  return layers;
}

}  // namespace attn::models
