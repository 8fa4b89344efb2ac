// Bahdanau (additive) attention: forward against an independent double-precision reference,
// gradient checks for every input (one step and block queries, ragged / zero / unit lengths,
// S = 1, B = 1, temperature, normalized), reuse of the keys projection, determinism across
// thread counts, and the error messages.
// The forward and gradient cases and the bad inputs are rows of case tables (support/op_table.h).
#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/ops/attention.h"
#include "attn/ops/elementwise.h"
#include "attn/parallel.h"
#include "op_table.h"
#include "test_support.h"
#include "tolerances.h"

namespace attn {
namespace {
using namespace attn::testing;  // the helpers of tests/support

// ---- independent double-precision reference -------------------------------------------------

// Straight from the definition: e_{t,s} = v_effᵀ tanh(W_q q_t + b + k̃_s), a = masked softmax(e / τ),
// c = Σ a values. `T` = 0 means a one-step query (B, D).
AttentionResult additive_reference(const Tensor& query, const Tensor& keys_proj, const Tensor& values,
                                   const Tensor& w_q, const Tensor& bias, const Tensor& v,
                                   const std::vector<int32_t>& lengths, double temperature = 1.0,
                                   bool normalize = false, double g = 1.0) {
  const bool block = query.rank() == 3;
  const int64_t B = query.dim(0), T = block ? query.dim(1) : 1, D = query.dim(-1);
  const int64_t S = keys_proj.dim(1), A = keys_proj.dim(2), E = values.dim(2);
  std::vector<float> q = query.to_vector(), k = keys_proj.to_vector(), val = values.to_vector(), wq = w_q.to_vector(),
                     bs = bias.to_vector(), vv = v.to_vector();
  std::vector<double> veff(vv.begin(), vv.end());
  if (normalize) {
    double n = 0;
    for (double x : veff) n += x * x;
    n = std::sqrt(n);
    for (double& x : veff) x = g * x / n;
  }
  std::vector<float> ctx(B * T * E, 0.0f), w(B * T * S, 0.0f);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const int64_t r = b * T + t, L = lengths[b];
      std::vector<double> u(A), e(S);
      for (int64_t a = 0; a < A; ++a) {
        u[a] = bs[a];
        for (int64_t d = 0; d < D; ++d) u[a] += static_cast<double>(wq[a * D + d]) * q[r * D + d];
      }
      double m = -1e300;
      for (int64_t s = 0; s < L; ++s) {
        e[s] = 0;
        for (int64_t a = 0; a < A; ++a) e[s] += veff[a] * std::tanh(u[a] + k[(b * S + s) * A + a]);
        e[s] /= temperature;
        m = std::max(m, e[s]);
      }
      double sum = 0;
      for (int64_t s = 0; s < L; ++s) sum += std::exp(e[s] - m);
      for (int64_t s = 0; s < L; ++s) {
        const double a = std::exp(e[s] - m) / sum;
        w[r * S + s] = static_cast<float>(a);
        for (int64_t j = 0; j < E; ++j) ctx[r * E + j] += static_cast<float>(a * val[(b * S + s) * E + j]);
      }
    }
  // ctx accumulated in float above from double terms; recompute in double for accuracy.
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < E; ++j) {
        const int64_t r = b * T + t;
        double c = 0;
        for (int64_t s = 0; s < lengths[b]; ++s) c += static_cast<double>(w[r * S + s]) * val[(b * S + s) * E + j];
        ctx[r * E + j] = static_cast<float>(c);
      }
  const Shape cs = block ? Shape{B, T, E} : Shape{B, E};
  const Shape ws = block ? Shape{B, T, S} : Shape{B, S};
  return {Tensor::from_vector(ctx, cs), Tensor::from_vector(w, ws)};
}

struct Inputs {
  Tensor query, keys_proj, values, w_q, bias, v;
  std::vector<int32_t> lengths;
  Tensor len;
};

// T = 0: one-step query (B, D); otherwise a block (B, T, D).
Inputs make_inputs(int64_t B, int64_t T, int64_t S, int64_t D, int64_t A, int64_t E, std::vector<int32_t> lengths,
                   uint64_t seed) {
  Inputs in;
  in.query = leaf(T == 0 ? Shape{B, D} : Shape{B, T, D}, seed + 1);
  in.keys_proj = leaf({B, S, A}, seed + 2);
  in.values = leaf({B, S, E}, seed + 3);
  in.w_q = leaf({A, D}, seed + 4);
  in.bias = leaf({A}, seed + 5, -0.5f, 0.5f);
  in.v = leaf({A}, seed + 6, -1.5f, 1.5f);
  in.lengths = std::move(lengths);
  in.len = lengths_of(in.lengths);
  return in;
}

AttentionResult run(const Inputs& in, AdditiveOptions options = {}) {
  return additive_attention(in.query, in.keys_proj, in.values, in.w_q, in.bias, in.v, in.len, options);
}

// ---- forward ---------------------------------------------------------------------------------

TEST(AdditiveAttention, OneStepQueryMatchesReferenceAndBlockOfOne) {
  Inputs in = make_inputs(4, 0, 5, 3, 6, 4, {5, 2, 0, 1}, 20);
  AttentionResult r = run(in);
  AttentionResult ref = additive_reference(in.query, in.keys_proj, in.values, in.w_q, in.bias, in.v, in.lengths);
  EXPECT_EQ(r.context.shape(), (Shape{4, 4}));
  EXPECT_EQ(r.weights.shape(), (Shape{4, 5}));
  EXPECT_TRUE(tensors_close(r.weights, ref.weights, kFusedTol));
  EXPECT_TRUE(tensors_close(r.context, ref.context, kFusedTol));
  // The same query as a block of one step gives the same numbers.
  AttentionResult blk =
      additive_attention(in.query.detach().reshape({4, 1, 3}), in.keys_proj, in.values, in.w_q, in.bias, in.v, in.len);
  EXPECT_EQ(blk.context.to_vector(), r.context.to_vector());
  EXPECT_EQ(blk.weights.to_vector(), r.weights.to_vector());
}

TEST(AdditiveAttention, WeightsSumToOneAndVanishPastLength) {
  Inputs in = make_inputs(4, 3, 7, 4, 5, 2, {7, 4, 1, 0}, 30);
  AttentionResult r = run(in);
  expect_masked_rows(r.weights, in.lengths, true);
  const std::vector<float> w = r.weights.to_vector();
  const std::vector<float> c = r.context.to_vector();
  // Length 1: all weight on position 0, the context is values[b, 0].
  EXPECT_EQ(w[(2 * 3 + 1) * 7 + 0], 1.0f);
  const std::vector<float> val = in.values.to_vector();
  EXPECT_FLOAT_EQ(c[(2 * 3 + 1) * 2 + 1], val[(2 * 7 + 0) * 2 + 1]);
  // Length 0: zero context.
  for (int64_t i = 3 * 3 * 2; i < 4 * 3 * 2; ++i) EXPECT_EQ(c[i], 0.0f);
}

TEST(AdditiveAttention, LowerTemperatureSharpens) {
  // (The temperature rows of the case table check it against the reference.)
  Inputs in = make_inputs(2, 3, 5, 3, 4, 3, {5, 3}, 40);
  AdditiveOptions sharp;
  sharp.temperature = 0.1f;
  const std::vector<float> w1 = run(in).weights.to_vector(), w2 = run(in, sharp).weights.to_vector();
  EXPECT_GT(*std::max_element(w2.begin(), w2.begin() + 5), *std::max_element(w1.begin(), w1.begin() + 5));
}

TEST(AdditiveAttention, NormalizedMatchesReference) {
  Inputs in = make_inputs(2, 2, 4, 3, 5, 3, {4, 2}, 50);
  AdditiveOptions o;
  o.normalize = true;
  o.g = Tensor::scalar(1.7f);
  AttentionResult r = run(in, o);
  AttentionResult ref =
      additive_reference(in.query, in.keys_proj, in.values, in.w_q, in.bias, in.v, in.lengths, 1.0, true, 1.7);
  EXPECT_TRUE(tensors_close(r.weights, ref.weights, kFusedTol));
  EXPECT_TRUE(tensors_close(r.context, ref.context, kFusedTol));
  // Only the direction of v matters when normalized.
  Inputs scaled = in;
  std::vector<float> vv = in.v.to_vector();
  for (float& x : vv) x *= 5.0f;
  scaled.v = Tensor::from_vector(vv, {5});
  EXPECT_TRUE(tensors_close(run(scaled, o).weights, r.weights, 1e-6f, 1e-5f));
}

TEST(AdditiveAttention, LargeMagnitudesStayFinite) {
  // Saturated tanh (|pre-activation| ~ 50) and scores of several hundred: max-subtracted softmax.
  Inputs in = make_inputs(2, 3, 6, 4, 5, 3, {6, 4}, 60);
  in.query = random_tensor({2, 3, 4}, 61, -50.0f, 50.0f).set_requires_grad(true);
  in.v = random_tensor({5}, 62, -100.0f, 100.0f).set_requires_grad(true);
  AttentionResult r = run(in);
  AttentionResult ref = additive_reference(in.query, in.keys_proj, in.values, in.w_q, in.bias, in.v, in.lengths);
  EXPECT_TRUE(tensors_close(r.weights, ref.weights, kLargeScoreTol));
  EXPECT_TRUE(tensors_close(r.context, ref.context, kLargeScoreTol));
  expect_finite_gradients(r.context, {in.query, in.keys_proj, in.values, in.w_q, in.bias, in.v});
}

TEST(AdditiveAttention, NeedWeightsFalseGivesSameContext) {
  Inputs in = make_inputs(2, 2, 4, 3, 5, 3, {4, 3}, 70);
  AdditiveOptions o;
  o.need_weights = false;
  AttentionResult r = run(in, o);
  EXPECT_FALSE(r.weights.defined());
  EXPECT_EQ(r.context.to_vector(), run(in).context.to_vector());
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& x) {
        return additive_attention(x[0], x[1], x[2], x[3], x[4], x[5], in.len, o).context;
      },
      {in.query, in.keys_proj, in.values, in.w_q, in.bias, in.v}));
}

TEST(AdditiveAttention, NoGradRecordsNothing) {
  Inputs in = make_inputs(2, 2, 4, 3, 5, 3, {4, 3}, 80);
  autodiff::tape().clear();
  {
    autodiff::NoGradGuard guard;
    AttentionResult r = run(in);
    EXPECT_FALSE(r.context.requires_grad());
  }
  EXPECT_EQ(autodiff::tape().size(), 0u);
  AttentionResult r = run(in);
  EXPECT_EQ(autodiff::tape().size(), 1u);  // one fused node
  autodiff::tape().clear();
}

// ---- the case table: forward against the reference, gradient checks ---------------------------------

// One row's setup. Its inputs: query, keys_proj, values, w_q, bias, v, then g when normalized.
struct AdditiveCase {
  int64_t B, T, S, D, A, E;  // T = 0: one-step query
  std::vector<int32_t> lengths;
  uint64_t seed;
  float temperature = 1.0f;
  bool normalize = false;
  float g = 1.0f;  // with normalize: the learned scale, an input
};

Tensors additive_inputs(const AdditiveCase& c) {
  Inputs in = make_inputs(c.B, c.T, c.S, c.D, c.A, c.E, c.lengths, c.seed);
  Tensors x = {in.query, in.keys_proj, in.values, in.w_q, in.bias, in.v};
  if (c.normalize) x.push_back(Tensor::scalar(c.g).set_requires_grad(true));
  return x;
}

OpRow additive_row(const std::string& name, const AdditiveCase& c, bool reference, bool gradcheck) {
  auto op = [c](const Tensors& x) {
    AdditiveOptions o;
    o.temperature = c.temperature;
    o.normalize = c.normalize;
    if (c.normalize) o.g = x[6];
    return additive_attention(x[0], x[1], x[2], x[3], x[4], x[5], lengths_of(c.lengths), o);
  };
  auto ref = [c](const Tensors& x) {
    return additive_reference(x[0], x[1], x[2], x[3], x[4], x[5], c.lengths, c.temperature, c.normalize, c.g);
  };
  return attention_row(
      row_name_of(name), [c] { return additive_inputs(c); }, op, ref, reference, gradcheck);
}

std::vector<OpRow> additive_rows() {
  std::vector<OpRow> rows;
  rows.push_back(additive_row("block", {3, 4, 6, 5, 7, 3, {6, 3, 1}, 10}, true, false));
  for (const auto& [tau, name] : {std::pair{0.25f, "temperature 0.25"}, {3.0f, "temperature 3"}})
    rows.push_back(additive_row(name, {2, 3, 5, 3, 4, 3, {5, 3}, 40, tau}, true, false));
  // Every input's gradient, both outputs.
  const AttentionCase cases[] = {
      {"block ragged with a zero row", 3, 2, 4, {4, 2, 0}, 1.0f},
      {"one step ragged", 3, 0, 4, {1, 4, 3}, 1.0f},
      {"length 1 everywhere", 2, 2, 3, {1, 1}, 1.0f},
      {"S = 1", 2, 2, 1, {1, 0}, 1.0f},
      {"B = 1 one step", 1, 0, 5, {5}, 1.0f},
      {"B = 1 block", 1, 3, 3, {2}, 1.0f},
      {"block T 10 (BLAS path)", 2, 10, 4, {4, 3}, 1.0f},
      {"temperature 0.5", 2, 2, 4, {4, 3}, 0.5f},
      {"temperature 2.5 one step", 2, 0, 4, {2, 4}, 2.5f},
  };
  uint64_t seed = 100;
  for (const AttentionCase& g : cases)
    rows.push_back(additive_row("gradcheck " + std::string(g.name),
                                {g.B, g.T, g.S, 3, 4, 2, g.lengths, seed += 10, g.temperature}, true, true));
  {
    // E = S so context and weights can be added: gradients from both outputs meet in one node.
    OpRow row = additive_row("gradcheck both outputs together", {2, 3, 4, 3, 5, 4, {4, 2}, 200}, false, true);
    row.op = [op = row.op](const Tensors& x) {
      const Tensors r = op(x);
      return Tensors{add(r[0], r[1])};
    };
    row.outputs = {"context + weights"};
    rows.push_back(row);
  }
  for (int64_t T : {0, 3}) {
    const AdditiveCase c{3, T, 4, 3, 4, 2, {4, 1, 0}, static_cast<uint64_t>(300 + T), 0.8f, true, 1.3f};
    rows.push_back(
        additive_row(T == 0 ? "gradcheck normalized one step" : "gradcheck normalized block", c, true, true));
  }
  {
    // Moderately large scores (v in [-4, 4)): a looser finite-difference check.
    OpRow row = additive_row("gradcheck moderately large scores", {2, 2, 4, 3, 4, 2, {4, 3}, 400}, false, true);
    row.inputs = [inputs = row.inputs] {
      Tensors x = inputs();
      x[5] = random_tensor({4}, 401, -4.0f, 4.0f).set_requires_grad(true);
      return x;
    };
    row.op = [op = row.op](const Tensors& x) { return Tensors{op(x)[0]}; };
    row.outputs = {"context"};
    row.gradcheck_options = {1e-2, 5e-3, 3e-2};
    rows.push_back(row);
  }
  return rows;
}

INSTANTIATE_TEST_SUITE_P(AdditiveAttention, OpTable, ::testing::ValuesIn(additive_rows()), row_name);

TEST(AdditiveAttention, ZeroLengthRowHasZeroGradient) {
  Inputs in = make_inputs(3, 2, 4, 3, 5, 4, {3, 0, 4}, 500);
  AttentionResult r = run(in);
  Tensor y = add(r.context, r.weights);  // (3, 2, 4): E = S
  backward(y, random_tensor(y.shape(), 501));
  auto row_zero = [](const Tensor& grad, int64_t b) {
    const int64_t n = grad.numel() / grad.dim(0);
    const std::vector<float> gv = grad.to_vector();
    for (int64_t i = b * n; i < (b + 1) * n; ++i)
      if (gv[i] != 0.0f) return false;
    return true;
  };
  EXPECT_TRUE(row_zero(in.query.grad(), 1));
  EXPECT_TRUE(row_zero(in.keys_proj.grad(), 1));
  EXPECT_TRUE(row_zero(in.values.grad(), 1));
  EXPECT_FALSE(row_zero(in.query.grad(), 0));
  // Past each length, keys and values get nothing.
  const std::vector<float> dk = in.keys_proj.grad().to_vector();
  for (int64_t a = 0; a < 5; ++a) EXPECT_EQ(dk[(0 * 4 + 3) * 5 + a], 0.0f);
  for (const Tensor* t : {&in.query, &in.keys_proj, &in.values, &in.w_q, &in.bias, &in.v})
    for (float x : t->grad().to_vector()) ASSERT_FALSE(std::isnan(x));
}

// ---- keys projection ---------------------------------------------------------------------------

TEST(AdditiveAttention, ProjectKeysMatchesReferenceAndGradchecks) {
  Tensor keys = leaf({2, 3, 4}, 600), w_k = leaf({5, 4}, 601);
  Tensor p = additive_project_keys(keys, w_k);
  ASSERT_EQ(p.shape(), (Shape{2, 3, 5}));
  const std::vector<float> k = keys.to_vector(), w = w_k.to_vector(), pv = p.to_vector();
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t a = 0; a < 5; ++a) {
      double e = 0;
      for (int64_t j = 0; j < 4; ++j) e += static_cast<double>(k[r * 4 + j]) * w[a * 4 + j];
      EXPECT_NEAR(pv[r * 5 + a], e, 1e-5) << "row " << r << " a " << a;
    }
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& x) { return additive_project_keys(x[0], x[1]); }, {keys, w_k}));
}

TEST(AdditiveAttention, ProjectedKeysReusedAcrossStepsEqualsRecomputing) {
  const int64_t B = 3, T = 4, S = 5, D = 3, E = 4, A = 6, Ek = 2;
  Tensor keys = leaf({B, S, Ek}, 700), w_k = leaf({A, Ek}, 701);
  Inputs in = make_inputs(B, T, S, D, A, E, {5, 2, 3}, 702);
  const Tensor kp = additive_project_keys(keys, w_k);
  const std::vector<float> q = in.query.to_vector();
  AttentionResult block = additive_attention(in.query, kp, in.values, in.w_q, in.bias, in.v, in.len);
  const std::vector<float> bc = block.context.to_vector(), bw = block.weights.to_vector();
  for (int64_t t = 0; t < T; ++t) {
    std::vector<float> step(B * D);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t d = 0; d < D; ++d) step[b * D + d] = q[(b * T + t) * D + d];
    Tensor qt = Tensor::from_vector(step, {B, D});
    AttentionResult reused = additive_attention(qt, kp, in.values, in.w_q, in.bias, in.v, in.len);
    AttentionResult fresh =
        additive_attention(qt, additive_project_keys(keys, w_k), in.values, in.w_q, in.bias, in.v, in.len);
    EXPECT_EQ(reused.context.to_vector(), fresh.context.to_vector()) << "step " << t;
    EXPECT_EQ(reused.weights.to_vector(), fresh.weights.to_vector()) << "step " << t;
    // ... and each step agrees with the block of all steps.
    const std::vector<float> sc = reused.context.to_vector(), sw = reused.weights.to_vector();
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t j = 0; j < E; ++j) EXPECT_NEAR(sc[b * E + j], bc[(b * T + t) * E + j], 1e-6);
      for (int64_t s = 0; s < S; ++s) EXPECT_NEAR(sw[b * S + s], bw[(b * T + t) * S + s], 1e-6);
    }
  }
  autodiff::tape().clear();
}

TEST(AdditiveAttention, GradcheckKeysProjectionSharedByDecoderSteps) {
  // One projection node feeding three decoder steps: its gradient sums over the steps.
  const int64_t B = 2, S = 3, D = 2, E = 2, A = 3, Ek = 2;
  Tensor keys = leaf({B, S, Ek}, 800), w_k = leaf({A, Ek}, 801);
  Inputs in = make_inputs(B, 0, S, D, A, E, {3, 2}, 802);
  std::vector<Tensor> steps = {leaf({B, D}, 803), leaf({B, D}, 804), leaf({B, D}, 805)};
  auto fn = [&](const std::vector<Tensor>& x) {
    Tensor kp = additive_project_keys(x[0], x[1]);
    Tensor sum;
    for (int i = 0; i < 3; ++i) {
      Tensor c = additive_attention(x[2 + i], kp, in.values, in.w_q, in.bias, in.v, in.len).context;
      sum = sum.defined() ? add(sum, c) : c;
    }
    return sum;
  };
  EXPECT_TRUE(gradcheck(fn, {keys, w_k, steps[0], steps[1], steps[2]}));

  // The same gradients as one block query of the three steps.
  for (Tensor* t : {&keys, &w_k}) t->drop_grad();
  Tensor seed = random_tensor({B, E}, 806);
  backward(fn({keys, w_k, steps[0], steps[1], steps[2]}), seed);
  const Tensor dk_steps = keys.grad().clone(), dw_steps = w_k.grad().clone();
  keys.drop_grad();
  w_k.drop_grad();
  std::vector<float> qb(B * 3 * D);
  for (int t = 0; t < 3; ++t) {
    const std::vector<float> st = steps[t].to_vector();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t d = 0; d < D; ++d) qb[(b * 3 + t) * D + d] = st[b * D + d];
  }
  Tensor ctx = additive_attention(Tensor::from_vector(qb, {B, 3, D}), additive_project_keys(keys, w_k), in.values,
                                  in.w_q, in.bias, in.v, in.len)
                   .context;  // (B, 3, E)
  std::vector<float> sv = seed.to_vector(), sb(B * 3 * E);
  for (int64_t b = 0; b < B; ++b)
    for (int t = 0; t < 3; ++t)
      for (int64_t j = 0; j < E; ++j) sb[(b * 3 + t) * E + j] = sv[b * E + j];
  backward(ctx, Tensor::from_vector(sb, {B, 3, E}));
  EXPECT_TRUE(tensors_close(keys.grad(), dk_steps, 1e-5f, 1e-4f));
  EXPECT_TRUE(tensors_close(w_k.grad(), dw_steps, 1e-5f, 1e-4f));
}

// ---- determinism ---------------------------------------------------------------------------------

TEST(AdditiveAttention, IdenticalResultsForAnyThreadCount) {
  // Large enough that the kernels really split across threads.
  const Inputs in = make_inputs(8, 4, 16, 8, 32, 8, {16, 9, 1, 0, 16, 12, 5, 16}, 900);
  expect_identical_across_threads(
      {in.query, in.keys_proj, in.values, in.w_q, in.bias, in.v},
      [&](const Tensors& x) {
        const AttentionResult r = additive_attention(x[0], x[1], x[2], x[3], x[4], x[5], in.len);
        return Tensors{r.context, r.weights};
      },
      901);
}

// ---- errors ------------------------------------------------------------------------------------------

std::vector<BadRow> additive_bad_inputs() {
  // A one-step call with one argument replaced by a bad one.
  const Inputs in = make_inputs(2, 0, 4, 3, 5, 6, {4, 2}, 1000);
  enum Argument { query, keys_proj, values, w_q, bias, v, lengths };
  auto call = [in](Argument argument, const Tensor& bad) {
    return [in, argument, bad] {
      std::vector<Tensor> x = {in.query, in.keys_proj, in.values, in.w_q, in.bias, in.v, in.len};
      x[argument] = bad;
      additive_attention(x[0], x[1], x[2], x[3], x[4], x[5], x[6]);
    };
  };
  // A block call with these lengths, options and v.
  const Inputs blk = make_inputs(2, 3, 4, 3, 5, 6, {4, 2}, 1100);
  auto with = [blk](std::vector<int32_t> lengths, const std::function<void(AdditiveOptions&)>& edit = nullptr,
                    const Tensor& other_v = Tensor()) {
    AdditiveOptions o;
    if (edit) edit(o);
    return [=] {
      additive_attention(blk.query, blk.keys_proj, blk.values, blk.w_q, blk.bias, other_v.defined() ? other_v : blk.v,
                         lengths_of(lengths), o);
    };
  };
  const Throws shape = Throws::shape_error, value = Throws::value_error;
  return {
      {"query_rank_1", call(query, Tensor::zeros({6})), shape,
       "additive_attention: 'query' expected (B, D) or (B, T, D), got (6)"},
      {"query_undefined", call(query, Tensor()), shape,
       "additive_attention: 'query' expected (B, D) or (B, T, D), got an undefined tensor"},
      {"keys_proj_batch", call(keys_proj, Tensor::zeros({3, 4, 5})), shape,
       "additive_attention: 'projected_keys' expected (B=2, S, A), got (3, 4, 5)"},
      {"values_length", call(values, Tensor::zeros({2, 5, 6})), shape,
       "additive_attention: 'values' expected (B=2, S=4, E), got (2, 5, 6)"},
      {"w_q_width", call(w_q, Tensor::zeros({5, 4})), shape,
       "additive_attention: 'w_q' expected (A=5, D=3), got (5, 4)"},
      {"bias_size", call(bias, Tensor::zeros({4})), shape, "additive_attention: 'bias' expected (A=5), got (4)"},
      {"v_rank_2", call(v, Tensor::zeros({5, 1})), shape, "additive_attention: 'v' expected (A=5), got (5, 1)"},
      {"lengths_float", call(lengths, Tensor::zeros({2})), shape,
       "additive_attention: 'lengths' expected dtype int32, got float32"},
      {"lengths_size", call(lengths, lengths_of({4, 2, 1})), shape,
       "additive_attention: 'lengths' expected (B=2), got (3)"},
      {"lengths_2d", call(lengths, Tensor::zeros({2}, DType::i32).reshape({1, 2})), shape,
       "additive_attention: 'lengths' expected (B=2), got (1, 2)"},
      {"length_past_S", with({4, 5}), value,
       "additive_attention: 'lengths' value 5 at batch index 1 is out of range [0, S=4]"},
      {"negative_length", with({-1, 2}), value,
       "additive_attention: 'lengths' value -1 at batch index 0 is out of range [0, S=4]"},
      {"temperature_0", with({4, 2}, [](AdditiveOptions& o) { o.temperature = 0.0f; }), value,
       "additive_attention: temperature must be finite and > 0, got 0"},
      {"temperature_negative", with({4, 2}, [](AdditiveOptions& o) { o.temperature = -2.0f; }), value,
       "additive_attention: temperature must be finite and > 0, got -2"},
      {"temperature_nan", with({4, 2}, [](AdditiveOptions& o) { o.temperature = std::nanf(""); }), value,
       "additive_attention: temperature must be finite and > 0, got nan"},
      {"normalize_without_g", with({4, 2}, [](AdditiveOptions& o) { o.normalize = true; }), value,
       "additive_attention: normalize = true needs the learned scalar 'g'"},
      {"g_not_a_scalar",
       with({4, 2},
            [](AdditiveOptions& o) {
              o.normalize = true;
              o.g = Tensor::zeros({1});
            }),
       shape, "additive_attention: 'g' expected (), got (1)"},
      {"normalize_zero_v",
       with(
           {4, 2},
           [](AdditiveOptions& o) {
             o.normalize = true;
             o.g = Tensor::scalar(1.0f);
           },
           Tensor::zeros({5})),
       value, "additive_attention: normalize = true needs a nonzero 'v' (its norm is 0)"},
      {"g_without_normalize", with({4, 2}, [](AdditiveOptions& o) { o.g = Tensor::scalar(1.0f); }), value,
       "additive_attention: 'g' is only used when normalize = true"},
      {"project_keys_w_k_width",
       [] {
         additive_project_keys(Tensor::zeros({2, 3, 4}), Tensor::zeros({3, 5}));
       },
       shape, "additive_project_keys: 'w_k' expected (A, E=4), got (3, 5)"},
      {"project_keys_rank_2",
       [] {
         additive_project_keys(Tensor::zeros({2, 4}), Tensor::zeros({3, 4}));
       },
       shape, "additive_project_keys: 'keys' expected (B, S, E), got (2, 4)"},
  };
}

INSTANTIATE_TEST_SUITE_P(AdditiveAttention, BadInput, ::testing::ValuesIn(additive_bad_inputs()), row_name);

}  // namespace
}  // namespace attn
