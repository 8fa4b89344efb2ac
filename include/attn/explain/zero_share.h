#pragma once
// How sparse attention weights are: the share of exactly-zero weights among the positions a
// query could attend to. sparsemax and entmax (attn/ops/softmax.h) give exact zeros; a softmax
// gives none unless a weight underflows. Padding and causal masks are not counted: the callers
// pass only the attendable positions (attn align, view, explain).
#include <cstdint>
#include <vector>

namespace attn::explain {

struct ZeroShare {
  int64_t zeros = 0;  // weights exactly 0
  int64_t total = 0;  // weights counted
  void add(float weight) {
    zeros += weight == 0.0f ? 1 : 0;
    ++total;
  }
  void add(const std::vector<float>& weights) {
    for (float w : weights) add(w);
  }
  double share() const { return total > 0 ? static_cast<double>(zeros) / static_cast<double>(total) : 0.0; }
};

}  // namespace attn::explain
