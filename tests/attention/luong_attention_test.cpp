// Luong attention (dot, general, concat, scaled) and Luong location attention: forward
// against independent double-precision references, gradient checks for every input (one
// step and block queries, ragged / zero / unit lengths, S = 1, B = 1, temperature, learned
// scale), determinism across thread counts, and the error messages.
#include <algorithm>
#include <cmath>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/ops/attention.h"
#include "attn/ops/elementwise.h"
#include "attn/parallel.h"
#include "test_support.h"

namespace attn {
namespace {
using testing::gradcheck;
using testing::random_tensor;
using testing::lengths_of;
using testing::leaf;
using testing::tensors_close;

// Forward tolerance: float32 kernels against a double reference.
constexpr float kAtol = 2e-5f;
constexpr float kRtol = 1e-4f;



const char* score_name(LuongScore s) {
  return s == LuongScore::dot ? "dot" : s == LuongScore::general ? "general" : "concat";
}

// ---- independent double-precision references -------------------------------------------------

struct Reference {
  Tensor context;
  Tensor weights;
};

// Masked softmax of per-row scores e(r, s) / τ, then the context; `score(b, r, s)` gives e.
template <class Score>
Reference softmax_context_reference(int64_t B, int64_t T, bool block, int64_t S, const Tensor& values,
                                    const std::vector<int32_t>& lengths, double tau, Score score) {
  const int64_t E = values.dim(2);
  const std::vector<float> val = values.to_vector();
  std::vector<float> ctx(B * T * E, 0.0f), w(B * T * S, 0.0f);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const int64_t r = b * T + t, L = lengths[b];
      std::vector<double> z(S);
      double m = -1e300;
      for (int64_t s = 0; s < L; ++s) m = std::max(m, z[s] = score(b, r, s) / tau);
      double sum = 0;
      for (int64_t s = 0; s < L; ++s) sum += std::exp(z[s] - m);
      for (int64_t j = 0; j < E; ++j) {
        double c = 0;
        for (int64_t s = 0; s < L; ++s) c += std::exp(z[s] - m) / sum * val[(b * S + s) * E + j];
        ctx[r * E + j] = static_cast<float>(c);
      }
      for (int64_t s = 0; s < L; ++s) w[r * S + s] = static_cast<float>(std::exp(z[s] - m) / sum);
    }
  return {Tensor::from_vector(ctx, block ? Shape{B, T, E} : Shape{B, E}),
          Tensor::from_vector(w, block ? Shape{B, T, S} : Shape{B, S})};
}

Reference luong_reference(const Tensor& query, const Tensor& keys, const Tensor& values,
                          const std::vector<int32_t>& lengths, LuongScore kind, const Tensor& w = Tensor(),
                          const Tensor& v = Tensor(), double scale = 1.0, double tau = 1.0) {
  const bool block = query.rank() == 3;
  const int64_t B = query.dim(0), T = block ? query.dim(1) : 1, D = query.dim(-1);
  const int64_t S = keys.dim(1), E = keys.dim(2);
  const std::vector<float> q = query.to_vector(), k = keys.to_vector();
  const std::vector<float> wv = w.defined() ? w.to_vector() : std::vector<float>();
  const std::vector<float> vv = v.defined() ? v.to_vector() : std::vector<float>();
  auto score = [&](int64_t b, int64_t r, int64_t s) {
    const float* qr = &q[r * D];
    const float* ks = &k[(b * S + s) * E];
    double e = 0;
    if (kind == LuongScore::dot) {
      for (int64_t d = 0; d < D; ++d) e += static_cast<double>(qr[d]) * ks[d];
    } else if (kind == LuongScore::general) {
      for (int64_t d = 0; d < D; ++d)
        for (int64_t j = 0; j < E; ++j) e += static_cast<double>(qr[d]) * wv[d * E + j] * ks[j];
    } else {
      const int64_t A = static_cast<int64_t>(vv.size());
      for (int64_t a = 0; a < A; ++a) {
        double h = 0;
        for (int64_t d = 0; d < D; ++d) h += static_cast<double>(wv[a * (D + E) + d]) * qr[d];
        for (int64_t j = 0; j < E; ++j) h += static_cast<double>(wv[a * (D + E) + D + j]) * ks[j];
        e += vv[a] * std::tanh(h);
      }
    }
    return scale * e;
  };
  return softmax_context_reference(B, T, block, S, values, lengths, tau, score);
}

Reference location_reference(const Tensor& query, const Tensor& values, const Tensor& w_a, const Tensor& b_a,
                             const std::vector<int32_t>& lengths, double tau = 1.0) {
  const bool block = query.rank() == 3;
  const int64_t B = query.dim(0), T = block ? query.dim(1) : 1, D = query.dim(-1), S = values.dim(1);
  const std::vector<float> q = query.to_vector(), wa = w_a.to_vector();
  const std::vector<float> ba = b_a.defined() ? b_a.to_vector() : std::vector<float>();
  auto score = [&](int64_t, int64_t r, int64_t s) {
    double e = ba.empty() ? 0.0 : ba[s];
    for (int64_t d = 0; d < D; ++d) e += static_cast<double>(wa[s * D + d]) * q[r * D + d];
    return e;
  };
  return softmax_context_reference(B, T, block, S, values, lengths, tau, score);
}

// ---- inputs -----------------------------------------------------------------------------------------

struct Inputs {
  Tensor query, keys, values, w, v;
  std::vector<int32_t> lengths;
  Tensor len;
};

// T = 0: one-step query (B, D). Parameters for the given score (dot needs D = E).
Inputs make_inputs(LuongScore kind, int64_t B, int64_t T, int64_t S, int64_t D, int64_t E, int64_t A,
                   std::vector<int32_t> lengths, uint64_t seed) {
  Inputs in;
  in.query = leaf(T == 0 ? Shape{B, D} : Shape{B, T, D}, seed + 1);
  in.keys = leaf({B, S, E}, seed + 2);
  in.values = leaf({B, S, E}, seed + 3);
  if (kind == LuongScore::general) in.w = leaf({D, E}, seed + 4);
  if (kind == LuongScore::concat) {
    in.w = leaf({A, D + E}, seed + 4);
    in.v = leaf({A}, seed + 5, -1.5f, 1.5f);
  }
  in.lengths = std::move(lengths);
  in.len = lengths_of(in.lengths);
  return in;
}

LuongOptions options_for(LuongScore kind, const Tensor& w, const Tensor& v, const Tensor& scale = Tensor(),
                         float temperature = 1.0f) {
  LuongOptions o;
  o.score = kind;
  o.w = w;
  o.v = v;
  o.scale = scale;
  o.temperature = temperature;
  return o;
}

AttentionResult run(const Inputs& in, LuongScore kind, const Tensor& scale = Tensor(), float temperature = 1.0f) {
  return luong_attention(in.query, in.keys, in.values, in.len, options_for(kind, in.w, in.v, scale, temperature));
}

const LuongScore kScores[] = {LuongScore::dot, LuongScore::general, LuongScore::concat};

// ---- forward ---------------------------------------------------------------------------------------

TEST(LuongAttention, EveryScoreMatchesReference) {
  for (LuongScore kind : kScores)
    for (int64_t T : {0, 3}) {
      SCOPED_TRACE(std::string(score_name(kind)) + (T == 0 ? " one step" : " block"));
      const int64_t D = kind == LuongScore::dot ? 4 : 3;
      Inputs in = make_inputs(kind, 3, T, 5, D, 4, 6, {5, 2, 1}, 10 + T);
      AttentionResult r = run(in, kind);
      Reference ref = luong_reference(in.query, in.keys, in.values, in.lengths, kind, in.w, in.v);
      EXPECT_EQ(r.context.shape(), T == 0 ? (Shape{3, 4}) : (Shape{3, 3, 4}));
      EXPECT_EQ(r.weights.shape(), T == 0 ? (Shape{3, 5}) : (Shape{3, 3, 5}));
      EXPECT_TRUE(tensors_close(r.weights, ref.weights, kAtol, kRtol));
      EXPECT_TRUE(tensors_close(r.context, ref.context, kAtol, kRtol));
    }
}

TEST(LuongAttention, ScaleAndTemperatureMultiplyTheScores) {
  for (LuongScore kind : kScores)
    for (double scale : {2.5, -0.5, 0.0}) {
      SCOPED_TRACE(std::string(score_name(kind)) + " scale " + std::to_string(scale));
      Inputs in = make_inputs(kind, 2, 2, 4, 3, 3, 4, {4, 3}, 20);
      AttentionResult r = run(in, kind, Tensor::scalar(static_cast<float>(scale)), 0.7f);
      Reference ref = luong_reference(in.query, in.keys, in.values, in.lengths, kind, in.w, in.v, scale, 0.7);
      EXPECT_TRUE(tensors_close(r.weights, ref.weights, kAtol, kRtol));
      EXPECT_TRUE(tensors_close(r.context, ref.context, kAtol, kRtol));
    }
}

TEST(LuongAttention, WeightsSumToOneAndVanishPastLength) {
  for (LuongScore kind : kScores) {
    SCOPED_TRACE(score_name(kind));
    Inputs in = make_inputs(kind, 4, 3, 6, 3, 3, 4, {6, 3, 1, 0}, 30);
    AttentionResult r = run(in, kind);
    const std::vector<float> w = r.weights.to_vector(), c = r.context.to_vector();
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t t = 0; t < 3; ++t) {
        double sum = 0;
        for (int64_t s = 0; s < 6; ++s) {
          const float x = w[(b * 3 + t) * 6 + s];
          ASSERT_FALSE(std::isnan(x));
          if (s >= in.lengths[b]) {
            EXPECT_EQ(x, 0.0f) << "b=" << b << " t=" << t << " s=" << s;
          }
          sum += x;
        }
        EXPECT_NEAR(sum, in.lengths[b] > 0 ? 1.0 : 0.0, 1e-5) << "b=" << b << " t=" << t;
      }
    for (int64_t i = 3 * 3 * 3; i < 4 * 3 * 3; ++i) EXPECT_EQ(c[i], 0.0f);  // length 0: zero context
  }
}

TEST(LuongAttention, LargeScoresStayFinite) {
  // Dot scores of several hundred: the max-subtracted softmax must not overflow.
  Inputs in = make_inputs(LuongScore::dot, 2, 2, 5, 4, 4, 0, {5, 3}, 40);
  in.query = random_tensor({2, 2, 4}, 41, -30.0f, 30.0f).set_requires_grad(true);
  in.keys = random_tensor({2, 5, 4}, 42, -30.0f, 30.0f).set_requires_grad(true);
  AttentionResult r = run(in, LuongScore::dot);
  Reference ref = luong_reference(in.query, in.keys, in.values, in.lengths, LuongScore::dot);
  EXPECT_TRUE(tensors_close(r.weights, ref.weights, 1e-4f, 1e-3f));
  EXPECT_TRUE(tensors_close(r.context, ref.context, 1e-4f, 1e-3f));
  backward(r.context, Tensor::full(r.context.shape(), 1.0f));
  for (const Tensor* t : {&in.query, &in.keys, &in.values})
    for (float x : t->grad().to_vector()) ASSERT_TRUE(std::isfinite(x));
}

TEST(LuongAttention, NeedWeightsFalseAndNoGrad) {
  Inputs in = make_inputs(LuongScore::general, 2, 2, 4, 3, 3, 0, {4, 1}, 50);
  LuongOptions o = options_for(LuongScore::general, in.w, in.v);
  o.need_weights = false;
  AttentionResult r = luong_attention(in.query, in.keys, in.values, in.len, o);
  EXPECT_FALSE(r.weights.defined());
  EXPECT_EQ(r.context.to_vector(), run(in, LuongScore::general).context.to_vector());
  autodiff::tape().clear();
  {
    autodiff::NoGradGuard guard;
    run(in, LuongScore::general);
  }
  EXPECT_EQ(autodiff::tape().size(), 0u);
  run(in, LuongScore::general);
  EXPECT_EQ(autodiff::tape().size(), 1u);  // one fused node
  autodiff::tape().clear();
}

// ---- gradients -------------------------------------------------------------------------------------

struct Case {
  const char* name;
  int64_t B, T, S;  // T = 0: one-step query
  std::vector<int32_t> lengths;
  float temperature;
  bool learned_scale;
};

TEST(LuongAttention, GradcheckEveryInputEveryScore) {
  const std::vector<Case> cases = {
      {"block ragged with a zero row", 3, 2, 4, {4, 2, 0}, 1.0f, false},
      {"one step ragged", 3, 0, 4, {1, 4, 3}, 1.0f, false},
      {"length 1 everywhere", 2, 2, 3, {1, 1}, 1.0f, false},
      {"S = 1", 2, 2, 1, {1, 0}, 1.0f, false},
      {"B = 1 one step", 1, 0, 4, {4}, 1.0f, false},
      {"B = 1 block", 1, 3, 3, {2}, 1.0f, false},
      {"block T 10 (BLAS path)", 2, 10, 4, {4, 3}, 1.0f, false},
      {"temperature 0.5 + learned scale", 2, 2, 4, {4, 3}, 0.5f, true},
      {"learned scale one step", 2, 0, 4, {2, 4}, 1.0f, true},
  };
  uint64_t seed = 100;
  for (LuongScore kind : kScores)
    for (const Case& cs : cases) {
      SCOPED_TRACE(std::string(score_name(kind)) + ": " + cs.name);
      const int64_t D = kind == LuongScore::dot ? 3 : 2, E = 3, A = 3;
      Inputs in = make_inputs(kind, cs.B, cs.T, cs.S, D, E, A, cs.lengths, seed += 10);
      Tensor scale = cs.learned_scale ? Tensor::scalar(1.4f).set_requires_grad(true) : Tensor();
      // Inputs: query, keys, values, then w, v, scale where they exist.
      std::vector<Tensor> inputs = {in.query, in.keys, in.values};
      for (const Tensor& p : {in.w, in.v, scale})
        if (p.defined()) inputs.push_back(p);
      auto fn = [&](bool weights) {
        return [&, weights](const std::vector<Tensor>& x) {
          size_t i = 3;
          Tensor w = in.w.defined() ? x[i++] : Tensor();
          Tensor v = in.v.defined() ? x[i++] : Tensor();
          Tensor sc = scale.defined() ? x[i++] : Tensor();
          AttentionResult r =
              luong_attention(x[0], x[1], x[2], in.len, options_for(kind, w, v, sc, cs.temperature));
          return weights ? r.weights : r.context;
        };
      };
      EXPECT_TRUE(gradcheck(fn(false), inputs)) << "context";
      EXPECT_TRUE(gradcheck(fn(true), inputs)) << "weights";
    }
}

TEST(LuongAttention, GradcheckKeysEqualValues) {
  // The usual Luong setup: the encoder states are both keys and values.
  for (LuongScore kind : kScores) {
    SCOPED_TRACE(score_name(kind));
    Inputs in = make_inputs(kind, 2, 2, 4, 3, 3, 3, {4, 2}, 200);
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& x) {
          return luong_attention(x[0], x[1], x[1], in.len, options_for(kind, in.w, in.v)).context;
        },
        {in.query, in.keys}));
  }
}

TEST(LuongAttention, GradcheckBothOutputsTogether) {
  // E = S so context and weights can be added: gradients from both outputs meet in one node.
  for (LuongScore kind : kScores) {
    SCOPED_TRACE(score_name(kind));
    Inputs in = make_inputs(kind, 2, 3, 3, 3, 3, 4, {3, 2}, 300);
    Tensor scale = Tensor::scalar(0.8f).set_requires_grad(true);
    std::vector<Tensor> inputs = {in.query, in.keys, in.values, scale};
    if (in.w.defined()) inputs.push_back(in.w);
    if (in.v.defined()) inputs.push_back(in.v);
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& x) {
          AttentionResult r = luong_attention(x[0], x[1], x[2], in.len,
                                              options_for(kind, in.w.defined() ? x[4] : Tensor(),
                                                          in.v.defined() ? x[5] : Tensor(), x[3]));
          return add(r.context, r.weights);
        },
        inputs));
  }
}

TEST(LuongAttention, ZeroLengthRowHasZeroGradient) {
  for (LuongScore kind : kScores) {
    SCOPED_TRACE(score_name(kind));
    Inputs in = make_inputs(kind, 3, 2, 4, 4, 4, 3, {3, 0, 4}, 400);
    Tensor scale = Tensor::scalar(1.1f).set_requires_grad(true);
    AttentionResult r = run(in, kind, scale);
    backward(add(r.context, r.weights), random_tensor({3, 2, 4}, 401));
    for (const Tensor* t : {&in.query, &in.keys, &in.values}) {
      const std::vector<float> g = t->grad().to_vector();
      const int64_t n = t->numel() / 3;
      for (int64_t i = n; i < 2 * n; ++i) ASSERT_EQ(g[i], 0.0f) << "flat index " << i;
      for (float x : g) ASSERT_FALSE(std::isnan(x));
    }
    // Keys past the length of row 0 get nothing.
    const std::vector<float> dk = in.keys.grad().to_vector();
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(dk[(0 * 4 + 3) * 4 + j], 0.0f);
    EXPECT_TRUE(std::isfinite(scale.grad().item()));
  }
}

TEST(LuongAttention, IdenticalResultsForAnyThreadCount) {
  for (LuongScore kind : kScores) {
    SCOPED_TRACE(score_name(kind));
    Inputs in = make_inputs(kind, 8, 4, 16, 16, 16, 24, {16, 9, 1, 0, 16, 12, 5, 16}, 500);
    Tensor scale = Tensor::scalar(0.9f).set_requires_grad(true);
    std::vector<Tensor*> params = {&in.query, &in.keys, &in.values, &scale};
    if (in.w.defined()) params.push_back(&in.w);
    if (in.v.defined()) params.push_back(&in.v);
    auto run_all = [&](int threads) {
      set_num_threads(threads);
      for (Tensor* t : params) t->drop_grad();
      AttentionResult r = run(in, kind, scale);
      backward(add(r.context, r.weights), random_tensor(r.context.shape(), 501));
      std::vector<std::vector<float>> out = {r.context.to_vector(), r.weights.to_vector()};
      for (Tensor* t : params) out.push_back(t->grad().to_vector());
      return out;
    };
    const auto one = run_all(1), two = run_all(2), four = run_all(4);
    set_num_threads(0);
    for (size_t i = 0; i < one.size(); ++i) {
      EXPECT_EQ(one[i], two[i]) << "output " << i;
      EXPECT_EQ(one[i], four[i]) << "output " << i;
    }
  }
}

// ---- location ----------------------------------------------------------------------------------------

TEST(LocationAttention, MatchesReference) {
  for (int64_t T : {0, 3})
    for (bool with_bias : {true, false}) {
      SCOPED_TRACE(std::string(T == 0 ? "one step" : "block") + (with_bias ? " with b_a" : " without b_a"));
      const int64_t B = 3, S = 5, S_max = 7, D = 4, E = 3;
      Tensor query = leaf(T == 0 ? Shape{B, D} : Shape{B, T, D}, 600 + T);
      Tensor values = leaf({B, S, E}, 601), w_a = leaf({S_max, D}, 602);
      Tensor b_a = with_bias ? leaf({S_max}, 603) : Tensor();
      const std::vector<int32_t> lengths = {5, 2, 0};
      LocationOptions o;
      o.temperature = 0.6f;
      AttentionResult r = location_attention(query, values, w_a, b_a, lengths_of(lengths), o);
      Reference ref = location_reference(query, values, w_a, b_a, lengths, 0.6);
      EXPECT_TRUE(tensors_close(r.weights, ref.weights, kAtol, kRtol));
      EXPECT_TRUE(tensors_close(r.context, ref.context, kAtol, kRtol));
      const std::vector<float> w = r.weights.to_vector();
      double sum = 0;
      for (int64_t s = 0; s < S; ++s) sum += w[s];
      EXPECT_NEAR(sum, 1.0, 1e-5);
    }
}

TEST(LocationAttention, GradcheckEveryInput) {
  const std::vector<Case> cases = {
      {"block ragged with a zero row", 3, 2, 4, {4, 2, 0}, 1.0f, false},
      {"one step", 3, 0, 4, {1, 4, 3}, 1.0f, false},
      {"S = 1", 2, 2, 1, {1, 0}, 1.0f, false},
      {"B = 1 S = S_max", 1, 2, 5, {5}, 1.0f, false},
      {"temperature 0.5", 2, 0, 3, {3, 2}, 0.5f, false},
  };
  uint64_t seed = 700;
  for (const Case& cs : cases)
    for (bool with_bias : {true, false}) {
      SCOPED_TRACE(std::string(cs.name) + (with_bias ? " with b_a" : " without b_a"));
      const int64_t D = 3, E = 2, S_max = 5;
      Tensor query = leaf(cs.T == 0 ? Shape{cs.B, D} : Shape{cs.B, cs.T, D}, seed += 10);
      Tensor values = leaf({cs.B, cs.S, E}, seed + 1), w_a = leaf({S_max, D}, seed + 2);
      Tensor b_a = leaf({S_max}, seed + 3);
      std::vector<Tensor> inputs = {query, values, w_a};
      if (with_bias) inputs.push_back(b_a);
      Tensor len = lengths_of(cs.lengths);
      auto fn = [&](bool weights) {
        return [&, weights](const std::vector<Tensor>& x) {
          LocationOptions o;
          o.temperature = cs.temperature;
          AttentionResult r = location_attention(x[0], x[1], x[2], with_bias ? x[3] : Tensor(), len, o);
          return weights ? r.weights : r.context;
        };
      };
      EXPECT_TRUE(gradcheck(fn(false), inputs)) << "context";
      EXPECT_TRUE(gradcheck(fn(true), inputs)) << "weights";
    }
}

TEST(LocationAttention, RowsPastSGetNoGradient) {
  Tensor query = leaf({2, 3}, 800), values = leaf({2, 3, 2}, 801), w_a = leaf({6, 3}, 802), b_a = leaf({6}, 803);
  AttentionResult r = location_attention(query, values, w_a, b_a, lengths_of({3, 2}));
  backward(r.context, random_tensor(r.context.shape(), 804));
  const std::vector<float> dw = w_a.grad().to_vector(), db = b_a.grad().to_vector();
  for (int64_t i = 3 * 3; i < 6 * 3; ++i) EXPECT_EQ(dw[i], 0.0f) << "w_a flat index " << i;
  for (int64_t s = 3; s < 6; ++s) EXPECT_EQ(db[s], 0.0f) << "b_a index " << s;
  EXPECT_NE(db[0], 0.0f);
  // Position 2 is masked in row 1 (length 2) but real in row 0 (length 3).
  EXPECT_NE(db[2], 0.0f);
}

TEST(LocationAttention, IdenticalResultsForAnyThreadCount) {
  Tensor query = leaf({8, 4, 16}, 900), values = leaf({8, 16, 16}, 901), w_a = leaf({20, 16}, 902),
         b_a = leaf({20}, 903);
  Tensor len = lengths_of({16, 9, 1, 0, 16, 12, 5, 16});
  auto run_all = [&](int threads) {
    set_num_threads(threads);
    for (Tensor* t : {&query, &values, &w_a, &b_a}) t->drop_grad();
    AttentionResult r = location_attention(query, values, w_a, b_a, len);
    backward(add(r.context, r.weights), random_tensor(r.context.shape(), 904));
    std::vector<std::vector<float>> out = {r.context.to_vector(), r.weights.to_vector()};
    for (Tensor* t : {&query, &values, &w_a, &b_a}) out.push_back(t->grad().to_vector());
    return out;
  };
  const auto one = run_all(1), two = run_all(2);
  set_num_threads(0);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(one[i], two[i]) << "output " << i;
}

// ---- errors ----------------------------------------------------------------------------------------

TEST(LuongAttention, ShapeErrors) {
  Tensor q8 = Tensor::zeros({2, 8}), k16 = Tensor::zeros({2, 4, 16}), len = lengths_of({4, 2});
  EXPECT_THROW_MSG(luong_attention(q8, k16, k16, len), ShapeError,
                   "luong_attention(dot): query size D=8 must equal key size E=16");
  EXPECT_THROW_MSG(luong_attention(Tensor::zeros({2, 3, 4, 8}), k16, k16, len), ShapeError,
                   "luong_attention(dot): 'query' expected (B, D) or (B, T, D), got (2, 3, 4, 8)");
  EXPECT_THROW_MSG(luong_attention(q8, Tensor::zeros({3, 4, 8}), k16, len), ShapeError,
                   "luong_attention(dot): 'keys' expected (B=2, S, E), got (3, 4, 8)");
  EXPECT_THROW_MSG(luong_attention(Tensor::zeros({2, 3}), Tensor::zeros({2, 4, 3}), Tensor::zeros({2, 4, 5}), len),
                   ShapeError, "luong_attention(dot): 'values' expected (B=2, S=4, E=3), got (2, 4, 5)");
  Tensor q3 = Tensor::zeros({2, 5, 3}), k4 = Tensor::zeros({2, 4, 4});
  EXPECT_THROW_MSG(luong_attention(q3, k4, k4, len, options_for(LuongScore::general, Tensor::zeros({4, 3}), Tensor())),
                   ShapeError, "luong_attention(general): 'w' expected (D=3, E=4), got (4, 3)");
  EXPECT_THROW_MSG(luong_attention(q3, k4, k4, len, options_for(LuongScore::general, Tensor(), Tensor())), ShapeError,
                   "luong_attention(general): 'w' expected (D=3, E=4), got an undefined tensor");
  EXPECT_THROW_MSG(
      luong_attention(q3, k4, k4, len, options_for(LuongScore::concat, Tensor::zeros({5, 6}), Tensor::zeros({5}))),
      ShapeError, "luong_attention(concat): 'w' expected (A, D+E=7), got (5, 6)");
  EXPECT_THROW_MSG(luong_attention(q3, k4, k4, len, options_for(LuongScore::concat, Tensor(), Tensor::zeros({5}))),
                   ShapeError, "luong_attention(concat): 'w' expected (A, D+E=7), got an undefined tensor");
  EXPECT_THROW_MSG(
      luong_attention(q3, k4, k4, len, options_for(LuongScore::concat, Tensor::zeros({5, 7}), Tensor::zeros({4}))),
      ShapeError, "luong_attention(concat): 'v' expected (A=5), got (4)");
  EXPECT_THROW_MSG(luong_attention(Tensor::zeros({1, 4, 4}), Tensor::zeros({1, 3, 4}),
                                   Tensor::zeros({1, 3, 4}), lengths_of({3}),
                                   options_for(LuongScore::dot, Tensor(), Tensor(), Tensor::zeros({1}))),
                   ShapeError, "luong_attention(dot): 'scale' expected (), got (1)");
  EXPECT_THROW_MSG(luong_attention(q3, k4, k4, Tensor::zeros({2}, DType::i32).reshape({2, 1}),
                                   options_for(LuongScore::general, Tensor::zeros({3, 4}), Tensor())),
                   ShapeError, "luong_attention(general): 'lengths' expected (B=2), got (2, 1)");
}

TEST(LuongAttention, ValueErrors) {
  Tensor q = Tensor::zeros({2, 4}), k = Tensor::zeros({2, 3, 4});
  EXPECT_THROW_MSG(luong_attention(q, k, k, lengths_of({3, 4})), ValueError,
                   "luong_attention(dot): 'lengths' value 4 at batch index 1 is out of range [0, S=3]");
  EXPECT_THROW_MSG(luong_attention(q, k, k, lengths_of({-2, 1})), ValueError,
                   "luong_attention(dot): 'lengths' value -2 at batch index 0 is out of range [0, S=3]");
  EXPECT_THROW_MSG(luong_attention(q, k, k, lengths_of({3, 1}), options_for(LuongScore::dot, Tensor(), Tensor(),
                                                                             Tensor(), 0.0f)),
                   ValueError, "luong_attention(dot): temperature must be finite and > 0, got 0");
  EXPECT_THROW_MSG(luong_attention(q, k, k, lengths_of({3, 1}),
                                   options_for(LuongScore::dot, Tensor::zeros({4, 4}), Tensor())),
                   ValueError, "luong_attention(dot): 'w' is not used by this score; leave it undefined");
  EXPECT_THROW_MSG(luong_attention(q, k, k, lengths_of({3, 1}),
                                   options_for(LuongScore::general, Tensor::zeros({4, 4}), Tensor::zeros({4}))),
                   ValueError, "luong_attention(general): 'v' is not used by this score; leave it undefined");
  LuongOptions bad;
  bad.score = static_cast<LuongScore>(7);
  EXPECT_THROW_MSG(luong_attention(q, k, k, lengths_of({3, 1}), bad), ValueError,
                   "luong_attention: unknown score function 7");
}

TEST(LocationAttention, Errors) {
  Tensor q = Tensor::zeros({2, 3}), values = Tensor::zeros({2, 9, 2}), len = lengths_of({9, 1});
  EXPECT_THROW_MSG(location_attention(q, values, Tensor::zeros({7, 3}), Tensor(), len), ValueError,
                   "location_attention: source length S=9 exceeds S_max=7 of 'w_a'");
  EXPECT_THROW_MSG(location_attention(q, values, Tensor::zeros({9, 4}), Tensor(), len), ShapeError,
                   "location_attention: 'w_a' expected (S_max, D=3), got (9, 4)");
  EXPECT_THROW_MSG(location_attention(q, values, Tensor::zeros({9, 3}), Tensor::zeros({8}), len), ShapeError,
                   "location_attention: 'b_a' expected (S_max=9), got (8)");
  EXPECT_THROW_MSG(location_attention(q, values, Tensor::zeros({9, 3}), Tensor(), lengths_of({10, 1})), ValueError,
                   "location_attention: 'lengths' value 10 at batch index 0 is out of range [0, S=9]");
  LocationOptions o;
  o.temperature = -1.0f;
  EXPECT_THROW_MSG(location_attention(q, values, Tensor::zeros({9, 3}), Tensor(), len, o), ValueError,
                   "location_attention: temperature must be finite and > 0, got -1");
}

}  // namespace
}  // namespace attn
