// Hard attention and REINFORCE: argmax and sampling (frequencies, seeding, zero-weight and
// all-zero rows), gradient checks of the context (values) and log-probability (weights,
// through softmax and through luong_attention), the REINFORCE loss and its entropy bonus, the
// moving-average baseline, the estimator test (the mean of the REINFORCE gradient over many
// seeded samples equals the exact gradient of the expected loss on an enumerable case, with
// and without a baseline), an end-to-end toy that learns to pick the marked position, and
// the errors.
#include "attn/ops/hard_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/ops/attention.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/softmax.h"
#include "test_support.h"

namespace attn {
namespace {
using namespace attn::testing;  // the helpers of tests/support

// N rows of the same distribution (S).
Tensor repeat_rows(const std::vector<float>& row, int64_t n) {
  std::vector<float> all;
  for (int64_t i = 0; i < n; ++i) all.insert(all.end(), row.begin(), row.end());
  return Tensor::from_vector(all, {n, static_cast<int64_t>(row.size())});
}

// ---- sampling ---------------------------------------------------------------------------------------

TEST(HardAttention, ArgmaxAtEvaluationDoesNotTouchTheRng) {
  Tensor weights = Tensor::from_vector(std::vector<float>{0.1f, 0.6f, 0.3f, 0.5f, 0.2f, 0.3f}, {2, 3});
  Tensor values = random_tensor({2, 3, 2}, 1);
  Rng rng(42), fresh(42);
  HardAttentionSample h = hard_attention_sample(weights, values, /*training=*/false, rng);
  EXPECT_EQ(h.positions.to_vector_i32(), (std::vector<int32_t>{1, 0}));
  const std::vector<float> v = values.to_vector();
  EXPECT_EQ(h.context.to_vector(), (std::vector<float>{v[1 * 2], v[1 * 2 + 1], v[3 * 2], v[3 * 2 + 1]}));
  EXPECT_TRUE(tensors_close(h.log_prob, Tensor::from_vector(std::vector<float>{std::log(0.6f), std::log(0.5f)}, {2})));
  EXPECT_EQ(rng.next(), fresh.next());
}

TEST(HardAttention, SampleFrequenciesFollowTheWeights) {
  const int64_t N = 30000;
  const std::vector<float> p = {0.2f, 0.0f, 0.5f, 0.3f, 0.0f};
  Tensor weights = repeat_rows(p, N);
  Rng rng(7);
  HardAttentionSample h = hard_attention_sample(weights, Tensor::zeros({N, 5, 1}), true, rng);
  std::vector<int64_t> counts(5, 0);
  for (int32_t k : h.positions.to_vector_i32()) {
    ASSERT_GE(k, 0);
    ASSERT_LT(k, 5);
    ++counts[k];
  }
  for (int s = 0; s < 5; ++s) {
    const double f = static_cast<double>(counts[s]) / N;
    const double se = std::sqrt(p[s] * (1 - p[s]) / N);
    if (p[s] == 0.0f) {
      EXPECT_EQ(counts[s], 0) << "a zero-weight position was sampled";
    } else {
      EXPECT_NEAR(f, p[s], 5 * se) << "position " << s;
    }
  }
  // The log-probabilities are those of the sampled positions.
  const std::vector<int32_t> k = h.positions.to_vector_i32();
  const std::vector<float> lp = h.log_prob.to_vector();
  for (int64_t i = 0; i < 100; ++i) EXPECT_FLOAT_EQ(lp[i], std::log(p[k[i]]));
}

TEST(HardAttention, SameSeedSameSamples) {
  Tensor weights = softmax(random_tensor({4, 3, 6}, 3, -2.0f, 2.0f));
  Tensor values = random_tensor({4, 6, 2}, 4);
  Rng a(11), b(11), c(12);
  const auto pa = hard_attention_sample(weights, values, true, a).positions.to_vector_i32();
  EXPECT_EQ(pa, hard_attention_sample(weights, values, true, b).positions.to_vector_i32());
  EXPECT_NE(pa, hard_attention_sample(weights, values, true, c).positions.to_vector_i32());
}

TEST(HardAttention, BlockQueriesAndFullyMaskedRows) {
  // (B=2, T=2, S=3); row (1, 0) is all zeros (a fully masked row).
  Tensor weights =
      Tensor::from_vector(std::vector<float>{0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0}, {2, 2, 3}).set_requires_grad(true);
  Tensor values = leaf({2, 3, 2}, 5);
  for (bool training : {false, true}) {
    SCOPED_TRACE(training ? "training" : "evaluation");
    Rng rng(1);
    HardAttentionSample h = hard_attention_sample(weights, values, training, rng);
    EXPECT_EQ(h.positions.shape(), (Shape{2, 2}));
    EXPECT_EQ(h.context.shape(), (Shape{2, 2, 2}));
    EXPECT_EQ(h.positions.to_vector_i32(), (std::vector<int32_t>{1, 2, -1, 0}));
    const std::vector<float> c = h.context.to_vector(), lp = h.log_prob.to_vector();
    EXPECT_EQ(c[4], 0.0f);
    EXPECT_EQ(c[5], 0.0f);
    EXPECT_EQ(lp, (std::vector<float>{0, 0, 0, 0}));  // log 1 = 0, and 0 for the masked row
    weights.drop_grad();
    values.drop_grad();
    backward(add(h.context, h.context), random_tensor({2, 2, 2}, 6));
    const std::vector<float> dv = values.grad().to_vector();
    for (float x : dv) ASSERT_FALSE(std::isnan(x));
    // Row (1, 0) chose nothing: values[1] only gets the gradient of row (1, 1) (position 0).
    for (int64_t j = 2; j < 6; ++j) EXPECT_EQ(dv[6 + j], 0.0f);
  }
}

// ---- gradients ------------------------------------------------------------------------------------

TEST(HardAttention, GradcheckContextAndLogProb) {
  for (bool training : {false, true})
    for (bool block : {false, true}) {
      SCOPED_TRACE(std::string(training ? "training" : "evaluation") + (block ? " block" : " one step"));
      Tensor logits = leaf(block ? Shape{3, 2, 4} : Shape{3, 4}, 20, -2.0f, 2.0f);
      Tensor values = leaf({3, 4, 2}, 21);
      auto run = [&](const std::vector<Tensor>& x) {
        Rng rng(99);  // the same draw every call
        return hard_attention_sample(softmax(x[0]), x[1], training, rng);
      };
      EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& x) { return run(x).log_prob; }, {logits, values}))
          << "log_prob";
      EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& x) { return run(x).context; }, {logits, values}))
          << "context";
      // d log π_k / d logits = onehot(k) − π, exactly.
      logits.drop_grad();
      HardAttentionSample h = run({logits, values});
      backward(h.log_prob, Tensor::full(h.log_prob.shape(), 1.0f));
      const std::vector<float> g = logits.grad().to_vector(), pi = softmax(logits.detach()).to_vector();
      const std::vector<int32_t> k = h.positions.to_vector_i32();
      for (size_t r = 0; r < k.size(); ++r)
        for (int s = 0; s < 4; ++s)
          EXPECT_NEAR(g[r * 4 + s], (s == k[r] ? 1.0f : 0.0f) - pi[r * 4 + s], 1e-5) << "row " << r << " s " << s;
    }
}

TEST(HardAttention, GradcheckThroughLuongAttentionWeights) {
  // The usual use: weights from luong_attention with lengths (a zero row included).
  Tensor query = leaf({3, 2, 3}, 30), keys = leaf({3, 4, 3}, 31), values = leaf({3, 4, 3}, 32);
  Tensor len = Tensor::from_vector(std::vector<int32_t>{4, 2, 0}, {3});
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& x) {
        Rng rng(5);
        AttentionResult a = luong_attention(x[0], x[1], x[2], len);
        HardAttentionSample h = hard_attention_sample(a.weights, x[2], true, rng);
        return add(h.context, scale(a.context, 0.5f));
      },
      {query, keys, values}));
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& x) {
        Rng rng(5);
        AttentionResult a = luong_attention(x[0], x[1], values, len);
        return hard_attention_sample(a.weights, values, true, rng).log_prob;
      },
      {query, keys}));
}

// ---- REINFORCE loss and baseline ----------------------------------------------------------------------

TEST(Reinforce, LossValueAndGradients) {
  // loss = −mean((r − b) lp) − λ mean(H(w))
  Tensor lp = Tensor::from_vector(std::vector<float>{-0.5f, -1.5f}, {2}).set_requires_grad(true);
  Tensor r = Tensor::from_vector(std::vector<float>{1.0f, 0.0f}, {2});
  Tensor w =
      Tensor::from_vector(std::vector<float>{0.5f, 0.5f, 0.0f, 0.25f, 0.25f, 0.5f}, {2, 3}).set_requires_grad(true);
  ReinforceBaseline baseline(0.9f, 0.25f);
  Tensor loss = reinforce_loss(lp, r, baseline, 0.1f, w);
  const double h0 = std::log(2.0), h1 = -(0.5 * std::log(0.25) + 0.5 * std::log(0.5));
  const double expected = -((1.0 - 0.25) * -0.5 + (0.0 - 0.25) * -1.5) / 2 - 0.1 * (h0 + h1) / 2;
  EXPECT_NEAR(loss.item(), expected, 1e-6);
  backward(loss);
  EXPECT_TRUE(tensors_close(lp.grad(), Tensor::from_vector(std::vector<float>{-0.375f, 0.125f}, {2}), 1e-6f));
  // dw = λ/M (log w + 1) where w > 0, 0 at the masked position.
  const std::vector<float> dw = w.grad().to_vector();
  EXPECT_NEAR(dw[0], 0.05 * (std::log(0.5) + 1), 1e-6);
  EXPECT_EQ(dw[2], 0.0f);
  EXPECT_NEAR(dw[3], 0.05 * (std::log(0.25) + 1), 1e-6);
  // λ = 0: no entropy term, weights optional.
  EXPECT_NEAR(reinforce_loss(lp, r, baseline).item(), -((0.75 * -0.5) + (-0.25 * -1.5)) / 2, 1e-6);
}

TEST(Reinforce, GradcheckWithEntropyBonus) {
  for (bool block : {false, true}) {
    SCOPED_TRACE(block ? "block" : "one step");
    const Shape rows = block ? Shape{2, 3} : Shape{4};
    Tensor lp = leaf(rows, 40, -2.0f, -0.1f);
    Tensor rewards = random_tensor(rows, 41);
    Tensor logits = leaf(block ? Shape{2, 3, 4} : Shape{4, 4}, 42, -1.0f, 1.0f);
    ReinforceBaseline baseline(0.9f, 0.3f);
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& x) { return reinforce_loss(x[0], rewards, baseline, 0.7f, softmax(x[1])); },
        {lp, logits}));
  }
}

TEST(Reinforce, BaselineIsAMovingAverage) {
  ReinforceBaseline b;
  EXPECT_EQ(b.value, 0.0f);
  b.update(2.0f);  // the first update sets it
  EXPECT_FLOAT_EQ(b.value, 2.0f);
  b.update(4.0f);
  EXPECT_FLOAT_EQ(b.value, 0.9f * 2.0f + 0.1f * 4.0f);
  b.update(Tensor::from_vector(std::vector<float>{1.0f, 3.0f}, {2}));  // the mean, 2
  EXPECT_FLOAT_EQ(b.value, 0.9f * 2.2f + 0.1f * 2.0f);
  EXPECT_EQ(b.updates, 3);
  ReinforceBaseline bad(1.0f);
  EXPECT_THROW_MSG(bad.update(1.0f), ValueError, "ReinforceBaseline: decay must be in [0, 1), got 1");
  EXPECT_THROW_MSG(b.update(NAN), ValueError, "ReinforceBaseline: reward must be finite, got nan");
  EXPECT_THROW_MSG(b.update(Tensor()), ShapeError, "ReinforceBaseline: 'rewards' expected a non-empty float32 tensor");
}

// The estimator test. S = 3 positions, fixed logits θ, π = softmax(θ), a fixed loss L(s)
// per position (reward r = −L). The exact gradient of the expected loss
//   J(θ) = Σ_s π(s) L(s)   is   ∂J/∂θ_j = π_j (L_j − J).
// Each of N seeded samples k_i contributes the REINFORCE estimate
//   g_i = (L(k_i) + b) ∇_θ log π(k_i) = (L(k_i) + b)(onehot(k_i) − π),
// and reinforce_loss averages them. Its gradient must match ∂J/∂θ within
//   tol_j = 4.5 · sqrt(Var_j(g) / N),
// with Var_j(g) computed exactly by enumerating the three positions (4.5 standard errors:
// a correct estimator fails with probability ~1e-5; the draw is seeded anyway). A baseline
// b that does not depend on the sample must not move the mean.
struct EstimatorRun {
  std::vector<double> mean;      // Σ_i g_i / N, from the tape
  std::vector<double> variance;  // the empirical per-sample variance of g
};

EstimatorRun reinforce_estimate(const std::vector<float>& theta, const std::vector<double>& L, float baseline_value,
                                int64_t N, uint64_t seed) {
  Tensor logits = repeat_rows(theta, N).set_requires_grad(true);
  Tensor weights = softmax(logits);
  Rng rng(seed);
  HardAttentionSample h = hard_attention_sample(weights, Tensor::zeros({N, 3, 1}), true, rng);
  const std::vector<int32_t> k = h.positions.to_vector_i32();
  std::vector<float> r(N);
  for (int64_t i = 0; i < N; ++i) r[i] = static_cast<float>(-L[k[i]]);
  ReinforceBaseline baseline(0.9f, baseline_value);
  backward(reinforce_loss(h.log_prob, Tensor::from_vector(r, {N}), baseline));
  // Row i of the logits' gradient is g_i / N.
  const std::vector<float> g = logits.grad().to_vector();
  EstimatorRun out{std::vector<double>(3, 0.0), std::vector<double>(3, 0.0)};
  for (int64_t i = 0; i < N; ++i)
    for (int j = 0; j < 3; ++j) out.mean[j] += g[i * 3 + j];
  for (int64_t i = 0; i < N; ++i)
    for (int j = 0; j < 3; ++j) {
      const double d = g[i * 3 + j] * N - out.mean[j];
      out.variance[j] += d * d / (N - 1);
    }
  return out;
}

TEST(Reinforce, EstimatorMatchesTheExactGradientOfTheExpectedLoss) {
  const std::vector<float> theta = {0.5f, -0.3f, 1.2f};
  const std::vector<double> L = {1.0, -0.5, 2.0};
  const int64_t N = 20000;
  std::vector<double> pi(3);
  double z = 0;
  for (int s = 0; s < 3; ++s) z += std::exp(static_cast<double>(theta[s]));
  for (int s = 0; s < 3; ++s) pi[s] = std::exp(static_cast<double>(theta[s])) / z;
  double J = 0;
  for (int s = 0; s < 3; ++s) J += pi[s] * L[s];
  std::vector<double> exact(3);
  for (int j = 0; j < 3; ++j) exact[j] = pi[j] * (L[j] - J);

  // A moving-average baseline fitted on an independent stream of rewards (≈ E[r] = −J), the
  // zero baseline, and a badly fitted one (b = 3): all unbiased.
  ReinforceBaseline fitted;
  {
    Rng rng(2024);
    for (int i = 0; i < 500; ++i) {
      const float u = rng.uniform();
      const int s = u < pi[0] ? 0 : u < pi[0] + pi[1] ? 1 : 2;
      fitted.update(static_cast<float>(-L[s]));
    }
  }
  ASSERT_NEAR(fitted.value, -J, 0.3);
  std::vector<double> variance_by_baseline;
  for (float b : {0.0f, fitted.value, 3.0f}) {
    SCOPED_TRACE("baseline " + std::to_string(b));
    // Exact per-sample variance of g_j = (L(k) − b_r)(onehot_j(k) − π_j), b_r the reward baseline
    // (reward r = −L, so r − b_r = −(L + b_r) and the loss gradient is (L + b_r) ∇ log π).
    std::vector<double> tol(3);
    for (int j = 0; j < 3; ++j) {
      double m2 = 0;
      for (int k = 0; k < 3; ++k) {
        const double gk = (L[k] + b) * ((k == j ? 1.0 : 0.0) - pi[j]);
        m2 += pi[k] * gk * gk;
      }
      tol[j] = 4.5 * std::sqrt((m2 - exact[j] * exact[j]) / N);
    }
    const EstimatorRun run = reinforce_estimate(theta, L, b, N, 77);
    for (int j = 0; j < 3; ++j)
      EXPECT_NEAR(run.mean[j], exact[j], tol[j]) << "θ_" << j << " (tolerance " << tol[j] << ")";
    std::printf("baseline %+.3f: estimate [%+.4f %+.4f %+.4f], exact [%+.4f %+.4f %+.4f], tol [%.4f %.4f %.4f]\n", b,
                run.mean[0], run.mean[1], run.mean[2], exact[0], exact[1], exact[2], tol[0], tol[1], tol[2]);
    // The test can fail: with a sensible baseline the exact gradient is far from 0 (and from
    // its negation) at this tolerance. (The bad baseline b = 3 inflates the variance, so its
    // tolerance is wider: it checks the mean, not the power of the test.)
    if (b != 3.0f) {
      for (int j = 0; j < 3; ++j) EXPECT_GT(std::fabs(exact[j]), 2 * tol[j]) << "θ_" << j;
    }
    variance_by_baseline.push_back(run.variance[0] + run.variance[1] + run.variance[2]);
  }
  // The fitted baseline reduces the variance (what it is for); a bad one increases it.
  EXPECT_LT(variance_by_baseline[1], variance_by_baseline[0]);
  EXPECT_GT(variance_by_baseline[2], variance_by_baseline[0]);
}

// ---- end to end ---------------------------------------------------------------------------------------

// S = 6 source positions, each a value of E = 3 features: feature 0 marks one position
// (1 there, 0 elsewhere), features 1 and 2 are noise. A Luong general score q W k with a
// constant query q = 1 and a learned W (1, 3), starting at 0 (uniform attention), samples one
// position; the reward is the marker feature of the sampled value (1 when it picked the
// marked position). REINFORCE with the moving-average baseline and a small entropy bonus must
// learn to pick the marked position at evaluation (argmax).
struct ToyBatch {
  Tensor keys;  // (B, S, 3), also the values
  std::vector<int32_t> marked;
};

ToyBatch toy_batch(int64_t B, int64_t S, Rng& rng) {
  ToyBatch t{Tensor::empty({B, S, 3}), std::vector<int32_t>(B)};
  float* k = t.keys.f32();
  for (int64_t b = 0; b < B; ++b) {
    t.marked[b] = static_cast<int32_t>(rng.below(S));
    for (int64_t s = 0; s < S; ++s) {
      k[(b * S + s) * 3 + 0] = s == t.marked[b] ? 1.0f : 0.0f;
      k[(b * S + s) * 3 + 1] = 2.0f * rng.uniform() - 1.0f;
      k[(b * S + s) * 3 + 2] = 2.0f * rng.uniform() - 1.0f;
    }
  }
  return t;
}

double toy_accuracy(const Tensor& w, int64_t S, Rng& data) {
  autodiff::NoGradGuard no_grad;
  const int64_t B = 500;
  ToyBatch batch = toy_batch(B, S, data);
  LuongOptions o;
  o.score = LuongScore::general;
  o.w = w;
  const Tensor lengths = Tensor::from_vector(std::vector<int32_t>(B, static_cast<int32_t>(S)), {B});
  AttentionResult a = luong_attention(Tensor::full({B, 1}, 1.0f), batch.keys, batch.keys, lengths, o);
  Rng unused(0);
  HardAttentionSample h = hard_attention_sample(a.weights, batch.keys, false, unused);
  const std::vector<int32_t> k = h.positions.to_vector_i32();
  int64_t correct = 0;
  for (int64_t b = 0; b < B; ++b) correct += k[b] == batch.marked[b];
  return static_cast<double>(correct) / B;
}

TEST(Reinforce, ToyModelLearnsToPickTheMarkedPosition) {
  const int64_t B = 32, S = 6;
  Tensor w = Tensor::zeros({1, 3}).set_requires_grad(true);
  Rng data(1), sampler(2), eval_data(3);
  const double before = toy_accuracy(w, S, eval_data);
  EXPECT_LT(before, 0.4);  // uniform attention: argmax takes position 0, right 1/6 of the time
  ReinforceBaseline baseline(0.9f);
  const Tensor lengths = Tensor::from_vector(std::vector<int32_t>(B, static_cast<int32_t>(S)), {B});
  const Tensor query = Tensor::full({B, 1}, 1.0f);
  for (int step = 0; step < 150; ++step) {
    ToyBatch batch = toy_batch(B, S, data);
    LuongOptions o;
    o.score = LuongScore::general;
    o.w = w;
    AttentionResult a = luong_attention(query, batch.keys, batch.keys, lengths, o);
    HardAttentionSample h = hard_attention_sample(a.weights, batch.keys, true, sampler);
    // reward = the marker feature of the sampled value (the context), a constant
    std::vector<float> r(B);
    const std::vector<float> c = h.context.to_vector();
    for (int64_t b = 0; b < B; ++b) r[b] = c[b * 3 + 0];
    const Tensor rewards = Tensor::from_vector(r, {B});
    Tensor loss = reinforce_loss(h.log_prob, rewards, baseline, 0.01f, a.weights);
    w.drop_grad();
    backward(loss);
    baseline.update(rewards);  // after the loss: b never sees the rewards it is subtracted from
    float* wp = w.f32();
    const std::vector<float> g = w.grad().to_vector();
    for (int j = 0; j < 3; ++j) wp[j] -= 2.0f * g[j];  // SGD
  }
  const double after = toy_accuracy(w, S, eval_data);
  std::printf("toy: argmax accuracy %.3f before, %.3f after 150 REINFORCE steps\n", before, after);
  EXPECT_GT(after, 0.97) << "W = [" << w.to_vector()[0] << ", " << w.to_vector()[1] << ", " << w.to_vector()[2] << "]";
  EXPECT_GT(baseline.value, 0.8f);  // the average reward while training approached 1
}

// ---- errors ----------------------------------------------------------------------------------------

TEST(HardAttention, Errors) {
  Rng rng(0);
  Tensor values = Tensor::zeros({2, 3, 4});
  Tensor ok = repeat_rows({0.2f, 0.3f, 0.5f}, 2);
  EXPECT_THROW_MSG(hard_attention_sample(Tensor::zeros({2}), values, true, rng), ShapeError,
                   "hard_attention_sample: 'weights' expected (B, S) or (B, T, S), got (2)");
  EXPECT_THROW_MSG(hard_attention_sample(ok, Tensor::zeros({2, 4, 4}), true, rng), ShapeError,
                   "hard_attention_sample: 'values' expected (B=2, S=3, E), got (2, 4, 4)");
  EXPECT_THROW_MSG(hard_attention_sample(repeat_rows({0.2f, 0.3f, 0.4f}, 2), values, true, rng), ValueError,
                   "hard_attention_sample: 'weights' row 0 sums to 0.9, expected 1 (a distribution) or 0 (a fully "
                   "masked row); renormalise it first");
  EXPECT_THROW_MSG(hard_attention_sample(repeat_rows({1.2f, -0.2f, 0.0f}, 2), values, true, rng), ValueError,
                   "hard_attention_sample: 'weights' value -0.2 at row 0, position 1 is negative or not finite");
  EXPECT_THROW_MSG(hard_attention_sample(repeat_rows({0.5f, NAN, 0.5f}, 2), values, false, rng), ValueError,
                   "hard_attention_sample: 'weights' value nan at row 0, position 1 is negative or not finite");
}

TEST(Reinforce, Errors) {
  ReinforceBaseline b;
  Tensor lp = Tensor::zeros({2, 3}), r = Tensor::zeros({2, 3});
  EXPECT_THROW_MSG(reinforce_loss(Tensor::zeros({2, 3, 1}), r, b), ShapeError,
                   "reinforce_loss: 'log_probs' expected (B) or (B, T), got (2, 3, 1)");
  EXPECT_THROW_MSG(reinforce_loss(lp, Tensor::zeros({2, 2}), b), ShapeError,
                   "reinforce_loss: 'rewards' expected (B=2, T=3), got (2, 2)");
  EXPECT_THROW_MSG(reinforce_loss(lp, r, b, 0.1f), ValueError,
                   "reinforce_loss: entropy_bonus 0.1 needs 'weights_for_entropy'");
  EXPECT_THROW_MSG(reinforce_loss(lp, r, b, 0.1f, Tensor::zeros({2, 5})), ShapeError,
                   "reinforce_loss: 'weights_for_entropy' expected (B=2, T=3, S), got (2, 5)");
  EXPECT_THROW_MSG(reinforce_loss(lp, Tensor::full({2, 3}, INFINITY), b), ValueError,
                   "reinforce_loss: 'rewards' value inf at flat index 0 is not finite");
  EXPECT_THROW_MSG(reinforce_loss(lp, r, b, NAN), ValueError, "reinforce_loss: entropy_bonus must be finite, got nan");
}

}  // namespace
}  // namespace attn
