// Serrano & Smith's erasure tests (see attn/explain/erasure.h).
#include "attn/explain/erasure.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "attn/error.h"
#include "attn/random.h"

namespace attn::explain {
namespace {

// Token positions by descending score, ties by the earlier position.
std::vector<int64_t> descending(const std::vector<float>& score) {
  std::vector<int64_t> order(score.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return score[a] > score[b]; });
  return order;
}

// Rows k = 1..n−1: the sentence without the first k positions of `order`, (n − 1, n − 1)
// padded with 0; the first k whose decision differs from label.
ErasureOrder first_flip(const EmbeddingClassifier& model, const std::vector<int32_t>& ids, int32_t label,
                        const std::vector<int64_t>& order) {
  const int64_t n = static_cast<int64_t>(ids.size()), rows = n - 1;
  std::vector<int32_t> all(static_cast<size_t>(rows * rows), 0), lengths;
  for (int64_t k = 1; k <= rows; ++k) {
    std::vector<bool> removed(static_cast<size_t>(n), false);
    for (int64_t r = 0; r < k; ++r) removed[static_cast<size_t>(order[static_cast<size_t>(r)])] = true;
    int64_t column = 0;
    for (int64_t s = 0; s < n; ++s)
      if (!removed[static_cast<size_t>(s)])
        all[static_cast<size_t>((k - 1) * rows + column++)] = ids[static_cast<size_t>(s)];
    lengths.push_back(static_cast<int32_t>(n - k));
  }
  const std::vector<int32_t> labels =
      predicted_labels(model, Tensor::from_vector(all, {rows, rows}), Tensor::from_vector(lengths, {rows}));
  ErasureOrder o;
  for (int64_t k = 1; k <= rows; ++k)
    if (labels[static_cast<size_t>(k - 1)] != label) {
      o.removed_to_flip = k;
      o.fraction = static_cast<double>(k) / static_cast<double>(n);
      break;
    }
  return o;
}

}  // namespace

SentenceErasure erasure(const EmbeddingClassifier& model, const std::vector<int32_t>& ids, int32_t label,
                        const std::vector<float>& attention, const std::vector<float>& gradient, uint64_t seed) {
  if (attention.size() != ids.size() || gradient.size() != ids.size())
    throw ValueError("erasure: attention (" + std::to_string(attention.size()) + ") and gradient (" +
                     std::to_string(gradient.size()) + ") need one score per token (" + std::to_string(ids.size()) +
                     ")");
  SentenceErasure r;
  const int64_t n = static_cast<int64_t>(ids.size());
  if (n < 2) return r;
  r.defined = true;
  // Single deletions: row s is the sentence without token s (n, n − 1).
  std::vector<int32_t> shortened;
  for (int64_t s = 0; s < n; ++s)
    for (int64_t t = 0; t < n; ++t)
      if (t != s) shortened.push_back(ids[static_cast<size_t>(t)]);
  const Tensor single = Tensor::from_vector(shortened, {n, n - 1});
  const Tensor single_lengths =
      Tensor::from_vector(std::vector<int32_t>(static_cast<size_t>(n), static_cast<int32_t>(n - 1)), {n});
  const std::vector<float> loo = leave_one_out(model, ids, label);
  const std::vector<int32_t> single_labels = predicted_labels(model, single, single_lengths);
  const size_t top = static_cast<size_t>(descending(attention)[0]);
  r.top_delta = loo[top];
  r.top_flips = single_labels[top] != label;
  for (int64_t s = 0; s < n; ++s) {
    r.random_delta += loo[static_cast<size_t>(s)] / static_cast<float>(n);
    r.random_flip_share += (single_labels[static_cast<size_t>(s)] != label) / static_cast<double>(n);
  }
  std::vector<float> magnitude = gradient;
  for (float& g : magnitude) g = std::fabs(g);
  std::vector<int64_t> shuffled(static_cast<size_t>(n));
  std::iota(shuffled.begin(), shuffled.end(), 0);
  Rng rng(seed);
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(shuffled[static_cast<size_t>(i)], shuffled[rng.below(static_cast<uint64_t>(i + 1))]);
  r.attention = first_flip(model, ids, label, descending(attention));
  r.gradient = first_flip(model, ids, label, descending(magnitude));
  r.random = first_flip(model, ids, label, shuffled);
  return r;
}

}  // namespace attn::explain
