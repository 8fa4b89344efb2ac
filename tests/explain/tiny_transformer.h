#pragma once
// A tiny transformer-cls for the explain tests: vocab 20, D 8, 2 heads, FFN 16.
#include <cstdint>

#include "attn/models/transformer.h"

namespace attn::explain::testing {

inline models::TransformerConfig tiny_transformer_config(int layers, float dropout, uint64_t seed) {
  models::TransformerConfig c;
  c.src_vocab = 20;
  c.d_model = 8;
  c.heads = 2;
  c.ffn = 16;
  c.encoder_layers = layers;
  c.dropout = dropout;
  c.seed = seed;
  return c;
}

}  // namespace attn::explain::testing
