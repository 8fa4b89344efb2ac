#include "attn/explain/adversarial.h"

#include <cmath>

#include "attn/explain/importance.h"
#include "attn/random.h"
#include "test_support.h"
#include "tiny_classifier.h"

namespace attn::explain {
namespace {
using models::AttnClassifier;
using models::AttnClassifierConfig;

AttnClassifierConfig config(const std::string& encoder, const std::string& pooling) {
  return testing::tiny_classifier_config(encoder, pooling, 11);
}

TEST(Adversarial, JensenShannonByHand) {
  // Disjoint supports: ln 2, the maximum.
  EXPECT_NEAR(jensen_shannon({1.0f, 0.0f}, {0.0f, 1.0f}), std::log(2.0), 1e-12);
  // a = (½, ½), b = (1, 0): m = (¾, ¼); KL(a‖m) = ½ ln(⅔) + ½ ln 2, KL(b‖m) = ln(4/3).
  const double expected = 0.5 * (0.5 * std::log(2.0 / 3.0) + 0.5 * std::log(2.0)) + 0.5 * std::log(4.0 / 3.0);
  EXPECT_NEAR(expected, 0.2157615543388357, 1e-12);  // the same, worked to 16 digits by hand
  EXPECT_NEAR(jensen_shannon({0.5f, 0.5f}, {1.0f, 0.0f}), expected, 1e-7);
  EXPECT_NEAR(jensen_shannon({1.0f, 0.0f}, {0.5f, 0.5f}), expected, 1e-7) << "symmetric";
  EXPECT_EQ(jensen_shannon({0.2f, 0.3f, 0.5f}, {0.2f, 0.3f, 0.5f}), 0.0);
  EXPECT_THROW_MSG(jensen_shannon({1.0f}, {0.5f, 0.5f}), ShapeError, "differ in length");
}

// A random problem: n tokens, E-dim states, C classes.
AdversarialProblem random_problem(int64_t n, int64_t E, int64_t C, uint64_t seed) {
  Rng rng(seed);
  AdversarialProblem p;
  p.n = n, p.E = E, p.C = C, p.label = 1;
  std::vector<float> z;
  double sum = 0.0;
  for (int64_t s = 0; s < n; ++s) sum += std::exp(z.emplace_back(rng.normal()));
  for (float v : z) p.alpha.push_back(static_cast<float>(std::exp(v) / sum));
  for (int64_t i = 0; i < n * E; ++i) p.states.push_back(std::tanh(rng.normal()));
  for (int64_t i = 0; i < C * E; ++i) p.weight.push_back(rng.normal());
  for (int64_t j = 0; j < C; ++j) p.bias.push_back(0.1f * rng.normal());
  p.original = adversarial_probability(p, p.alpha, 1)[0];
  return p;
}

// ∂O/∂z against central differences, with the hinge active (ε = 0) and inactive (ε = 1).
TEST(Adversarial, ObjectiveGradientMatchesFiniteDifferences) {
  const AdversarialProblem p = random_problem(6, 5, 3, 7);
  Rng rng(3);
  const int64_t K = 3;
  std::vector<float> z;
  for (int64_t i = 0; i < K * p.n; ++i) z.push_back(std::log(p.alpha[static_cast<size_t>(i % p.n)]) + rng.normal());
  for (float epsilon : {0.0f, 1.0f}) {
    SCOPED_TRACE("epsilon " + std::to_string(epsilon));
    const float lambda = 3.0f;
    std::vector<float> gradient;
    const std::vector<float> o = adversarial_objective(p, z, K, epsilon, lambda, &gradient);
    ASSERT_EQ(gradient.size(), z.size());
    for (size_t i = 0; i < z.size(); ++i) {
      const float h = 1e-2f;
      std::vector<float> up = z, down = z;
      up[i] += h;
      down[i] -= h;
      const size_t k = i / static_cast<size_t>(p.n);
      const double numeric = (adversarial_objective(p, up, K, epsilon, lambda)[k] -
                              adversarial_objective(p, down, K, epsilon, lambda)[k]) /
                             (2.0 * h);
      EXPECT_NEAR(gradient[i], numeric, 2e-3 + 2e-2 * std::fabs(numeric)) << "z[" << i << "]";
    }
    // Only candidate k's own logits move O_k: the rows are independent.
    std::vector<float> other = z;
    other[0] += 0.5f;
    EXPECT_EQ(adversarial_objective(p, other, K, epsilon, lambda)[1], o[1]);
  }
}

TEST(Adversarial, ObjectiveIsJsdMinusTheHinge) {
  const AdversarialProblem p = random_problem(4, 3, 2, 9);
  std::vector<float> z = {2.0f, -1.0f, 0.5f, 0.0f};
  std::vector<float> a(4);
  double sum = 0.0;
  for (float v : z) sum += std::exp(v);
  for (size_t s = 0; s < 4; ++s) a[s] = static_cast<float>(std::exp(z[s]) / sum);
  const double jsd = jensen_shannon(a, p.alpha);
  const double delta = std::fabs(adversarial_probability(p, a, 1)[0] - p.original);
  EXPECT_NEAR(adversarial_objective(p, z, 1, 1.0f, 50.0f)[0], jsd, 1e-6) << "|dy| < 1: no hinge";
  EXPECT_NEAR(adversarial_objective(p, z, 1, 0.0f, 50.0f)[0], jsd - 50.0 * delta, 1e-4);
}

TEST(Adversarial, ProblemAgreesWithTheModel) {
  for (const char* pooling : {"additive", "dot"}) {
    AttnClassifier model(config("lstm", pooling));
    const std::vector<int32_t> ids = {3, 9, 4, 12, 7};
    const AdversarialProblem p = adversarial_problem(model, ids);
    EXPECT_TRUE(model.is_training()) << "the training flag is restored";
    const SentenceImportance s =
        explain_sentence(model, ids, {.ig_steps = 1, .permutations = 1, .seed = 1, .adversarial = {}});
    EXPECT_EQ(p.label, s.label);
    EXPECT_NEAR(p.original, s.probability, 1e-6);
    for (size_t i = 0; i < ids.size(); ++i) EXPECT_NEAR(p.alpha[i], s.attention[i], 1e-6);
    EXPECT_NEAR(adversarial_probability(p, p.alpha, 1)[0], p.original, 1e-6) << "ŷ recomputed from states and W";
  }
}

// The reported candidate keeps |Δŷ| ≤ 0.05 (checked by recomputing ŷ from its weights), its
// JSD is the JSD of those weights, and the search finds a distant one; without the hinge the
// output moves further.
TEST(Adversarial, HingeIsRespected) {
  for (const char* encoder : {"lstm", "average"}) {
    SCOPED_TRACE(encoder);
    AttnClassifier model(config(encoder, "additive"));
    const std::vector<int32_t> ids = {3, 9, 4, 12, 7, 2, 15, 8};
    const AdversarialProblem p = adversarial_problem(model, ids);
    AdversarialOptions o;
    o.steps = 300;
    const AdversarialResult r = adversarial_attention(p, o);
    ASSERT_EQ(r.attention.size(), ids.size());
    EXPECT_LE(r.delta, o.admissible);
    EXPECT_NEAR(std::fabs(adversarial_probability(p, r.attention, 1)[0] - p.original), r.delta, 1e-5);
    EXPECT_NEAR(jensen_shannon(r.attention, p.alpha), r.jsd, 1e-5);
    EXPECT_GT(r.jsd, 0.05f) << "the search moves away from the original attention";
    EXPECT_LE(r.jsd, std::log(2.0) + 1e-6);
    EXPECT_FLOAT_EQ(r.max_attention, *std::max_element(p.alpha.begin(), p.alpha.end()));
    ASSERT_EQ(r.final_delta.size(), 5u);
    for (float d : r.final_delta) EXPECT_LE(d, 2.0f * o.epsilon) << "the hinge holds |dy| near epsilon";
    AdversarialOptions free = o;
    free.hinge_weight = 0.0f;
    const AdversarialResult unconstrained = adversarial_attention(p, free);
    double largest = 0.0;
    for (float d : unconstrained.final_delta) largest = std::max(largest, static_cast<double>(d));
    double constrained = 0.0;
    for (float d : r.final_delta) constrained = std::max(constrained, static_cast<double>(d));
    EXPECT_GT(largest, constrained) << "without the hinge the output is free to move";
  }
}

TEST(Adversarial, BadArguments) {
  const AdversarialProblem p = random_problem(3, 2, 2, 1);
  EXPECT_THROW_MSG(adversarial_attention(p, {.candidates = 0}), ValueError, "candidates must be >= 1");
  EXPECT_THROW_MSG(adversarial_attention(p, {.steps = -1}), ValueError, "steps must be >= 0");
  EXPECT_THROW_MSG(adversarial_objective(p, {0.0f, 1.0f}, 1, 0.01f, 1.0f), ShapeError, "expected K x n = 1 x 3");
  AttnClassifier model(config("lstm", "dot"));
  EXPECT_THROW_MSG(adversarial_problem(model, {}), ValueError, "no tokens");
  // One token: the only distribution is (1); JSD 0, no change.
  const AdversarialResult one = adversarial_attention(model, {5}, {.steps = 5});
  EXPECT_EQ(one.jsd, 0.0f);
  EXPECT_FLOAT_EQ(one.attention[0], 1.0f);
}

}  // namespace
}  // namespace attn::explain
