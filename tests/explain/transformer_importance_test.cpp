// transformer-cls: the measures of importance.h and the statistics of head_statistics.h.
#include <cmath>

#include "attn/autodiff/tape.h"
#include "attn/explain/head_statistics.h"
#include "attn/explain/importance.h"
#include "attn/explain/report.h"
#include "attn/explain/rollout.h"
#include "attn/ops/softmax.h"
#include "scaled_row_derivative.h"
#include "test_support.h"
#include "tiny_transformer.h"

namespace attn::explain {
namespace {
using models::TransformerClassifier;

// The measures run in eval mode: dropout 0.2 must not matter.
models::TransformerConfig tiny_config() { return testing::tiny_transformer_config(2, 0.2f, 3); }

const std::vector<int32_t> kIds = {3, 9, 4, 12, 7};
const std::vector<std::string> kTokens = {"a", "fine", ",", "dull", "."};

float probability(TransformerClassifier& m, const std::vector<int32_t>& ids, int32_t label) {
  autodiff::NoGradGuard no_grad;
  const int32_t n = static_cast<int32_t>(ids.size());
  return softmax(m.logits(Tensor::from_vector(ids, {1, n}), Tensor::from_vector(std::vector<int32_t>{n}, {1})))
      .f32()[label];
}

// Leave-one-out equals re-running the classifier on the shortened sentence.
TEST(TransformerImportance, LeaveOneOutIsReclassifyingTheShortenedSentence) {
  TransformerClassifier model(tiny_config());
  const std::vector<float> loo = leave_one_out(embedding_classifier(model), kIds, 1);
  EXPECT_TRUE(model.is_training()) << "the training flag is restored";
  model.eval();
  const float full = probability(model, kIds, 1);
  for (size_t s = 0; s < kIds.size(); ++s) {
    std::vector<int32_t> shorter = kIds;
    shorter.erase(shorter.begin() + static_cast<std::ptrdiff_t>(s));
    EXPECT_NEAR(loo[s], std::fabs(full - probability(model, shorter, 1)), 1e-6) << "token " << s;
  }
}

// g_s = Σ_d ∂ŷ/∂e_{s,d} e_{s,d} = d/dt ŷ(e with e_s scaled by 1 + t) at t = 0: central differences.
TEST(TransformerImportance, FullGradientTimesInputIsTheDirectionalDerivative) {
  TransformerClassifier model(tiny_config());
  const EmbeddingClassifier c = embedding_classifier(model);
  const int32_t label = 0;
  const std::vector<float> g = full_gradient_times_input(c, kIds, label);
  model.eval();
  autodiff::NoGradGuard no_grad;
  const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{5}, {1});
  const Tensor e = model.embed(Tensor::from_vector(kIds, {1, 5})).clone();
  for (int64_t s = 0; s < 5; ++s) {
    const double numeric = attn::testing::scaled_row_derivative(
        e, s, [&](const Tensor& x) { return softmax(model.logits_from_embeddings(x, lengths)).f32()[label]; });
    EXPECT_NEAR(g[static_cast<size_t>(s)], numeric, 2e-3) << "token " << s;
  }
}

TEST(TransformerImportance, ExplainSentenceFieldsAndCompleteness) {
  TransformerClassifier model(tiny_config());
  ImportanceOptions options;
  options.ig_steps = 200;
  const SentenceImportance r = explain_sentence(model, kIds, kTokens, options);
  ASSERT_EQ(r.attention.size(), 5u);
  ASSERT_EQ(r.rollout.size(), 5u);
  ASSERT_EQ(r.flow.size(), 5u);
  EXPECT_FALSE(r.has_permutations());
  EXPECT_EQ(r.heads.size(), 4u);
  EXPECT_EQ(r.heads_per_layer, 2);
  EXPECT_TRUE(r.has_leave_one_out);
  EXPECT_LT(r.ig_completeness_error, 5e-3) << "200 steps: the Riemann sum is near the integral";
  model.eval();
  EXPECT_NEAR(r.probability, probability(model, kIds, r.label), 1e-6);
  // The rollout row is [CLS]'s row of attention_rollout over the same weights, [CLS] column dropped.
  const std::vector<Tensor> layers = sentence_layers(
      model.self_attention(Tensor::from_vector(kIds, {1, 5}), Tensor::from_vector(std::vector<int32_t>{5}, {1})), 0, 6);
  const Tensor rollout = attention_rollout(layers);
  for (int64_t s = 0; s < 5; ++s) EXPECT_FLOAT_EQ(r.rollout[static_cast<size_t>(s)], rollout.f32()[1 + s]);
  // The τ pairs of a transformer sentence include rollout and flow.
  bool has_flow_loo = false;
  for (const auto& p : tau_pairs_for(r)) has_flow_loo |= p.first == "flow" && p.second == "loo";
  EXPECT_TRUE(has_flow_loo);
  EXPECT_THROW_MSG(explain_sentence(model, kIds, {"a"}, options), ShapeError,
                   "'tokens' expected one per id (5), got 1");
}

// One layer, one head, N = 3 ([CLS], "good", "."), worked by hand.
TEST(HeadStatistics, ByHand) {
  const Tensor a = Tensor::from_vector(std::vector<float>{1, 0, 0, /**/ .5f, .25f, .25f, /**/ 0, .5f, .5f}, {1, 3, 3});
  const std::vector<HeadStatistics> h = head_statistics({a}, {false, true});
  ASSERT_EQ(h.size(), 1u);
  const double ln2 = std::log(2.0);
  EXPECT_NEAR(h[0].entropy, 0.0 + (0.5 * ln2 + 0.5 * std::log(4.0)) + ln2, 1e-6);  // row sums
  EXPECT_EQ(h[0].rows, 3);
  EXPECT_NEAR(h[0].cls, 1.0 + 0.5, 1e-7);
  EXPECT_NEAR(h[0].punctuation, 0.25 + 0.5, 1e-7);
  EXPECT_EQ(h[0].previous_rows, 1);  // row 2 (".") after "good"
  EXPECT_NEAR(h[0].previous, 0.5, 1e-7);
  EXPECT_EQ(h[0].next_rows, 1);  // row 1 ("good") before "."
  EXPECT_NEAR(h[0].next, 0.25, 1e-7);
  EXPECT_TRUE(is_punctuation(","));
  EXPECT_TRUE(is_punctuation("--"));
  EXPECT_FALSE(is_punctuation("'s"));
  EXPECT_FALSE(is_punctuation(""));
  EXPECT_THROW_MSG(head_statistics({a}, {false}), ShapeError, "expected N − 1 = 2 flags");
}

// A report over transformer sentences: rollout pairs, pooled heads, no permutation figures.
TEST(TransformerReport, RolloutTableHeadsAndNoPermutations) {
  TransformerClassifier model(tiny_config());
  ImportanceOptions options;
  options.ig_steps = 5;
  std::vector<ExplainedSentence> sentences(2);
  for (int i = 0; i < 2; ++i) {
    sentences[i].tokens = kTokens;
    sentences[i].gold = i;
    sentences[i].importance = explain_sentence(model, kIds, kTokens, options);
  }
  const ExplainReport r = summarise(sentences);
  EXPECT_TRUE(r.transformer);
  EXPECT_EQ(r.with_permutations, 0);
  EXPECT_EQ(r.taus.size(), transformer_tau_pairs().size());
  ASSERT_EQ(r.heads.size(), 4u);
  EXPECT_EQ(r.heads[0].rows, 2 * 6);
  const std::string md = report_markdown(r, {{"model", "tf"}});
  EXPECT_NE(md.find("| rollout | "), std::string::npos) << md;
  EXPECT_NE(md.find("| 1 | 1 | "), std::string::npos) << md;  // layer 1, head 1
  EXPECT_EQ(md.find("Random permutation"), std::string::npos) << md;
  const nlohmann::json j = report_json(r, {});
  EXPECT_TRUE(j.at("permutation").is_null());
  EXPECT_EQ(j.at("sentences").at(0).at("flow").size(), 5u);
  EXPECT_EQ(j.at("heads").size(), 4u);
  // Mixing kinds in one report is refused.
  ExplainedSentence bilstm;
  bilstm.importance.attention = {1.0f};
  sentences.push_back(bilstm);
  EXPECT_THROW_MSG(summarise(sentences), ValueError, "of one kind");
}

}  // namespace
}  // namespace attn::explain
