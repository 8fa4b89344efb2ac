// Transformer blocks (include/attn/nn/transformer.h): forward values against a naive
// double-precision reference written here from the parameters (loops, no attn ops);
// padding invariance (a padded batch equals its unpadded rows); gradchecks through one
// encoder and one decoder layer; the KV cache against full recomputation of every prefix
// (also after select_rows); PositionalEncoding values; parameter names; the
// MultiheadAttention pieces the cache uses (project_kv, attend_projected, ...); errors.
#include "attn/nn/transformer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/ops/reduce.h"
#include "test_support.h"
#include "tolerances.h"

namespace attn::nn {
namespace {

using namespace attn::testing;  // the helpers of tests/support
// kOpTol: float32 GEMM / online softmax against a double reference, and the step path against
// the full pass (different GEMM shapes, same math).

Tensor i32(const std::vector<int32_t>& v) { return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}); }

TransformerLayerOptions small(bool norm_first, const std::string& activation = "relu", float dropout = 0.0f) {
  TransformerLayerOptions o;
  o.d_model = 8;
  o.heads = 2;
  o.ffn = 12;
  o.dropout = dropout;
  o.norm_first = norm_first;
  o.activation = parse_ffn_activation(activation, "test");
  o.seed = 7;
  return o;
}

// x (B, T, D): rows b, positions [t0, t1) → (1, t1 - t0, D), a copy.
Tensor part(const Tensor& x, int64_t b, int64_t t0, int64_t t1) {
  const int64_t T = x.dim(1), D = x.dim(2);
  Tensor y = Tensor::empty({1, t1 - t0, D});
  for (int64_t t = t0; t < t1; ++t)
    for (int64_t d = 0; d < D; ++d) y.f32()[(t - t0) * D + d] = x.f32()[(b * T + t) * D + d];
  return y;
}

// x (B, T, D) → (B, t1 - t0, D), positions [t0, t1) of every row.
Tensor positions(const Tensor& x, int64_t t0, int64_t t1) {
  const int64_t B = x.dim(0), T = x.dim(1), D = x.dim(2);
  Tensor y = Tensor::empty({B, t1 - t0, D});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = t0; t < t1; ++t)
      for (int64_t d = 0; d < D; ++d) y.f32()[(b * (t1 - t0) + t - t0) * D + d] = x.f32()[(b * T + t) * D + d];
  return y;
}

// x (B, ...) → rows[i] of x, a copy.
Tensor pick(const Tensor& x, const std::vector<int32_t>& rows) {
  const int64_t w = x.numel() / x.dim(0);
  std::vector<int64_t> dims = x.shape().dims();
  dims[0] = static_cast<int64_t>(rows.size());
  Tensor y = Tensor::empty(Shape(dims), x.dtype());
  for (size_t i = 0; i < rows.size(); ++i)
    for (int64_t j = 0; j < w; ++j) {
      if (x.dtype() == DType::f32)
        y.f32()[i * w + j] = x.f32()[rows[i] * w + j];
      else
        y.i32()[i * w + j] = x.i32()[rows[i] * w + j];
    }
  return y;
}

bool all_finite(const Tensor& t) {
  for (float v : t.to_vector())
    if (!std::isfinite(v)) return false;
  return true;
}

// ---- naive reference (double) ----------------------------------------------------------------------

using Mat = std::vector<double>;  // (B, T, D) flattened

struct Seq {
  int64_t B, T, D;
  Mat v;
};

Seq seq_of(const Tensor& x) {
  Seq s{x.dim(0), x.dim(1), x.dim(2), {}};
  for (float f : x.to_vector()) s.v.push_back(f);
  return s;
}

Tensor tensor_of(const Seq& s) {
  std::vector<float> f(s.v.begin(), s.v.end());
  return Tensor::from_vector(f, {s.B, s.T, s.D});
}

// y = x Wᵀ + b with rows [r0, r0 + OUT) of W (OUT, IN) and b.
Seq ref_linear(const Seq& x, const Tensor& W, const Tensor& b, int64_t r0, int64_t out) {
  Seq y{x.B, x.T, out, Mat(static_cast<size_t>(x.B * x.T * out))};
  const int64_t in = x.D;
  for (int64_t n = 0; n < x.B * x.T; ++n)
    for (int64_t o = 0; o < out; ++o) {
      double acc = b.defined() ? b.f32()[r0 + o] : 0.0;
      for (int64_t i = 0; i < in; ++i) acc += x.v[n * in + i] * W.f32()[(r0 + o) * in + i];
      y.v[n * out + o] = acc;
    }
  return y;
}

Seq ref_add(Seq a, const Seq& b) {
  for (size_t i = 0; i < a.v.size(); ++i) a.v[i] += b.v[i];
  return a;
}

Seq ref_norm(Seq x, const LayerNorm& ln) {
  for (int64_t n = 0; n < x.B * x.T; ++n) {
    double mean = 0, var = 0;
    for (int64_t d = 0; d < x.D; ++d) mean += x.v[n * x.D + d];
    mean /= x.D;
    for (int64_t d = 0; d < x.D; ++d) var += (x.v[n * x.D + d] - mean) * (x.v[n * x.D + d] - mean);
    var /= x.D;
    for (int64_t d = 0; d < x.D; ++d)
      x.v[n * x.D + d] = (x.v[n * x.D + d] - mean) / std::sqrt(var + ln.eps) * ln.weight.f32()[d] + ln.bias.f32()[d];
  }
  return x;
}

Seq ref_ffn(const Seq& x, const Linear& l1, const Linear& l2, FfnActivation act) {
  Seq h = ref_linear(x, l1.weight, l1.bias, 0, l1.weight.dim(0));
  for (double& v : h.v)
    v = act == FfnActivation::gelu ? 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))) : std::max(v, 0.0);
  return ref_linear(h, l2.weight, l2.bias, 0, l2.weight.dim(0));
}

// Multi-head attention of q_in (B, T, D) over kv_in (B, S, D); keys s >= lengths[b] and
// (causal) s > t are masked; a row with no visible key gets a zero context.
Seq ref_mha(const Seq& q_in, const Seq& kv_in, const MultiheadAttention& m, const Tensor& lengths, bool causal) {
  const int64_t D = q_in.D, H = m.options().num_heads, Dh = D / H, B = q_in.B, T = q_in.T, S = kv_in.T;
  Seq q = ref_linear(q_in, m.in_proj_weight, m.in_proj_bias, 0, D);
  Seq k = ref_linear(kv_in, m.in_proj_weight, m.in_proj_bias, D, D);
  Seq v = ref_linear(kv_in, m.in_proj_weight, m.in_proj_bias, 2 * D, D);
  Seq ctx{B, T, D, Mat(static_cast<size_t>(B * T * D), 0.0)};
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        std::vector<double> e(static_cast<size_t>(S));
        std::vector<bool> keep(static_cast<size_t>(S));
        double mx = -1e300;
        bool any = false;
        for (int64_t s = 0; s < S; ++s) {
          keep[s] = (!lengths.defined() || s < lengths.i32()[b]) && (!causal || s <= t);
          double dot = 0;
          for (int64_t d = 0; d < Dh; ++d) dot += q.v[(b * T + t) * D + h * Dh + d] * k.v[(b * S + s) * D + h * Dh + d];
          e[s] = dot / std::sqrt(static_cast<double>(Dh));
          if (keep[s]) mx = std::max(mx, e[s]), any = true;
        }
        if (!any) continue;
        double z = 0;
        for (int64_t s = 0; s < S; ++s) z += keep[s] ? std::exp(e[s] - mx) : 0.0;
        for (int64_t s = 0; s < S; ++s) {
          if (!keep[s]) continue;
          const double a = std::exp(e[s] - mx) / z;
          for (int64_t d = 0; d < Dh; ++d) ctx.v[(b * T + t) * D + h * Dh + d] += a * v.v[(b * S + s) * D + h * Dh + d];
        }
      }
  return ref_linear(ctx, m.out_proj.weight, m.out_proj.bias, 0, D);
}

Seq ref_encoder_layer(const Seq& x, TransformerEncoderLayer& l, const Tensor& lengths, bool causal) {
  const auto& o = l.options();
  if (o.norm_first) {
    Seq n1 = ref_norm(x, l.norm1);
    Seq h = ref_add(x, ref_mha(n1, n1, l.self_attn, lengths, causal));
    return ref_add(h, ref_ffn(ref_norm(h, l.norm2), l.linear1, l.linear2, o.activation));
  }
  Seq h = ref_norm(ref_add(x, ref_mha(x, x, l.self_attn, lengths, causal)), l.norm1);
  return ref_norm(ref_add(h, ref_ffn(h, l.linear1, l.linear2, o.activation)), l.norm2);
}

Seq ref_decoder_layer(const Seq& x, const Seq& mem, TransformerDecoderLayer& l, const Tensor& mem_lengths) {
  const auto& o = l.options();
  if (o.norm_first) {
    Seq n1 = ref_norm(x, l.norm1);
    Seq h = ref_add(x, ref_mha(n1, n1, l.self_attn, Tensor(), true));
    h = ref_add(h, ref_mha(ref_norm(h, l.norm2), mem, l.multihead_attn, mem_lengths, false));
    return ref_add(h, ref_ffn(ref_norm(h, l.norm3), l.linear1, l.linear2, o.activation));
  }
  Seq h = ref_norm(ref_add(x, ref_mha(x, x, l.self_attn, Tensor(), true)), l.norm1);
  h = ref_norm(ref_add(h, ref_mha(h, mem, l.multihead_attn, mem_lengths, false)), l.norm2);
  return ref_norm(ref_add(h, ref_ffn(h, l.linear1, l.linear2, o.activation)), l.norm3);
}

// Biases start at zero in MultiheadAttention; give every parameter random values so the
// reference checks every term.
void randomize(Module& m, uint64_t seed) {
  for (auto& [name, p] : m.named_parameters()) p.copy_from(random_tensor(p.shape(), seed++, -0.5f, 0.5f));
}

// ---- forward values ---------------------------------------------------------------------------------

class LayerVariants : public ::testing::TestWithParam<std::tuple<bool, const char*>> {};

TEST_P(LayerVariants, EncoderLayerMatchesNaiveReference) {
  auto [norm_first, act] = GetParam();
  TransformerEncoderLayer layer(small(norm_first, act));
  randomize(layer, 11);
  Tensor x = random_tensor({3, 5, 8}, 1);
  Tensor lengths = i32({5, 3, 1});
  for (bool causal : {false, true}) {
    Tensor y = causal ? layer.forward_causal(x, lengths) : layer.forward(x, lengths);
    EXPECT_EQ(y.shape(), Shape({3, 5, 8}));
    EXPECT_TRUE(tensors_close(y, tensor_of(ref_encoder_layer(seq_of(x), layer, lengths, causal)), kOpTol))
        << "causal " << causal;
  }
}

TEST_P(LayerVariants, DecoderLayerMatchesNaiveReference) {
  auto [norm_first, act] = GetParam();
  TransformerDecoderLayer layer(small(norm_first, act));
  randomize(layer, 21);
  Tensor x = random_tensor({2, 4, 8}, 2), mem = random_tensor({2, 6, 8}, 3);
  Tensor mem_lengths = i32({6, 2});
  LayerAttention w;
  Tensor y = layer.forward(x, mem, mem_lengths, &w);
  EXPECT_TRUE(tensors_close(y, tensor_of(ref_decoder_layer(seq_of(x), seq_of(mem), layer, mem_lengths)), kOpTol));
  ASSERT_EQ(w.self_weights.shape(), Shape({2, 2, 4, 4}));
  ASSERT_EQ(w.cross_weights.shape(), Shape({2, 2, 4, 6}));
  // Causal: zero above the diagonal; cross: zero past each memory length; rows sum to 1.
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t t = 0; t < 4; ++t) {
        double sum_self = 0, sum_cross = 0;
        for (int64_t s = 0; s < 4; ++s) {
          const float a = w.self_weights.f32()[((b * 2 + h) * 4 + t) * 4 + s];
          if (s > t) {
            EXPECT_EQ(a, 0.0f);
          }
          sum_self += a;
        }
        for (int64_t s = 0; s < 6; ++s) {
          const float a = w.cross_weights.f32()[((b * 2 + h) * 4 + t) * 6 + s];
          if (s >= mem_lengths.i32()[b]) {
            EXPECT_EQ(a, 0.0f);
          }
          sum_cross += a;
        }
        EXPECT_NEAR(sum_self, 1.0, 1e-5);
        EXPECT_NEAR(sum_cross, 1.0, 1e-5);
      }
}

INSTANTIATE_TEST_SUITE_P(Transformer, LayerVariants,
                         ::testing::Combine(::testing::Bool(), ::testing::Values("relu", "gelu")),
                         [](const ::testing::TestParamInfo<LayerVariants::ParamType>& info) {
                           return std::string(std::get<0>(info.param) ? "norm_first_" : "norm_after_") +
                                  std::get<1>(info.param);
                         });

// ---- shapes, stacks, padding ------------------------------------------------------------------------

TEST(TransformerStacks, ShapesAndFinalNorm) {
  for (bool norm_first : {false, true}) {
    TransformerEncoder enc(small(norm_first), 2);
    TransformerDecoder dec(small(norm_first), 3);
    CausalTransformer lm(small(norm_first), 2);
    EXPECT_EQ(enc.layers.size(), 2u);
    EXPECT_EQ(dec.layers.size(), 3u);
    EXPECT_EQ(norm_first, enc.norm != nullptr);
    EXPECT_EQ(norm_first, dec.norm != nullptr);
    EXPECT_EQ(norm_first, lm.norm != nullptr);
    Tensor src = random_tensor({2, 5, 8}, 4), tgt = random_tensor({2, 3, 8}, 5);
    std::vector<LayerAttention> ew, dw, lw;
    Tensor mem = enc.forward(src, i32({5, 2}), &ew);
    EXPECT_EQ(mem.shape(), Shape({2, 5, 8}));
    ASSERT_EQ(ew.size(), 2u);
    EXPECT_EQ(ew[1].self_weights.shape(), Shape({2, 2, 5, 5}));
    EXPECT_FALSE(ew[1].cross_weights.defined());
    Tensor out = dec.forward(tgt, mem, i32({5, 2}), &dw);
    EXPECT_EQ(out.shape(), Shape({2, 3, 8}));
    ASSERT_EQ(dw.size(), 3u);
    EXPECT_EQ(dw[2].cross_weights.shape(), Shape({2, 2, 3, 5}));
    Tensor lo = lm.forward(tgt, Tensor(), &lw);
    EXPECT_EQ(lo.shape(), Shape({2, 3, 8}));
    EXPECT_EQ(lw[0].self_weights.shape(), Shape({2, 2, 3, 3}));
    EXPECT_EQ(lw[0].self_weights.f32()[1], 0.0f);  // (0, 0, 0, 1): causal
    if (norm_first) {
      // The final norm: mean 0, variance 1 per position (weight 1, bias 0 at start).
      for (int64_t n = 0; n < 6; ++n) {
        double mean = 0;
        for (int64_t d = 0; d < 8; ++d) mean += out.f32()[n * 8 + d];
        EXPECT_NEAR(mean / 8, 0.0, 1e-5);
      }
    }
  }
}

TEST(TransformerStacks, EncoderStackIsItsLayersThenNorm) {
  TransformerEncoder enc(small(true), 2);
  randomize(enc, 3);
  Tensor x = random_tensor({2, 4, 8}, 6), len = i32({4, 3});
  Seq r = ref_encoder_layer(ref_encoder_layer(seq_of(x), *enc.layers[0], len, false), *enc.layers[1], len, false);
  EXPECT_TRUE(tensors_close(enc.forward(x, len), tensor_of(ref_norm(r, *enc.norm)), kOpTol));
}

TEST(TransformerStacks, PaddingDoesNotChangeRealPositions) {
  for (bool norm_first : {false, true}) {
    TransformerEncoder enc(small(norm_first, "gelu"), 2);
    TransformerDecoder dec(small(norm_first), 2);
    CausalTransformer lm(small(norm_first), 2);
    enc.eval(), dec.eval(), lm.eval();
    randomize(enc, 1), randomize(dec, 100), randomize(lm, 200);
    const std::vector<int32_t> len = {5, 3, 1};
    Tensor x = random_tensor({3, 5, 8}, 7), tgt = random_tensor({3, 4, 8}, 8);
    Tensor mem = enc.forward(x, i32(len));
    Tensor dec_out = dec.forward(tgt, mem, i32(len));
    Tensor lm_out = lm.forward(x, i32(len));
    for (int64_t b = 0; b < 3; ++b) {
      const int64_t n = len[b];
      Tensor mem_b = enc.forward(part(x, b, 0, n), Tensor());
      EXPECT_TRUE(tensors_close(part(mem, b, 0, n), mem_b, kOpTol)) << "encoder row " << b;
      EXPECT_TRUE(tensors_close(part(dec_out, b, 0, 4), dec.forward(part(tgt, b, 0, 4), mem_b, Tensor()), kOpTol))
          << "decoder row " << b;
      EXPECT_TRUE(tensors_close(part(lm_out, b, 0, n), lm.forward(part(x, b, 0, n), Tensor()), kOpTol))
          << "causal row " << b;
    }
  }
}

TEST(TransformerStacks, FullyMaskedRowIsFiniteWithZeroGradient) {
  TransformerEncoderLayer layer(small(false));
  Tensor x = random_tensor({2, 3, 8}, 9);
  x.set_requires_grad(true);
  Tensor y = layer.forward(x, i32({0, 2}));
  EXPECT_TRUE(all_finite(y));
  backward(sum(y));
  EXPECT_TRUE(all_finite(x.grad()));
  // Row 0 sees no key: its attention output is out_proj.bias for every position, so the
  // rows' outputs do not depend on x through attention (only through the residual).
  TransformerDecoderLayer dl(small(true));
  Tensor out = dl.forward(random_tensor({1, 2, 8}, 10), random_tensor({1, 3, 8}, 11), i32({0}));
  EXPECT_TRUE(all_finite(out));
}

TEST(TransformerStacks, BatchOneAndLengthOne) {
  TransformerDecoder dec(small(false), 1);
  Tensor y = dec.forward(random_tensor({1, 1, 8}, 12), random_tensor({1, 1, 8}, 13), i32({1}));
  EXPECT_EQ(y.shape(), Shape({1, 1, 8}));
  EXPECT_TRUE(all_finite(y));
}

// ---- gradients ---------------------------------------------------------------------------------------

TEST(TransformerGrad, EncoderLayer) {
  for (bool norm_first : {false, true}) {
    TransformerEncoderLayer layer(small(norm_first, "gelu"));
    randomize(layer, 31);
    Tensor x = random_tensor({2, 3, 8}, 14);
    x.set_requires_grad(true);
    Tensor len = i32({3, 1});
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) { return layer.forward(in[0], len); },
        {x, layer.self_attn.in_proj_bias, layer.linear1.bias, layer.norm1.weight, layer.self_attn.out_proj.weight}))
        << "norm_first " << norm_first;
  }
}

TEST(TransformerGrad, CausalEncoderLayerRelu) {
  TransformerEncoderLayer layer(small(true, "relu"));
  randomize(layer, 41);
  Tensor x = random_tensor({1, 4, 8}, 15);
  x.set_requires_grad(true);
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return layer.forward_causal(in[0], Tensor()); },
                        {x, layer.linear2.weight, layer.norm2.bias}));
}

TEST(TransformerGrad, DecoderLayer) {
  for (bool norm_first : {false, true}) {
    TransformerDecoderLayer layer(small(norm_first, "gelu"));
    randomize(layer, 51);
    Tensor x = random_tensor({2, 3, 8}, 16), mem = random_tensor({2, 4, 8}, 17);
    x.set_requires_grad(true);
    mem.set_requires_grad(true);
    Tensor len = i32({4, 2});
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return layer.forward(in[0], in[1], len); },
                          {x, mem, layer.multihead_attn.in_proj_weight, layer.self_attn.in_proj_bias,
                           layer.norm3.weight, layer.linear1.bias}))
        << "norm_first " << norm_first;
  }
}

// ---- KV cache ----------------------------------------------------------------------------------------

TEST(TransformerCache, DecoderStepEqualsFullPass) {
  for (bool norm_first : {false, true}) {
    TransformerDecoder dec(small(norm_first, "gelu", 0.1f), 2);
    dec.eval();  // dropout off: the cache path and the full pass must agree
    randomize(dec, 61);
    const int64_t B = 2, T = 5;
    Tensor tgt = random_tensor({B, T, 8}, 18), mem = random_tensor({B, 6, 8}, 19);
    Tensor mem_len = i32({6, 3});
    autodiff::NoGradGuard no_grad;
    KvCache cache = dec.start(mem_len);
    ASSERT_EQ(cache.layers.size(), 2u);
    for (int64_t t = 1; t <= T; ++t) {
      Tensor y = dec.step(positions(tgt, t - 1, t), mem, cache);
      EXPECT_EQ(cache.steps, t);
      EXPECT_EQ(cache.layers[0].self_k.shape(), Shape({B, 2, t, 4}));
      EXPECT_EQ(cache.layers[1].self_v.shape(), Shape({B, 2, t, 4}));
      EXPECT_EQ(cache.layers[1].cross_k.shape(), Shape({B, 2, 6, 4}));
      Tensor full = dec.forward(positions(tgt, 0, t), mem, mem_len);
      EXPECT_TRUE(tensors_close(y, positions(full, t - 1, t), kOpTol)) << "norm_first " << norm_first << " step " << t;
    }
  }
}

TEST(TransformerCache, DecoderAfterSelectRows) {
  TransformerDecoder dec(small(true), 2);
  randomize(dec, 71);
  Tensor tgt = random_tensor({2, 5, 8}, 20), mem = random_tensor({2, 4, 8}, 21);
  Tensor mem_len = i32({4, 2});
  autodiff::NoGradGuard no_grad;
  KvCache cache = dec.start(mem_len);
  for (int64_t t = 1; t <= 2; ++t) dec.step(positions(tgt, t - 1, t), mem, cache);
  // Beam reorder: rows {1, 0, 1}; the new batch continues with the selected histories.
  const std::vector<int32_t> rows = {1, 0, 1};
  cache.select_rows(i32(rows));
  EXPECT_EQ(cache.layers[0].self_k.shape(), Shape({3, 2, 2, 4}));
  EXPECT_EQ(cache.layers[1].cross_v.shape(), Shape({3, 2, 4, 4}));
  EXPECT_EQ(cache.memory_lengths.to_vector_i32(), std::vector<int32_t>({2, 4, 2}));
  Tensor tgt3 = pick(tgt, rows), mem3 = pick(mem, rows);
  // Row 2 continues differently from row 0 after the reorder: give it other inputs.
  for (int64_t d = 0; d < 8; ++d) tgt3.f32()[(2 * 5 + 3) * 8 + d] += 0.5f;
  for (int64_t t = 3; t <= 5; ++t) {
    Tensor y = dec.step(positions(tgt3, t - 1, t), mem3, cache);
    Tensor full = dec.forward(positions(tgt3, 0, t), mem3, pick(mem_len, rows));
    EXPECT_TRUE(tensors_close(y, positions(full, t - 1, t), kOpTol)) << "step " << t;
  }
}

// Two reorders before a step (the first gathered when the second comes) equal one select_rows
// of their composition, rows[i] = first[second[i]]; through the nn::DecodingState interface.
TEST(TransformerCache, ReorderTwiceEqualsSelectRowsOfTheComposition) {
  TransformerDecoder dec(small(true), 2);
  randomize(dec, 72);
  Tensor tgt = random_tensor({2, 3, 8}, 24), mem = random_tensor({2, 4, 8}, 25);
  autodiff::NoGradGuard no_grad;
  KvCache twice = dec.start(i32({4, 2})), once = dec.start(i32({4, 2}));
  for (int64_t t = 1; t <= 2; ++t) {
    dec.step(positions(tgt, t - 1, t), mem, twice);
    dec.step(positions(tgt, t - 1, t), mem, once);
  }
  DecodingState& state = twice;
  state.reorder(i32({1, 0, 1}));
  state.reorder(i32({2, 0}));
  once.select_rows(i32({1, 1}));
  EXPECT_EQ(twice.memory_lengths.to_vector_i32(), std::vector<int32_t>({2, 2}));
  const Tensor x = positions(pick(tgt, {1, 1}), 2, 3);
  EXPECT_TRUE(tensors_close(dec.step(x, Tensor(), twice), dec.step(x, Tensor(), once), 0.0f, 0.0f));
  EXPECT_TRUE(tensors_close(twice.layers[1].self_v, once.layers[1].self_v, 0.0f, 0.0f));
}

// group = 2: two decoder rows per memory row (a beam's hypotheses) give exactly what the
// expanded memory gives, weights included, through a reorder that also drops a memory row;
// a reorder that mixes memory rows is refused.
TEST(TransformerCache, GroupedMemoryEqualsExpanded) {
  TransformerDecoder dec(small(true), 2);
  randomize(dec, 73);
  Tensor tgt = random_tensor({4, 4, 8}, 22), mem = random_tensor({2, 5, 8}, 23);
  const std::vector<int32_t> expand = {0, 0, 1, 1};
  autodiff::NoGradGuard no_grad;
  KvCache grouped = dec.start(i32({5, 3}), 2), expanded = dec.start(i32({5, 5, 3, 3}));
  std::vector<LayerAttention> wg, we;
  for (int64_t t = 1; t <= 2; ++t) {
    Tensor yg = dec.step(positions(tgt, t - 1, t), mem, grouped, &wg, 1);
    Tensor ye = dec.step(positions(tgt, t - 1, t), pick(mem, expand), expanded, &we, 1);
    EXPECT_TRUE(tensors_close(yg, ye, 0.0f, 0.0f)) << "step " << t;
    EXPECT_TRUE(tensors_close(wg[1].cross_weights, we[1].cross_weights, 0.0f, 0.0f)) << "step " << t;
    EXPECT_FALSE(wg[0].cross_weights.defined());  // only the asked layer's weights
  }
  EXPECT_EQ(grouped.layers[0].cross_k.shape(), Shape({2, 2, 5, 4}));
  // Memory row 0 is dropped, row 1's hypotheses swap: select_rows, then a step, equals
  // reorder() (the memory rows at once, the self keys and values in the step's append), then
  // the step; a pending reorder of another batch size is refused and changes nothing.
  expanded.select_rows(i32({3, 2}));
  Tensor ye = dec.step(positions(pick(tgt, {3, 2}), 2, 3), Tensor(), expanded);
  grouped.reorder(i32({3, 2}));
  EXPECT_EQ(grouped.layers[0].self_k.shape(), Shape({4, 2, 2, 4}));  // gathered by the next step
  EXPECT_THROW_MSG(dec.step(positions(pick(tgt, {3}), 2, 3), Tensor(), grouped), ShapeError,
                   "TransformerDecoder::step: the cache's pending reorder expected (B=1) rows, got (2)");
  Tensor yg = dec.step(positions(pick(tgt, {3, 2}), 2, 3), Tensor(), grouped);
  EXPECT_FALSE(grouped.pending_rows.defined());
  EXPECT_TRUE(tensors_close(yg, ye, 0.0f, 0.0f));
  EXPECT_EQ(grouped.layers[1].cross_v.shape(), Shape({1, 2, 5, 4}));
  EXPECT_EQ(grouped.layers[0].self_k.shape(), Shape({2, 2, 3, 4}));
  EXPECT_TRUE(tensors_close(grouped.layers[0].self_k, expanded.layers[0].self_k, 0.0f, 0.0f));
  EXPECT_EQ(grouped.memory_lengths.to_vector_i32(), std::vector<int32_t>({3}));
  EXPECT_THROW_MSG(grouped.select_rows(i32({0})), ValueError, "1 rows are not whole groups of 2");
  KvCache two = dec.start(i32({5, 3}), 2);
  dec.step(positions(tgt, 0, 1), mem, two);
  EXPECT_THROW_MSG(two.select_rows(i32({0, 2})), ValueError,
                   "KvCache::select_rows: row 2 at position 1 is not of memory row 0 (groups of 2)");
  EXPECT_THROW_MSG(dec.step(positions(tgt, 0, 1), mem, two, nullptr, 5), ValueError, "cross_layer 5 out of range");
}

TEST(TransformerCache, CausalStepEqualsFullPass) {
  for (bool norm_first : {false, true}) {
    CausalTransformer lm(small(norm_first, "relu"), 2);
    randomize(lm, 81);
    const int64_t B = 2, T = 6;
    Tensor x = random_tensor({B, T, 8}, 22);
    autodiff::NoGradGuard no_grad;
    KvCache cache = lm.start(B);
    EXPECT_EQ(cache.layers[0].self_k.shape(), Shape({B, 2, 0, 4}));
    for (int64_t t = 1; t <= T; ++t) {
      Tensor y = lm.step(positions(x, t - 1, t), cache);
      EXPECT_EQ(cache.layers[0].self_k.shape()[2], t);
      EXPECT_EQ(cache.layers[1].self_k.shape()[2], t);
      EXPECT_FALSE(cache.layers[0].cross_k.defined());
      Tensor full = lm.forward(positions(x, 0, t), Tensor());
      EXPECT_TRUE(tensors_close(y, positions(full, t - 1, t), kOpTol)) << "norm_first " << norm_first << " step " << t;
      if (t == 3) {
        cache.select_rows(i32({1}));
        x = pick(x, {1});
      }
    }
    EXPECT_EQ(cache.layers[0].self_k.shape(), Shape({1, 2, T, 4}));
  }
}

TEST(TransformerCache, StepRecordsNothingAndReportsWeights) {
  TransformerDecoder dec(small(false), 1);
  Tensor mem = random_tensor({1, 3, 8}, 23);
  KvCache cache = dec.start(i32({2}));
  Tensor x = random_tensor({1, 1, 8}, 24);
  x.set_requires_grad(true);  // grad mode on: step still records nothing
  std::vector<LayerAttention> w;
  Tensor y = dec.step(x, mem, cache, &w);
  EXPECT_FALSE(y.requires_grad());
  y = dec.step(random_tensor({1, 1, 8}, 25), mem, cache, &w);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].self_weights.shape(), Shape({1, 2, 1, 2}));
  EXPECT_EQ(w[0].cross_weights.shape(), Shape({1, 2, 1, 3}));
  EXPECT_EQ(w[0].cross_weights.f32()[2], 0.0f);  // memory length 2
}

// ---- dropout, seeds, parameters ---------------------------------------------------------------------

TEST(TransformerModules, ParameterNamesAsPyTorch) {
  TransformerDecoderLayer layer(small(false));
  std::vector<std::string> names;
  for (auto& [n, p] : layer.named_parameters()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                       "self_attn.out_proj.bias", "multihead_attn.in_proj_weight", "multihead_attn.in_proj_bias",
                       "multihead_attn.out_proj.weight", "multihead_attn.out_proj.bias", "linear1.weight",
                       "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight",
                       "norm2.bias", "norm3.weight", "norm3.bias"}));
  TransformerEncoder enc(small(true), 2);
  auto p = enc.named_parameters();
  EXPECT_EQ(p.front().first, "layers.0.self_attn.in_proj_weight");
  EXPECT_EQ(p[12].first, "layers.1.self_attn.in_proj_weight");
  EXPECT_EQ(p.back().first, "norm.bias");
  EXPECT_EQ(p.size(), 2u * 12u + 2u);
  EXPECT_EQ(p[12].second.shape(), Shape({24, 8}));
}

TEST(TransformerModules, InitialisationAndSeeds) {
  TransformerEncoder a(small(false), 2), b(small(false), 2);
  TransformerLayerOptions other = small(false);
  other.seed = 8;
  TransformerEncoder c(other, 2);
  auto pa = a.named_parameters(), pb = b.named_parameters(), pc = c.named_parameters();
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_EQ(pa[i].second.to_vector(), pb[i].second.to_vector()) << pa[i].first;
  EXPECT_NE(pa[0].second.to_vector(), pc[0].second.to_vector());
  // Layers start different from each other.
  EXPECT_NE(a.layers[0]->linear1.weight.to_vector(), a.layers[1]->linear1.weight.to_vector());
  // nn.Linear default: U(-1/√in, 1/√in); LayerNorm ones/zeros; MHA biases zero.
  for (float v : a.layers[0]->linear1.weight.to_vector()) EXPECT_LE(std::fabs(v), 1.0f / std::sqrt(8.0f));
  for (float v : a.layers[0]->linear2.bias.to_vector()) EXPECT_LE(std::fabs(v), 1.0f / std::sqrt(12.0f));
  for (float v : a.layers[0]->norm1.weight.to_vector()) EXPECT_EQ(v, 1.0f);
  for (float v : a.layers[0]->self_attn.in_proj_bias.to_vector()) EXPECT_EQ(v, 0.0f);
}

TEST(TransformerModules, DropoutActiveInTrainingAndReproducible) {
  Tensor x = random_tensor({2, 4, 8}, 26);
  TransformerEncoderLayer a(small(true, "relu", 0.3f)), b(small(true, "relu", 0.3f));
  Tensor ya = a.forward(x, Tensor()), yb = b.forward(x, Tensor());
  EXPECT_EQ(ya.to_vector(), yb.to_vector());  // same seed, same masks
  a.eval();
  Tensor ye = a.forward(x, Tensor());
  EXPECT_FALSE(tensors_close(ya, ye, 1e-4f, 0.0f));
  a.train();
  Tensor ya2 = a.forward(x, Tensor());
  EXPECT_FALSE(tensors_close(ya, ya2, 1e-4f, 0.0f));  // fresh masks each call
}

// ---- PositionalEncoding -----------------------------------------------------------------------------

TEST(PositionalEncodingTest, SinusoidalValues) {
  Rng rng(1);
  PositionalEncoding pe("sinusoidal", 10, 4, rng);
  EXPECT_TRUE(pe.named_parameters().empty());
  Tensor y = pe.forward(Tensor::zeros({2, 3, 4}), 0);
  // PE(p, 0) = sin p, PE(p, 1) = cos p, PE(p, 2) = sin(p / 100), PE(p, 3) = cos(p / 100) for D = 4.
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t p = 0; p < 3; ++p) {
      const float* r = y.f32() + (b * 3 + p) * 4;
      EXPECT_NEAR(r[0], std::sin(p), 1e-6);
      EXPECT_NEAR(r[1], std::cos(p), 1e-6);
      EXPECT_NEAR(r[2], std::sin(p / 100.0), 1e-6);
      EXPECT_NEAR(r[3], std::cos(p / 100.0), 1e-6);
    }
  // Offset 7, x = ones: 1 + PE(7 .. 9).
  Tensor z = pe.forward(Tensor::full({1, 3, 4}, 1.0f), 7);
  EXPECT_NEAR(z.f32()[0], 1.0 + std::sin(7.0), 1e-6);
  EXPECT_NEAR(z.f32()[2 * 4 + 1], 1.0 + std::cos(9.0), 1e-6);
  EXPECT_NEAR(z.f32()[2 * 4 + 2], 1.0 + std::sin(0.09), 1e-6);
  // Odd D: the last column is sin(p / 10000^((D-1)/D)).
  PositionalEncoding odd("sinusoidal", 4, 3, rng);
  EXPECT_NEAR(odd.weight.f32()[3 * 3 + 2], std::sin(3.0 / std::pow(10000.0, 2.0 / 3.0)), 1e-6);
}

TEST(PositionalEncodingTest, LearnedTableGetsGradients) {
  Rng rng(3);
  PositionalEncoding pe("learned", 6, 4, rng);
  ASSERT_EQ(pe.named_parameters().size(), 1u);
  EXPECT_EQ(pe.named_parameters()[0].first, "weight");
  double sq = 0;
  for (float v : pe.weight.to_vector()) sq += v * v;
  EXPECT_NEAR(std::sqrt(sq / 24), 0.02, 0.01);  // N(0, 0.02²)
  Tensor x = random_tensor({2, 3, 4}, 27);
  x.set_requires_grad(true);
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return pe.forward(in[0], 2); }, {x, pe.weight}));
  // Rows outside [2, 5) get no gradient.
  pe.weight.drop_grad();
  backward(sum(pe.forward(x, 2)));
  EXPECT_EQ(pe.weight.grad().f32()[0], 0.0f);
  EXPECT_EQ(pe.weight.grad().f32()[2 * 4], 2.0f);  // two batch rows
}

TEST(PositionalEncodingTest, Errors) {
  Rng rng(1);
  PositionalEncoding pe("sinusoidal", 5, 4, rng);
  EXPECT_THROW_MSG(pe.forward(Tensor::zeros({1, 3, 4}), 3), ValueError, "positions [3, 6) exceed max_len=5");
  EXPECT_THROW_MSG(pe.forward(Tensor::zeros({1, 6, 4}), 0), ValueError, "exceed max_len=5");
  EXPECT_THROW_MSG(pe.forward(Tensor::zeros({1, 2, 4}), -1), ValueError, "offset must be >= 0, got -1");
  EXPECT_THROW_MSG(pe.forward(Tensor::zeros({1, 2, 3}), 0), ShapeError,
                   "positional_encoding: 'x' expected (B, T, D=4), got (1, 2, 3)");
  EXPECT_THROW_MSG(PositionalEncoding("rotary", 5, 4, rng), ValueError,
                   "kind must be sinusoidal or learned, got 'rotary'");
  EXPECT_THROW_MSG(PositionalEncoding("learned", 0, 4, rng), ValueError, "max_len must be positive, got 0");
}

// ---- MultiheadAttention pieces used by the cache ---------------------------------------------------

TEST(MultiheadAttentionPieces, EqualForwardAndCarryGradients) {
  MultiheadAttention packed({.embed_dim = 8, .num_heads = 2, .seed = 3});
  MultiheadAttention separate({.embed_dim = 8, .num_heads = 2, .kdim = 6, .vdim = 5, .seed = 4});
  randomize(packed, 5);
  randomize(separate, 6);
  Tensor q = random_tensor({2, 3, 8}, 30), kv = random_tensor({2, 4, 8}, 31);
  Tensor k6 = random_tensor({2, 4, 6}, 32), v5 = random_tensor({2, 4, 5}, 33);
  MhaCallOptions call{.key_lengths = i32({4, 2}), .need_weights = true};
  auto [k, v] = packed.project_kv(kv, kv);
  EXPECT_EQ(k.shape(), Shape({2, 2, 4, 4}));
  MhaResult a = packed.attend_projected(q, k, v, call), b = packed.forward(q, kv, kv, call);
  EXPECT_TRUE(tensors_close(a.out, b.out, 1e-6f, 1e-5f));
  EXPECT_TRUE(tensors_close(a.weights, b.weights, 1e-6f, 1e-5f));
  auto [ks, vs] = separate.project_kv(k6, v5);
  EXPECT_TRUE(tensors_close(separate.attend_projected(q, ks, vs, call).out, separate.forward(q, k6, v5, call).out,
                            1e-6f, 1e-5f));
  std::vector<Tensor> qkv = packed.project_qkv(q);
  ASSERT_EQ(qkv.size(), 3u);
  EXPECT_TRUE(tensors_close(packed.attend_heads(qkv[0], qkv[1], qkv[2], {.causal = true}).out,
                            packed.forward(q, q, q, {.causal = true}).out, 1e-6f, 1e-5f));
  // Gradients flow through the pieces like through forward.
  Tensor qg = random_tensor({1, 2, 8}, 34), kvg = random_tensor({1, 3, 8}, 35);
  qg.set_requires_grad(true);
  kvg.set_requires_grad(true);
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) {
        auto [kk, vv] = packed.project_kv(in[1], in[1]);
        return packed.attend_projected(in[0], kk, vv).out;
      },
      {qg, kvg, packed.in_proj_bias}));
}

TEST(MultiheadAttentionPieces, Errors) {
  MultiheadAttention m({.embed_dim = 8, .num_heads = 2});
  MultiheadAttention cross({.embed_dim = 8, .num_heads = 2, .kdim = 6});
  Tensor k = Tensor::zeros({2, 2, 5, 4});
  EXPECT_THROW_MSG(m.attend_heads(Tensor::zeros({2, 2, 1, 3}), k, k), ShapeError,
                   "multihead_attention.attend_heads: 'q' expected (B, H=2, T, Dh=4), got (2, 2, 1, 3)");
  EXPECT_THROW_MSG(m.attend_heads(Tensor::zeros({2, 2, 1, 4}), k, Tensor::zeros({2, 2, 4, 4})), ShapeError,
                   "'v' expected (B=2, H=2, S=5, Dh=4), got (2, 2, 4, 4)");
  EXPECT_THROW_MSG(m.attend_heads(Tensor::zeros({2, 2, 1, 4}), k, k, {.key_lengths = i32({5, 6})}), ValueError,
                   "'key_lengths' value 6 at batch index 1 is out of range [0, S=5]");
  EXPECT_THROW_MSG(m.attend_projected(Tensor::zeros({2, 1, 6}), k, k), ShapeError,
                   "multihead_attention.project_query: 'query' expected (B, T, D=8), got (2, 1, 6)");
  EXPECT_THROW_MSG(m.project_kv(Tensor::zeros({2, 5, 8}), Tensor::zeros({2, 4, 8})), ShapeError,
                   "'value' expected (B=2, S=5, Dv=8), got (2, 4, 8)");
  EXPECT_THROW_MSG(cross.project_qkv(Tensor::zeros({2, 1, 8})), ValueError,
                   "self-attention projections need kdim == vdim == embed_dim=8");
}

// ---- errors ------------------------------------------------------------------------------------------

TEST(TransformerErrors, Options) {
  auto bad = [](auto change) {
    TransformerLayerOptions o = small(true);
    change(o);
    return o;
  };
  EXPECT_THROW_MSG(TransformerEncoderLayer(bad([](auto& o) { o.d_model = 10, o.heads = 4; })), ValueError,
                   "d_model=10 is not divisible by heads=4");
  EXPECT_THROW_MSG(TransformerEncoderLayer(bad([](auto& o) { o.d_model = 0; })), ValueError,
                   "d_model must be positive, got 0");
  EXPECT_THROW_MSG(TransformerDecoderLayer(bad([](auto& o) { o.heads = 0; })), ValueError,
                   "heads must be positive, got 0");
  EXPECT_THROW_MSG(TransformerDecoderLayer(bad([](auto& o) { o.ffn = -1; })), ValueError, "ffn must be positive");
  EXPECT_THROW_MSG(TransformerEncoder(bad([](auto& o) { o.dropout = 1.0f; }), 1), ValueError,
                   "dropout must be in [0, 1), got 1");
  EXPECT_THROW_MSG(parse_ffn_activation("tanh", "TransformerDecoder"), ValueError,
                   "TransformerDecoder: unknown activation 'tanh' (valid: relu, gelu)");
  EXPECT_THROW_MSG(CausalTransformer(bad([](auto& o) { o.eps = 0.0f; }), 1), ValueError,
                   "eps must be a finite value > 0");
  EXPECT_THROW_MSG(TransformerEncoder(small(true), 0), ValueError, "TransformerEncoder: layers must be >= 1, got 0");
}

TEST(TransformerErrors, Shapes) {
  TransformerEncoderLayer enc(small(true));
  TransformerDecoderLayer dec(small(false));
  EXPECT_THROW_MSG(enc.forward(Tensor::zeros({2, 3, 4}), Tensor()), ShapeError,
                   "transformer_encoder_layer: 'x' expected (B, S, D=8), got (2, 3, 4)");
  EXPECT_THROW_MSG(enc.forward(Tensor::zeros({2, 3, 8}), i32({3, 3, 3})), ShapeError,
                   "'key_lengths' expected (B=2), got (3)");
  EXPECT_THROW_MSG(enc.forward(Tensor::zeros({2, 3, 8}), i32({3, 4})), ValueError,
                   "'key_lengths' value 4 at batch index 1 is out of range [0, S=3]");
  EXPECT_THROW_MSG(dec.forward(Tensor::zeros({2, 3, 8}), Tensor::zeros({3, 5, 8}), Tensor()), ShapeError,
                   "transformer_decoder_layer: 'memory' expected (B=2, S, D=8), got (3, 5, 8)");
  EXPECT_THROW_MSG(dec.forward(Tensor::zeros({2, 3, 8}), Tensor::zeros({2, 5, 8}), i32({5, -1})), ValueError,
                   "'memory_lengths' value -1 at batch index 1 is out of range [0, S=5]");
}

TEST(TransformerErrors, Steps) {
  TransformerDecoder dec(small(true), 1);
  CausalTransformer lm(small(true), 1);
  KvCache cache = dec.start(Tensor());
  EXPECT_THROW_MSG(dec.step(Tensor::zeros({2, 2, 8}), Tensor::zeros({2, 3, 8}), cache), ShapeError,
                   "transformer_decoder_layer.step: 'x' expected (B, 1, D=8), got (2, 2, 8)");
  EXPECT_THROW_MSG(dec.step(Tensor::zeros({2, 1, 8}), Tensor(), cache), ValueError,
                   "'memory' is needed on the first step");
  dec.step(Tensor::zeros({2, 1, 8}), Tensor::zeros({2, 3, 8}), cache);
  EXPECT_THROW_MSG(dec.step(Tensor::zeros({3, 1, 8}), Tensor(), cache), ShapeError,
                   "'cache.self_k' expected (B=3, H=2, t, Dh=4), got (2, 2, 1, 4)");
  KvCache wrong = lm.start(2);
  wrong.layers.push_back({});
  EXPECT_THROW_MSG(lm.step(Tensor::zeros({2, 1, 8}), wrong), ValueError, "the cache has 2 layers, this stack 1");
  EXPECT_THROW_MSG(lm.start(0), ValueError, "batch must be >= 1, got 0");
  KvCache c2 = lm.start(2);
  EXPECT_THROW_MSG(c2.select_rows(i32({0, 2})), ValueError,
                   "KvCache::select_rows: row 2 at position 1 is out of range [0, B=2)");
  EXPECT_THROW_MSG(c2.select_rows(Tensor::zeros({2})), ShapeError, "'rows' expected int32 (B')");
}

}  // namespace
}  // namespace attn::nn
