#pragma once
// Pieces the three Transformer models share (private to src/models/transformer_*.cpp).
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "attn/error.h"
#include "attn/models/transformer.h"
#include "attn/nn/init.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/linear.h"
#include "attn/tensor.h"

namespace attn::models::detail {

// Token embeddings as fairseq / Marian initialise them when the lookup is scaled by √D:
// N(0, 1/D), so the scaled embedding has unit variance (and tied output logits start with
// unit scale); the padding row is zero.
inline void init_scaled_embedding(nn::Embedding& e, Rng& rng) {
  Tensor& w = e.weight;
  nn::normal_(w, 0.0f, 1.0f / std::sqrt(static_cast<float>(w.dim(1))), rng);
  if (e.padding_idx >= 0) {
    float* row = w.f32() + static_cast<int64_t>(e.padding_idx) * w.dim(1);
    for (int64_t i = 0; i < w.dim(1); ++i) row[i] = 0.0f;
  }
}

// The options of one layer stack: the config's, with a seed of its own drawn from `rng`, so
// the encoder and decoder stacks do not start from the same weights.
inline nn::TransformerLayerOptions stack_options(const TransformerConfig& c, Rng& rng) {
  nn::TransformerLayerOptions o = c.layer_options();
  o.seed = rng.next();
  return o;
}

// √D · E[ids] + PE[offset ..], then dropout: ids (B, T) int32 → (B, T, D).
inline Tensor embed_tokens(const nn::Embedding& embedding, const nn::PositionalEncoding& positions,
                           nn::Dropout& dropout, const Tensor& ids, int64_t offset = 0) {
  const float s = std::sqrt(static_cast<float>(embedding.weight.dim(1)));
  return dropout.forward(positions.forward(scale(embedding.forward(ids), s), offset));
}

// Logits over the vocabulary: the generator, or the tied target embedding (no bias).
inline Tensor project_vocab(const Tensor& h, const nn::Linear* generator, const Tensor& tied_weight) {
  return generator ? generator->forward(h) : linear(h, tied_weight);
}

}  // namespace attn::models::detail
