#include "attn/explain/importance.h"

#include <cmath>

#include "attn/autodiff/tape.h"
#include "attn/decode/classify.h"
#include "attn/ops/softmax.h"
#include "scaled_row_derivative.h"
#include "test_support.h"
#include "tiny_classifier.h"

namespace attn::explain {
namespace {
using models::AttnClassifier;
using models::AttnClassifierConfig;

const std::vector<std::pair<std::string, std::string>> kVariants = {
    {"lstm", "additive"}, {"lstm", "dot"}, {"average", "additive"}, {"average", "dot"}};

AttnClassifierConfig config(const std::string& encoder, const std::string& pooling, int64_t vocab = 20) {
  return testing::tiny_classifier_config(encoder, pooling, 11, vocab);
}

// ŷ_label for one sentence with the attention weights given (the states computed from
// embeddings e (1, n, emb)).
float probability_with_weights(AttnClassifier& m, const Tensor& e, const Tensor& weights, int32_t label) {
  autodiff::NoGradGuard no_grad;
  const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(e.dim(1))}, {1});
  return softmax(m.output(m.pool_with(weights, m.encode(e, lengths)))).f32()[label];
}

// g_s = Σ_d ∂ŷ/∂e_{s,d} e_{s,d} = d/dt ŷ(e_s scaled by 1 + t) at t = 0, the attention held
// at its value for the unscaled sentence: central differences.
TEST(Importance, GradientTimesInputIsTheDirectionalDerivativeWithAttentionFixed) {
  for (const auto& [encoder, pooling] : kVariants) {
    SCOPED_TRACE(encoder + "/" + pooling);
    AttnClassifier model(config(encoder, pooling));
    const std::vector<int32_t> ids = {3, 9, 4, 12, 7};
    const int32_t label = 1;
    const std::vector<float> g = gradient_times_input(model, ids, label);
    EXPECT_TRUE(model.is_training()) << "the training flag is restored";
    model.eval();
    const Tensor ids_t = Tensor::from_vector(ids, {1, 5});
    const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{5}, {1});
    Tensor e, weights;
    {
      autodiff::NoGradGuard no_grad;
      e = model.embed(ids_t).clone();
      weights = model.pool(model.encode(e, lengths), lengths).weights;
    }
    for (int64_t s = 0; s < 5; ++s) {
      const double numeric = attn::testing::scaled_row_derivative(
          e, s, [&](const Tensor& x) { return probability_with_weights(model, x, weights, label); });
      EXPECT_NEAR(g[static_cast<size_t>(s)], numeric, 2e-3 + 2e-2 * std::fabs(numeric)) << "token " << s;
    }
    model.train();
  }
}

// Leave-one-out equals re-running classify on the shortened sentence.
TEST(Importance, LeaveOneOutEqualsClassifyingTheShortenedSentence) {
  const data::Vocab vocab = data::Vocab::build({"the film is a quiet small triumph of craft"});
  for (const auto& [encoder, pooling] : kVariants) {
    SCOPED_TRACE(encoder + "/" + pooling);
    AttnClassifier model(config(encoder, pooling, vocab.size()));
    const std::vector<std::string> words = {"the", "film", "is", "a", "quiet", "triumph"};
    auto text_of = [&](int64_t skip) {
      std::string t;
      for (int64_t i = 0; i < static_cast<int64_t>(words.size()); ++i)
        if (i != skip) t += (t.empty() ? "" : " ") + words[static_cast<size_t>(i)];
      return t;
    };
    const decode::Classification full = decode::classify_text(model, vocab, text_of(-1));
    const std::vector<float> loo = leave_one_out(model, full.ids, full.label);
    ASSERT_EQ(loo.size(), words.size());
    for (int64_t s = 0; s < static_cast<int64_t>(words.size()); ++s) {
      const decode::Classification shortened = decode::classify_text(model, vocab, text_of(s));
      EXPECT_NEAR(loo[static_cast<size_t>(s)], std::fabs(full.probability - shortened.probabilities[full.label]), 1e-6)
          << "without '" << words[static_cast<size_t>(s)] << "'";
    }
  }
}

TEST(Importance, IntegratedGradientsAreComplete) {
  for (const auto& [encoder, pooling] : kVariants) {
    SCOPED_TRACE(encoder + "/" + pooling);
    AttnClassifier model(config(encoder, pooling));
    const std::vector<int32_t> ids = {3, 9, 4, 12, 7, 2};
    IntegratedGradients ig50 = integrated_gradients(model, ids, 0, 50);
    IntegratedGradients ig400 = integrated_gradients(model, ids, 0, 400);
    double total = 0;
    for (float a : ig400.attributions) total += a;
    // ŷ(e) − ŷ(0), with ŷ(e) from an independent forward.
    const Tensor ids_t = Tensor::from_vector(ids, {1, 6});
    const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{6}, {1});
    const float at_input = class_probability(model, ids_t, lengths, 0)[0];
    EXPECT_NEAR(total, at_input - ig400.baseline_probability, 2e-3);
    EXPECT_LT(ig400.completeness_error, 2e-3f);
    EXPECT_LT(ig50.completeness_error, 2e-2f);
    for (size_t s = 0; s < ids.size(); ++s) EXPECT_NEAR(ig50.attributions[s], ig400.attributions[s], 1e-2);
  }
}

TEST(Importance, PermutationsKeepStatesAndMoveOnlyTheWeights) {
  AttnClassifier model(config("lstm", "additive"));
  const std::vector<int32_t> ids = {3, 9, 4, 12, 7};
  const std::vector<float> d1 = permutation_deltas(model, ids, 1, 100, 5);
  const std::vector<float> d2 = permutation_deltas(model, ids, 1, 100, 5);
  ASSERT_EQ(d1.size(), 100u);
  EXPECT_EQ(d1, d2) << "a fixed seed gives the same permutations";
  int moved = 0;
  for (float d : d1) {
    EXPECT_GE(d, 0.0f);
    moved += d > 1e-7f;
  }
  EXPECT_GT(moved, 50) << "most of the 120 orders change the output";
  // One token: every permutation is the identity.
  for (float d : permutation_deltas(model, {7}, 1, 10, 5)) EXPECT_EQ(d, 0.0f);
}

TEST(Importance, ExplainSentenceAndShortSentences) {
  AttnClassifier model(config("lstm", "dot"));
  SentenceImportance r = explain_sentence(model, {3, 9, 4, 12});
  EXPECT_EQ(r.attention.size(), 4u);
  EXPECT_EQ(r.gradient.size(), 4u);
  EXPECT_EQ(r.leave_one_out.size(), 4u);
  EXPECT_EQ(r.integrated_gradients.size(), 4u);
  EXPECT_EQ(r.permutation_deltas.size(), 100u);
  EXPECT_TRUE(r.has_leave_one_out);
  EXPECT_GE(r.probability, 0.5f);
  SentenceImportance one = explain_sentence(model, {5});
  EXPECT_FALSE(one.has_leave_one_out);
  EXPECT_TRUE(one.leave_one_out.empty());
  EXPECT_FLOAT_EQ(one.attention[0], 1.0f);
  EXPECT_FALSE(std::isnan(one.gradient[0]) || std::isnan(one.integrated_gradients[0]));
  EXPECT_THROW_MSG(explain_sentence(model, {}), ValueError, "explain_sentence: the sentence has no tokens");
  EXPECT_THROW_MSG(leave_one_out(model, {5}, 0), ValueError, "one-token sentence");
  EXPECT_THROW_MSG(gradient_times_input(model, {5}, 2), ValueError, "label 2 is out of range [0, 2)");
  EXPECT_THROW_MSG(integrated_gradients(model, {5}, 0, 0), ValueError, "steps must be >= 1");
}

}  // namespace
}  // namespace attn::explain
