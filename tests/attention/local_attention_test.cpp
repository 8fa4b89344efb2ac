// Luong local attention (local-m, local-p): forward against an independent double-precision
// reference and hand-computed examples, the global-attention limit (D_w >= S equals
// luong_attention), window clipping at both ends, weights exactly 0 outside the window,
// padding invariance, gradient checks for every differentiable input (including W_p and v_p
// of local-p), length-0 / length-1 / ragged rows, thread-count determinism and the errors.
// The forward and gradient cases and the bad inputs are rows of case tables (support/op_table.h).
#include "attn/ops/local_attention.h"

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

// ---- independent double-precision reference ----------------------------------------------------

struct Reference {
  Tensor context;
  Tensor weights;
  std::vector<double> p;  // the aligned position of each row (local-p: predicted)
};

Reference local_reference(const Tensor& query, const Tensor& keys, const Tensor& values,
                          const std::vector<int32_t>& lengths, const LocalOptions& o) {
  const bool block = query.rank() == 3;
  const int64_t B = query.dim(0), T = block ? query.dim(1) : 1, D = query.dim(-1);
  const int64_t S = keys.dim(1), E = keys.dim(2);
  const std::vector<float> q = query.to_vector(), k = keys.to_vector(), v = values.to_vector();
  const std::vector<float> w = o.w.defined() ? o.w.to_vector() : std::vector<float>();
  const std::vector<float> wp = o.w_p.defined() ? o.w_p.to_vector() : std::vector<float>();
  const std::vector<float> vp = o.v_p.defined() ? o.v_p.to_vector() : std::vector<float>();
  const std::vector<int32_t> pos = o.positions.defined() ? o.positions.to_vector_i32() : std::vector<int32_t>();
  const int64_t A = static_cast<int64_t>(vp.size());
  const double sigma = o.window / 2.0;
  std::vector<float> ctx(B * T * E, 0.0f), wt(B * T * S, 0.0f);
  std::vector<double> ps(B * T, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const int64_t r = b * T + t, L = lengths[b];
      const float* qr = &q[r * D];
      double p;
      int64_t centre;
      if (o.mode == LocalMode::predictive) {
        double u = 0;
        for (int64_t a = 0; a < A; ++a) {
          double h = 0;
          for (int64_t d = 0; d < D; ++d) h += static_cast<double>(wp[a * D + d]) * qr[d];
          u += vp[a] * std::tanh(h);
        }
        p = L / (1.0 + std::exp(-u));
        centre = std::min<int64_t>(static_cast<int64_t>(std::floor(p)), L - 1);
      } else {
        p = pos.empty() ? t
                        : (static_cast<int64_t>(pos.size()) == T && block ? pos[t]
                           : static_cast<int64_t>(pos.size()) == 1        ? pos[0]
                                                                          : pos[r]);
        centre = static_cast<int64_t>(p);
      }
      ps[r] = p;
      const int64_t lo = std::max<int64_t>(0, centre - o.window), hi = std::min<int64_t>(L - 1, centre + o.window);
      if (hi < lo) continue;
      std::vector<double> z(S);
      double m = -1e300;
      for (int64_t s = lo; s <= hi; ++s) {
        const float* ks = &k[(b * S + s) * E];
        double e = 0;
        if (o.score == LuongScore::dot) {
          for (int64_t j = 0; j < E; ++j) e += static_cast<double>(qr[j]) * ks[j];
        } else {
          for (int64_t d = 0; d < D; ++d)
            for (int64_t j = 0; j < E; ++j) e += static_cast<double>(qr[d]) * w[d * E + j] * ks[j];
        }
        m = std::max(m, z[s] = e / o.temperature);
      }
      double sum = 0;
      for (int64_t s = lo; s <= hi; ++s) sum += std::exp(z[s] - m);
      for (int64_t s = lo; s <= hi; ++s) {
        double a = std::exp(z[s] - m) / sum;
        if (o.mode == LocalMode::predictive) a *= std::exp(-(s - p) * (s - p) / (2 * sigma * sigma));
        wt[r * S + s] = static_cast<float>(a);
        for (int64_t j = 0; j < E; ++j) ctx[r * E + j] += static_cast<float>(a * v[(b * S + s) * E + j]);
      }
    }
  return {Tensor::from_vector(ctx, block ? Shape{B, T, E} : Shape{B, E}),
          Tensor::from_vector(wt, block ? Shape{B, T, S} : Shape{B, S}), ps};
}

// ---- inputs -------------------------------------------------------------------------------------------

struct Inputs : AttentionInputs {
  using AttentionInputs::AttentionInputs;
  Tensor w, w_p, v_p;
};

// T = 0: a one-step query (B, D). dot needs D = E.
Inputs make_inputs(LocalMode mode, LuongScore score, int64_t B, int64_t T, int64_t S, int64_t D, int64_t E, int64_t A,
                   std::vector<int32_t> lengths, uint64_t seed) {
  Inputs in(B, T, S, D, E, std::move(lengths), seed);
  if (score == LuongScore::general) in.w = leaf({D, E}, seed + 4);
  if (mode == LocalMode::predictive) {
    in.w_p = leaf({A, D}, seed + 5);
    in.v_p = leaf({A}, seed + 6, -2.0f, 2.0f);
  }
  return in;
}

LocalOptions options_for(const Inputs& in, LocalMode mode, LuongScore score, int window, float temperature = 1.0f,
                         const Tensor& positions = Tensor()) {
  LocalOptions o;
  o.mode = mode;
  o.score = score;
  o.window = window;
  o.w = in.w;
  o.w_p = in.w_p;
  o.v_p = in.v_p;
  o.positions = positions;
  o.temperature = temperature;
  return o;
}

// local_attention on the inputs' query, keys, values and lengths.
AttentionResult run(const Inputs& in, const LocalOptions& o) {
  return local_attention(in.query, in.keys, in.values, in.len, o);
}

const char* mode_name(LocalMode m) { return m == LocalMode::monotonic ? "local-m" : "local-p"; }
const char* score_name(LuongScore s) { return s == LuongScore::dot ? "dot" : "general"; }

const LocalMode kModes[] = {LocalMode::monotonic, LocalMode::predictive};
const LuongScore kScores[] = {LuongScore::dot, LuongScore::general};

// ---- forward ----------------------------------------------------------------------------------------

TEST(LocalAttention, HandComputedMonotonicWindow) {
  // q = 1, keys = values = s: window [p − 1, p + 1] around p = 2 holds scores 1, 2, 3.
  Tensor query = Tensor::from_vector(std::vector<float>{1.0f}, {1, 1, 1});
  Tensor keys = Tensor::from_vector(std::vector<float>{0, 1, 2, 3, 4}, {1, 5, 1});
  LocalOptions o;
  o.score = LuongScore::dot;
  o.window = 1;
  o.positions = Tensor::from_vector(std::vector<int32_t>{2}, {1});
  AttentionResult r = local_attention(query, keys, keys, lengths_of({5}), o);
  // softmax([1, 2, 3]) = [0.0900306, 0.2447285, 0.6652410]; context = 1·a1 + 2·a2 + 3·a3
  EXPECT_TRUE(tensors_close(
      r.weights, Tensor::from_vector(std::vector<float>{0, 0.0900306f, 0.2447285f, 0.6652410f, 0}, {1, 1, 5}), 1e-6f,
      1e-5f));
  EXPECT_NEAR(r.context.item(), 2.5752104, 1e-5);
  EXPECT_EQ(r.weights.to_vector()[0], 0.0f);
  EXPECT_EQ(r.weights.to_vector()[4], 0.0f);
}

TEST(LocalAttention, HandComputedPredictiveGaussian) {
  // v_p = 0: u = 0, p = L · sigmoid(0) = 2.5 with L = 5 (not the padded S = 7); centre 2,
  // D_w = 2, σ = 1: window [0, 4]; q = 0 gives a uniform softmax 1/5, times the Gaussian.
  Tensor query = Tensor::zeros({1, 2});
  Tensor keys = random_tensor({1, 7, 2}, 5), values = random_tensor({1, 7, 2}, 6);
  LocalOptions o;
  o.mode = LocalMode::predictive;
  o.score = LuongScore::dot;
  o.window = 2;
  o.w_p = random_tensor({3, 2}, 7);
  o.v_p = Tensor::zeros({3});
  AttentionResult r = local_attention(query, keys, values, lengths_of({5}), o);
  std::vector<float> expected(7, 0.0f);
  for (int s = 0; s < 5; ++s) expected[s] = static_cast<float>(0.2 * std::exp(-(s - 2.5) * (s - 2.5) / 2.0));
  // = [0.0087881, 0.0649431, 0.1764994, 0.1764994, 0.0649431, 0, 0]
  EXPECT_NEAR(expected[0], 0.0087881, 1e-6);
  EXPECT_TRUE(tensors_close(r.weights, Tensor::from_vector(expected, {1, 7}), 1e-6f, 1e-5f));
  double sum = 0;
  for (float x : r.weights.to_vector()) sum += x;
  EXPECT_LT(sum, 0.5);  // not renormalised
}

TEST(LocalAttention, GivenPositionsSharedAndPerRow) {
  Inputs in = make_inputs(LocalMode::monotonic, LuongScore::general, 2, 3, 6, 3, 4, 0, {6, 4}, 50);
  for (const Tensor& positions : {Tensor::from_vector(std::vector<int32_t>{5, 0, 3}, {3}),
                                  Tensor::from_vector(std::vector<int32_t>{5, 0, 3, 1, 5, 2}, {2, 3})}) {
    SCOPED_TRACE("positions " + positions.shape().str());
    LocalOptions o = options_for(in, LocalMode::monotonic, LuongScore::general, 1, 1.0f, positions);
    AttentionResult r = run(in, o);
    Reference ref = local_reference(in.query, in.keys, in.values, in.lengths, o);
    EXPECT_TRUE(tensors_close(r.weights, ref.weights, kFusedTol));
    EXPECT_TRUE(tensors_close(r.context, ref.context, kFusedTol));
  }
  // One-step query: (1) shared, (B) and (B, 1) per row.
  Inputs one = make_inputs(LocalMode::monotonic, LuongScore::dot, 2, 0, 6, 3, 3, 0, {6, 4}, 60);
  LocalOptions per_row = options_for(one, LocalMode::monotonic, LuongScore::dot, 1, 1.0f,
                                     Tensor::from_vector(std::vector<int32_t>{4, 1}, {2}));
  AttentionResult a = run(one, per_row);
  Reference ref = local_reference(one.query, one.keys, one.values, one.lengths, per_row);
  EXPECT_TRUE(tensors_close(a.weights, ref.weights, kFusedTol));
  per_row.positions = Tensor::from_vector(std::vector<int32_t>{4, 1}, {2, 1});
  EXPECT_EQ(run(one, per_row).weights.to_vector(), a.weights.to_vector());
  LocalOptions shared = options_for(one, LocalMode::monotonic, LuongScore::dot, 1, 1.0f,
                                    Tensor::from_vector(std::vector<int32_t>{3}, {1}));
  AttentionResult s = run(one, shared);
  EXPECT_TRUE(tensors_close(s.weights, local_reference(one.query, one.keys, one.values, one.lengths, shared).weights,
                            kFusedTol));
  const std::vector<float> sw = s.weights.to_vector();
  for (int64_t p : {2, 3}) EXPECT_GT(sw[6 + p], 0.0f);  // row 1 (L = 4): window [2, 4] clipped to [2, 3]
  EXPECT_EQ(sw[6 + 4], 0.0f);
}

TEST(LocalAttention, MonotonicWeightsSumToOneAndVanishOutsideTheWindow) {
  // Default p_t = t, D_w = 1: windows clip at the start (t = 0), at each row's end, and are
  // empty once t − D_w passes the last real position (row 2: L = 2, t = 3 -> window [2, 4] ∩ [0, 1]).
  Inputs in = make_inputs(LocalMode::monotonic, LuongScore::general, 4, 5, 6, 3, 3, 0, {6, 4, 2, 0}, 70);
  AttentionResult r = run(in, options_for(in, LocalMode::monotonic, LuongScore::general, 1));
  const std::vector<float> w = r.weights.to_vector(), c = r.context.to_vector();
  for (int64_t b = 0; b < 4; ++b)
    for (int64_t t = 0; t < 5; ++t) {
      const int64_t L = in.lengths[b], lo = std::max<int64_t>(0, t - 1), hi = std::min<int64_t>(L - 1, t + 1);
      double sum = 0;
      for (int64_t s = 0; s < 6; ++s) {
        const float x = w[(b * 5 + t) * 6 + s];
        ASSERT_FALSE(std::isnan(x));
        if (s < lo || s > hi)
          EXPECT_EQ(x, 0.0f) << "b=" << b << " t=" << t << " s=" << s;
        else
          EXPECT_GT(x, 0.0f) << "b=" << b << " t=" << t << " s=" << s;
        sum += x;
      }
      const bool empty = hi < lo;
      EXPECT_NEAR(sum, empty ? 0.0 : 1.0, 1e-6) << "b=" << b << " t=" << t;
      if (empty) {
        for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(c[(b * 5 + t) * 3 + j], 0.0f) << "b=" << b << " t=" << t;
      }
    }
  // Clipping at both ends happened: t = 0 has 2 positions, row 1 t = 3 has [2, 3].
  EXPECT_EQ(w[0 * 6 + 2], 0.0f);
  EXPECT_GT(w[(1 * 5 + 3) * 6 + 3], 0.0f);
  EXPECT_EQ(w[(1 * 5 + 3) * 6 + 4], 0.0f);
}

TEST(LocalAttention, PredictiveWeightsStayInsideTheWindowAndBelowTheSoftmax) {
  Inputs in = make_inputs(LocalMode::predictive, LuongScore::general, 3, 4, 9, 3, 3, 4, {9, 5, 1}, 80);
  LocalOptions o = options_for(in, LocalMode::predictive, LuongScore::general, 1);
  AttentionResult r = run(in, o);
  Reference ref = local_reference(in.query, in.keys, in.values, in.lengths, o);
  const std::vector<float> w = r.weights.to_vector();
  for (int64_t row = 0; row < 12; ++row) {
    const int64_t L = in.lengths[row / 4];
    const double p = ref.p[row];
    EXPECT_GE(p, 0.0);
    EXPECT_LE(p, static_cast<double>(L));  // p_t uses the real length, not S = 9
    const int64_t centre = std::min<int64_t>(static_cast<int64_t>(std::floor(p)), L - 1);
    double sum = 0;
    for (int64_t s = 0; s < 9; ++s) {
      const float x = w[row * 9 + s];
      if (s < centre - 1 || s > centre + 1 || s >= L) {
        EXPECT_EQ(x, 0.0f) << "row " << row << " s " << s;
      }
      sum += x;
    }
    EXPECT_GT(sum, 0.0);
    EXPECT_LT(sum, 1.0);  // the Gaussian factor is < 1 everywhere but s = p_t
  }
}

TEST(LocalAttention, WindowCoveringTheSourceEqualsGlobalLuong) {
  // local-m with D_w >= S sees every real position: it is global Luong attention.
  for (LuongScore score : kScores)
    for (int window : {6, 100}) {
      SCOPED_TRACE(std::string(score_name(score)) + " D_w=" + std::to_string(window));
      const int64_t D = score == LuongScore::dot ? 3 : 2;
      Inputs in = make_inputs(LocalMode::monotonic, score, 3, 4, 6, D, 3, 0, {6, 2, 0}, 90);
      AttentionResult local = run(in, options_for(in, LocalMode::monotonic, score, window, 0.7f));
      LuongOptions g;
      g.score = score;
      g.w = in.w;
      g.temperature = 0.7f;
      AttentionResult global = luong_attention(in.query, in.keys, in.values, in.len, g);
      EXPECT_TRUE(tensors_close(local.weights, global.weights, 1e-6f, 1e-5f));
      EXPECT_TRUE(tensors_close(local.context, global.context, 1e-6f, 1e-5f));
    }
}

TEST(LocalAttention, PaddingDoesNotChangeTheResult) {
  for (LocalMode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    Inputs in = make_inputs(mode, LuongScore::general, 2, 3, 5, 3, 2, 4, {5, 3}, 100);
    LocalOptions o = options_for(in, mode, LuongScore::general, 1);
    AttentionResult r = run(in, o);
    // Pad S from 5 to 8 with garbage.
    Tensor keys8 = random_tensor({2, 8, 2}, 101, -50.0f, 50.0f), values8 = random_tensor({2, 8, 2}, 102, -50.0f, 50.0f);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < 5 * 2; ++i) {
        keys8.f32()[b * 16 + i] = in.keys.f32()[b * 10 + i];
        values8.f32()[b * 16 + i] = in.values.f32()[b * 10 + i];
      }
    AttentionResult padded = local_attention(in.query, keys8, values8, in.len, o);
    EXPECT_EQ(padded.context.to_vector(), r.context.to_vector());
    const std::vector<float> w5 = r.weights.to_vector(), w8 = padded.weights.to_vector();
    for (int64_t row = 0; row < 6; ++row)
      for (int64_t s = 0; s < 8; ++s) EXPECT_EQ(w8[row * 8 + s], s < 5 ? w5[row * 5 + s] : 0.0f);
  }
}

TEST(LocalAttention, LargeScoresStayFinite) {
  for (LocalMode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    Inputs in = make_inputs(mode, LuongScore::dot, 2, 3, 6, 4, 4, 3, {6, 4}, 110);
    in.query = random_tensor({2, 3, 4}, 111, -30.0f, 30.0f).set_requires_grad(true);
    in.keys = random_tensor({2, 6, 4}, 112, -30.0f, 30.0f).set_requires_grad(true);
    LocalOptions o = options_for(in, mode, LuongScore::dot, 2);
    AttentionResult r = run(in, o);
    Reference ref = local_reference(in.query, in.keys, in.values, in.lengths, o);
    EXPECT_TRUE(tensors_close(r.weights, ref.weights, kLargeScoreTol));
    EXPECT_TRUE(tensors_close(r.context, ref.context, kLargeScoreTol));
    expect_finite_gradients(r.context, {in.query, in.keys, in.values});
  }
}

TEST(LocalAttention, NeedWeightsFalseOneNodeAndNoGrad) {
  for (LocalMode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    Inputs in = make_inputs(mode, LuongScore::general, 2, 3, 5, 3, 3, 2, {5, 2}, 120);
    LocalOptions o = options_for(in, mode, LuongScore::general, 1);
    AttentionResult full = run(in, o);
    o.need_weights = false;
    autodiff::tape().clear();
    {
      autodiff::NoGradGuard guard;
      run(in, o);
    }
    EXPECT_EQ(autodiff::tape().size(), 0u);
    AttentionResult r = run(in, o);
    EXPECT_FALSE(r.weights.defined());
    EXPECT_EQ(r.context.to_vector(), full.context.to_vector());
    EXPECT_EQ(autodiff::tape().size(), 1u);  // one fused node
    // Gradients with need_weights = false equal those with the weights output unused.
    backward(r.context, random_tensor(r.context.shape(), 121));
    const std::vector<float> dq = in.query.grad().to_vector();
    in.query.drop_grad();
    o.need_weights = true;
    backward(run(in, o).context, random_tensor(r.context.shape(), 121));
    EXPECT_EQ(in.query.grad().to_vector(), dq);
  }
}

// ---- the case table: forward against the reference, gradient checks ---------------------------------

// One row's setup. Its inputs: query, keys, values, then w, w_p and v_p where they exist.
struct LocalCase {
  LocalMode mode;
  LuongScore score;
  int64_t B, T, S, D, E, A;  // T = 0: one-step query
  std::vector<int32_t> lengths;
  uint64_t seed;
  int window;
  float temperature = 1.0f;
  Tensor positions = Tensor();
};

Tensors local_inputs(const LocalCase& c) {
  Inputs in = make_inputs(c.mode, c.score, c.B, c.T, c.S, c.D, c.E, c.A, c.lengths, c.seed);
  Tensors x = {in.query, in.keys, in.values};
  for (const Tensor& t : {in.w, in.w_p, in.v_p})
    if (t.defined()) x.push_back(t);
  return x;
}

LocalOptions local_options(const LocalCase& c, const Tensors& x) {
  LocalOptions o;
  o.mode = c.mode;
  o.score = c.score;
  o.window = c.window;
  o.temperature = c.temperature;
  o.positions = c.positions;
  size_t i = 3;
  if (c.score == LuongScore::general) o.w = x[i++];
  if (c.mode == LocalMode::predictive) {
    o.w_p = x[i++];
    o.v_p = x[i++];
  }
  return o;
}

Reference local_reference_on(const LocalCase& c, const Tensors& x) {
  return local_reference(x[0], x[1], x[2], c.lengths, local_options(c, x));
}

// The distance of each row's predicted p_t from the nearest integer: the window moves when
// floor(p_t) does, so finite differences must stay clear of those jumps.
double min_distance_to_integer(const LocalCase& c) {
  const Reference ref = local_reference_on(c, local_inputs(c));
  const int64_t T = std::max<int64_t>(c.T, 1);
  double best = 1.0;
  for (size_t r = 0; r < ref.p.size(); ++r) {
    if (c.lengths[r / T] == 0) continue;
    best = std::min(best, std::fabs(ref.p[r] - std::round(ref.p[r])));
  }
  return best;
}

// Context and weights; a gradient row of a block query with S = E checks context + weights too
// (their gradients meet in one node).
OpRow local_row(const std::string& name, const LocalCase& c, bool reference, bool gradcheck) {
  OpRow row = attention_row(
      row_name_of(std::string(mode_name(c.mode)) + " " + score_name(c.score) + " " + name),
      [c] { return local_inputs(c); },
      [c](const Tensors& x) { return local_attention(x[0], x[1], x[2], lengths_of(c.lengths), local_options(c, x)); },
      [c](const Tensors& x) { return local_reference_on(c, x); }, reference, gradcheck);
  if (gradcheck && c.T > 0 && c.S == c.E) {
    row.op = [op = row.op](const Tensors& x) {
      Tensors r = op(x);
      r.push_back(add(r[0], r[1]));
      return r;
    };
    row.outputs.push_back("context + weights");
  }
  if (gradcheck && c.mode == LocalMode::predictive) {
    row.properties = [c](const Tensors&, const Tensors&) {
      EXPECT_GT(min_distance_to_integer(c), 0.05) << "a predicted p_t sits next to a window jump: pick another seed";
    };
  }
  return row;
}

// The gradient cases: the batch, and the window D_w.
const std::pair<AttentionCase, int> kGradCases[] = {
    {{"block ragged with a zero row", 3, 4, 6, {6, 3, 0}, 1.0f}, 1},
    {{"block clipping at both ends", 2, 5, 5, {5, 4}, 1.0f}, 2},
    {{"one step ragged", 3, 0, 5, {5, 2, 1}, 1.0f}, 1},
    {{"D_w at least S", 2, 3, 3, {3, 2}, 1.0f}, 4},
    {{"length 1 everywhere", 2, 3, 3, {1, 1}, 1.0f}, 1},
    {{"S = 1", 2, 2, 1, {1, 0}, 1.0f}, 1},
    {{"B = 1 temperature 0.5", 1, 3, 4, {4}, 0.5f}, 1},
};

LocalCase grad_case(LocalMode mode, LuongScore score, const AttentionCase& g, int window, uint64_t seed) {
  const int64_t D = score == LuongScore::dot ? 3 : 2;
  return {mode, score, g.B, g.T, g.S, D, 3, 3, g.lengths, seed, window, g.temperature};
}

std::vector<OpRow> local_rows() {
  std::vector<OpRow> rows;
  uint64_t seed = 10;
  for (LocalMode mode : kModes)
    for (LuongScore score : kScores)
      for (int64_t T : {0, 4})
        for (int window : {0, 1, 2}) {
          if (mode == LocalMode::predictive && window == 0) continue;
          const int64_t D = score == LuongScore::dot ? 4 : 3;
          const LocalCase c{mode, score, 3, T, 7, D, 4, 5, {7, 3, 0}, seed += 10, window, 0.8f};
          rows.push_back(local_row((T == 0 ? "one step D_w " : "block D_w ") + std::to_string(window), c, true, false));
        }
  // local-m: every input's gradient, at D_w = 0 and at the case's window.
  seed = 200;
  for (LuongScore score : kScores)
    for (const auto& [g, case_window] : kGradCases)
      for (int window : {0, case_window}) {
        const LocalCase c = grad_case(LocalMode::monotonic, score, g, window, seed += 10);
        rows.push_back(
            local_row("gradcheck " + std::string(g.name) + " D_w " + std::to_string(window), c, false, true));
      }
  // local-m with given per-row positions at the first and last real position (the window
  // clipped on each side).
  for (LuongScore score : kScores) {
    LocalCase c = grad_case(LocalMode::monotonic, score, {"positions", 2, 3, 5, {5, 3}, 1.0f}, 1, 300);
    c.positions = Tensor::from_vector(std::vector<int32_t>{0, 4, 2, 2, 0, 4}, {2, 3});
    rows.push_back(local_row("gradcheck given positions", c, false, true));
  }
  // local-p: every input's gradient, W_p and v_p included. A seed whose predicted positions sit
  // next to a window jump is passed over (the row asserts the chosen one is clear, so a change
  // in the op that moves p_t is noticed).
  seed = 400;
  for (LuongScore score : kScores)
    for (const auto& [g, window] : kGradCases) {
      LocalCase c = grad_case(LocalMode::predictive, score, g, std::max(window, 1), seed += 10);
      for (int attempt = 0; attempt < 20 && min_distance_to_integer(c) <= 0.05; ++attempt) c.seed += 1000;
      rows.push_back(local_row("gradcheck " + std::string(g.name), c, false, true));
    }
  // Keys equal values: the inputs without values; w, w_p and v_p fixed.
  for (LocalMode mode : kModes) {
    const LocalCase c{mode, LuongScore::general, 2, 3, 5, 3, 3, 3, {5, 3}, 600, 1};
    OpRow row = local_row("gradcheck keys equal values", c, false, true);
    row.inputs = [c] {
      Tensors x = local_inputs(c);
      x.erase(x.begin() + 2);
      for (size_t i = 2; i < x.size(); ++i) x[i].set_requires_grad(false);
      return x;
    };
    row.op = [c](const Tensors& x) {
      Tensors with_values = x;
      with_values.insert(with_values.begin() + 2, x[1]);
      return Tensors{local_attention(x[0], x[1], x[1], lengths_of(c.lengths), local_options(c, with_values)).context};
    };
    row.outputs = {"context"};
    row.properties = nullptr;
    rows.push_back(row);
  }
  return rows;
}

INSTANTIATE_TEST_SUITE_P(LocalAttention, OpTable, ::testing::ValuesIn(local_rows()), row_name);

TEST(LocalAttention, PredictiveGradientReachesWpAndVp) {
  Inputs in = make_inputs(LocalMode::predictive, LuongScore::general, 2, 3, 8, 3, 3, 4, {8, 5}, 500);
  AttentionResult r = run(in, options_for(in, LocalMode::predictive, LuongScore::general, 2));
  backward(r.context, random_tensor(r.context.shape(), 501));
  for (const Tensor* t : {&in.w_p, &in.v_p}) {
    ASSERT_TRUE(t->has_grad());
    double norm = 0;
    for (float x : t->grad().to_vector()) norm += std::fabs(x);
    EXPECT_GT(norm, 1e-4);
  }
}

TEST(LocalAttention, ZeroLengthRowHasZeroGradient) {
  for (LocalMode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    Inputs in = make_inputs(mode, LuongScore::dot, 3, 2, 4, 4, 4, 3, {3, 0, 4}, 700);
    AttentionResult r = run(in, options_for(in, mode, LuongScore::dot, 1));
    backward(add(r.context, r.weights), random_tensor({3, 2, 4}, 701));
    expect_batch_row_gets_no_gradient({in.query, in.keys, in.values}, 1);
    const std::vector<float> c = r.context.to_vector();
    for (int64_t i = 2 * 4; i < 4 * 4; ++i) EXPECT_EQ(c[i], 0.0f);
    // Keys past the length of row 0 get nothing.
    const std::vector<float> dk = in.keys.grad().to_vector();
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(dk[(0 * 4 + 3) * 4 + j], 0.0f);
    if (mode == LocalMode::predictive) {
      for (const Tensor* t : {&in.w_p, &in.v_p})
        for (float x : t->grad().to_vector()) ASSERT_TRUE(std::isfinite(x));
    }
  }
}

TEST(LocalAttention, IdenticalResultsForAnyThreadCount) {
  for (LocalMode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    const LocalCase c{mode, LuongScore::general, 8, 6, 24, 16, 16, 12, {24, 9, 1, 0, 24, 12, 5, 24}, 800, 3};
    expect_identical_across_threads(
        local_inputs(c),
        [&](const Tensors& x) {
          const AttentionResult r = local_attention(x[0], x[1], x[2], lengths_of(c.lengths), local_options(c, x));
          return Tensors{r.context, r.weights};
        },
        801);
  }
}

// ---- errors ----------------------------------------------------------------------------------------

std::vector<BadRow> local_bad_inputs() {
  const Tensor q = Tensor::zeros({2, 3, 4}), k = Tensor::zeros({2, 5, 4}), len = lengths_of({5, 2});
  auto ints = [](std::vector<int32_t> values, const Shape& shape) { return Tensor::from_vector(values, shape); };
  using Edit = std::function<void(LocalOptions&)>;
  // The call with options from `base` through `edit`, and the given tensors (undefined: q, k, k, len).
  auto call_from = [=](const LocalOptions& base, const Edit& edit, const Tensor& query = Tensor(),
                       const Tensor& keys = Tensor(), const Tensor& values = Tensor(),
                       const Tensor& lengths = Tensor()) {
    LocalOptions o = base;
    edit(o);
    return [=] {
      local_attention(query.defined() ? query : q, keys.defined() ? keys : k, values.defined() ? values : k,
                      lengths.defined() ? lengths : len, o);
    };
  };
  LocalOptions m;  // local-m, dot, the default window
  m.score = LuongScore::dot;
  LocalOptions p = m;  // local-p, dot, valid W_p and v_p
  p.mode = LocalMode::predictive;
  p.w_p = Tensor::zeros({3, 4});
  p.v_p = Tensor::zeros({3});
  auto local_m = [=](const Edit& edit, const Tensor& query = Tensor(), const Tensor& keys = Tensor(),
                     const Tensor& values = Tensor(),
                     const Tensor& lengths = Tensor()) { return call_from(m, edit, query, keys, values, lengths); };
  auto local_p = [=](const Edit& edit) { return call_from(p, edit); };
  const Throws shape = Throws::shape_error, value = Throws::value_error;
  return {
      {"window_negative", local_m([](LocalOptions& o) { o.window = -1; }), value,
       "local_attention(local-m): window must be >= 0, got -1"},
      {"position_past_S", local_m([=](LocalOptions& o) {
         o.window = 2;
         o.positions = ints({0, 5, 1}, {3});
       }),
       value, "local_attention(local-m): 'positions' value 5 at flat index 1 is out of range [0, S=5)"},
      {"negative_position", local_m([=](LocalOptions& o) {
         o.window = 2;
         o.positions = ints({0, 1, 2, 3, -1, 0}, {2, 3});
       }),
       value, "local_attention(local-m): 'positions' value -1 at flat index 4 is out of range [0, S=5)"},
      {"local_m_given_w_p", local_m([](LocalOptions& o) {
         o.window = 2;
         o.w_p = Tensor::zeros({3, 4});
       }),
       value, "local_attention(local-m): 'w_p' is only used by local-p; leave it undefined"},
      {"dot_given_w", local_m([](LocalOptions& o) {
         o.window = 2;
         o.w = Tensor::zeros({4, 4});
       }),
       value, "local_attention(local-m): 'w' is not used by the dot score; leave it undefined"},
      {"temperature_0", local_m([](LocalOptions& o) {
         o.window = 2;
         o.temperature = 0.0f;
       }),
       value, "local_attention(local-m): temperature must be finite and > 0, got 0"},
      {"concat_score", local_m([](LocalOptions& o) {
         o.window = 2;
         o.score = LuongScore::concat;
       }),
       value, "local_attention(local-m): the concat score is not supported by local attention; use dot or general"},
      {"length_past_S", local_m([](LocalOptions& o) { o.window = 2; }, q, k, k, lengths_of({6, 2})), value,
       "local_attention(local-m): 'lengths' value 6 at batch index 0 is out of range [0, S=5]"},
      {"unknown_mode", call_from(LocalOptions{}, [](LocalOptions& o) { o.mode = static_cast<LocalMode>(9); }), value,
       "local_attention: unknown mode 9"},
      {"dot_query_size_differs_from_key_size", local_m([](LocalOptions&) {}, Tensor::zeros({2, 3, 8})), shape,
       "local_attention(local-m): query size D=8 must equal key size E=4 for the dot score (a "
       "bidirectional encoder doubles E?): use score 'general' to learn a projection W (D, E), or "
       "project the state"},
      {"general_w_transposed",
       local_m(
           [](LocalOptions& o) {
             o.score = LuongScore::general;
             o.w = Tensor::zeros({4, 3});
           },
           Tensor::zeros({2, 3, 3})),
       shape, "local_attention(local-m): 'w' expected (D=3, E=4), got (4, 3)"},
      {"general_w_undefined", local_m([](LocalOptions& o) { o.score = LuongScore::general; }), shape,
       "local_attention(local-m): 'w' expected (D=4, E=4), got an undefined tensor"},
      {"keys_batch", local_m([](LocalOptions&) {}, q, Tensor::zeros({3, 5, 4})), shape,
       "local_attention(local-m): 'keys' expected (B=2, S, E), got (3, 5, 4)"},
      {"values_size", local_m([](LocalOptions&) {}, q, k, Tensor::zeros({2, 5, 3})), shape,
       "local_attention(local-m): 'values' expected (B=2, S=5, E=4), got (2, 5, 3)"},
      {"positions_size", local_m([=](LocalOptions& o) {
         o.positions = ints({0, 1}, {2});
       }),
       shape, "local_attention(local-m): 'positions' expected int32 (T=3) or (B=2, T=3), got (2) int32"},
      {"positions_float", local_m([](LocalOptions& o) { o.positions = Tensor::zeros({3}); }), shape,
       "local_attention(local-m): 'positions' expected int32 (T=3) or (B=2, T=3), got (3) float32"},
      {"one_step_positions_size",
       local_m(
           [=](LocalOptions& o) {
             o.positions = ints({0, 1, 2}, {3});
           },
           Tensor::zeros({2, 4})),
       shape,
       "local_attention(local-m): 'positions' expected int32 (1), (B=2) or (B=2, 1) for a one-step query, got (3) "
       "int32"},
      {"query_rank_4",
       local_m(
           [=](LocalOptions& o) {
             o.positions = ints({0, 1, 2}, {3});
           },
           Tensor::zeros({2, 3, 4, 1})),
       shape, "local_attention(local-m): 'query' expected (B, D) or (B, T, D), got (2, 3, 4, 1)"},
      {"local_p_window_0", local_p([](LocalOptions& o) { o.window = 0; }), value,
       "local_attention(local-p): window must be >= 1 for local-p (sigma = window / 2), got 0"},
      {"local_p_given_positions", local_p([=](LocalOptions& o) {
         o.window = 2;
         o.positions = ints({0, 1, 2}, {3});
       }),
       value,
       "local_attention(local-p): 'positions' is only used by local-m (the position is predicted); leave it "
       "undefined"},
      {"local_p_w_p_undefined", local_p([](LocalOptions& o) { o.w_p = Tensor(); }), shape,
       "local_attention(local-p): 'w_p' expected (A, D=4), got an undefined tensor: local-p predicts"},
      {"local_p_v_p_undefined", local_p([](LocalOptions& o) { o.v_p = Tensor(); }), shape,
       "local_attention(local-p): 'v_p' expected (A=3), got an undefined tensor"},
      {"local_p_v_p_size", local_p([](LocalOptions& o) { o.v_p = Tensor::zeros({2}); }), shape,
       "local_attention(local-p): 'v_p' expected (A=3), got (2)"},
      {"local_p_w_p_width", local_p([](LocalOptions& o) {
         o.w_p = Tensor::zeros({3, 5});
       }),
       shape, "local_attention(local-p): 'w_p' expected (A, D=4), got (3, 5)"},
  };
}

INSTANTIATE_TEST_SUITE_P(LocalAttention, BadInput, ::testing::ValuesIn(local_bad_inputs()), row_name);

}  // namespace
}  // namespace attn
