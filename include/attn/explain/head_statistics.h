#pragma once
// Per-head statistics of a Transformer classifier's self-attention over one sentence, as sums
// over query rows so that a report can pool them over sentences (sum / rows):
//   entropy       −Σ_j a_ij ln a_ij (nats), every query row i of [CLS] + tokens
//   cls           a_i0, the weight on [CLS], every row
//   punctuation   Σ_{j a punctuation token} a_ij, every row
//   previous      a_{i,i−1} for token rows whose previous position is a token (i >= 2)
//   next          a_{i,i+1} for token rows with a next token (1 <= i < N − 1)
#include <cstdint>
#include <string>
#include <vector>

#include "attn/tensor.h"

namespace attn::explain {

struct HeadStatistics {
  double entropy = 0.0, cls = 0.0, punctuation = 0.0;
  int64_t rows = 0;
  double previous = 0.0;
  int64_t previous_rows = 0;
  double next = 0.0;
  int64_t next_rows = 0;

  HeadStatistics& operator+=(const HeadStatistics& other);
};

// Every character ASCII punctuation ("," "." "--" "!?"); "'s" is not.
bool is_punctuation(const std::string& token);

// layers: per layer (H, N, N) over [CLS] + N − 1 tokens (rollout.h's sentence_layers());
// punctuation: N − 1 flags, one per token (ShapeError otherwise). Layer-major: L × H entries.
std::vector<HeadStatistics> head_statistics(const std::vector<Tensor>& layers, const std::vector<bool>& punctuation);

}  // namespace attn::explain
