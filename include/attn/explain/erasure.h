#pragma once
// Serrano & Smith (2019), "Is Attention Interpretable?": erase tokens and watch the decision.
// For one sentence of n >= 2 tokens and the class c the model predicts for it:
//   single erasure   delete the top-attended token, and (the expectation over a random
//                    choice) each token in turn: |Δŷ| and whether argmax changes from c
//   erasure orders   delete the k highest-ranked tokens, k = 1..n−1 (one token is always
//                    left), by attention, by |gradient × input| and in a random order: the
//                    first k at which the decision flips, and k / n; no flip within n − 1
//                    deletions is recorded as such (k = −1)
// Ties are broken by the earlier position. Any kind, through EmbeddingClassifier.
#include <cstdint>
#include <string>
#include <vector>

#include "attn/explain/importance.h"

namespace attn::explain {

struct ErasureOrder {
  int64_t removed_to_flip = -1;  // −1: no flip with n − 1 tokens removed
  double fraction = 0.0;         // removed_to_flip / n, when it flipped
  bool flipped() const { return removed_to_flip > 0; }
};

struct SentenceErasure {
  bool defined = false;    // false for one token (nothing can be erased)
  float top_delta = 0.0f;  // |Δŷ| deleting the top-attended token
  bool top_flips = false;
  float random_delta = 0.0f;       // mean |Δŷ| over the n single deletions
  double random_flip_share = 0.0;  // share of the n single deletions that flip
  ErasureOrder attention, gradient, random;
};

// attention, gradient: one score per token (the gradient ranked by magnitude). The random
// order is drawn from Rng(seed). ValueError for sizes that differ from ids.
SentenceErasure erasure(const EmbeddingClassifier& model, const std::vector<int32_t>& ids, int32_t label,
                        const std::vector<float>& attention, const std::vector<float>& gradient, uint64_t seed);

}  // namespace attn::explain
