#include "attn/explain/erasure.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "test_support.h"
#include "tiny_transformer.h"

namespace attn::explain {
namespace {

// The class the model predicts for one sentence, classified on its own.
int32_t predicted(const EmbeddingClassifier& m, const std::vector<int32_t>& ids) {
  const int32_t n = static_cast<int32_t>(ids.size());
  return predicted_labels(m, Tensor::from_vector(ids, {1, n}), Tensor::from_vector(std::vector<int32_t>{n}, {1}))[0];
}

// The first k at which deleting the k highest-scored tokens flips the decision, by re-running
// the classifier on each shortened sentence alone (-1: never within n - 1).
int64_t flip_by_hand(const EmbeddingClassifier& m, const std::vector<int32_t>& ids, int32_t label,
                     const std::vector<float>& score) {
  std::vector<size_t> order(ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score[a] > score[b]; });
  for (size_t k = 1; k < ids.size(); ++k) {
    std::vector<int32_t> kept;
    for (size_t s = 0; s < ids.size(); ++s)
      if (std::find(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), s) ==
          order.begin() + static_cast<std::ptrdiff_t>(k))
        kept.push_back(ids[s]);
    if (predicted(m, kept) != label) return static_cast<int64_t>(k);
  }
  return -1;
}

TEST(Erasure, OrdersMatchReclassifyingEachShortenedSentence) {
  int flips = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    models::TransformerClassifier model(testing::tiny_transformer_config(1, 0.0f, seed));
    const EmbeddingClassifier m = embedding_classifier(model);
    const std::vector<int32_t> ids = {3, 9, 4, 12, 7, 5, 11};
    const SentenceImportance s = explain_sentence(model, ids, std::vector<std::string>(ids.size(), "w"));
    const SentenceErasure e = erasure(m, ids, s.label, s.attention, s.gradient, seed);
    ASSERT_TRUE(e.defined);
    EXPECT_EQ(e.attention.removed_to_flip, flip_by_hand(m, ids, s.label, s.attention)) << "seed " << seed;
    std::vector<float> magnitude = s.gradient;
    for (float& g : magnitude) g = std::fabs(g);
    EXPECT_EQ(e.gradient.removed_to_flip, flip_by_hand(m, ids, s.label, magnitude)) << "seed " << seed;
    if (e.attention.flipped()) {
      EXPECT_DOUBLE_EQ(e.attention.fraction, e.attention.removed_to_flip / 7.0);
    }
    // The top-attended single deletion is leave-one-out's entry for that token.
    const size_t top =
        static_cast<size_t>(std::max_element(s.attention.begin(), s.attention.end()) - s.attention.begin());
    EXPECT_FLOAT_EQ(e.top_delta, s.leave_one_out[top]);
    std::vector<int32_t> without = ids;
    without.erase(without.begin() + static_cast<std::ptrdiff_t>(top));
    EXPECT_EQ(e.top_flips, predicted(m, without) != s.label);
    EXPECT_GE(e.random_flip_share, 0.0);
    EXPECT_LE(e.random_flip_share, 1.0);
    flips += e.attention.flipped() + e.gradient.flipped() + e.random.flipped();
  }
  EXPECT_GT(flips, 0) << "no model flipped: the comparison above checked only the no-flip case";
}

TEST(Erasure, OneTokenAndErrors) {
  models::TransformerClassifier model(testing::tiny_transformer_config(1, 0.0f, 1));
  const EmbeddingClassifier m = embedding_classifier(model);
  EXPECT_FALSE(erasure(m, {4}, 0, {1.0f}, {0.5f}, 1).defined);
  EXPECT_THROW_MSG(erasure(m, {4, 5}, 0, {1.0f}, {0.5f, 0.1f}, 1), ValueError, "one score per token (2)");
}

}  // namespace
}  // namespace attn::explain
