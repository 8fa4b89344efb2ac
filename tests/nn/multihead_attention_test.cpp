// MultiheadAttention and MultiheadGeneralAttention against an independent naive
// implementation written here from basic ops (per-head linear on weight-row slices,
// materialised scores, masked softmax, bmm, concat), on outputs, weights and the
// gradients of every input and parameter; gradchecks on tiny modules; errors.
#include "attn/nn/multihead_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/ops/attention.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/linear.h"
#include "attn/ops/reduce.h"
#include "attn/ops/select.h"
#include "attn/ops/shape_ops.h"
#include "attn/ops/softmax.h"
#include "test_support.h"

namespace attn::nn {
namespace {

using namespace attn::testing;  // the helpers of tests/support

// Tolerances of this suite (fused online softmax vs a materialised one, float32).
constexpr float kOutAtol = 2e-5f, kOutRtol = 2e-4f;
constexpr float kGradAtol = 1e-4f, kGradRtol = 1e-3f;

Tensor i32(const std::vector<int32_t>& v, const Shape& s) { return Tensor::from_vector(v, s); }

// keep (B, T, S) int32 from the call's masks, or undefined when nothing is masked.
Tensor keep_mask(int64_t B, int64_t T, int64_t S, const MhaCallOptions& call) {
  if (!call.key_lengths.defined() && !call.key_padding_mask.defined() && !call.causal) return Tensor();
  std::vector<int32_t> keep(static_cast<size_t>(B * T * S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t s = 0; s < S; ++s) {
        bool k = true;
        if (call.key_lengths.defined()) k = k && s < call.key_lengths.i32()[b];
        if (call.key_padding_mask.defined()) k = k && call.key_padding_mask.i32()[b * S + s] != 0;
        if (call.causal) k = k && s <= t + (S - T);
        keep[(b * T + t) * S + s] = k ? 1 : 0;
      }
  return i32(keep, {B, T, S});
}

// attn_bias (T, S) copied to every batch row (B, T, S), or undefined.
Tensor bias_bts(int64_t B, const MhaCallOptions& call) {
  if (!call.attn_bias.defined()) return Tensor();
  const int64_t T = call.attn_bias.dim(0), S = call.attn_bias.dim(1);
  Tensor out = Tensor::empty({B, T, S});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T * S; ++i) out.f32()[b * T * S + i] = call.attn_bias.f32()[i];
  return out;
}

// x (B, H, T, S) → constant (B, T, S) of head h.
Tensor head_of(const Tensor& x, int64_t h) {
  const int64_t B = x.dim(0), H = x.dim(1), N = x.dim(2) * x.dim(3);
  Tensor out = Tensor::empty({B, x.dim(2), x.dim(3)});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < N; ++i) out.f32()[b * N + i] = x.f32()[(b * H + h) * N + i];
  return out;
}

struct Ref {
  Tensor out;      // (B, T, D)
  Tensor weights;  // (B, H, T, S)
};

// Per head: scores = scale · q_h k_hᵀ / τ + bias, masked softmax, optional dropout scale,
// context a v_h; heads concatenated, then the output projection (when given).
Ref attend_naive(const std::vector<Tensor>& qs, const std::vector<Tensor>& ks, const std::vector<Tensor>& vs,
                 const MhaCallOptions& call, float scale_factor, const Tensor& drop_scale) {
  const int64_t H = static_cast<int64_t>(qs.size());
  const int64_t B = qs[0].dim(0), T = qs[0].dim(1), S = ks[0].dim(1);
  Tensor keep = keep_mask(B, T, S, call);
  Tensor bias = bias_bts(B, call);
  std::vector<Tensor> contexts, weights;
  for (int64_t h = 0; h < H; ++h) {
    Tensor s = scale(bmm(qs[h], ks[h], {.transpose_b = true}), scale_factor / call.temperature);  // (B, T, S)
    if (bias.defined()) s = add(s, bias);
    Tensor a = softmax(s, keep);
    if (drop_scale.defined()) a = mul(a, head_of(drop_scale, h));
    contexts.push_back(bmm(a, vs[h]));  // (B, T, Dv_h)
    weights.push_back(a);
  }
  return {concat(contexts), transpose_01(stack_rows(weights))};
}

Ref naive_mha(const MultiheadAttention& m, const Tensor& query, const Tensor& key, const Tensor& value,
              const MhaCallOptions& call, const Tensor& drop_scale = Tensor()) {
  const int64_t D = m.options().embed_dim, H = m.options().num_heads, Dh = D / H;
  const bool packed = m.in_proj_weight.defined();
  std::vector<Tensor> qs, ks, vs;
  for (int64_t h = 0; h < H; ++h) {
    const int64_t lo = h * Dh, hi = (h + 1) * Dh;
    Tensor wq = packed ? m.in_proj_weight.slice(lo, hi) : m.q_proj_weight.slice(lo, hi);
    Tensor wk = packed ? m.in_proj_weight.slice(D + lo, D + hi) : m.k_proj_weight.slice(lo, hi);
    Tensor wv = packed ? m.in_proj_weight.slice(2 * D + lo, 2 * D + hi) : m.v_proj_weight.slice(lo, hi);
    const Tensor& b = m.in_proj_bias;
    qs.push_back(linear(query, wq, b.defined() ? b.slice(lo, hi) : Tensor()));
    ks.push_back(linear(key, wk, b.defined() ? b.slice(D + lo, D + hi) : Tensor()));
    vs.push_back(linear(value, wv, b.defined() ? b.slice(2 * D + lo, 2 * D + hi) : Tensor()));
  }
  Ref r = attend_naive(qs, ks, vs, call, 1.0f / std::sqrt(static_cast<float>(Dh)), drop_scale);
  r.out = linear(r.out, m.out_proj.weight, m.out_proj.bias);
  return r;
}

Ref naive_general(const MultiheadGeneralAttention& m, const Tensor& query, const Tensor& key, const Tensor& value,
                  const MhaCallOptions& call) {
  const auto& o = m.options();
  const int64_t D = o.embed_dim, H = o.num_heads;
  Tensor qp = query, kp = key, vp = value;
  if (o.in_proj) {
    const Tensor& b = m.in_proj_bias;
    qp = linear(query, m.q_proj_weight, b.defined() ? b.slice(0, D) : Tensor());
    kp = linear(key, m.k_proj_weight, b.defined() ? b.slice(D, 2 * D) : Tensor());
    vp = linear(value, m.v_proj_weight, b.defined() ? b.slice(2 * D, 3 * D) : Tensor());
  }
  auto heads_of = [H](const Tensor& x) { return split(x, std::vector<int64_t>(H, x.dim(2) / H)); };
  std::vector<Tensor> qs = heads_of(qp), ks = heads_of(kp), vs = heads_of(vp);
  for (int64_t h = 0; h < H; ++h) qs[h] = linear(qs[h], transpose_last2(m.bilinear_weight.select(h)));  // q_h W_h
  const float sc = o.scale == 0.0f ? 1.0f / std::sqrt(static_cast<float>(ks[0].dim(2))) : o.scale;
  Ref r = attend_naive(qs, ks, vs, call, sc, Tensor());
  if (m.out_proj) r.out = linear(r.out, m.out_proj->weight, m.out_proj->bias);
  return r;
}

std::vector<Tensor> distinct(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) {
    bool seen = false;
    for (const Tensor& u : out) seen = seen || u.same(t);
    if (!seen) out.push_back(t);
  }
  return out;
}

std::vector<Tensor> snapshot_grads(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.has_grad() ? t.grad().clone() : Tensor::zeros(t.shape()));
  return out;
}

// Runs the module and the reference on loss = Σ out ⊙ R1 (+ Σ weights ⊙ R2) and compares
// outputs, full weights and the gradients of every distinct input and every parameter.
void expect_matches(Module& m, const std::function<MhaResult()>& run_module, const std::function<Ref()>& run_ref,
                    std::vector<Tensor> inputs, bool weights_in_loss, const std::string& label) {
  SCOPED_TRACE(label);
  inputs = distinct(inputs);
  std::vector<Tensor> all = inputs;
  for (auto& [n, p] : m.named_parameters()) all.push_back(p);
  auto clear = [&] {
    for (Tensor& t : all) t.drop_grad();
  };
  clear();
  MhaResult r = run_module();
  Tensor r1 = random_tensor(r.out.shape(), 101);
  Tensor loss = sum(mul(r.out, r1));
  Tensor r2;
  if (weights_in_loss) {
    r2 = random_tensor(r.weights.shape(), 102);
    loss = add(loss, sum(mul(r.weights, r2)));
  }
  backward(loss);
  std::vector<Tensor> got = snapshot_grads(all);
  clear();
  Ref e = run_ref();
  Tensor eloss = sum(mul(e.out, r1));
  if (weights_in_loss) eloss = add(eloss, sum(mul(e.weights, r2)));
  backward(eloss);
  std::vector<Tensor> want = snapshot_grads(all);
  clear();
  EXPECT_TRUE(tensors_close(r.out, e.out, kOutAtol, kOutRtol)) << "out";
  if (r.weights.defined()) {
    EXPECT_TRUE(tensors_close(r.weights, e.weights, kOutAtol, kOutRtol)) << "weights";
  }
  for (size_t i = 0; i < all.size(); ++i) {
    for (float g : got[i].to_vector()) ASSERT_TRUE(std::isfinite(g)) << "non-finite gradient, tensor " << i;
    const std::string name = i < inputs.size() ? "input " + std::to_string(i) : all[i].name();
    EXPECT_TRUE(tensors_close(got[i], want[i], kGradAtol, kGradRtol)) << "gradient of " << name;
  }
}

void expect_mha_matches(MultiheadAttention& m, const Tensor& q, const Tensor& k, const Tensor& v,
                        const MhaCallOptions& call, const std::string& label) {
  expect_matches(
      m, [&] { return m.forward(q, k, v, call); }, [&] { return naive_mha(m, q, k, v, call); }, {q, k, v},
      call.need_weights, label);
}

Tensor input(const Shape& s, uint64_t seed) { return random_tensor(s, seed).set_requires_grad(true); }

// Non-zero biases, so the bias paths are exercised (PyTorch initialises them to zero).
void randomise_biases(Module& m, uint64_t seed) {
  for (auto& [name, p] : m.named_parameters())
    if (p.rank() == 1) p.copy_from(random_tensor(p.shape(), seed++, -0.5f, 0.5f));
}

// ---- construction ------------------------------------------------------------------------------------

TEST(MultiheadAttention, ParameterNamesAndShapesAreTorchStateDictKeys) {
  MultiheadAttention packed({.embed_dim = 8, .num_heads = 2});
  auto p = packed.named_parameters();
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].first, "in_proj_weight");
  EXPECT_EQ(p[0].second.shape(), (Shape{24, 8}));
  EXPECT_EQ(p[1].first, "in_proj_bias");
  EXPECT_EQ(p[1].second.shape(), (Shape{24}));
  EXPECT_EQ(p[2].first, "out_proj.weight");
  EXPECT_EQ(p[2].second.shape(), (Shape{8, 8}));
  EXPECT_EQ(p[3].first, "out_proj.bias");
  EXPECT_EQ(p[3].second.shape(), (Shape{8}));
  EXPECT_EQ(p[2].second.name(), "out_proj.weight");

  MultiheadAttention separate({.embed_dim = 8, .num_heads = 2, .kdim = 6, .vdim = 4});
  auto s = separate.named_parameters();
  std::vector<std::string> names;
  for (auto& [n, t] : s) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias",
                                             "out_proj.weight", "out_proj.bias"}));
  EXPECT_EQ(s[0].second.shape(), (Shape{8, 8}));
  EXPECT_EQ(s[1].second.shape(), (Shape{8, 6}));
  EXPECT_EQ(s[2].second.shape(), (Shape{8, 4}));
  EXPECT_FALSE(separate.in_proj_weight.defined());

  // kdim == embed_dim given explicitly is still the packed layout (as PyTorch).
  MultiheadAttention explicit_dims({.embed_dim = 8, .num_heads = 2, .kdim = 8, .vdim = 8});
  EXPECT_TRUE(explicit_dims.in_proj_weight.defined());
  // separate_projections keeps q/k/v_proj_weight then (the RNN decoder's names).
  MultiheadAttention unpacked({.embed_dim = 8, .num_heads = 2, .separate_projections = true});
  EXPECT_FALSE(unpacked.in_proj_weight.defined());
  EXPECT_EQ(unpacked.named_parameters()[0].first, "q_proj_weight");
  EXPECT_EQ(unpacked.k_proj_weight.shape(), (Shape{8, 8}));

  MultiheadAttention no_bias({.embed_dim = 8, .num_heads = 2, .bias = false});
  names.clear();
  for (auto& [n, t] : no_bias.named_parameters()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"in_proj_weight", "out_proj.weight"}));
}

// The same weights, packed or separate, give the same attention (up to the rounding of one
// GEMM to 3D against three to D).
TEST(MultiheadAttention, SeparateProjectionsEqualPacked) {
  const int64_t D = 8;
  MultiheadAttention packed({.embed_dim = D, .num_heads = 2, .seed = 4});
  MultiheadAttention separate({.embed_dim = D, .num_heads = 2, .seed = 5, .separate_projections = true});
  const std::vector<float> w = packed.in_proj_weight.to_vector();
  for (auto [dst, row] :
       {std::pair{separate.q_proj_weight, 0}, {separate.k_proj_weight, 1}, {separate.v_proj_weight, 2}})
    std::copy(w.begin() + row * D * D, w.begin() + (row + 1) * D * D, dst.f32());
  std::copy_n(packed.out_proj.weight.f32(), D * D, separate.out_proj.weight.f32());
  const Tensor x = random_tensor({2, 3, D}, 6), kv = random_tensor({2, 4, D}, 7);
  autodiff::NoGradGuard no_grad;
  EXPECT_TRUE(tensors_close(separate.forward(x, kv, kv).out, packed.forward(x, kv, kv).out, 1e-6f, 1e-5f));
  EXPECT_TRUE(tensors_close(separate.forward(x, x, x).out, packed.forward(x, x, x).out, 1e-6f, 1e-5f));
}

TEST(MultiheadAttention, InitialisationAsPyTorch) {
  const int64_t D = 16;
  MultiheadAttention m({.embed_dim = D, .num_heads = 4, .seed = 3});
  const float xavier = std::sqrt(6.0f / (D + 3 * D));
  float max_in = 0, max_out = 0;
  for (float w : m.in_proj_weight.to_vector()) max_in = std::max(max_in, std::fabs(w));
  for (float w : m.out_proj.weight.to_vector()) max_out = std::max(max_out, std::fabs(w));
  EXPECT_LE(max_in, xavier);
  EXPECT_GT(max_in, 0.8f * xavier);  // drawn over the whole range, not left at zero
  EXPECT_LE(max_out, 1.0f / std::sqrt(float(D)));
  EXPECT_GT(max_out, 0.8f / std::sqrt(float(D)));
  for (float b : m.in_proj_bias.to_vector()) EXPECT_EQ(b, 0.0f);
  for (float b : m.out_proj.bias.to_vector()) EXPECT_EQ(b, 0.0f);
  // The seed decides the weights.
  MultiheadAttention same({.embed_dim = D, .num_heads = 4, .seed = 3});
  MultiheadAttention other({.embed_dim = D, .num_heads = 4, .seed = 4});
  EXPECT_TRUE(tensors_close(same.in_proj_weight, m.in_proj_weight, 0, 0));
  EXPECT_FALSE(tensors_close(other.in_proj_weight, m.in_proj_weight, 0, 0));
}

// ---- against the naive reference ----------------------------------------------------------------------

TEST(MultiheadAttention, SelfAttentionMatchesNaive) {
  MultiheadAttention m({.embed_dim = 8, .num_heads = 2, .seed = 1});
  randomise_biases(m, 50);
  Tensor x = input({2, 5, 8}, 1);
  expect_mha_matches(m, x, x, x, {.need_weights = true}, "self, weights");
  expect_mha_matches(m, x, x, x, {}, "self, no weights");
}

TEST(MultiheadAttention, SelfAttentionUsesOnePackedProjection) {
  MultiheadAttention m({.embed_dim = 8, .num_heads = 2});
  Tensor x = input({2, 3, 8}, 2);
  autodiff::tape().clear();
  m.forward(x, x, x);
  // linear (B, T, 3D) + split_heads + sdpa + merge_heads + out_proj linear: no weight slices,
  // no separate q/k/v projections.
  EXPECT_EQ(autodiff::tape().size(), 5u);
  autodiff::tape().clear();
  Tensor y = input({2, 3, 8}, 3);
  m.forward(x, y, y);  // shared key/value: one projection to (B, S, 2D)
  // q: 2 slices + linear + split; kv: 2 slices + linear + split; sdpa, merge, out_proj.
  EXPECT_EQ(autodiff::tape().size(), 11u);
  autodiff::tape().clear();
}

TEST(MultiheadAttention, CrossAttentionMatchesNaive) {
  MultiheadAttention m({.embed_dim = 8, .num_heads = 4, .seed = 2});
  randomise_biases(m, 60);
  Tensor q = input({2, 3, 8}, 4), k = input({2, 6, 8}, 5), v = input({2, 6, 8}, 6);
  expect_mha_matches(m, q, k, v, {.need_weights = true}, "cross, distinct k v");
  expect_mha_matches(m, q, k, k, {.need_weights = true}, "cross, key is value");
  expect_mha_matches(m, k, k, v, {.need_weights = true}, "query is key, value distinct");
  // T = 1, S = 1, batch 1.
  Tensor q1 = input({1, 1, 8}, 7), k1 = input({1, 1, 8}, 8);
  expect_mha_matches(m, q1, k1, k1, {.need_weights = true}, "T = S = 1");
}

TEST(MultiheadAttention, SeparateKeyValueSizesMatchNaive) {
  MultiheadAttention m({.embed_dim = 8, .num_heads = 2, .kdim = 6, .vdim = 4, .seed = 3});
  randomise_biases(m, 70);
  Tensor q = input({2, 4, 8}, 9), k = input({2, 5, 6}, 10), v = input({2, 5, 4}, 11);
  expect_mha_matches(m, q, k, v, {.need_weights = true}, "kdim != vdim != D");
  expect_mha_matches(m, q, k, v, {.key_lengths = i32({5, 2}, {2}), .causal = true}, "kdim != vdim, masks");
}

TEST(MultiheadAttention, NoBiasMatchesNaive) {
  MultiheadAttention m({.embed_dim = 6, .num_heads = 3, .bias = false, .seed = 4});
  Tensor q = input({2, 3, 6}, 12), k = input({2, 4, 6}, 13);
  expect_mha_matches(m, q, k, k, {.need_weights = true}, "no bias");
}

TEST(MultiheadAttention, MasksMatchNaive) {
  MultiheadAttention m({.embed_dim = 8, .num_heads = 2, .seed = 5});
  randomise_biases(m, 80);
  const int64_t B = 2, T = 4, S = 6;
  Tensor q = input({B, T, 8}, 14), k = input({B, S, 8}, 15), v = input({B, S, 8}, 16);
  Tensor lengths = i32({6, 3}, {B});
  Tensor kpm = i32({1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0, 1}, {B, S});
  Tensor bias = random_tensor({T, S}, 17, -2, 2);
  expect_mha_matches(m, q, k, v, {.key_lengths = lengths, .need_weights = true}, "lengths");
  expect_mha_matches(m, q, k, v, {.key_padding_mask = kpm, .need_weights = true}, "key_padding_mask");
  expect_mha_matches(m, q, k, v, {.causal = true, .need_weights = true}, "causal T < S");
  expect_mha_matches(m, q, k, v, {.attn_bias = bias, .need_weights = true}, "bias");
  expect_mha_matches(
      m, q, k, v,
      {.key_lengths = lengths, .causal = true, .attn_bias = bias, .temperature = 2.0f, .need_weights = true},
      "lengths + causal + bias + temperature");
  expect_mha_matches(m, q, k, v, {.key_padding_mask = kpm, .causal = true, .attn_bias = bias}, "kpm + causal + bias");
  Tensor x = input({B, S, 8}, 18);
  expect_mha_matches(m, x, x, x, {.causal = true, .need_weights = true}, "self, causal T == S");
}

TEST(MultiheadAttention, FullyMaskedRowsGiveZerosNotNaN) {
  MultiheadAttention m({.embed_dim = 8, .num_heads = 2, .seed = 6});
  randomise_biases(m, 90);
  const int64_t B = 2, T = 5, S = 3;
  Tensor q = input({B, T, 8}, 19), k = input({B, S, 8}, 20);
  // Batch row 0 has no keys; causal with T > S leaves queries t < T - S = 2 without keys.
  MhaCallOptions call{.key_lengths = i32({0, 3}, {B}), .causal = true, .need_weights = true};
  MhaResult r = m.forward(q, k, k, call);
  for (float w : r.weights.to_vector()) ASSERT_TRUE(std::isfinite(w));
  const auto out = r.out.to_vector();
  const auto w = r.weights.to_vector();
  const auto bias = m.out_proj.bias.to_vector();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const bool masked = b == 0 || t < T - S;
      if (!masked) continue;
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t s = 0; s < S; ++s) EXPECT_EQ(w[((b * 2 + h) * T + t) * S + s], 0.0f);
      // Zero attention output: the row is out_proj's bias.
      for (int64_t d = 0; d < 8; ++d) EXPECT_FLOAT_EQ(out[(b * T + t) * 8 + d], bias[d]);
    }
  expect_mha_matches(m, q, k, k, call, "fully masked rows");
  // Zero gradient into the queries of fully masked rows.
  q.drop_grad();
  backward(sum(m.forward(q, k, k, call).out));
  const auto dq = q.grad().to_vector();
  for (int64_t d = 0; d < 8; ++d) EXPECT_EQ(dq[(0 * T + 4) * 8 + d], 0.0f);  // batch 0
  for (int64_t d = 0; d < 8; ++d) EXPECT_EQ(dq[(1 * T + 0) * 8 + d], 0.0f);  // t < T - S
}

TEST(MultiheadAttention, SelectedAndAveragedWeights) {
  MultiheadAttention m({.embed_dim = 12, .num_heads = 4, .seed = 7});
  const int64_t B = 2, T = 3, S = 5, H = 4;
  Tensor q = input({B, T, 12}, 21), k = input({B, S, 12}, 22);
  MhaCallOptions call{.key_lengths = i32({5, 2}, {B}), .need_weights = true};
  Tensor full = naive_mha(m, q, k, k, call).weights;  // (B, H, T, S)
  const auto f = full.to_vector();
  auto expected = [&](const std::vector<int>& heads, bool average) {
    const int64_t K = static_cast<int64_t>(heads.size());
    std::vector<float> e;
    for (int64_t b = 0; b < B; ++b) {
      if (average) {
        for (int64_t i = 0; i < T * S; ++i) {
          float s = 0;
          for (int h : heads) s += f[(b * H + h) * T * S + i];
          e.push_back(s / static_cast<float>(K));
        }
      } else {
        for (int h : heads)
          for (int64_t i = 0; i < T * S; ++i) e.push_back(f[(b * H + h) * T * S + i]);
      }
    }
    return average ? Tensor::from_vector(e, {B, T, S}) : Tensor::from_vector(e, {B, K, T, S});
  };
  MhaCallOptions sel = call;
  sel.heads = {3, 1};
  MhaResult r = m.forward(q, k, k, sel);
  EXPECT_TRUE(tensors_close(r.weights, expected({3, 1}, false), kOutAtol, kOutRtol));
  MhaCallOptions avg = call;
  avg.average_weights = true;
  r = m.forward(q, k, k, avg);
  EXPECT_TRUE(tensors_close(r.weights, expected({0, 1, 2, 3}, true), kOutAtol, kOutRtol));
  MhaCallOptions both = sel;
  both.average_weights = true;
  r = m.forward(q, k, k, both);
  EXPECT_TRUE(tensors_close(r.weights, expected({3, 1}, true), kOutAtol, kOutRtol));
  // Averaged weights still sum to 1 over the kept keys (row of batch 1 has 2 keys).
  for (int64_t t = 0; t < T; ++t) {
    const float* row = m.forward(q, k, k, avg).weights.f32() + (1 * T + t) * S;
    EXPECT_NEAR(row[0] + row[1], 1.0f, 1e-5f);
    EXPECT_EQ(row[2], 0.0f);
  }
}

// ---- gradient checks ----------------------------------------------------------------------------------

TEST(MultiheadAttention, GradcheckEveryParameterAndInput) {
  MultiheadAttention m({.embed_dim = 4, .num_heads = 2, .seed = 8});
  randomise_biases(m, 100);
  Tensor q = input({2, 3, 4}, 23), k = input({2, 2, 4}, 24), v = input({2, 2, 4}, 25);
  std::vector<Tensor> in = {q, k, v};
  for (Tensor& p : m.parameters()) in.push_back(p);
  MhaCallOptions call{.key_lengths = i32({2, 1}, {2}), .attn_bias = random_tensor({3, 2}, 26)};
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& x) { return m.forward(x[0], x[1], x[2], call).out; }, in));
  // Through the returned weights: all heads, selected heads, averaged.
  call.need_weights = true;
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& x) { return m.forward(x[0], x[1], x[2], call).weights; }, in));
  call.heads = {1};
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& x) { return m.forward(x[0], x[1], x[2], call).weights; }, in));
  call.heads = {};
  call.average_weights = true;
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& x) { return m.forward(x[0], x[1], x[2], call).weights; }, in));
}

TEST(MultiheadAttention, GradcheckSelfAttentionAndSeparateSizes) {
  MultiheadAttention m({.embed_dim = 4, .num_heads = 2, .seed = 9});
  randomise_biases(m, 110);
  Tensor x = input({1, 3, 4}, 27);
  std::vector<Tensor> in = {x};
  for (Tensor& p : m.parameters()) in.push_back(p);
  MhaCallOptions causal{.causal = true};
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& t) { return m.forward(t[0], t[0], t[0], causal).out; }, in));

  MultiheadAttention s({.embed_dim = 4, .num_heads = 2, .kdim = 3, .vdim = 2, .seed = 10});
  randomise_biases(s, 120);
  Tensor q = input({2, 2, 4}, 28), k = input({2, 3, 3}, 29), v = input({2, 3, 2}, 30);
  std::vector<Tensor> in2 = {q, k, v};
  for (Tensor& p : s.parameters()) in2.push_back(p);
  MhaCallOptions kpm{.key_padding_mask = i32({1, 0, 1, 0, 0, 0}, {2, 3})};  // batch 1 fully masked
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& t) { return s.forward(t[0], t[1], t[2], kpm).out; }, in2));
}

// ---- dropout on the weights ----------------------------------------------------------------------------

TEST(MultiheadAttention, DropoutIsIdentityInEvalMode) {
  MultiheadAttention plain({.embed_dim = 8, .num_heads = 2, .seed = 11});
  MultiheadAttention drop({.embed_dim = 8, .num_heads = 2, .dropout = 0.5f, .seed = 11});
  drop.eval();
  Tensor q = input({2, 3, 8}, 31), k = input({2, 4, 8}, 32);
  MhaResult a = plain.forward(q, k, k, {.need_weights = true});
  MhaResult b = drop.forward(q, k, k, {.need_weights = true});
  EXPECT_TRUE(tensors_close(b.out, a.out, 0, 0));
  EXPECT_TRUE(tensors_close(b.weights, a.weights, 0, 0));
}

TEST(MultiheadAttention, DropoutDropsWeightsAndMatchesNaive) {
  const float p = 0.4f;
  MultiheadAttention m({.embed_dim = 8, .num_heads = 2, .dropout = p, .seed = 12});
  randomise_biases(m, 130);
  const int64_t B = 2, T = 6, S = 7;
  Tensor q = input({B, T, 8}, 33), k = input({B, S, 8}, 34), v = input({B, S, 8}, 35);
  MhaCallOptions call{.key_lengths = i32({7, 4}, {B}), .need_weights = true};
  m.eval();
  Tensor clean = m.forward(q, k, v, call).weights.clone();
  m.train();
  MhaResult r = m.forward(q, k, v, call);
  // Every weight is either dropped (0) or kept and scaled by 1 / (1 - p).
  const auto w = r.weights.to_vector(), c = clean.to_vector();
  int64_t dropped = 0, candidates = 0;
  std::vector<float> scale_mask(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    if (c[i] == 0.0f) {
      EXPECT_EQ(w[i], 0.0f);
      continue;
    }
    ++candidates;
    if (w[i] == 0.0f) {
      ++dropped;
    } else {
      EXPECT_NEAR(w[i], c[i] / (1 - p), 1e-5f + 1e-4f * c[i]);
      scale_mask[i] = 1.0f / (1 - p);
    }
  }
  EXPECT_GT(dropped, candidates / 5);  // about 40% of the kept positions
  EXPECT_LT(dropped, candidates * 3 / 5);
  // A second call draws a fresh mask.
  EXPECT_FALSE(tensors_close(m.forward(q, k, v, call).weights, r.weights, 0, 0));
  // The output and every gradient equal the naive computation with this very mask; the
  // module draws its next mask on the next call, so replay it: the mask is recovered from
  // the weights of the call being checked.
  Tensor drop_scale = Tensor::from_vector(scale_mask, r.weights.shape());
  expect_matches(
      m,
      [&] {
        MhaResult x = m.forward(q, k, v, call);
        // Recompute the replay mask from this call (each call draws a new one).
        const auto wx = x.weights.to_vector();
        std::vector<float> sm(wx.size());
        for (size_t i = 0; i < wx.size(); ++i) sm[i] = wx[i] != 0.0f ? 1.0f / (1 - p) : 0.0f;
        drop_scale = Tensor::from_vector(sm, x.weights.shape());
        return x;
      },
      [&] { return naive_mha(m, q, k, v, call, drop_scale); }, {q, k, v}, true, "dropout");
}

// ---- errors ---------------------------------------------------------------------------------------------

TEST(MultiheadAttention, Errors) {
  EXPECT_THROW_MSG(MultiheadAttention({.embed_dim = 10, .num_heads = 3}), ValueError,
                   "MultiheadAttention: embed_dim=10 is not divisible by num_heads=3");
  EXPECT_THROW_MSG(MultiheadAttention({.embed_dim = 0, .num_heads = 1}), ValueError,
                   "embed_dim must be positive, got 0");
  EXPECT_THROW_MSG(MultiheadAttention({.embed_dim = 8, .num_heads = 0}), ValueError,
                   "num_heads must be positive, got 0");
  EXPECT_THROW_MSG(MultiheadAttention({.embed_dim = 8, .num_heads = 2, .dropout = 1.0f}), ValueError,
                   "MultiheadAttention: dropout must be in [0, 1), got 1");
  EXPECT_THROW_MSG(MultiheadAttention({.embed_dim = 8, .num_heads = 2, .kdim = -1}), ValueError, "kdim must be >= 0");

  MultiheadAttention m({.embed_dim = 16, .num_heads = 4});
  Tensor q = Tensor::zeros({2, 5, 16}), k = Tensor::zeros({2, 7, 16});
  EXPECT_THROW_MSG(m.forward(Tensor::zeros({2, 5, 8}), k, k), ShapeError,
                   "multihead_attention: 'query' expected (B, T, D=16), got (2, 5, 8)");
  EXPECT_THROW_MSG(m.forward(q, Tensor::zeros({3, 7, 16}), k), ShapeError,
                   "multihead_attention: 'key' expected (B=2, S, Dk=16), got (3, 7, 16)");
  EXPECT_THROW_MSG(m.forward(q, k, Tensor::zeros({2, 6, 16})), ShapeError,
                   "multihead_attention: 'value' expected (B=2, S=7, Dv=16), got (2, 6, 16)");
  EXPECT_THROW_MSG(m.forward(q, k, k, {.need_weights = true, .heads = {0, 4}}), ValueError,
                   "multihead_attention: selected head 4 is out of range [0, H=4)");
  EXPECT_THROW_MSG(m.forward(q, k, k, {.heads = {0}}), ValueError, "set need_weights = true");
  EXPECT_THROW_MSG(m.forward(q, k, k, {.average_weights = true}), ValueError, "set need_weights = true");
  EXPECT_THROW_MSG(m.forward(q, k, k, {.key_lengths = i32({7, 8}, {2})}), ValueError,
                   "multihead_attention: 'key_lengths' value 8 at batch index 1 is out of range [0, S=7]");
  EXPECT_THROW_MSG(m.forward(q, k, k, {.key_lengths = i32({7, 7, 7}, {3})}), ShapeError,
                   "multihead_attention: 'key_lengths' expected (B=2), got (3)");
  EXPECT_THROW_MSG(m.forward(q, k, k, {.key_padding_mask = Tensor::zeros({2, 7})}), ShapeError,
                   "'key_padding_mask' expected dtype int32, got float32");
  EXPECT_THROW_MSG(m.forward(q, k, k, {.key_padding_mask = Tensor::zeros({2, 1}, DType::i32)}), ShapeError,
                   "multihead_attention: 'key_padding_mask' expected (B=2, S=7), got (2, 1)");
  EXPECT_THROW_MSG(
      m.forward(q, k, k, {.key_lengths = i32({1, 1}, {2}), .key_padding_mask = Tensor::zeros({2, 7}, DType::i32)}),
      ValueError, "key_lengths and key_padding_mask are exclusive");
  // A (B, T, S) bias is not "made to fit" one of the documented shapes.
  EXPECT_THROW_MSG(m.forward(q, k, k, {.attn_bias = Tensor::zeros({2, 5, 7})}), ShapeError,
                   "multihead_attention: 'attn_bias' expected float32 (T=5, S=7), (B·H=8, T, S) or (B=2, H=4, T, S), "
                   "got (2, 5, 7) float32");
  EXPECT_THROW_MSG(m.forward(q, k, k, {.attn_bias = Tensor::zeros({5, 7}, DType::i32)}), ShapeError,
                   "got (5, 7) int32");
  EXPECT_THROW_MSG(m.forward(q, k, k, {.temperature = 0.0f}), ValueError,
                   "temperature must be a finite value > 0, got 0");
}

// ---- Luong general, multi-head ---------------------------------------------------------------------------

TEST(MultiheadGeneralAttention, OneHeadWithoutProjectionsIsLuongGeneral) {
  const int64_t B = 3, T = 4, S = 5, D = 6, E = 4;
  MultiheadGeneralAttention m(
      {.embed_dim = D, .num_heads = 1, .kdim = E, .vdim = E, .in_proj = false, .out_proj = false, .seed = 13});
  ASSERT_EQ(m.named_parameters().size(), 1u);
  EXPECT_EQ(m.named_parameters()[0].first, "bilinear_weight");
  ASSERT_EQ(m.bilinear_weight.shape(), (Shape{1, D, E}));
  Tensor q = input({B, T, D}, 40), k = input({B, S, E}, 41), v = input({B, S, E}, 42);
  Tensor lengths = i32({5, 2, 0}, {B});  // ragged, with a fully masked row
  for (float tau : {1.0f, 0.5f}) {
    SCOPED_TRACE("temperature " + std::to_string(tau));
    for (Tensor t : {q, k, v, m.bilinear_weight}) t.drop_grad();
    MhaResult r = m.forward(q, k, v, {.key_lengths = lengths, .temperature = tau, .need_weights = true});
    Tensor r1 = random_tensor(r.out.shape(), 43), r2 = random_tensor({B, T, S}, 44);
    backward(add(sum(mul(r.out, r1)), sum(mul(r.weights.reshape({B, T, S}), r2))));
    std::vector<Tensor> got = snapshot_grads({q, k, v, m.bilinear_weight});
    for (Tensor t : {q, k, v, m.bilinear_weight}) t.drop_grad();

    Tensor w = m.bilinear_weight.reshape({D, E});  // recorded view: gradients reach the parameter
    LuongOptions general;
    general.score = LuongScore::general;
    general.w = w;
    general.temperature = tau;
    general.need_weights = true;
    AttentionResult e = luong_attention(q, k, v, lengths, general);
    backward(add(sum(mul(e.context, r1)), sum(mul(e.weights, r2))));
    std::vector<Tensor> want = snapshot_grads({q, k, v, m.bilinear_weight});
    for (Tensor t : {q, k, v, m.bilinear_weight}) t.drop_grad();

    EXPECT_TRUE(tensors_close(r.out, e.context, kOutAtol, kOutRtol)) << "context";
    EXPECT_TRUE(tensors_close(r.weights.reshape({B, T, S}), e.weights, kOutAtol, kOutRtol)) << "weights";
    const char* names[] = {"query", "keys", "values", "w"};
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(tensors_close(got[i], want[i], kGradAtol, kGradRtol)) << names[i];
  }
}

TEST(MultiheadGeneralAttention, MultiHeadMatchesNaive) {
  MultiheadGeneralAttention proj({.embed_dim = 8, .num_heads = 2, .kdim = 6, .vdim = 4, .seed = 14});
  randomise_biases(proj, 140);
  Tensor q = input({2, 3, 8}, 45), k = input({2, 5, 6}, 46), v = input({2, 5, 4}, 47);
  MhaCallOptions call{.key_lengths = i32({5, 3}, {2}), .causal = true, .need_weights = true};
  expect_matches(
      proj, [&] { return proj.forward(q, k, v, call); }, [&] { return naive_general(proj, q, k, v, call); }, {q, k, v},
      true, "general, projections");

  MultiheadGeneralAttention raw(
      {.embed_dim = 6, .num_heads = 3, .kdim = 9, .vdim = 3, .in_proj = false, .scale = 0.0f, .seed = 15});
  randomise_biases(raw, 150);
  ASSERT_EQ(raw.bilinear_weight.shape(), (Shape{3, 2, 3}));
  ASSERT_EQ(raw.out_proj->weight.shape(), (Shape{6, 3}));
  Tensor q2 = input({2, 3, 6}, 48), k2 = input({2, 4, 9}, 49), v2 = input({2, 4, 3}, 50);
  MhaCallOptions call2{.attn_bias = random_tensor({3, 4}, 51), .need_weights = true};
  expect_matches(
      raw, [&] { return raw.forward(q2, k2, v2, call2); }, [&] { return naive_general(raw, q2, k2, v2, call2); },
      {q2, k2, v2}, true, "general, no in-projection, scale 1/sqrt(Dk_h)");
}

TEST(MultiheadGeneralAttention, ParameterNamesAndGradcheck) {
  MultiheadGeneralAttention m({.embed_dim = 4, .num_heads = 2, .kdim = 3, .seed = 16});
  std::vector<std::string> names;
  for (auto& [n, t] : m.named_parameters()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias",
                                             "bilinear_weight", "out_proj.weight", "out_proj.bias"}));
  randomise_biases(m, 160);
  Tensor q = input({2, 2, 4}, 52), k = input({2, 3, 3}, 53), v = input({2, 3, 4}, 54);
  std::vector<Tensor> in = {q, k, v};
  for (Tensor& p : m.parameters()) in.push_back(p);
  MhaCallOptions call{.key_lengths = i32({3, 0}, {2})};
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& x) { return m.forward(x[0], x[1], x[2], call).out; }, in));
  call.need_weights = true;
  call.average_weights = true;
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& x) { return m.forward(x[0], x[1], x[2], call).weights; }, in));
}

TEST(MultiheadGeneralAttention, Errors) {
  EXPECT_THROW_MSG(MultiheadGeneralAttention({.embed_dim = 8, .num_heads = 3}), ValueError,
                   "MultiheadGeneralAttention: embed_dim=8 is not divisible by num_heads=3");
  EXPECT_THROW_MSG(MultiheadGeneralAttention({.embed_dim = 8, .num_heads = 2, .kdim = 5, .in_proj = false}), ValueError,
                   "MultiheadGeneralAttention: kdim=5 is not divisible by num_heads=2");
  MultiheadGeneralAttention m({.embed_dim = 4, .num_heads = 2});
  EXPECT_THROW_MSG(m.forward(Tensor::zeros({1, 2, 3}), Tensor::zeros({1, 2, 4}), Tensor::zeros({1, 2, 4})), ShapeError,
                   "multihead_general_attention: 'query' expected (B, T, D=4), got (1, 2, 3)");
}

}  // namespace
}  // namespace attn::nn
