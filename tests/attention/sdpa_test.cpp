#include "attn/ops/sdpa.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/memory.h"
#include "attn/ops/softmax.h"
#include "attn/parallel.h"
#include "attn/random.h"
#include "kernels/sdpa.h"
#include "test_support.h"
#include "tolerances.h"

namespace attn {
namespace {
using namespace attn::testing;  // the helpers of tests/support
// Forward values: kTiledTol (float32 against a double reference); gradients: kGradTol (they
// sum O(S) or O(T) float terms).

constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor ints(const std::vector<int32_t>& values, const Shape& shape) { return Tensor::from_vector(values, shape); }

bool all_finite(const Tensor& t) {
  if (!t.defined()) return true;
  for (float x : t.to_vector())
    if (!std::isfinite(x)) return false;
  return true;
}

bool bit_identical(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.shape() != b.shape()) return false;
  return std::memcmp(a.f32(), b.f32(), static_cast<size_t>(a.numel()) * sizeof(float)) == 0;
}

// ---------------------------------------------------------------------------------------
// Naive reference in double precision: materialised scores, explicit masks, softmax, and
// the textbook gradients. dout / dweights may be undefined (then no gradients from them).
struct Reference {
  Tensor out, weights, dq, dk, dv;
};

Reference reference(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaOptions& o,
                    const Tensor& dout = Tensor(), const Tensor& dweights = Tensor()) {
  const int64_t B = q.dim(0), H = q.dim(1), T = q.dim(2), Dh = q.dim(3), S = k.dim(2), Dv = v.dim(3);
  const double scale = (o.scale != 0.0f ? o.scale : 1.0 / std::sqrt(static_cast<double>(Dh))) / o.temperature;
  const std::vector<float> qv = q.to_vector(), kv = k.to_vector(), vv = v.to_vector();
  const std::vector<float> bias = o.bias.defined() ? o.bias.to_vector() : std::vector<float>();
  const std::vector<int32_t> len = o.key_lengths.defined() ? o.key_lengths.to_vector_i32() : std::vector<int32_t>();
  const std::vector<int32_t> pad =
      o.key_padding_mask.defined() ? o.key_padding_mask.to_vector_i32() : std::vector<int32_t>();
  const std::vector<float> go = dout.defined() ? dout.to_vector() : std::vector<float>();
  const std::vector<float> gw = dweights.defined() ? dweights.to_vector() : std::vector<float>();
  std::vector<double> out(B * H * T * Dv, 0.0), w(B * H * T * S, 0.0), dq(q.numel(), 0.0), dk(k.numel(), 0.0),
      dv(v.numel(), 0.0);
  std::vector<double> s(S);
  std::vector<bool> keep(S);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t bh = b * H + h;
        const float* qr = &qv[(bh * T + t) * Dh];
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < S; ++j) {
          keep[j] =
              (len.empty() || j < len[b]) && (pad.empty() || pad[b * S + j] != 0) && (!o.causal || j <= t + (S - T));
          double acc = 0.0;
          for (int64_t d = 0; d < Dh; ++d) acc += static_cast<double>(qr[d]) * kv[(bh * S + j) * Dh + d];
          s[j] = scale * acc + (bias.empty() ? 0.0 : bias[t * S + j]);
          if (std::isinf(s[j]) && s[j] < 0) keep[j] = false;
          if (keep[j]) mx = std::max(mx, s[j]);
        }
        if (std::isinf(mx)) continue;  // fully masked: zeros everywhere
        double sum = 0.0;
        for (int64_t j = 0; j < S; ++j) sum += keep[j] ? std::exp(s[j] - mx) : 0.0;
        double* wr = &w[(bh * T + t) * S];
        for (int64_t j = 0; j < S; ++j) wr[j] = keep[j] ? std::exp(s[j] - mx) / sum : 0.0;
        for (int64_t j = 0; j < S; ++j)
          for (int64_t d = 0; d < Dv; ++d) out[(bh * T + t) * Dv + d] += wr[j] * vv[(bh * S + j) * Dv + d];
        if (go.empty() && gw.empty()) continue;
        // dP = dO vᵀ + dW, dS = P ⊙ (dP - Σ P dP), dq = scale dS k, dk = scale dSᵀ q, dv = Pᵀ dO
        std::vector<double> dp(S, 0.0);
        double D = 0.0;
        for (int64_t j = 0; j < S; ++j) {
          if (!go.empty())
            for (int64_t d = 0; d < Dv; ++d) dp[j] += go[(bh * T + t) * Dv + d] * vv[(bh * S + j) * Dv + d];
          if (!gw.empty()) dp[j] += gw[(bh * T + t) * S + j];
          D += wr[j] * dp[j];
        }
        for (int64_t j = 0; j < S; ++j) {
          const double ds = wr[j] * (dp[j] - D);
          for (int64_t d = 0; d < Dh; ++d) {
            dq[(bh * T + t) * Dh + d] += scale * ds * kv[(bh * S + j) * Dh + d];
            dk[(bh * S + j) * Dh + d] += scale * ds * qr[d];
          }
          if (!go.empty())
            for (int64_t d = 0; d < Dv; ++d) dv[(bh * S + j) * Dv + d] += wr[j] * go[(bh * T + t) * Dv + d];
        }
      }
  auto to_tensor = [](const std::vector<double>& x, const Shape& shape) {
    return Tensor::from_vector(std::vector<float>(x.begin(), x.end()), shape);
  };
  return {to_tensor(out, {B, H, T, Dv}), to_tensor(w, {B, H, T, S}), to_tensor(dq, q.shape()), to_tensor(dk, k.shape()),
          to_tensor(dv, v.shape())};
}

// ---------------------------------------------------------------------------------------
struct Case {
  std::string name;
  int64_t B, H, T, S, Dh, Dv;
  SdpaOptions options;
  float magnitude = 1.0f;  // inputs uniform in [-magnitude, magnitude)
};

// Forward (with and without weights) and every gradient against the reference.
void check_case(const Case& c, uint64_t seed) {
  SCOPED_TRACE(c.name);
  const float a = c.magnitude;
  Tensor q = random_tensor({c.B, c.H, c.T, c.Dh}, seed, -a, a).set_requires_grad(true);
  Tensor k = random_tensor({c.B, c.H, c.S, c.Dh}, seed + 1, -a, a).set_requires_grad(true);
  Tensor v = random_tensor({c.B, c.H, c.S, c.Dv}, seed + 2, -a, a).set_requires_grad(true);
  Tensor dout = random_tensor({c.B, c.H, c.T, c.Dv}, seed + 3);
  const Reference ref = reference(q, k, v, c.options, dout);

  SdpaOptions with_weights = c.options;
  with_weights.need_weights = true;
  SdpaResult rw;
  {
    autodiff::NoGradGuard no_grad;
    rw = sdpa(q, k, v, with_weights);
  }
  EXPECT_TRUE(tensors_close(rw.out, ref.out, kTiledTol.atol * a, kTiledTol.rtol));
  EXPECT_TRUE(tensors_close(rw.weights, ref.weights, kTiledTol));

  SdpaResult r = sdpa(q, k, v, c.options);
  EXPECT_FALSE(r.weights.defined());
  // need_weights adds a second pass; it must not change the output path.
  EXPECT_TRUE(bit_identical(r.out, rw.out)) << "need_weights changed the output";
  backward(r.out, dout);
  ASSERT_TRUE(q.has_grad() && k.has_grad() && v.has_grad());
  EXPECT_TRUE(all_finite(q.grad()) && all_finite(k.grad()) && all_finite(v.grad()));
  EXPECT_TRUE(tensors_close(q.grad(), ref.dq, kGradTol.atol * a, kGradTol.rtol)) << "dq";
  EXPECT_TRUE(tensors_close(k.grad(), ref.dk, kGradTol.atol * a, kGradTol.rtol)) << "dk";
  EXPECT_TRUE(tensors_close(v.grad(), ref.dv, kGradTol)) << "dv";
}

Tensor padding_mask(int64_t B, int64_t S, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> m(B * S);
  for (auto& x : m) x = rng.uniform() < 0.7f ? 1 : 0;
  return ints(m, {B, S});
}

TEST(Sdpa, HandComputedValues) {
  // One query, two keys: scores (0, ln 3) → weights (1/4, 3/4); out = 1/4·1 + 3/4·5 = 4.
  Tensor q = Tensor::from_vector(std::vector<float>{1.0f}, {1, 1, 1, 1});
  Tensor k = Tensor::from_vector(std::vector<float>{0.0f, std::log(3.0f)}, {1, 1, 2, 1});
  Tensor v = Tensor::from_vector(std::vector<float>{1.0f, 5.0f}, {1, 1, 2, 1});
  SdpaOptions o;
  o.need_weights = true;
  SdpaResult r = sdpa(q, k, v, o);  // Dh = 1: default scale 1
  EXPECT_NEAR(r.out.item(), 4.0f, 1e-6f);
  EXPECT_NEAR(r.weights.to_vector()[0], 0.25f, 1e-7f);
  EXPECT_NEAR(r.weights.to_vector()[1], 0.75f, 1e-7f);
  // temperature 2 halves the scores: weights ∝ (1, √3).
  o.temperature = 2.0f;
  r = sdpa(q, k, v, o);
  const float w1 = std::sqrt(3.0f) / (1.0f + std::sqrt(3.0f));
  EXPECT_NEAR(r.weights.to_vector()[1], w1, 1e-6f);
  // causal with T == S is the lower triangle (torch is_causal=True): row 0 sees key 0 only.
  Tensor q2 = random_tensor({1, 1, 3, 2}, 5);
  SdpaOptions causal;
  causal.causal = true;
  causal.need_weights = true;
  const std::vector<float> w = sdpa(q2, q2, q2, causal).weights.to_vector();
  EXPECT_EQ(w[0], 1.0f);
  EXPECT_EQ(w[1], 0.0f);
  EXPECT_EQ(w[2], 0.0f);
  EXPECT_EQ(w[5], 0.0f);  // row 1, key 2
  EXPECT_NEAR(w[3] + w[4], 1.0f, 1e-6f);
}

TEST(Sdpa, MatchesReferenceShapes) {
  std::vector<Case> cases = {
      {"basic", 2, 3, 5, 7, 8, 8, {}},
      {"T=1", 2, 2, 1, 9, 4, 4, {}},
      {"S=1", 2, 2, 6, 1, 4, 3, {}},
      {"B=1 H=1", 1, 1, 4, 4, 2, 2, {}},
      {"Dh!=Dv", 2, 2, 5, 6, 16, 5, {}},
      {"tiles T=70 S=300", 1, 2, 70, 300, 8, 6, {}},
      {"long T=130 S=520", 1, 1, 130, 520, 4, 4, {}},
  };
  uint64_t seed = 100;
  for (const Case& c : cases) check_case(c, seed += 10);
}

TEST(Sdpa, MatchesReferenceMasks) {
  std::vector<Case> cases;
  {
    Case c{"ragged key_lengths", 3, 2, 70, 300, 8, 8, {}};
    c.options.key_lengths = ints({300, 1, 173}, {3});
    cases.push_back(c);
  }
  {
    Case c{"key_padding_mask", 2, 2, 9, 300, 8, 4, {}};
    // Batch 0 keeps keys [0, 10) and [260, 300): the key tiles in between are skipped.
    // Batch 1: random keep pattern.
    std::vector<int32_t> m(2 * 300, 0);
    for (int j = 0; j < 300; ++j) m[j] = (j < 10 || j >= 260) ? 1 : 0;
    Rng rng(3);
    for (int j = 0; j < 300; ++j) m[300 + j] = rng.uniform() < 0.5f ? 1 : 0;
    c.options.key_padding_mask = ints(m, {2, 300});
    cases.push_back(c);
  }
  auto causal = [](Case c) {
    c.options.causal = true;
    return c;
  };
  cases.push_back(causal({"causal T==S", 2, 2, 70, 70, 8, 8, {}}));
  cases.push_back(causal({"causal T==S multi-tile", 1, 1, 300, 300, 4, 4, {}}));
  cases.push_back(causal({"causal T<S", 2, 1, 40, 300, 8, 8, {}}));
  cases.push_back(causal({"causal T>S (first rows fully masked)", 2, 2, 9, 5, 4, 4, {}}));
  {
    Case c{"bias", 2, 2, 70, 300, 8, 8, {}};
    c.options.bias = random_tensor({70, 300}, 77, -3.0f, 3.0f);
    cases.push_back(c);
  }
  {
    Case c{"bias + causal + lengths + temperature + scale", 2, 3, 33, 140, 8, 5, {}};
    c.options.bias = random_tensor({33, 140}, 78, -2.0f, 2.0f);
    c.options.causal = true;
    c.options.key_lengths = ints({140, 120}, {2});
    c.options.temperature = 0.7f;
    c.options.scale = 0.3f;
    cases.push_back(c);
  }
  {
    Case c{"padding + causal", 2, 2, 20, 20, 4, 4, {}};
    c.options.key_padding_mask = padding_mask(2, 20, 4);
    c.options.causal = true;
    cases.push_back(c);
  }
  {
    // q, k at ±30: scores up to ~2000 (a softmax without max-subtraction overflows).
    Case c{"large magnitude", 2, 2, 20, 70, 8, 8, {}, 30.0f};
    c.options.key_lengths = ints({70, 13}, {2});
    cases.push_back(c);
  }
  uint64_t seed = 300;
  for (const Case& c : cases) check_case(c, seed += 10);
}

TEST(Sdpa, GradientThroughWeights) {
  // out and weights both feed the loss: dS = P ⊙ (dO vᵀ + dW - D).
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "plain");
    Tensor q = random_tensor({2, 2, 70, 8}, 1).set_requires_grad(true);
    Tensor k = random_tensor({2, 2, 150, 8}, 2).set_requires_grad(true);
    Tensor v = random_tensor({2, 2, 150, 4}, 3).set_requires_grad(true);
    SdpaOptions o;
    o.causal = causal;
    o.key_lengths = ints({150, 40}, {2});
    o.need_weights = true;
    Tensor dout = random_tensor({2, 2, 70, 4}, 4);
    Tensor dw = random_tensor({2, 2, 70, 150}, 5);
    const Reference ref = reference(q, k, v, o, dout, dw);
    SdpaResult r = sdpa(q, k, v, o);
    r.weights.grad_accumulator().copy_from(dw);
    backward(r.out, dout);
    EXPECT_TRUE(tensors_close(q.grad(), ref.dq, kGradTol)) << "dq";
    EXPECT_TRUE(tensors_close(k.grad(), ref.dk, kGradTol)) << "dk";
    EXPECT_TRUE(tensors_close(v.grad(), ref.dv, kGradTol)) << "dv";
  }
}

// ---------------------------------------------------------------------------------------

::testing::AssertionResult check_grads(const SdpaOptions& o, int64_t B, int64_t H, int64_t T, int64_t S, int64_t Dh,
                                       int64_t Dv, uint64_t seed, bool weights_output = false, float a = 1.0f) {
  auto fn = [o, weights_output](const std::vector<Tensor>& in) {
    SdpaOptions oo = o;
    oo.need_weights = weights_output;
    SdpaResult r = sdpa(in[0], in[1], in[2], oo);
    return weights_output ? r.weights : r.out;
  };
  return gradcheck(fn, {leaf({B, H, T, Dh}, seed, -a, a), leaf({B, H, S, Dh}, seed + 1, -a, a),
                        leaf({B, H, S, Dv}, seed + 2, -a, a)});
}

TEST(Sdpa, Gradcheck) {
  SdpaOptions plain;
  EXPECT_TRUE(check_grads(plain, 2, 2, 3, 4, 3, 2, 1));
  EXPECT_TRUE(check_grads(plain, 1, 1, 1, 5, 3, 3, 2));               // T = 1
  EXPECT_TRUE(check_grads(plain, 2, 1, 3, 1, 2, 2, 3));               // S = 1 (weights are 1, dq = dk = 0)
  EXPECT_TRUE(check_grads(plain, 1, 2, 4, 3, 2, 5, 4, false, 2.5f));  // larger magnitude
  EXPECT_TRUE(check_grads(plain, 2, 1, 3, 4, 2, 2, 5, true));         // gradient through weights

  SdpaOptions lengths;
  lengths.key_lengths = ints({4, 1}, {2});  // ragged, length 1
  EXPECT_TRUE(check_grads(lengths, 2, 2, 3, 4, 3, 2, 6));
  lengths.key_lengths = ints({0, 3}, {2});  // batch 0 fully masked
  EXPECT_TRUE(check_grads(lengths, 2, 1, 3, 4, 2, 2, 7));
  EXPECT_TRUE(check_grads(lengths, 2, 1, 3, 4, 2, 2, 8, true));

  SdpaOptions padding;
  padding.key_padding_mask = ints({1, 0, 1, 1, 0, 0, 1, 0}, {2, 4});
  EXPECT_TRUE(check_grads(padding, 2, 2, 3, 4, 3, 2, 9));

  SdpaOptions causal;
  causal.causal = true;
  EXPECT_TRUE(check_grads(causal, 1, 2, 4, 4, 3, 2, 10));  // T == S
  EXPECT_TRUE(check_grads(causal, 2, 1, 3, 5, 2, 3, 11));  // T < S
  EXPECT_TRUE(check_grads(causal, 2, 1, 5, 3, 2, 3, 12));  // T > S: two fully masked rows

  SdpaOptions biased;
  biased.bias = random_tensor({3, 4}, 13, -1.0f, 1.0f);
  biased.temperature = 0.5f;
  biased.scale = 0.8f;
  biased.key_lengths = ints({3, 4}, {2});
  EXPECT_TRUE(check_grads(biased, 2, 1, 3, 4, 3, 2, 14));

  SdpaOptions upper_left;  // torch's is_causal: query t sees keys s <= t
  upper_left.causal = true;
  upper_left.causal_align = CausalAlign::upper_left;
  EXPECT_TRUE(check_grads(upper_left, 2, 1, 3, 5, 2, 3, 15));  // T < S
  EXPECT_TRUE(check_grads(upper_left, 1, 2, 5, 3, 2, 2, 16));  // T > S: no row fully masked
}

// A learned bias of each shape torch's attn_mask takes: its gradient is checked with q, k, v's.
TEST(Sdpa, GradcheckLearnedBias) {
  const int64_t B = 2, H = 2, T = 3, S = 4;
  for (const Shape& shape : {Shape({T, S}), Shape({B * H, T, S}), Shape({B, H, T, S})}) {
    for (bool weights_output : {false, true}) {
      auto fn = [weights_output](const std::vector<Tensor>& in) {
        SdpaOptions o;
        o.bias = in[3];
        o.key_lengths = ints({4, 2}, {2});
        o.causal = true;
        o.need_weights = weights_output;
        SdpaResult r = sdpa(in[0], in[1], in[2], o);
        return weights_output ? r.weights : r.out;
      };
      EXPECT_TRUE(
          gradcheck(fn, {leaf({B, H, T, 3}, 30), leaf({B, H, S, 3}, 31), leaf({B, H, S, 2}, 32), leaf(shape, 33)}))
          << shape.str() << " weights_output=" << weights_output;
    }
  }
  // The bias alone requires grad.
  auto bias_only = [](const std::vector<Tensor>& in) {
    SdpaOptions o;
    o.bias = in[0];
    return sdpa(random_tensor({1, 2, 3, 4}, 40, -1, 1), random_tensor({1, 2, 5, 4}, 41, -1, 1),
                random_tensor({1, 2, 5, 2}, 42, -1, 1), o)
        .out;
  };
  EXPECT_TRUE(gradcheck(bias_only, {leaf({1, 2, 3, 5}, 43)}));
}

TEST(Sdpa, GradcheckSelfAttentionSharedInput) {
  // q = k = v: the three gradients land in one buffer.
  auto fn = [](const std::vector<Tensor>& in) {
    SdpaOptions o;
    o.causal = true;
    return sdpa(in[0], in[0], in[0], o).out;
  };
  EXPECT_TRUE(gradcheck(fn, {leaf({2, 2, 4, 3}, 20)}));
}

TEST(Sdpa, OnlySomeInputsRequireGrad) {
  Tensor q = random_tensor({1, 2, 70, 4}, 1);
  Tensor k = random_tensor({1, 2, 130, 4}, 2).set_requires_grad(true);
  Tensor v = random_tensor({1, 2, 130, 4}, 3);
  Tensor dout = random_tensor({1, 2, 70, 4}, 4);
  const Reference ref = reference(q, k, v, {}, dout);
  backward(sdpa(q, k, v).out, dout);
  EXPECT_FALSE(q.has_grad());
  EXPECT_FALSE(v.has_grad());
  EXPECT_TRUE(tensors_close(k.grad(), ref.dk, kGradTol));
  // Gradients accumulate (+=) across backward calls.
  backward(sdpa(q, k, v).out, dout);
  Tensor twice = Tensor::from_vector(ref.dk.to_vector(), ref.dk.shape());
  for (int64_t i = 0; i < twice.numel(); ++i) twice.f32()[i] *= 2.0f;
  EXPECT_TRUE(tensors_close(k.grad(), twice, 2 * kGradTol.atol, kGradTol.rtol));
}

// ---------------------------------------------------------------------------------------
TEST(Sdpa, FullyMaskedRowsAreZeroNeverNaN) {
  const int64_t B = 2, H = 2, T = 70, S = 300, D = 8;
  Tensor q = random_tensor({B, H, T, D}, 1).set_requires_grad(true);
  Tensor k = random_tensor({B, H, S, D}, 2).set_requires_grad(true);
  Tensor v = random_tensor({B, H, S, D}, 3).set_requires_grad(true);
  SdpaOptions o;
  o.key_lengths = ints({0, 200}, {2});
  o.need_weights = true;
  SdpaResult r = sdpa(q, k, v, o);
  r.weights.grad_accumulator().copy_from(random_tensor(r.weights.shape(), 9));
  backward(r.out, random_tensor(r.out.shape(), 4));
  for (const Tensor& t : {r.out, r.weights, q.grad(), k.grad(), v.grad()}) ASSERT_TRUE(all_finite(t));
  const std::vector<float> out = r.out.to_vector(), w = r.weights.to_vector(), dq = q.grad().to_vector(),
                           dk = k.grad().to_vector(), dv = v.grad().to_vector();
  // Batch 0 is the first half of every tensor.
  for (size_t i = 0; i < out.size() / 2; ++i) ASSERT_EQ(out[i], 0.0f) << i;
  for (size_t i = 0; i < w.size() / 2; ++i) ASSERT_EQ(w[i], 0.0f) << i;
  for (size_t i = 0; i < dq.size() / 2; ++i) ASSERT_EQ(dq[i], 0.0f) << i;
  for (size_t i = 0; i < dk.size() / 2; ++i) ASSERT_EQ(dk[i], 0.0f) << i;
  for (size_t i = 0; i < dv.size() / 2; ++i) ASSERT_EQ(dv[i], 0.0f) << i;
  // Batch 1: keys beyond length 200 get exactly zero weight and gradient.
  for (int64_t h = 0; h < H; ++h)
    for (int64_t s = 200; s < S; ++s) {
      for (int64_t t = 0; t < T; ++t) ASSERT_EQ(w[((H + h) * T + t) * S + s], 0.0f);
      for (int64_t d = 0; d < D; ++d) ASSERT_EQ(dk[((H + h) * S + s) * D + d], 0.0f);
    }
  // Batch 1 rows are proper distributions.
  for (int64_t row = B * H * T / 2; row < B * H * T; ++row) {
    double sum = 0.0;
    for (int64_t s = 0; s < S; ++s) sum += w[row * S + s];
    ASSERT_NEAR(sum, 1.0, 1e-5) << row;
  }
}

TEST(Sdpa, MinusInfinityBiasMasksWithoutNaN) {
  // A bias of -inf masks like a mask; a row that is -inf everywhere is fully masked.
  const int64_t T = 4, S = 6;
  std::vector<float> b(T * S, 0.0f);
  for (int64_t s = 0; s < S; ++s) b[1 * S + s] = -kInf;  // row 1 fully masked
  b[2 * S + 0] = -kInf;
  Tensor q = random_tensor({1, 2, T, 4}, 1).set_requires_grad(true);
  Tensor k = random_tensor({1, 2, S, 4}, 2).set_requires_grad(true);
  Tensor v = random_tensor({1, 2, S, 4}, 3).set_requires_grad(true);
  SdpaOptions o;
  o.bias = Tensor::from_vector(b, {T, S});
  o.need_weights = true;
  Tensor dout = random_tensor({1, 2, T, 4}, 4);
  const Reference ref = reference(q, k, v, o, dout);
  SdpaResult r = sdpa(q, k, v, o);
  EXPECT_TRUE(tensors_close(r.out, ref.out, kTiledTol));
  EXPECT_TRUE(tensors_close(r.weights, ref.weights, kTiledTol));
  backward(r.out, dout);
  EXPECT_TRUE(tensors_close(q.grad(), ref.dq, kGradTol));
  EXPECT_TRUE(tensors_close(k.grad(), ref.dk, kGradTol));
  EXPECT_TRUE(tensors_close(v.grad(), ref.dv, kGradTol));
}

TEST(Sdpa, StableAtMagnitude1e3) {
  // q, k, v at ±1000: scores up to ~1e6. Each weight row must still be a distribution,
  // each output a convex combination of the values, and everything finite.
  const int64_t B = 2, H = 2, T = 70, S = 300, D = 8;
  Tensor q = random_tensor({B, H, T, D}, 1, -1e3f, 1e3f).set_requires_grad(true);
  Tensor k = random_tensor({B, H, S, D}, 2, -1e3f, 1e3f).set_requires_grad(true);
  Tensor v = random_tensor({B, H, S, D}, 3, -1e3f, 1e3f).set_requires_grad(true);
  SdpaOptions o;
  o.causal = true;
  o.need_weights = true;
  SdpaResult r = sdpa(q, k, v, o);
  backward(r.out, random_tensor(r.out.shape(), 4));
  for (const Tensor& t : {r.out, r.weights, q.grad(), k.grad(), v.grad()}) ASSERT_TRUE(all_finite(t));
  const std::vector<float> w = r.weights.to_vector(), out = r.out.to_vector(), vv = v.to_vector();
  for (int64_t row = 0; row < B * H * T; ++row) {
    double sum = 0.0;
    for (int64_t s = 0; s < S; ++s) sum += w[row * S + s];
    ASSERT_NEAR(sum, 1.0, 1e-5) << row;
    const int64_t bh = row / T;
    for (int64_t d = 0; d < D; ++d) {
      float lo = kInf, hi = -kInf;
      for (int64_t s = 0; s < S; ++s) {
        lo = std::min(lo, vv[(bh * S + s) * D + d]);
        hi = std::max(hi, vv[(bh * S + s) * D + d]);
      }
      ASSERT_GE(out[row * D + d], lo - 1e-2f);
      ASSERT_LE(out[row * D + d], hi + 1e-2f);
    }
  }
}

// ---------------------------------------------------------------------------------------
struct RunResult {
  Tensor out, weights, dq, dk, dv;
};

RunResult run_with_threads(int threads, const SdpaOptions& o, int64_t B, int64_t H, int64_t T, int64_t S) {
  set_num_threads(threads);
  Tensor q = random_tensor({B, H, T, 8}, 1).set_requires_grad(true);
  Tensor k = random_tensor({B, H, S, 8}, 2).set_requires_grad(true);
  Tensor v = random_tensor({B, H, S, 6}, 3).set_requires_grad(true);
  SdpaResult r = sdpa(q, k, v, o);
  if (r.weights.defined()) r.weights.grad_accumulator().copy_from(random_tensor(r.weights.shape(), 5));
  backward(r.out, random_tensor(r.out.shape(), 4));
  RunResult res{r.out, r.weights, q.grad(), k.grad(), v.grad()};
  set_num_threads(0);
  return res;
}

TEST(Sdpa, DeterministicAcrossThreadCounts) {
  SdpaOptions o;
  o.causal = true;
  o.key_lengths = ints({300, 170}, {2});
  SdpaOptions ow = o;
  ow.need_weights = true;
  // (B, H) = (1, 1): the backward switches from the per-head pass (1 thread) to the
  // key-tile + query-tile passes (2, 4 threads). (2, 3): per-head with 1, 2 threads,
  // two passes with 4.
  struct Shape4 {
    int64_t B, H, T, S;
  };
  for (const Shape4& s : {Shape4{1, 1, 200, 300}, Shape4{2, 3, 130, 300}}) {
    for (const SdpaOptions& opts : {o, ow}) {
      SdpaOptions oo = opts;
      if (s.B == 1) oo.key_lengths = ints({260}, {1});
      const RunResult one = run_with_threads(1, oo, s.B, s.H, s.T, s.S);
      for (int threads : {2, 4}) {
        SCOPED_TRACE("threads " + std::to_string(threads) + ", B " + std::to_string(s.B) +
                     (oo.need_weights ? ", weights" : ""));
        const RunResult many = run_with_threads(threads, oo, s.B, s.H, s.T, s.S);
        EXPECT_TRUE(bit_identical(one.out, many.out));
        EXPECT_TRUE(bit_identical(one.weights, many.weights));
        EXPECT_TRUE(bit_identical(one.dq, many.dq));
        EXPECT_TRUE(bit_identical(one.dk, many.dk));
        EXPECT_TRUE(bit_identical(one.dv, many.dv));
      }
    }
  }
}

// A one-query tile (decoding, T = 1) has its own path in the forward kernel (keys along the
// lanes); it must give exactly what the tiled path gives that query's lane. Query 0 of a
// T = 2 problem goes through the tiled path, the same query alone through the one-query path:
// outputs and weights must be bit-identical (and the backward, which reads the saved lse,
// sees the same statistics). Two key tiles with a tail (S = 300), masks, a shared and a
// per-head bias, upper-left causal, Dv != Dh, and
// Dh beyond the path's limit (the tiled fallback).
TEST(Sdpa, OneQueryPathIsBitIdenticalToTiledPath) {
  struct Variant {
    std::string name;
    int64_t Dh, Dv;
    bool lengths, padding, bias;
    bool per_head_bias = false, causal_upper_left = false;  // upper-left: query 0 sees key 0 for any T
  };
  const int64_t B = 2, H = 3, S = 300;
  for (const Variant& c : {Variant{"plain", 32, 32, false, false, false}, Variant{"lengths", 64, 5, true, false, false},
                           Variant{"padding mask + bias", 16, 24, false, true, true},
                           Variant{"Dh 200 (tiled fallback)", 200, 8, true, false, true},
                           Variant{"per-head bias + upper-left causal", 32, 32, true, false, true, true, true}}) {
    SCOPED_TRACE(c.name);
    const Tensor q2 = random_tensor({B, H, 2, c.Dh}, 901);
    const Tensor k = random_tensor({B, H, S, c.Dh}, 902);
    const Tensor v = random_tensor({B, H, S, c.Dv}, 903);
    const std::vector<float> q2v = q2.to_vector();
    std::vector<float> q1v;
    for (int64_t bh = 0; bh < B * H; ++bh)
      q1v.insert(q1v.end(), q2v.begin() + bh * 2 * c.Dh, q2v.begin() + (bh * 2 + 1) * c.Dh);
    const Tensor q1 = Tensor::from_vector(q1v, {B, H, 1, c.Dh});
    SdpaOptions o2;
    o2.need_weights = true;
    if (c.lengths) o2.key_lengths = ints({300, 157}, {B});
    if (c.padding) o2.key_padding_mask = padding_mask(B, S, 904);
    SdpaOptions o1 = o2;
    // Row 0 of each (b, h) of a (B, H, 2, width) tensor.
    auto first_rows = [&](const Tensor& t, int64_t width) {
      const std::vector<float> x = t.to_vector();
      std::vector<float> rows;
      for (int64_t bh = 0; bh < B * H; ++bh)
        rows.insert(rows.end(), x.begin() + bh * 2 * width, x.begin() + (bh * 2 + 1) * width);
      return Tensor::from_vector(rows, {B, H, 1, width});
    };
    if (c.causal_upper_left) {
      o2.causal = o1.causal = true;
      o2.causal_align = o1.causal_align = CausalAlign::upper_left;
    }
    if (c.bias && c.per_head_bias) {
      o2.bias = random_tensor({B, H, 2, S}, 906, -2.0f, 2.0f);
      o1.bias = first_rows(o2.bias, S);
    } else if (c.bias) {
      o2.bias = random_tensor({2, S}, 905, -2.0f, 2.0f);
      const std::vector<float> bv = o2.bias.to_vector();
      o1.bias = Tensor::from_vector(std::vector<float>(bv.begin(), bv.begin() + S), {1, S});
    }
    autodiff::NoGradGuard no_grad;
    const SdpaResult r2 = sdpa(q2, k, v, o2), r1 = sdpa(q1, k, v, o1);
    EXPECT_TRUE(bit_identical(r1.out, first_rows(r2.out, c.Dv))) << "out";
    EXPECT_TRUE(bit_identical(r1.weights, first_rows(r2.weights, S))) << "weights";
    // The double reference here knows a (T, S) bias and no causal mask.
    if (!c.per_head_bias && !c.causal_upper_left) {
      EXPECT_TRUE(tensors_close(r1.out, reference(q1, k, v, o1).out, kTiledTol));
    }
  }
}

TEST(Sdpa, DoesNotMaterialiseScores) {
  // T = S = 2048, H = 2: a (T, S) float score matrix is 16 MiB per head. The fused op must
  // stay far below that: outputs (512 KiB), row statistics and per-thread tiles.
  const int64_t B = 1, H = 2, T = 2048, S = 2048, D = 32;
  Tensor q = random_tensor({B, H, T, D}, 1);
  Tensor k = random_tensor({B, H, S, D}, 2);
  Tensor v = random_tensor({B, H, S, D}, 3);
  const int64_t score_bytes_per_head = T * S * 4;
  const int64_t bound = score_bytes_per_head / 8;  // 2 MiB; O(T·S) needs >= 16 MiB
  auto growth = [&](bool need_weights) {
    // The peak is a high-water mark over the whole process. Hold a ballast that lifts the
    // live bytes to the recorded peak, so that any growth during the call shows as new peak.
    const AllocatorStats start = allocator_stats();
    Tensor ballast = Tensor::empty({(start.peak_live_bytes - start.live_bytes) / 4 + 16});
    const AllocatorStats before = allocator_stats();
    EXPECT_EQ(before.peak_live_bytes, before.live_bytes);
    SdpaOptions o;
    o.need_weights = need_weights;
    o.causal = true;
    int64_t peak;
    {
      SdpaResult r = sdpa(q, k, v, o);
      peak = allocator_stats().peak_live_bytes;
    }
    return std::max<int64_t>(0, peak - before.live_bytes);
  };
  const int64_t without = growth(false);
  EXPECT_LT(without, bound) << "peak growth " << without << " bytes without weights";
  const int64_t out_bytes = B * H * T * D * 4;
  EXPECT_GE(without, out_bytes);  // sanity: the measurement sees the output
  // The same measurement does see an O(T·S) allocation: the weights.
  const int64_t with = growth(true);
  EXPECT_GE(with, B * H * score_bytes_per_head);
}

// ---------------------------------------------------------------------------------------
TEST(Sdpa, ErrorsNameArgumentsAndShapes) {
  Tensor q = Tensor::zeros({2, 4, 5, 16});
  Tensor k = Tensor::zeros({2, 4, 9, 16});
  Tensor v = Tensor::zeros({2, 4, 9, 16});
  EXPECT_THROW_MSG(sdpa(q, Tensor::zeros({2, 4, 9, 8}), v), ShapeError,
                   "sdpa: 'k' expected (B=2, H=4, S, Dh=16), got (2, 4, 9, 8)");
  EXPECT_THROW_MSG(sdpa(q, k, Tensor::zeros({2, 4, 8, 16})), ShapeError,
                   "sdpa: 'v' expected (B=2, H=4, S=9, Dv), got (2, 4, 8, 16)");
  EXPECT_THROW_MSG(sdpa(Tensor::zeros({2, 5, 16}), k, v), ShapeError,
                   "sdpa: 'q' expected (B, H, T, Dh), got (2, 5, 16)");
  EXPECT_THROW_MSG(sdpa(q, Tensor::zeros({3, 4, 9, 16}), v), ShapeError,
                   "sdpa: 'k' expected (B=2, H=4, S, Dh=16), got (3, 4, 9, 16)");
  EXPECT_THROW_MSG(sdpa(q, k, Tensor::zeros({2, 4, 9, 16}, DType::i32)), ShapeError,
                   "sdpa: 'v' expected dtype float32, got int32");

  SdpaOptions o;
  o.key_lengths = ints({3, 4, 5}, {3});
  EXPECT_THROW_MSG(sdpa(q, k, v, o), ShapeError, "sdpa: 'key_lengths' expected (B=2), got (3)");
  o.key_lengths = Tensor::zeros({2});
  EXPECT_THROW_MSG(sdpa(q, k, v, o), ShapeError, "sdpa: 'key_lengths' expected dtype int32, got float32");
  o.key_lengths = ints({3, 10}, {2});
  EXPECT_THROW_MSG(sdpa(q, k, v, o), ValueError,
                   "sdpa: 'key_lengths' value 10 at batch index 1 is out of range [0, S=9]");
  o.key_lengths = ints({-1, 2}, {2});
  EXPECT_THROW_MSG(sdpa(q, k, v, o), ValueError,
                   "sdpa: 'key_lengths' value -1 at batch index 0 is out of range [0, S=9]");

  SdpaOptions both;
  both.key_lengths = ints({3, 4}, {2});
  both.key_padding_mask = ints(std::vector<int32_t>(18, 1), {2, 9});
  EXPECT_THROW_MSG(sdpa(q, k, v, both), ValueError, "sdpa: key_lengths and key_padding_mask are exclusive");

  SdpaOptions pad;
  pad.key_padding_mask = ints(std::vector<int32_t>(16, 1), {2, 8});
  EXPECT_THROW_MSG(sdpa(q, k, v, pad), ShapeError, "sdpa: 'key_padding_mask' expected (B=2, S=9), got (2, 8)");

  SdpaOptions bias;
  bias.bias = Tensor::zeros({2, 5, 9});
  EXPECT_THROW_MSG(
      sdpa(q, k, v, bias), ShapeError,
      "sdpa: 'bias' expected float32 (T=5, S=9), (B·H=8, T, S) or (B=2, H=4, T, S), got (2, 5, 9) float32");
  bias.bias = Tensor::zeros({9, 5});
  EXPECT_THROW_MSG(sdpa(q, k, v, bias), ShapeError, "got (9, 5) float32");
  bias.bias = Tensor::zeros({4, 2, 5, 9});
  EXPECT_THROW_MSG(sdpa(q, k, v, bias), ShapeError, "got (4, 2, 5, 9) float32");
  bias.bias = Tensor::zeros({5, 9}, DType::i32);
  EXPECT_THROW_MSG(sdpa(q, k, v, bias), ShapeError, "got (5, 9) int32");

  SdpaOptions temp;
  temp.temperature = 0.0f;
  EXPECT_THROW_MSG(sdpa(q, k, v, temp), ValueError, "sdpa: temperature must be a finite value > 0, got 0");
  temp.temperature = -1.5f;
  EXPECT_THROW_MSG(sdpa(q, k, v, temp), ValueError, "sdpa: temperature must be a finite value > 0, got -1.5");
  temp.temperature = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW_MSG(sdpa(q, k, v, temp), ValueError, "sdpa: temperature must be a finite value > 0, got nan");

  SdpaOptions scale;
  scale.scale = kInf;
  EXPECT_THROW_MSG(sdpa(q, k, v, scale), ValueError, "sdpa: scale must be finite, got inf");
}

TEST(Sdpa, EmptyKeysGiveZeros) {
  // S = 0: every row is fully masked.
  Tensor q = random_tensor({1, 2, 3, 4}, 1).set_requires_grad(true);
  Tensor k = Tensor::zeros({1, 2, 0, 4}).set_requires_grad(true);
  Tensor v = Tensor::zeros({1, 2, 0, 5}).set_requires_grad(true);
  SdpaResult r = sdpa(q, k, v);
  EXPECT_EQ(r.out.shape(), Shape({1, 2, 3, 5}));
  for (float x : r.out.to_vector()) EXPECT_EQ(x, 0.0f);
  backward(r.out, random_tensor(r.out.shape(), 2));
  for (float x : q.grad().to_vector()) EXPECT_EQ(x, 0.0f);
}

}  // namespace
}  // namespace attn

// ---- sparse normalisers (the materialised path) ---------------------------------------------

namespace attn {
namespace {

// Every normaliser is shift-invariant: its weights of the scores are its weights of the fused
// softmax's log-weights (scores − lse) on the kept positions, whatever the masks.
TEST(SdpaNormalizer, WeightsAreTheNormaliserOfTheScores) {
  const int64_t B = 2, H = 2, T = 3, S = 5, Dh = 4;
  const Tensor q = random_tensor({B, H, T, Dh}, 31, -2.0f, 2.0f), k = random_tensor({B, H, S, Dh}, 32, -2.0f, 2.0f),
               v = random_tensor({B, H, S, Dh}, 33);
  const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{5, 3}, {B});
  for (bool causal : {false, true})
    for (const Normalizer& n : {Normalizer{NormalizerKind::sparsemax}, Normalizer{NormalizerKind::entmax15},
                                Normalizer{NormalizerKind::entmax, 1.7f}}) {
      SdpaOptions o;
      o.key_lengths = lengths;
      o.causal = causal;
      o.temperature = 0.8f;
      o.need_weights = true;
      const std::vector<float> w = sdpa(q, k, v, o).weights.to_vector();
      std::vector<float> log_w(w.size(), 0.0f);
      std::vector<int32_t> kept(w.size(), 0);
      for (size_t i = 0; i < w.size(); ++i)
        if (w[i] > 0.0f) {
          log_w[i] = std::log(w[i]);
          kept[i] = 1;
        }
      const Tensor expected =
          normalize(Tensor::from_vector(log_w, {B, H, T, S}), n, Tensor::from_vector(kept, {B, H, T, S}));
      o.normalizer = n;
      const SdpaResult r = sdpa(q, k, v, o);
      EXPECT_TRUE(tensors_close(r.weights, expected, kTiledTol)) << normalizer_name(n.kind) << " causal " << causal;
      // out = weights · v, row by row
      const std::vector<float> ew = expected.to_vector(), vv = v.to_vector(), out = r.out.to_vector();
      std::vector<float> eo(out.size(), 0.0f);
      for (int64_t bh = 0; bh < B * H; ++bh)
        for (int64_t t = 0; t < T; ++t)
          for (int64_t s = 0; s < S; ++s)
            for (int64_t d = 0; d < Dh; ++d)
              eo[(bh * T + t) * Dh + d] += ew[(bh * T + t) * S + s] * vv[(bh * S + s) * Dh + d];
      EXPECT_TRUE(tensors_close(r.out, Tensor::from_vector(eo, {B, H, T, Dh}), kTiledTol)) << normalizer_name(n.kind);
    }
}

TEST(SdpaNormalizer, GradcheckAndErrors) {
  const int64_t B = 2, H = 1, T = 2, S = 4, Dh = 3;
  SdpaOptions o;
  o.key_lengths = Tensor::from_vector(std::vector<int32_t>{4, 2}, {B});
  o.causal = true;
  o.normalizer = {NormalizerKind::entmax15};  // C¹: finite differences hold everywhere
  const auto fn = [o](const std::vector<Tensor>& in) { return sdpa(in[0], in[1], in[2], o).out; };
  EXPECT_TRUE(gradcheck(fn, {random_tensor({B, H, T, Dh}, 41).set_requires_grad(true),
                             random_tensor({B, H, S, Dh}, 42).set_requires_grad(true),
                             random_tensor({B, H, S, Dh}, 43).set_requires_grad(true)}));
  SdpaOptions biased = o;
  biased.bias = Tensor::zeros({T, S});
  const Tensor q = Tensor::zeros({B, H, T, Dh}), k = Tensor::zeros({B, H, S, Dh});
  EXPECT_THROW_MSG(sdpa(q, k, k, biased), ValueError, "the entmax15 normaliser takes none");
  SdpaOptions bad = o;
  bad.normalizer = {NormalizerKind::entmax, 0.5f};
  EXPECT_THROW_MSG(sdpa(q, k, k, bad), ValueError, "sdpa: entmax's alpha must be finite and > 1, got 0.5");
}

}  // namespace
}  // namespace attn
