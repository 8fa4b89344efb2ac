#pragma once
// A tiny bilstm-attn for the explain tests: emb 6, hidden 4, dropout 0.3 (the measures run
// in eval mode, so it must not matter), the encoder and pooling named as in the config.
#include <cstdint>
#include <string>

#include "attn/models/attention_classifier.h"

namespace attn::explain::testing {

inline models::AttnClassifierConfig tiny_classifier_config(const std::string& encoder, const std::string& pooling,
                                                           uint64_t seed, int64_t vocab = 20) {
  models::AttnClassifierConfig c;
  c.vocab = vocab;
  c.emb = 6;
  c.hidden = 4;
  c.dropout = 0.3f;
  c.encoder = models::parse_pooling_encoder(encoder);
  c.pooling = models::parse_pooling_score(pooling);
  c.seed = seed;
  return c;
}

}  // namespace attn::explain::testing
