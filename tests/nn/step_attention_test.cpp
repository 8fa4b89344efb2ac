// The decoder's step-attention modules (attn/nn/step_attention.h): the factory builds the
// module of each score with its checkpoint parameter names; each step equals the op it wraps
// called directly on the same parameters (so the modules add dispatch, not arithmetic); the
// multihead module equals nn::MultiheadAttention; hard attention returns its log-probability
// in its result; gradients reach the parameters; errors.
#include "attn/nn/step_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/ops/attention.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/hard_attention.h"
#include "attn/ops/local_attention.h"
#include "attn/ops/reduce.h"
#include "attn/ops/sdpa.h"
#include "test_support.h"

namespace attn::nn {
namespace {

using attn::testing::gradcheck;
using attn::testing::random_tensor;
using attn::testing::tensors_close;

constexpr int64_t B = 3, S = 5, D = 4, E = 6;

const std::vector<StepScore> kAll = {
    StepScore::additive, StepScore::additive_normalized, StepScore::dot,       StepScore::general, StepScore::concat,
    StepScore::location, StepScore::scaled_dot,          StepScore::multihead, StepScore::local_m, StepScore::local_p,
    StepScore::hard,     StepScore::location_aware};

// dot and scaled_dot need D == E.
int64_t memory_size(StepScore s) { return s == StepScore::dot || s == StepScore::scaled_dot ? D : E; }

std::unique_ptr<StepAttention> make(StepScore score, Rng& rng) {
  return make_step_attention({.score = score,
                              .query_size = D,
                              .memory_size = memory_size(score),
                              .heads = 2,
                              .window = 1,
                              .max_src_len = 8,
                              .sample_seed = 9},
                             rng);
}

Tensor lengths() { return Tensor::from_vector(std::vector<int32_t>{5, 3, 1}, {B}); }

// One step at decoder step t, from a fresh state of the memory's batch.
StepAttentionResult step_at(StepAttention& a, const Tensor& query, const StepMemory& memory, int64_t t,
                            bool need_weights) {
  StepState state = a.start(memory);
  state.t = t;
  return a.step(query, memory, state, need_weights);
}

std::vector<std::string> names(StepAttention& a) {
  std::vector<std::string> n;
  for (const auto& [name, t] : a.module().named_parameters()) n.push_back(name);
  return n;
}

TEST(StepAttention, ScoreNamesRoundTrip) {
  for (StepScore s : kAll) EXPECT_EQ(find_step_score(step_score_name(s)), s) << step_score_name(s);
  EXPECT_FALSE(find_step_score("bahdanau").has_value());
  EXPECT_FALSE(find_step_score("").has_value());
}

TEST(StepAttention, FactoryBuildsEachScoresParametersWithCheckpointNames) {
  const std::map<StepScore, std::vector<std::string>> expected = {
      {StepScore::additive, {"w_q", "w_k", "bias", "v"}},
      {StepScore::additive_normalized, {"w_q", "w_k", "bias", "v", "g"}},
      {StepScore::dot, {}},
      {StepScore::general, {"w"}},
      {StepScore::concat, {"w", "v"}},
      {StepScore::location, {"w_a", "b_a"}},
      {StepScore::scaled_dot, {}},
      {StepScore::multihead,
       {"q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}},
      {StepScore::local_m, {"w"}},
      {StepScore::local_p, {"w", "w_p", "v_p"}},
      {StepScore::hard, {"w"}},
      {StepScore::location_aware, {"w_q", "w_k", "bias", "v", "filters", "w_loc"}},
  };
  for (StepScore s : kAll) {
    SCOPED_TRACE(step_score_name(s));
    Rng rng(1);
    auto a = make(s, rng);
    EXPECT_EQ(names(*a), expected.at(s));
    EXPECT_EQ(a->context_size(), s == StepScore::multihead ? D : memory_size(s));
    EXPECT_EQ(a->weight_heads(), s == StepScore::multihead ? 2 : 1);
  }
}

TEST(StepAttention, MultiheadKeepsSeparateProjectionsWhenSizesMatch) {
  Rng rng(1);
  auto a = make_step_attention({.score = StepScore::multihead, .query_size = D, .memory_size = D, .heads = 2}, rng);
  EXPECT_EQ(names(*a)[0], "q_proj_weight");  // not PyTorch's packed in_proj_weight: old checkpoints load
}

// Every step gives context (B, C) and weights (B, H·S) that are zero past each row's length
// and sum to 1 per head (local_p: at most 1); the weights only when asked (hard: always).
TEST(StepAttention, StepShapesAndMaskedWeights) {
  for (StepScore s : kAll) {
    SCOPED_TRACE(step_score_name(s));
    Rng rng(2);
    auto a = make(s, rng);
    const Tensor values = random_tensor({B, S, memory_size(s)}, 3);
    const StepMemory m = a->prepare(values, lengths());
    const Tensor q = random_tensor({B, D}, 4);
    const StepAttentionResult r = step_at(*a, q, m, 2, true);
    EXPECT_EQ(r.context.shape(), Shape({B, a->context_size()}));
    ASSERT_EQ(r.weights.shape(), Shape({B, a->weight_heads() * S}));
    const std::vector<int32_t> len = lengths().to_vector_i32();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < a->weight_heads(); ++h) {
        double sum = 0.0;
        for (int64_t j = 0; j < S; ++j) {
          const float w = r.weights.f32()[b * a->weight_heads() * S + h * S + j];
          if (j >= len[static_cast<size_t>(b)]) {
            EXPECT_EQ(w, 0.0f);
          }
          sum += w;
        }
        if (s == StepScore::local_p)
          EXPECT_LE(sum, 1.0 + 1e-5);  // scaled by the Gaussian around p_t
        else
          EXPECT_NEAR(sum, 1.0, 1e-5);
      }
    const StepAttentionResult no_weights = step_at(*a, q, m, 2, false);
    EXPECT_EQ(no_weights.weights.defined(), s == StepScore::hard);
    EXPECT_EQ(no_weights.log_prob.defined(), s == StepScore::hard);  // hard in training mode only
    autodiff::tape().clear();
  }
}

TEST(StepAttention, AdditiveStepIsTheOpWithKeysProjectedOnce) {
  Rng rng(5);
  AdditiveAttention a(D, E, /*normalize=*/true, StepCoverage::none, rng);
  const Tensor values = random_tensor({B, S, E}, 6), q = random_tensor({B, D}, 7);
  const StepMemory m = a.prepare(values, lengths());
  EXPECT_TRUE(tensors_close(m.keys, additive_project_keys(values, a.w_k), 0.0f, 0.0f));
  AdditiveOptions o;
  o.normalize = true;
  o.g = a.g;
  const AttentionResult expected = additive_attention(q, m.keys, values, a.w_q, a.bias, a.v, lengths(), o);
  const StepAttentionResult r = step_at(a, q, m, 0, true);
  EXPECT_TRUE(tensors_close(r.context, expected.context, 0.0f, 0.0f));
  EXPECT_TRUE(tensors_close(r.weights, expected.weights, 0.0f, 0.0f));
}

TEST(StepAttention, LuongLocationAndScaledDotStepsAreTheirOps) {
  const Tensor values = random_tensor({B, S, E}, 8), q = random_tensor({B, D}, 9);
  {
    Rng rng(1);
    LuongAttention a(StepScore::concat, D, E, rng);
    LuongOptions o;
    o.score = LuongScore::concat;
    o.w = a.w;
    o.v = a.v;
    EXPECT_TRUE(tensors_close(step_at(a, q, a.prepare(values, lengths()), 0, false).context,
                              luong_attention(q, values, values, lengths(), o).context, 0.0f, 0.0f));
  }
  {
    Rng rng(1);
    LocationAttention a(D, E, 8, rng);
    EXPECT_TRUE(tensors_close(step_at(a, q, a.prepare(values, lengths()), 0, true).weights,
                              location_attention(q, values, a.w_a, a.b_a, lengths()).weights, 0.0f, 0.0f));
  }
  {
    const Tensor v = random_tensor({B, S, D}, 10);
    ScaledDotAttention a(D);
    SdpaOptions o;
    o.key_lengths = lengths();
    const Tensor v4 = v.reshape({B, 1, S, D});
    EXPECT_TRUE(tensors_close(step_at(a, q, a.prepare(v, lengths()), 0, false).context,
                              sdpa(q.reshape({B, 1, 1, D}), v4, v4, o).out.reshape({B, D}), 0.0f, 0.0f));
  }
}

TEST(StepAttention, LocalMonotonicAlignsWithTheStepInsideEachRow) {
  Rng rng(1);
  LocalAttention a(/*predictive=*/false, D, E, /*window=*/1, rng);
  const Tensor values = random_tensor({B, S, E}, 11), q = random_tensor({B, D}, 12);
  const int64_t t = 3;
  LocalOptions o;
  o.mode = LocalMode::monotonic;
  o.window = 1;
  o.w = a.w;
  o.positions = Tensor::from_vector(std::vector<int32_t>{3, 2, 0}, {B});  // min(t, L_b − 1)
  const AttentionResult expected = local_attention(q, values, values, lengths(), o);
  EXPECT_TRUE(
      tensors_close(step_at(a, q, a.prepare(values, lengths()), t, true).weights, expected.weights, 0.0f, 0.0f));
}

TEST(StepAttention, MultiheadStepIsMultiheadAttention) {
  Rng rng(13);
  MultiheadStepAttention a(D, E, 2, rng);
  const Tensor values = random_tensor({B, S, E}, 14), q = random_tensor({B, D}, 15);
  MhaCallOptions call;
  call.key_lengths = lengths();
  call.need_weights = true;
  const MhaResult expected = a.mha.forward(q.reshape({B, 1, D}), values, values, call);  // (B, 1, D), (B, H, 1, S)
  const StepAttentionResult r = step_at(a, q, a.prepare(values, lengths()), 0, true);
  EXPECT_TRUE(tensors_close(r.context, expected.out.reshape({B, D}), 0.0f, 0.0f));
  EXPECT_TRUE(tensors_close(r.weights, expected.weights.reshape({B, 2 * S}), 0.0f, 0.0f));
  // Drawn from the model's Rng (Xavier, biases zero), not from the module's own seed.
  for (float b : a.mha.out_proj.bias.to_vector()) EXPECT_EQ(b, 0.0f);
  Rng again(13);
  MultiheadStepAttention b(D, E, 2, again);
  EXPECT_TRUE(tensors_close(b.mha.out_proj.weight, a.mha.out_proj.weight, 0.0f, 0.0f));
  // q (D, D), k, v (D, E) Xavier; out_proj's nn.Linear default (D, D) + (D), then Xavier (D, D).
  Rng reference(13);
  for (int64_t i = 0; i < D * D + 2 * D * E + D * D + D + D * D; ++i) reference.next();
  EXPECT_EQ(rng.next(), reference.next());
}

TEST(StepAttention, HardReturnsTheLogProbabilityOfItsSample) {
  Rng rng(16);
  HardAttention a(D, E, /*sample_seed=*/21, rng);
  const Tensor values = random_tensor({B, S, E}, 17), q = random_tensor({B, D}, 18);
  const StepMemory m = a.prepare(values, lengths());
  const StepAttentionResult r = step_at(a, q, m, 0, false);
  // The sample the op draws with the same seed from the same distribution.
  Rng same(21);
  const HardAttentionSample h = hard_attention_sample(r.weights, values, true, same);
  EXPECT_TRUE(tensors_close(r.context, h.context, 0.0f, 0.0f));
  ASSERT_TRUE(r.log_prob.defined());
  EXPECT_TRUE(tensors_close(r.log_prob, h.log_prob, 0.0f, 0.0f));
  a.eval();
  const StepAttentionResult e = step_at(a, q, m, 0, false);
  EXPECT_FALSE(e.log_prob.defined());
  Rng unused(0);
  EXPECT_TRUE(tensors_close(e.context, hard_attention_sample(e.weights, values, false, unused).context, 0.0f, 0.0f));
  autodiff::tape().clear();
}

// Gradients of a step reach the query, the values and every parameter (finite differences).
TEST(StepAttention, GradcheckThroughEachModule) {
  for (StepScore s : {StepScore::additive_normalized, StepScore::concat, StepScore::multihead, StepScore::local_p,
                      StepScore::location_aware}) {
    SCOPED_TRACE(step_score_name(s));
    Rng rng(19);
    auto a = make(s, rng);
    std::vector<Tensor> inputs = {random_tensor({B, D}, 20), random_tensor({B, S, memory_size(s)}, 21)};
    for (Tensor p : a->module().parameters()) inputs.push_back(p);
    for (Tensor& t : inputs) t.set_requires_grad(true);
    const size_t n = inputs.size();
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& x) {
          EXPECT_EQ(x.size(), n);
          return step_at(*a, x[0], a->prepare(x[1], lengths()), 1, false).context;
        },
        inputs));
  }
}

TEST(StepAttention, Errors) {
  Rng rng(1);
  EXPECT_THROW_MSG(make_step_attention({.score = StepScore::general, .query_size = 0, .memory_size = E}, rng),
                   ValueError, "make_step_attention: query_size and memory_size must be >= 1, got 0, 6");
  EXPECT_THROW_MSG(
      make_step_attention({.score = StepScore::multihead, .query_size = 5, .memory_size = E, .heads = 2}, rng),
      ValueError, "embed_dim=5 is not divisible by num_heads=2");
  EXPECT_THROW_MSG(make_step_attention({.score = StepScore::location, .query_size = D, .memory_size = E}, rng),
                   ValueError, "location_attention_init: sizes must be >= 1, got D=4, S_max=0");
  EXPECT_THROW_MSG(LuongAttention(StepScore::hard, D, E, rng), ValueError,
                   "LuongAttention: score must be dot, general or concat, got hard");
}

// The state: start() gives step 0, each step() advances it by one, and local_m's window follows
// it (the state, not the caller, says which step it is).
TEST(StepAttention, StateAdvancesWithEachStep) {
  Rng rng(5);
  auto a = make(StepScore::local_m, rng);
  const Tensor values = random_tensor({B, S, memory_size(StepScore::local_m)}, 6);
  const StepMemory m = a->prepare(values, lengths());
  const Tensor q = random_tensor({B, D}, 7);
  StepState state = a->start(m);
  EXPECT_EQ(state.t, 0);
  a->step(q, m, state, true);
  const StepAttentionResult second = a->step(q, m, state, true);
  EXPECT_EQ(state.t, 2);
  EXPECT_TRUE(tensors_close(second.weights, step_at(*a, q, m, 1, true).weights, 0.0f, 0.0f));
  EXPECT_FALSE(tensors_close(second.weights, step_at(*a, q, m, 0, true).weights, 0.0f, 0.0f));
  autodiff::tape().clear();
}

// Location-aware attention starts from a uniform alignment over each row's real positions,
// each step is the op fed the alignment of the step before, and the state carries it on:
// reordered by beam search like any state row.
TEST(StepAttention, LocationAwareCarriesThePreviousAlignment) {
  Rng rng(8);
  LocationAwareAttention a(D, E, {.location_filters = 3, .location_width = 5, .location_sharpening = 1.5f}, rng);
  EXPECT_EQ(a.filters.shape(), Shape({3, 5}));
  EXPECT_EQ(a.w_loc.shape(), Shape({D, 3}));
  const Tensor values = random_tensor({B, S, E}, 9), q1 = random_tensor({B, D}, 10), q2 = random_tensor({B, D}, 11);
  const StepMemory m = a.prepare(values, lengths());
  StepState state = a.start(m);
  ASSERT_EQ(state.rows.size(), 1u);
  EXPECT_EQ(state.rows[0].to_vector(), (std::vector<float>{0.2f, 0.2f, 0.2f, 0.2f, 0.2f,        // L = 5
                                                           1 / 3.0f, 1 / 3.0f, 1 / 3.0f, 0, 0,  // L = 3
                                                           1, 0, 0, 0, 0}));                    // L = 1
  const Tensor a0 = state.rows[0];
  auto op = [&](const Tensor& q, const Tensor& prev) {
    return location_aware_attention(q, m.keys, values, prev, a.w_q, a.bias, a.v, a.filters, a.w_loc, lengths(),
                                    {.sharpening = 1.5f});
  };
  const StepAttentionResult first = a.step(q1, m, state, false);
  EXPECT_FALSE(first.weights.defined());  // not asked for, though the state keeps them
  const AttentionResult want1 = op(q1, a0);
  EXPECT_TRUE(tensors_close(first.context, want1.context, 0.0f, 0.0f));
  EXPECT_TRUE(tensors_close(state.rows[0], want1.weights, 0.0f, 0.0f));
  const StepAttentionResult second = a.step(q2, m, state, true);
  EXPECT_TRUE(tensors_close(second.weights, op(q2, want1.weights).weights, 0.0f, 0.0f));
  EXPECT_FALSE(tensors_close(second.weights, op(q2, a0).weights, 0.0f, 0.0f));  // the alignment matters
  // Beam search: hypotheses 2, 0 continue; their alignments go with them.
  const Tensor index = Tensor::from_vector(std::vector<int32_t>{2, 0}, {2});
  const Tensor before = state.rows[0];
  state.reorder(index);
  ASSERT_EQ(state.rows[0].shape(), Shape({2, S}));
  for (int64_t s = 0; s < S; ++s) {
    EXPECT_EQ(state.rows[0].f32()[s], before.f32()[2 * S + s]);
    EXPECT_EQ(state.rows[0].f32()[S + s], before.f32()[s]);
  }
  autodiff::tape().clear();
}

// Beam search reorders every tensor of the state by rows, keeping t.
TEST(StepAttention, StateReordersRows) {
  StepState state;
  state.t = 4;
  state.rows = {Tensor::from_vector(std::vector<float>{0, 1, 10, 11, 20, 21}, {3, 2}),
                Tensor::from_vector(std::vector<float>{5, 6, 7}, {3})};
  state.reorder(Tensor::from_vector(std::vector<int32_t>{2, 0, 0, 1}, {4}));
  EXPECT_EQ(state.t, 4);
  EXPECT_EQ(state.rows[0].to_vector(), (std::vector<float>{20, 21, 0, 1, 0, 1, 10, 11}));
  EXPECT_EQ(state.rows[1].to_vector(), (std::vector<float>{7, 5, 5, 6}));
}

// ---- coverage (See et al. 2017) -------------------------------------------------------------

std::unique_ptr<StepAttention> make_coverage(Rng& rng, StepCoverage coverage = StepCoverage::see) {
  auto a =
      make_step_attention({.score = StepScore::additive, .query_size = D, .memory_size = E, .coverage = coverage}, rng);
  // w_c (and tu's w_f) start at zeros; give them values so that the coverage shows in the scores.
  auto& module = dynamic_cast<AdditiveAttention&>(*a);
  module.w_c.copy_from(random_tensor({D}, 41, -2.0f, 2.0f));
  if (coverage == StepCoverage::tu) module.w_f.copy_from(random_tensor({1, E}, 42, -1.0f, 1.0f));
  return a;
}

// The weights of plain additive attention on keys + c ⊗ w_c: what step t must give.
Tensor expected_weights(const AdditiveAttention& a, const Tensor& q, const StepMemory& m, const std::vector<float>& c) {
  std::vector<float> keys = m.keys.to_vector();
  const std::vector<float> w = a.w_c.to_vector();
  for (int64_t r = 0; r < B * S; ++r)
    for (int64_t i = 0; i < D; ++i)
      keys[static_cast<size_t>(r * D + i)] += c[static_cast<size_t>(r)] * w[static_cast<size_t>(i)];
  AdditiveOptions o;
  o.need_weights = true;
  return additive_attention(q, Tensor::from_vector(keys, {B, S, D}), m.values, a.w_q, a.bias, a.v, m.lengths, o)
      .weights;
}

// OpenNMT-py #2013: the coverage a step scores with is the attention of the EARLIER steps only.
// Step 0 sees zeros (its coverage loss is 0, not Σ a_0 = 1); step t sees Σ_{t' < t} a_{t'}.
TEST(StepAttention, CoverageExcludesTheCurrentStep) {
  Rng rng(31);
  auto a = make_coverage(rng);
  auto& module = dynamic_cast<AdditiveAttention&>(*a);
  const StepMemory m = a->prepare(random_tensor({B, S, E}, 32), lengths());
  StepState state = a->start(m);
  ASSERT_EQ(state.rows.size(), 1u);
  std::vector<float> coverage(static_cast<size_t>(B * S), 0.0f);
  for (int t = 0; t < 3; ++t) {
    SCOPED_TRACE(t);
    const Tensor q = random_tensor({B, D}, 33 + t);
    const StepAttentionResult r = a->step(q, m, state, false);
    ASSERT_TRUE(r.weights.defined());  // coverage needs them even when not asked for
    EXPECT_TRUE(tensors_close(r.weights, expected_weights(module, q, m, coverage), 1e-6f, 1e-5f));
    const std::vector<float> w = r.weights.to_vector();
    for (int64_t b = 0; b < B; ++b) {
      double overlap = 0.0;
      for (int64_t i = 0; i < S; ++i)
        overlap += std::min(w[static_cast<size_t>(b * S + i)], coverage[static_cast<size_t>(b * S + i)]);
      EXPECT_NEAR(r.coverage_loss.to_vector()[static_cast<size_t>(b)], overlap, 1e-6) << "row " << b;
      if (t == 0) {
        EXPECT_EQ(r.coverage_loss.to_vector()[static_cast<size_t>(b)], 0.0f);
      }
    }
    for (size_t i = 0; i < coverage.size(); ++i) coverage[i] += w[i];
    EXPECT_TRUE(tensors_close(state.rows[0], Tensor::from_vector(coverage, {B, S}), 1e-6f, 1e-5f));
  }
  autodiff::tape().clear();
}

// A new coverage model (w_c = 0) scores as plain Bahdanau, and draws the same parameters.
TEST(StepAttention, CoverageStartsAsPlainBahdanau) {
  Rng r1(7), r2(7);
  auto with = make_step_attention(
      {.score = StepScore::additive, .query_size = D, .memory_size = E, .coverage = StepCoverage::see}, r1);
  auto without = make_step_attention({.score = StepScore::additive, .query_size = D, .memory_size = E}, r2);
  EXPECT_EQ(dynamic_cast<AdditiveAttention&>(*with).w_c.to_vector(), std::vector<float>(D, 0.0f));
  const Tensor values = random_tensor({B, S, E}, 8), q = random_tensor({B, D}, 9);
  const StepMemory m1 = with->prepare(values, lengths()), m2 = without->prepare(values, lengths());
  StepState s1 = with->start(m1), s2 = without->start(m2);
  for (int t = 0; t < 2; ++t)
    EXPECT_TRUE(tensors_close(with->step(q, m1, s1, true).weights, without->step(q, m2, s2, true).weights, 0.0f, 0.0f));
  autodiff::tape().clear();
}

// Tu et al. (2016): each step adds a_t / Φ, Φ_i = 2 σ(w_f · h_i); the step scores with the
// earlier steps' coverage only, and reports no coverage loss.
TEST(StepAttention, TuCoverageDividesByTheFertility) {
  Rng rng(61);
  auto a = make_coverage(rng, StepCoverage::tu);
  auto& module = dynamic_cast<AdditiveAttention&>(*a);
  const Tensor values = random_tensor({B, S, E}, 62);
  const StepMemory m = a->prepare(values, lengths());
  const std::vector<float> h = values.to_vector(), wf = module.w_f.to_vector();
  std::vector<float> inverse_fertility(static_cast<size_t>(B * S));
  for (int64_t r = 0; r < B * S; ++r) {
    double x = 0.0;
    for (int64_t e = 0; e < E; ++e)
      x += static_cast<double>(h[static_cast<size_t>(r * E + e)]) * wf[static_cast<size_t>(e)];
    inverse_fertility[static_cast<size_t>(r)] = static_cast<float>(1.0 / (2.0 / (1.0 + std::exp(-x))));
  }
  EXPECT_TRUE(tensors_close(m.inverse_fertility, Tensor::from_vector(inverse_fertility, {B, S}), 1e-6f, 1e-5f));
  StepState state = a->start(m);
  std::vector<float> coverage(static_cast<size_t>(B * S), 0.0f);
  for (int t = 0; t < 3; ++t) {
    SCOPED_TRACE(t);
    const Tensor q = random_tensor({B, D}, 63 + t);
    const StepAttentionResult r = a->step(q, m, state, true);
    EXPECT_FALSE(r.coverage_loss.defined());
    EXPECT_TRUE(tensors_close(r.weights, expected_weights(module, q, m, coverage), 1e-6f, 1e-5f));
    const std::vector<float> w = r.weights.to_vector();
    for (size_t i = 0; i < coverage.size(); ++i) coverage[i] += w[i] * inverse_fertility[i];
    EXPECT_TRUE(tensors_close(state.rows[0], Tensor::from_vector(coverage, {B, S}), 1e-6f, 1e-5f));
  }
  // Gradients reach the fertility weights through two steps.
  module.w_f.set_requires_grad(true);
  const Tensor q1 = random_tensor({B, D}, 70);
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) {
        const StepMemory mm = a->prepare(in[0], lengths());
        StepState st = a->start(mm);
        a->step(q1, mm, st, false);
        return a->step(q1, mm, st, false).context;
      },
      {values.clone().set_requires_grad(true), module.w_f}));
  autodiff::tape().clear();
}

// Gradients flow through the coverage of two steps into w_c, the query and the values.
TEST(StepAttention, CoverageGradients) {
  Rng rng(51);
  auto a = make_coverage(rng);
  Tensor w_c = dynamic_cast<AdditiveAttention&>(*a).w_c;  // the module's parameter (shared storage)
  w_c.set_requires_grad(true);
  const Tensor q1 = random_tensor({B, D}, 53);
  auto two_steps = [&](const std::vector<Tensor>& in) {  // in: values, the first query, w_c
    const StepMemory m = a->prepare(in[0], lengths());
    StepState state = a->start(m);
    a->step(in[1], m, state, false);
    return a->step(q1, m, state, false).context;
  };
  EXPECT_TRUE(gradcheck(two_steps, {random_tensor({B, S, E}, 54).set_requires_grad(true),
                                    random_tensor({B, D}, 52).set_requires_grad(true), w_c}));
  autodiff::tape().clear();
}

TEST(StepAttention, CoverageNeedsAnAdditiveScore) {
  Rng rng(1);
  EXPECT_THROW_MSG(
      make_step_attention(
          {.score = StepScore::general, .query_size = D, .memory_size = E, .coverage = StepCoverage::see}, rng),
      ValueError, "coverage needs an additive score, got general");
}

}  // namespace
}  // namespace attn::nn
