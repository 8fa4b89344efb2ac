// Luong attention (dot, general, concat, scaled) and Luong location attention: forward
// against independent double-precision references, gradient checks for every input (one
// step and block queries, ragged / zero / unit lengths, S = 1, B = 1, temperature, learned
// scale), determinism across thread counts, and the error messages.
// The forward and gradient cases and the bad inputs are rows of case tables (support/op_table.h).
#include <algorithm>
#include <cmath>
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

const char* score_name(LuongScore s) {
  return s == LuongScore::dot ? "dot" : s == LuongScore::general ? "general" : "concat";
}

// ---- independent double-precision references -------------------------------------------------

// Masked softmax of per-row scores e(r, s) / τ, then the context; `score(b, r, s)` gives e.
template <class Score>
AttentionResult softmax_context_reference(int64_t B, int64_t T, bool block, int64_t S, const Tensor& values,
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

AttentionResult luong_reference(const Tensor& query, const Tensor& keys, const Tensor& values,
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

AttentionResult location_reference(const Tensor& query, const Tensor& values, const Tensor& w_a, const Tensor& b_a,
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

struct Inputs : AttentionInputs {
  using AttentionInputs::AttentionInputs;
  Tensor w, v;
};

// T = 0: one-step query (B, D). Parameters for the given score (dot needs D = E).
Inputs make_inputs(LuongScore kind, int64_t B, int64_t T, int64_t S, int64_t D, int64_t E, int64_t A,
                   std::vector<int32_t> lengths, uint64_t seed) {
  Inputs in(B, T, S, D, E, std::move(lengths), seed);
  if (kind == LuongScore::general) in.w = leaf({D, E}, seed + 4);
  if (kind == LuongScore::concat) {
    in.w = leaf({A, D + E}, seed + 4);
    in.v = leaf({A}, seed + 5, -1.5f, 1.5f);
  }
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

TEST(LuongAttention, WeightsSumToOneAndVanishPastLength) {
  for (LuongScore kind : kScores) {
    SCOPED_TRACE(score_name(kind));
    Inputs in = make_inputs(kind, 4, 3, 6, 3, 3, 4, {6, 3, 1, 0}, 30);
    AttentionResult r = run(in, kind);
    expect_masked_rows(r.weights, in.lengths, false);
    const std::vector<float> c = r.context.to_vector();
    for (int64_t i = 3 * 3 * 3; i < 4 * 3 * 3; ++i) EXPECT_EQ(c[i], 0.0f);  // length 0: zero context
  }
}

TEST(LuongAttention, LargeScoresStayFinite) {
  // Dot scores of several hundred: the max-subtracted softmax must not overflow.
  Inputs in = make_inputs(LuongScore::dot, 2, 2, 5, 4, 4, 0, {5, 3}, 40);
  in.query = random_tensor({2, 2, 4}, 41, -30.0f, 30.0f).set_requires_grad(true);
  in.keys = random_tensor({2, 5, 4}, 42, -30.0f, 30.0f).set_requires_grad(true);
  AttentionResult r = run(in, LuongScore::dot);
  AttentionResult ref = luong_reference(in.query, in.keys, in.values, in.lengths, LuongScore::dot);
  EXPECT_TRUE(tensors_close(r.weights, ref.weights, kLargeScoreTol));
  EXPECT_TRUE(tensors_close(r.context, ref.context, kLargeScoreTol));
  expect_finite_gradients(r.context, {in.query, in.keys, in.values});
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

// ---- the case table: forward against the reference, gradient checks ---------------------------------

// One row's setup. Its inputs: query, keys, values, then w and v where the score has them, then
// the scale where it is learned (a leaf); a fixed scale is an option, not an input.
struct LuongCase {
  LuongScore kind;
  int64_t B, T, S, D, E, A;  // T = 0: one-step query
  std::vector<int32_t> lengths;
  uint64_t seed;
  float temperature = 1.0f;
  float scale = 1.0f;  // with has_scale
  bool has_scale = false;
  bool learned_scale = false;
};

Tensors luong_inputs(const LuongCase& c) {
  Inputs in = make_inputs(c.kind, c.B, c.T, c.S, c.D, c.E, c.A, c.lengths, c.seed);
  Tensors x = {in.query, in.keys, in.values};
  for (const Tensor& p : {in.w, in.v})
    if (p.defined()) x.push_back(p);
  if (c.learned_scale) x.push_back(Tensor::scalar(c.scale).set_requires_grad(true));
  return x;
}

AttentionResult luong_on(const LuongCase& c, const Tensors& x) {
  size_t i = 3;
  const Tensor w = c.kind != LuongScore::dot ? x[i++] : Tensor();
  const Tensor v = c.kind == LuongScore::concat ? x[i++] : Tensor();
  const Tensor scale = c.learned_scale ? x[i++] : c.has_scale ? Tensor::scalar(c.scale) : Tensor();
  return luong_attention(x[0], x[1], x[2], lengths_of(c.lengths), options_for(c.kind, w, v, scale, c.temperature));
}

// Context and weights, from luong_attention or from the reference.
OpRow luong_row(const std::string& name, const LuongCase& c, bool reference, bool gradcheck) {
  return attention_row(
      std::string(score_name(c.kind)) + "_" + row_name_of(name), [c] { return luong_inputs(c); },
      [c](const Tensors& x) { return luong_on(c, x); },
      [c](const Tensors& x) {
        const Tensor w = c.kind != LuongScore::dot ? x[3] : Tensor();
        const Tensor v = c.kind == LuongScore::concat ? x[4] : Tensor();
        return luong_reference(x[0], x[1], x[2], c.lengths, c.kind, w, v, c.has_scale ? c.scale : 1.0, c.temperature);
      },
      reference, gradcheck);
}

std::vector<OpRow> luong_rows() {
  std::vector<OpRow> rows;
  for (LuongScore kind : kScores)
    for (int64_t T : {0, 3}) {
      const int64_t D = kind == LuongScore::dot ? 4 : 3;
      const LuongCase c{kind, 3, T, 5, D, 4, 6, {5, 2, 1}, static_cast<uint64_t>(10 + T)};
      rows.push_back(luong_row(T == 0 ? "one step" : "block", c, true, false));
    }
  // The scale and the temperature multiply the scores.
  const std::pair<float, const char*> scales[] = {{2.5f, "scale 2.5"}, {-0.5f, "scale minus 0.5"}, {0.0f, "scale 0"}};
  for (LuongScore kind : kScores)
    for (const auto& [scale, name] : scales) {
      const LuongCase c{kind, 2, 2, 4, 3, 3, 4, {4, 3}, 20, 0.7f, scale, true};
      rows.push_back(luong_row(std::string(name) + " temperature 0.7", c, true, false));
    }
  // Every input's gradient, both outputs.
  const std::pair<AttentionCase, bool> cases[] = {
      // the batch, and whether the scale is learned
      {{"block ragged with a zero row", 3, 2, 4, {4, 2, 0}, 1.0f}, false},
      {{"one step ragged", 3, 0, 4, {1, 4, 3}, 1.0f}, false},
      {{"length 1 everywhere", 2, 2, 3, {1, 1}, 1.0f}, false},
      {{"S = 1", 2, 2, 1, {1, 0}, 1.0f}, false},
      {{"B = 1 one step", 1, 0, 4, {4}, 1.0f}, false},
      {{"B = 1 block", 1, 3, 3, {2}, 1.0f}, false},
      {{"block T 10 (BLAS path)", 2, 10, 4, {4, 3}, 1.0f}, false},
      {{"temperature 0.5 + learned scale", 2, 2, 4, {4, 3}, 0.5f}, true},
      {{"learned scale one step", 2, 0, 4, {2, 4}, 1.0f}, true},
  };
  uint64_t seed = 100;
  for (LuongScore kind : kScores)
    for (const auto& [g, learned] : cases) {
      const int64_t D = kind == LuongScore::dot ? 3 : 2;
      const LuongCase c{kind, g.B, g.T, g.S, D, 3, 3, g.lengths, seed += 10, g.temperature, 1.4f, learned, learned};
      rows.push_back(luong_row("gradcheck " + std::string(g.name), c, true, true));
    }
  for (LuongScore kind : kScores) {
    // The usual Luong setup: the encoder states are both keys and values (inputs without values).
    const LuongCase c{kind, 2, 2, 4, 3, 3, 3, {4, 2}, 200};
    OpRow row = luong_row("gradcheck keys equal values", c, false, true);
    row.inputs = [c] {
      Tensors x = luong_inputs(c);
      x.erase(x.begin() + 2);
      return x;
    };
    row.op = [c](const Tensors& x) {
      Tensors with_values = x;
      with_values.insert(with_values.begin() + 2, x[1]);
      return Tensors{luong_on(c, with_values).context};
    };
    row.outputs = {"context"};
    rows.push_back(row);
  }
  for (LuongScore kind : kScores) {
    // E = S so context and weights can be added: gradients from both outputs meet in one node.
    const LuongCase c{kind, 2, 3, 3, 3, 3, 4, {3, 2}, 300, 1.0f, 0.8f, true, true};
    OpRow row = luong_row("gradcheck both outputs together", c, false, true);
    row.op = [c](const Tensors& x) {
      const AttentionResult r = luong_on(c, x);
      return Tensors{add(r.context, r.weights)};
    };
    row.outputs = {"context + weights"};
    rows.push_back(row);
  }
  return rows;
}

INSTANTIATE_TEST_SUITE_P(LuongAttention, OpTable, ::testing::ValuesIn(luong_rows()), row_name);

TEST(LuongAttention, ZeroLengthRowHasZeroGradient) {
  for (LuongScore kind : kScores) {
    SCOPED_TRACE(score_name(kind));
    Inputs in = make_inputs(kind, 3, 2, 4, 4, 4, 3, {3, 0, 4}, 400);
    Tensor scale = Tensor::scalar(1.1f).set_requires_grad(true);
    AttentionResult r = run(in, kind, scale);
    backward(add(r.context, r.weights), random_tensor({3, 2, 4}, 401));
    expect_batch_row_gets_no_gradient({in.query, in.keys, in.values}, 1);
    // Keys past the length of row 0 get nothing.
    const std::vector<float> dk = in.keys.grad().to_vector();
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(dk[(0 * 4 + 3) * 4 + j], 0.0f);
    EXPECT_TRUE(std::isfinite(scale.grad().item()));
  }
}

TEST(LuongAttention, IdenticalResultsForAnyThreadCount) {
  for (LuongScore kind : kScores) {
    SCOPED_TRACE(score_name(kind));
    const LuongCase c{kind, 8, 4, 16, 16, 16, 24, {16, 9, 1, 0, 16, 12, 5, 16}, 500, 1.0f, 0.9f, true, true};
    expect_identical_across_threads(
        luong_inputs(c),
        [&](const Tensors& x) {
          const AttentionResult r = luong_on(c, x);
          return Tensors{add(r.context, r.weights), r.context, r.weights};
        },
        501);
  }
}

// ---- location ----------------------------------------------------------------------------------------

// One row's setup. Its inputs: query, values, w_a, then b_a where there is one.
struct LocationCase {
  int64_t B, T, S, D, E, S_max;  // T = 0: one-step query
  std::vector<int32_t> lengths;
  uint64_t query_seed, seed;  // values, w_a, b_a: seed + 1, + 2, + 3
  bool with_bias;
  float temperature;
};

OpRow location_row(const std::string& name, const LocationCase& c, bool reference, bool gradcheck) {
  auto inputs = [c] {
    Tensors x = {leaf(c.T == 0 ? Shape{c.B, c.D} : Shape{c.B, c.T, c.D}, c.query_seed),
                 leaf({c.B, c.S, c.E}, c.seed + 1), leaf({c.S_max, c.D}, c.seed + 2)};
    if (c.with_bias) x.push_back(leaf({c.S_max}, c.seed + 3));
    return x;
  };
  auto op = [c](const Tensors& x) {
    LocationOptions o;
    o.temperature = c.temperature;
    return location_attention(x[0], x[1], x[2], c.with_bias ? x[3] : Tensor(), lengths_of(c.lengths), o);
  };
  auto ref = [c](const Tensors& x) {
    return location_reference(x[0], x[1], x[2], c.with_bias ? x[3] : Tensor(), c.lengths, c.temperature);
  };
  return attention_row(row_name_of(name) + (c.with_bias ? "_with_b_a" : "_without_b_a"), inputs, op, ref, reference,
                       gradcheck);
}

std::vector<OpRow> location_rows() {
  std::vector<OpRow> rows;
  for (int64_t T : {0, 3})
    for (bool with_bias : {true, false}) {
      const LocationCase c{3, T, 5, 4, 3, 7, {5, 2, 0}, static_cast<uint64_t>(600 + T), 600, with_bias, 0.6f};
      OpRow row = location_row(T == 0 ? "one step" : "block", c, true, false);
      row.properties = [](const Tensors&, const Tensors& out) {
        const std::vector<float> w = out[1].to_vector();
        double sum = 0;
        for (int64_t s = 0; s < 5; ++s) sum += w[s];
        EXPECT_NEAR(sum, 1.0, 1e-5) << "the weights of the first row";
      };
      rows.push_back(row);
    }
  const AttentionCase cases[] = {
      {"block ragged with a zero row", 3, 2, 4, {4, 2, 0}, 1.0f},
      {"one step", 3, 0, 4, {1, 4, 3}, 1.0f},
      {"S = 1", 2, 2, 1, {1, 0}, 1.0f},
      {"B = 1 S = S_max", 1, 2, 5, {5}, 1.0f},
      {"temperature 0.5", 2, 0, 3, {3, 2}, 0.5f},
  };
  uint64_t seed = 700;
  for (const AttentionCase& g : cases)
    for (bool with_bias : {true, false}) {
      seed += 10;
      const LocationCase c{g.B, g.T, g.S, 3, 2, 5, g.lengths, seed, seed, with_bias, g.temperature};
      rows.push_back(location_row("gradcheck " + std::string(g.name), c, false, true));
    }
  return rows;
}

INSTANTIATE_TEST_SUITE_P(LocationAttention, OpTable, ::testing::ValuesIn(location_rows()), row_name);

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
  const Tensor len = lengths_of({16, 9, 1, 0, 16, 12, 5, 16});
  expect_identical_across_threads({leaf({8, 4, 16}, 900), leaf({8, 16, 16}, 901), leaf({20, 16}, 902), leaf({20}, 903)},
                                  [&](const Tensors& x) {
                                    const AttentionResult r = location_attention(x[0], x[1], x[2], x[3], len);
                                    return Tensors{add(r.context, r.weights), r.context, r.weights};
                                  },
                                  904, {1, 2});
}

// ---- errors ----------------------------------------------------------------------------------------

std::vector<BadRow> luong_bad_inputs() {
  const Tensor q8 = Tensor::zeros({2, 8}), k16 = Tensor::zeros({2, 4, 16}), len = lengths_of({4, 2});
  const Tensor q3 = Tensor::zeros({2, 5, 3}), k4 = Tensor::zeros({2, 4, 4});
  const Tensor q = Tensor::zeros({2, 4}), k = Tensor::zeros({2, 3, 4});
  auto general = [](const Tensor& w) { return options_for(LuongScore::general, w, Tensor()); };
  auto concat = [](const Tensor& w, const Tensor& v) { return options_for(LuongScore::concat, w, v); };
  LuongOptions unknown;
  unknown.score = static_cast<LuongScore>(7);
  const Throws shape = Throws::shape_error, value = Throws::value_error;
  return {
      {"dot_query_size_differs_from_key_size", [=] { luong_attention(q8, k16, k16, len); }, shape,
       "luong_attention(dot): query size D=8 must equal key size E=16"},
      {"query_rank_4",
       [=] {
         luong_attention(Tensor::zeros({2, 3, 4, 8}), k16, k16, len);
       },
       shape, "luong_attention(dot): 'query' expected (B, D) or (B, T, D), got (2, 3, 4, 8)"},
      {"keys_batch",
       [=] {
         luong_attention(q8, Tensor::zeros({3, 4, 8}), k16, len);
       },
       shape, "luong_attention(dot): 'keys' expected (B=2, S, E), got (3, 4, 8)"},
      {"values_size",
       [=] {
         luong_attention(Tensor::zeros({2, 3}), Tensor::zeros({2, 4, 3}), Tensor::zeros({2, 4, 5}), len);
       },
       shape, "luong_attention(dot): 'values' expected (B=2, S=4, E=3), got (2, 4, 5)"},
      {"general_w_transposed",
       [=] {
         luong_attention(q3, k4, k4, len, general(Tensor::zeros({4, 3})));
       },
       shape, "luong_attention(general): 'w' expected (D=3, E=4), got (4, 3)"},
      {"general_w_undefined", [=] { luong_attention(q3, k4, k4, len, general(Tensor())); }, shape,
       "luong_attention(general): 'w' expected (D=3, E=4), got an undefined tensor"},
      {"concat_w_width",
       [=] {
         luong_attention(q3, k4, k4, len, concat(Tensor::zeros({5, 6}), Tensor::zeros({5})));
       },
       shape, "luong_attention(concat): 'w' expected (A, D+E=7), got (5, 6)"},
      {"concat_w_undefined", [=] { luong_attention(q3, k4, k4, len, concat(Tensor(), Tensor::zeros({5}))); }, shape,
       "luong_attention(concat): 'w' expected (A, D+E=7), got an undefined tensor"},
      {"concat_v_size",
       [=] {
         luong_attention(q3, k4, k4, len, concat(Tensor::zeros({5, 7}), Tensor::zeros({4})));
       },
       shape, "luong_attention(concat): 'v' expected (A=5), got (4)"},
      {"scale_not_a_scalar",
       [=] {
         luong_attention(Tensor::zeros({1, 4, 4}), Tensor::zeros({1, 3, 4}), Tensor::zeros({1, 3, 4}), lengths_of({3}),
                         options_for(LuongScore::dot, Tensor(), Tensor(), Tensor::zeros({1})));
       },
       shape, "luong_attention(dot): 'scale' expected (), got (1)"},
      {"lengths_2d",
       [=] {
         luong_attention(q3, k4, k4, Tensor::zeros({2}, DType::i32).reshape({2, 1}), general(Tensor::zeros({3, 4})));
       },
       shape, "luong_attention(general): 'lengths' expected (B=2), got (2, 1)"},
      {"length_past_S",
       [=] {
         luong_attention(q, k, k, lengths_of({3, 4}));
       },
       value, "luong_attention(dot): 'lengths' value 4 at batch index 1 is out of range [0, S=3]"},
      {"negative_length",
       [=] {
         luong_attention(q, k, k, lengths_of({-2, 1}));
       },
       value, "luong_attention(dot): 'lengths' value -2 at batch index 0 is out of range [0, S=3]"},
      {"temperature_0",
       [=] {
         luong_attention(q, k, k, lengths_of({3, 1}), options_for(LuongScore::dot, Tensor(), Tensor(), Tensor(), 0.0f));
       },
       value, "luong_attention(dot): temperature must be finite and > 0, got 0"},
      {"dot_given_w",
       [=] {
         luong_attention(q, k, k, lengths_of({3, 1}), options_for(LuongScore::dot, Tensor::zeros({4, 4}), Tensor()));
       },
       value, "luong_attention(dot): 'w' is not used by this score; leave it undefined"},
      {"general_given_v",
       [=] {
         luong_attention(q, k, k, lengths_of({3, 1}),
                         options_for(LuongScore::general, Tensor::zeros({4, 4}), Tensor::zeros({4})));
       },
       value, "luong_attention(general): 'v' is not used by this score; leave it undefined"},
      {"unknown_score",
       [=] {
         luong_attention(q, k, k, lengths_of({3, 1}), unknown);
       },
       value, "luong_attention: unknown score function 7"},
  };
}

INSTANTIATE_TEST_SUITE_P(LuongAttention, BadInput, ::testing::ValuesIn(luong_bad_inputs()), row_name);

std::vector<BadRow> location_bad_inputs() {
  const Tensor q = Tensor::zeros({2, 3}), values = Tensor::zeros({2, 9, 2}), len = lengths_of({9, 1});
  LocationOptions cold;
  cold.temperature = -1.0f;
  const Throws shape = Throws::shape_error, value = Throws::value_error;
  return {
      {"S_past_S_max",
       [=] {
         location_attention(q, values, Tensor::zeros({7, 3}), Tensor(), len);
       },
       value, "location_attention: source length S=9 exceeds S_max=7 of 'w_a'"},
      {"w_a_width",
       [=] {
         location_attention(q, values, Tensor::zeros({9, 4}), Tensor(), len);
       },
       shape, "location_attention: 'w_a' expected (S_max, D=3), got (9, 4)"},
      {"b_a_size",
       [=] {
         location_attention(q, values, Tensor::zeros({9, 3}), Tensor::zeros({8}), len);
       },
       shape, "location_attention: 'b_a' expected (S_max=9), got (8)"},
      {"length_past_S",
       [=] {
         location_attention(q, values, Tensor::zeros({9, 3}), Tensor(), lengths_of({10, 1}));
       },
       value, "location_attention: 'lengths' value 10 at batch index 0 is out of range [0, S=9]"},
      {"negative_temperature",
       [=] {
         location_attention(q, values, Tensor::zeros({9, 3}), Tensor(), len, cold);
       },
       value, "location_attention: temperature must be finite and > 0, got -1"},
  };
}

INSTANTIATE_TEST_SUITE_P(LocationAttention, BadInput, ::testing::ValuesIn(location_bad_inputs()), row_name);

}  // namespace
}  // namespace attn
