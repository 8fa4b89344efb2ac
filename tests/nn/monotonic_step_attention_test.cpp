// nn::MonotonicAttention (monotonic | mocha): parameter names, the training step equals the ops
// it composes (expected alignment from δ_0, carried in the state; noise drawn from its own
// stream), gradients reach every parameter, the eval-mode step reads online from the state's
// position (reordered like a beam's rows) and, over many steps, equals the dense composition of
// the ops it replaced (every frame scored each step), and an attention that never stops gives
// zero weights and context and, from the step after it read the last frame, reports the rows as
// exhausted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/nn/step_attention.h"
#include "attn/ops/attention.h"
#include "attn/ops/monotonic.h"
#include "attn/ops/reduce.h"
#include "test_support.h"

namespace attn::nn {
namespace {

using attn::testing::random_tensor;
using attn::testing::tensors_close;

constexpr int64_t B = 3, S = 5, D = 4, E = 6;

Tensor lengths() { return Tensor::from_vector(std::vector<int32_t>{5, 3, 1}, {B}); }

std::unique_ptr<StepAttention> make(StepScore score, float noise = 0.0f, float bias = -4.0f, int64_t chunk = 2) {
  Rng rng(3);
  return make_step_attention({.score = score,
                              .query_size = D,
                              .memory_size = E,
                              .sample_seed = 11,
                              .monotonic_bias = bias,
                              .monotonic_noise = noise,
                              .chunk = chunk},
                             rng);
}

std::vector<std::string> names(StepAttention& a) {
  std::vector<std::string> n;
  for (const auto& [name, t] : a.module().named_parameters()) n.push_back(name);
  return n;
}

// Σ_s w[b, s] values[b, s]
Tensor mix(const Tensor& w, const Tensor& values) {
  std::vector<float> c(B * E, 0.0f);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t e = 0; e < E; ++e) c[b * E + e] += w.f32()[b * S + s] * values.f32()[(b * S + s) * E + e];
  return Tensor::from_vector(c, {B, E});
}

TEST(MonotonicStepAttention, NamesAndParameters) {
  for (StepScore s : {StepScore::monotonic, StepScore::mocha}) EXPECT_EQ(find_step_score(step_score_name(s)), s);
  EXPECT_EQ(names(*make(StepScore::monotonic)), (std::vector<std::string>{"w_q", "w_k", "bias", "v", "r"}));
  EXPECT_EQ(names(*make(StepScore::mocha)), (std::vector<std::string>{"w_q", "w_k", "bias", "v", "r", "chunk_w_q",
                                                                      "chunk_w_k", "chunk_bias", "chunk_v"}));
  auto a = make(StepScore::monotonic, 0.0f, -2.5f);
  EXPECT_EQ(dynamic_cast<MonotonicAttention&>(*a).r.item(), -2.5f);
}

// Two training steps equal the ops on the same parameters: α_1 from δ_0, α_2 from α_1;
// mocha's weights are the chunk attention of α; the context mixes the values with them.
TEST(MonotonicStepAttention, TrainingStepsAreTheExpectedAlignment) {
  for (StepScore score : {StepScore::monotonic, StepScore::mocha}) {
    SCOPED_TRACE(step_score_name(score));
    auto a = make(score);
    auto& m = dynamic_cast<MonotonicAttention&>(*a);
    const Tensor values = random_tensor({B, S, E}, 4), q1 = random_tensor({B, D}, 5), q2 = random_tensor({B, D}, 6);
    const StepMemory memory = a->prepare(values, lengths());
    StepState state = a->start(memory);
    Tensor alpha = state.rows.at(0);
    for (int64_t b = 0; b < B; ++b) EXPECT_EQ(alpha.f32()[b * S], 1.0f);  // δ_0
    for (const Tensor& q : {q1, q2}) {
      const StepAttentionResult r = a->step(q, memory, state, true);
      alpha = monotonic_alignment(
          additive_energy(q, additive_project_keys(values, m.w_k), m.w_q, m.bias, m.v, m.r, lengths()), alpha,
          lengths());
      Tensor weights = alpha;
      if (score == StepScore::mocha)
        weights = mocha_chunk_attention(alpha,
                                        additive_energy(q, additive_project_keys(values, m.chunk_w_k), m.chunk_w_q,
                                                        m.chunk_bias, m.chunk_v, Tensor(), lengths()),
                                        lengths(), 2);
      EXPECT_TRUE(tensors_close(state.rows.at(0), alpha));
      EXPECT_TRUE(tensors_close(r.weights, weights));
      EXPECT_TRUE(tensors_close(r.context, mix(weights, values)));
      EXPECT_FALSE(r.exhausted.defined());
    }
    // Gradients reach every parameter through the two steps.
    backward(sum(a->step(q1, memory, state, false).context));
    for (const auto& [name, p] : a->module().named_parameters()) {
      double norm = 0.0;
      for (float g : p.grad().to_vector()) norm += std::abs(g);
      EXPECT_GT(norm, 0.0) << name;
    }
    autodiff::tape().clear();
  }
}

// Training noise changes the alignment, comes from the module's own stream (same seed, same
// noise) and is off in eval mode.
TEST(MonotonicStepAttention, NoiseOnlyInTrainingFromItsOwnStream) {
  autodiff::NoGradGuard no_grad;
  const Tensor values = random_tensor({B, S, E}, 7), q = random_tensor({B, D}, 8);
  auto run = [&](StepAttention& a) {
    const StepMemory memory = a.prepare(values, lengths());
    StepState state = a.start(memory);
    return a.step(q, memory, state, true).weights;
  };
  auto quiet = make(StepScore::monotonic), noisy = make(StepScore::monotonic, 1.0f),
       same = make(StepScore::monotonic, 1.0f);
  EXPECT_FALSE(tensors_close(run(*noisy), run(*quiet)));
  EXPECT_TRUE(tensors_close(run(*same), run(*make(StepScore::monotonic, 1.0f)), 0.0f, 0.0f));
  noisy->module().eval();
  quiet->module().eval();
  EXPECT_TRUE(tensors_close(run(*noisy), run(*quiet), 0.0f, 0.0f));
}

// Eval mode: the state is the position each row reads from; a step stops at the first frame
// with p > 0.5 from there (forced here through the offset r), and a beam's reorder moves it.
TEST(MonotonicStepAttention, EvalStepsReadOnlineAndStopWhereTheStateSays) {
  autodiff::NoGradGuard no_grad;
  const Tensor values = random_tensor({B, S, E}, 9), q = random_tensor({B, D}, 10);
  auto a = make(StepScore::monotonic, 0.0f, /*bias=*/1e4f);  // every frame's p > 0.5: stop at once
  a->module().eval();
  const StepMemory memory = a->prepare(values, lengths());
  StepState state = a->start(memory);
  ASSERT_EQ(state.rows.at(0).shape(), Shape({B}));
  state.rows[0].f32()[0] = 3.0f;  // row 0 has read up to frame 3
  const StepAttentionResult r = a->step(q, memory, state, true);
  std::vector<float> want(B * S, 0.0f);
  want[0 * S + 3] = 1.0f;
  want[1 * S + 0] = 1.0f;
  want[2 * S + 0] = 1.0f;
  EXPECT_TRUE(tensors_close(r.weights, Tensor::from_vector(want, {B, S}), 0.0f, 0.0f));
  EXPECT_TRUE(tensors_close(r.context, mix(r.weights, values)));
  EXPECT_EQ(r.exhausted.to_vector_i32(), (std::vector<int32_t>{0, 0, 0}));
  EXPECT_EQ(state.rows.at(0).to_vector(), (std::vector<float>{3.0f, 0.0f, 0.0f}));
  state.reorder(Tensor::from_vector(std::vector<int32_t>{0, 0, 2}, {B}));
  EXPECT_EQ(state.rows.at(0).to_vector(), (std::vector<float>{3.0f, 3.0f, 0.0f}));
}

// Eval steps equal the dense path they replaced (additive_energy over every frame,
// monotonic_select from the state's position, monotonic_hard_weights, the mix over all S), step
// after step until every row has read its input, for monotonic and MoChA with chunks 1 to 3:
// the same stops, weights and exhausted flags, the context within rounding; without weights
// asked for, the same context and no weights.
TEST(MonotonicStepAttention, EvalStepsEqualTheDensePath) {
  autodiff::NoGradGuard no_grad;
  const Tensor values = random_tensor({B, S, E}, 13);
  for (int64_t chunk : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{3}}) {
    for (float bias : {-1.0f, 0.0f, 1.0f}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + ", r " + std::to_string(bias));
      const StepScore score = chunk == 0 ? StepScore::monotonic : StepScore::mocha;
      auto a = make(score, 0.0f, bias, std::max<int64_t>(chunk, 1)),
           lean = make(score, 0.0f, bias, std::max<int64_t>(chunk, 1));
      a->module().eval();
      lean->module().eval();
      auto& m = dynamic_cast<MonotonicAttention&>(*a);
      const StepMemory memory = a->prepare(values, lengths()), lean_memory = lean->prepare(values, lengths());
      StepState state = a->start(memory), lean_state = lean->start(lean_memory);
      std::vector<int32_t> position(B, 0);
      int exhausted_rows = 0;
      for (int step = 0; step < 8; ++step) {
        const Tensor q = random_tensor({B, D}, 40 + static_cast<uint64_t>(step), -3.0f, 3.0f);
        const StepAttentionResult r = a->step(q, memory, state, true);
        const StepAttentionResult rl = lean->step(q, lean_memory, lean_state, false);
        const Tensor e = additive_energy(q, additive_project_keys(values, m.w_k), m.w_q, m.bias, m.v, m.r, lengths());
        const Tensor selected =
            monotonic_select(e, lengths(), Tensor::from_vector(position, {static_cast<int64_t>(B)}));
        const Tensor weights =
            chunk == 0
                ? monotonic_hard_weights(selected, e, 1)
                : monotonic_hard_weights(selected,
                                         additive_energy(q, additive_project_keys(values, m.chunk_w_k), m.chunk_w_q,
                                                         m.chunk_bias, m.chunk_v, Tensor(), lengths()),
                                         chunk);
        EXPECT_TRUE(tensors_close(r.weights, weights, 0.0f, 0.0f));
        EXPECT_TRUE(tensors_close(r.context, mix(weights, values), 1e-6f, 1e-6f));
        EXPECT_FALSE(rl.weights.defined());
        EXPECT_TRUE(tensors_close(rl.context, r.context, 0.0f, 0.0f));
        std::vector<int32_t> ended(B);
        for (int64_t b = 0; b < B; ++b) {
          ended[b] = position[b] >= lengths().i32()[b] ? 1 : 0;
          exhausted_rows += ended[b];
          const int32_t j = selected.i32()[b];
          position[b] = j < 0 ? lengths().i32()[b] : j;
        }
        EXPECT_EQ(r.exhausted.to_vector_i32(), ended);
        EXPECT_EQ(rl.exhausted.to_vector_i32(), ended);
        EXPECT_EQ(state.rows.at(0).to_vector(), std::vector<float>(position.begin(), position.end()));
        EXPECT_EQ(lean_state.rows.at(0).to_vector(), state.rows.at(0).to_vector());
      }
      EXPECT_GT(exhausted_rows, 0);  // the steps run some rows to their end
    }
  }
}

TEST(MonotonicStepAttention, NeverStoppingRowsAreExhaustedWithZerosNotNaN) {
  autodiff::NoGradGuard no_grad;
  const Tensor values = random_tensor({B, S, E}, 11), q = random_tensor({B, D}, 12);
  for (StepScore score : {StepScore::monotonic, StepScore::mocha}) {
    SCOPED_TRACE(step_score_name(score));
    auto a = make(score, 0.0f, /*bias=*/-1e4f);
    a->module().eval();
    const StepMemory memory = a->prepare(values, lengths());
    StepState state = a->start(memory);
    // The first step reads every frame (zero context, its token still free); the next ends the output.
    for (int step = 0; step < 3; ++step) {
      const StepAttentionResult r = a->step(q, memory, state, true);
      const int32_t ended = step == 0 ? 0 : 1;
      EXPECT_EQ(r.exhausted.to_vector_i32(), (std::vector<int32_t>{ended, ended, ended}));
      for (float w : r.weights.to_vector()) EXPECT_EQ(w, 0.0f);
      for (float c : r.context.to_vector()) EXPECT_EQ(c, 0.0f);
      EXPECT_EQ(state.rows.at(0).to_vector(), (std::vector<float>{5.0f, 3.0f, 1.0f}));  // read to the end
    }
    // In training the expected alignment of such an attention is ~0 everywhere: a ~zero context, finite.
    a->module().train();
    StepState expected = a->start(memory);
    for (float c : a->step(q, memory, expected, true).context.to_vector()) EXPECT_TRUE(std::isfinite(c));
  }
}

}  // namespace
}  // namespace attn::nn
