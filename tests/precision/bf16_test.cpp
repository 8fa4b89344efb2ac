// bf16 (attn/precision.h): who may run it (bf16_missing, the refusal), the bf16 GEMM against
// fp32 GEMM of the same rounded inputs (layout, alpha, beta, ldc), and bf16 outputs and
// gradients against the fp32 reference for linear/matmul, SDPA (fp32 inside), multi-head attention, a
// Transformer and an RNN seq2seq within the bf16 tolerances below (docs/precision.md).
// The tolerance tests skip, saying why, on a CPU without AVX512_BF16 or AMX-BF16 and at
// ATTN_ISA below avx512; the refusal tests run everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/data/tasks.h"
#include "attn/error.h"
#include "attn/models/seq2seq.h"
#include "attn/models/transformer.h"
#include "attn/nn/multihead_attention.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/linear.h"
#include "attn/ops/reduce.h"
#include "attn/ops/sdpa.h"
#include "attn/precision.h"
#include "kernels/blas.h"
#include "kernels/isa.h"
#include "precision_support.h"
#include "test_support.h"

namespace attn {
namespace {

using attn::testing::copy_batch;
using attn::testing::leaf;
using attn::testing::random_tensor;
using attn::testing::small_transformer;
using attn::testing::tensors_close;

// ---- Tolerances (docs/precision.md) -----------------------------------------------------------
// Relative error in the 2-norm, ‖bf16 − fp32‖ / ‖fp32‖, over a whole output or gradient.
// bf16 keeps 8 significant bits: each rounded input is off by at most 2^-9 (0.2 %) relative,
// a product of two by about 0.4 %, and the K terms of a dot product err independently, so a
// GEMM's output is off by about 0.3 % of its norm. A gradient passes through two or three
// GEMMs per layer and the model's layers compound them: the model tolerances are wider.
constexpr double kGemmTol = 1e-2;       // one GEMM, one op (linear, matmul)
constexpr double kAttentionTol = 1e-2;  // multi-head attention: bf16 projections around fp32 SDPA
constexpr double kModelTol = 5e-2;      // a Transformer, an RNN seq2seq: losses and every gradient
// Measured here (Zen 4, AVX512_BF16), the largest error of each group: gemm and ops 0.0022,
// multi-head attention 0.0033, seq2seq 0.0093, Transformer 0.017.
// A bf16 result that equals the fp32 one to this would mean bf16 did not run.
constexpr double kRoundedAtLeast = 1e-6;

std::string bf16_unavailable() { return bf16_missing(read_cpu_features(), kernels::kernel_isa_level()); }

#define SKIP_WITHOUT_BF16()                                                                             \
  do {                                                                                                  \
    if (const std::string why = bf16_unavailable(); !why.empty()) GTEST_SKIP() << "bf16 needs " << why; \
  } while (0)

// bf16 `actual` against fp32 `expected`: within `tol`, and, for a result that a GEMM computed
// (`from_gemm`), not equal (bf16 ran).
::testing::AssertionResult bf16_close(const std::string& what, const Tensor& actual, const Tensor& expected, double tol,
                                      bool from_gemm = true) {
  return attn::testing::precision_close(Precision::bf16, what, actual, expected, tol,
                                        from_gemm ? kRoundedAtLeast : 0.0);
}

// fp32 values rounded to bf16 (to nearest even) and back.
Tensor rounded_to_bf16(const Tensor& x) {
  Tensor y = x.clone();
  for (int64_t i = 0; i < y.numel(); ++i) {
    uint32_t bits = std::bit_cast<uint32_t>(y.f32()[i]);
    bits = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
    y.f32()[i] = std::bit_cast<float>(bits);
  }
  return y;
}

// ---- Who runs bf16 ---------------------------------------------------------------------------

TEST(Precision, Bf16MissingNamesWhatIsMissing) {
  const CpuFeatures zen4 = attn::testing::zen4_cpu();
  CpuFeatures no_bf16 = zen4;  // AVX-512 without BF16 (Skylake-SP)
  no_bf16.avx512_bf16 = false;
  const CpuFeatures amx_off = attn::testing::with_amx(no_bf16, false), amx = attn::testing::with_amx(no_bf16, true);
  CpuFeatures no_zmm = zen4;
  no_zmm.os_zmm = false;
  attn::testing::expect_missing(
      bf16_missing,
      {{"Zen 4", zen4, IsaLevel::avx512, ""},
       {"Zen 4", zen4, IsaLevel::avx2, "the avx512 kernel level (ATTN_ISA=avx2 limits this process to AVX2)"},
       {"no BF16", no_bf16, IsaLevel::avx512, "AVX512_BF16 or AMX-BF16 (this CPU has neither)"},
       {"AMX off", amx_off, IsaLevel::avx512,
        "AVX512_BF16 or AMX-BF16 (the operating system does not enable AMX tiles)"},
       {"AMX", amx, IsaLevel::avx512, ""},
       {"Zen 4 without ZMM state", no_zmm, IsaLevel::avx512,
        "AVX512_BF16 or AMX-BF16 (the operating system does not enable AVX-512)"},
       {"no features", CpuFeatures{}, IsaLevel::baseline, "AVX512_BF16 or AMX-BF16 (an x86-64 CPU)"}});
}

// ATTN_ISA=baseline forces the feature off on any machine: set_compute_precision refuses
// bf16 with one line, and the precision stays fp32.
TEST(Precision, Bf16RefusedBelowTheAvx512Level) { attn::testing::expect_refused_at_baseline(Precision::bf16); }

TEST(Precision, ParseNames) {
  EXPECT_EQ(parse_precision("fp32"), Precision::fp32);
  EXPECT_EQ(parse_precision("bf16"), Precision::bf16);
  EXPECT_THROW_MSG(parse_precision("fp16"), ValueError, "precision: expected fp32, bf16 or int8, got 'fp16'");
  EXPECT_STREQ(precision_name(Precision::bf16), "bf16");
}

TEST(Precision, ScopeRestores) {
  SKIP_WITHOUT_BF16();
  {
    PrecisionScope scope(Precision::bf16);
    EXPECT_EQ(compute_precision(), Precision::bf16);
  }
  EXPECT_EQ(compute_precision(), Precision::fp32);
}

// ---- The bf16 GEMM ---------------------------------------------------------------------------

// Every layout, alpha and beta, a C wider than N (ldc > N): bf16 GEMM = fp32 GEMM of the
// rounded inputs, up to fp32 summation order; and within kGemmTol of the unrounded product.
TEST(Bf16Gemm, EqualsFp32GemmOfRoundedInputs) {
  SKIP_WITHOUT_BF16();
  const int64_t M = 37, N = 29, K = 70, ldc = N + 3;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, {0.5f, 1.0f}, {1.0f, -0.25f}}) {
        SCOPED_TRACE(::testing::Message() << "ta " << ta << " tb " << tb << " alpha " << alpha << " beta " << beta);
        const Tensor a = random_tensor(ta ? Shape{K, M} : Shape{M, K}, 1);
        const Tensor b = random_tensor(tb ? Shape{N, K} : Shape{K, N}, 2);
        const Tensor c0 = random_tensor({M, ldc}, 3);
        const int64_t lda = ta ? M : K, ldb = tb ? K : N;
        Tensor reference = c0.clone(), exact = c0.clone(), bf16 = c0.clone();
        const Tensor ar = rounded_to_bf16(a), br = rounded_to_bf16(b);
        kernels::gemm(ta, tb, M, N, K, alpha, ar.f32(), lda, br.f32(), ldb, beta, reference.f32(), ldc);
        kernels::gemm(ta, tb, M, N, K, alpha, a.f32(), lda, b.f32(), ldb, beta, exact.f32(), ldc);
        {
          PrecisionScope scope(Precision::bf16);
          kernels::gemm(ta, tb, M, N, K, alpha, a.f32(), lda, b.f32(), ldb, beta, bf16.f32(), ldc);
        }
        EXPECT_TRUE(tensors_close(bf16, reference, 1e-5f, 1e-4f));
        EXPECT_TRUE(bf16_close("gemm", bf16, exact, kGemmTol));
        for (int64_t i = 0; i < M; ++i)  // the columns past N are not touched
          for (int64_t j = N; j < ldc; ++j) ASSERT_EQ(bf16.f32()[i * ldc + j], c0.f32()[i * ldc + j]);
      }
  EXPECT_GT(kernels::onednn_cached_primitives(), 0u);
}

// ---- Ops, modules, models: bf16 against fp32 -------------------------------------------------

// Runs `forward` (inputs -> a tensor) in fp32 and in bf16, and the backward of sum(out · w)
// in both; checks the output and every input's gradient against fp32 within `tol` (a
// gradient that is a plain sum, as a bias's, may equal fp32's).
void expect_bf16_close(const std::string& what, const std::function<Tensor(const std::vector<Tensor>&)>& forward,
                       std::vector<Tensor> inputs, double tol) {
  auto run = [&](Precision p, std::vector<Tensor>& grads) {
    PrecisionScope scope(p);
    for (Tensor& x : inputs) x.zero_grad();
    Tensor out = forward(inputs);
    const Tensor w = random_tensor(out.shape(), 99);
    backward(sum(mul(out, w)));
    grads.clear();
    for (const Tensor& x : inputs) grads.push_back(x.grad().clone());
    return out.clone();
  };
  std::vector<Tensor> fp32_grads, bf16_grads;
  const Tensor fp32 = run(Precision::fp32, fp32_grads);
  const Tensor bf16 = run(Precision::bf16, bf16_grads);
  EXPECT_TRUE(bf16_close(what + " output", bf16, fp32, tol));
  for (size_t i = 0; i < inputs.size(); ++i)
    EXPECT_TRUE(bf16_close(what + " gradient " + std::to_string(i), bf16_grads[i], fp32_grads[i], tol, false));
}

TEST(Bf16Ops, Linear) {
  SKIP_WITHOUT_BF16();
  expect_bf16_close(
      "linear", [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); },
      {leaf({4, 9, 48}, 1), leaf({40, 48}, 2), leaf({40}, 3)}, kGemmTol);
}

TEST(Bf16Ops, MatmulAndBmm) {
  SKIP_WITHOUT_BF16();
  expect_bf16_close(
      "matmul", [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
      {leaf({33, 64}, 4), leaf({64, 21}, 5)}, kGemmTol);
  expect_bf16_close(
      "bmm", [](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); },
      {leaf({3, 17, 40}, 6), leaf({3, 40, 12}, 7)}, kGemmTol);
}

// The fused SDPA kernel multiplies its tiles itself, not through kernels::gemm: under bf16 it
// still computes in fp32 (docs/precision.md), so its outputs and gradients are fp32's, bit for
// bit. Its inputs are bf16 products in a model (MultiheadSelfAttention, the Transformer below).
TEST(Bf16Attention, FusedSdpaStaysFp32) {
  SKIP_WITHOUT_BF16();
  SdpaOptions options;
  options.causal = true;
  std::vector<Tensor> in = {leaf({2, 2, 12, 16}, 8), leaf({2, 2, 12, 16}, 9), leaf({2, 2, 12, 16}, 10)};
  std::vector<Tensor> results[2];
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    PrecisionScope scope(p);
    for (Tensor& x : in) x.zero_grad();
    const Tensor out = sdpa(in[0], in[1], in[2], options).out;
    backward(sum(mul(out, random_tensor(out.shape(), 99))));
    std::vector<Tensor>& r = results[p == Precision::bf16];
    r = {out.clone(), in[0].grad().clone(), in[1].grad().clone(), in[2].grad().clone()};
  }
  for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(tensors_close(results[1][i], results[0][i], 0.0f, 0.0f)) << i;
}

TEST(Bf16Attention, MultiheadSelfAttention) {
  SKIP_WITHOUT_BF16();
  nn::MultiheadAttentionOptions o;
  o.embed_dim = 64;
  o.num_heads = 4;
  o.seed = 3;
  nn::MultiheadAttention mha(o);
  nn::MhaCallOptions call;
  call.causal = true;
  expect_bf16_close(
      "mha", [&](const std::vector<Tensor>& in) { return mha.forward(in[0], in[0], in[0], call).out; },
      {leaf({2, 20, 64}, 11)}, kAttentionTol);
}

// A model's loss and every parameter's gradient, fp32 against bf16, from the same weights.
void expect_model_close(const std::string& what, nn::Module& model, const std::function<Tensor()>& loss) {
  auto run = [&](Precision p, std::vector<Tensor>& grads) {
    PrecisionScope scope(p);
    model.zero_grad();
    const Tensor l = loss();
    backward(l);
    grads.clear();
    for (const Tensor& w : model.parameters()) grads.push_back(w.has_grad() ? w.grad().clone() : Tensor());
    return l.clone();
  };
  std::vector<Tensor> fp32_grads, bf16_grads;
  const Tensor fp32 = run(Precision::fp32, fp32_grads);
  const Tensor bf16 = run(Precision::bf16, bf16_grads);
  EXPECT_TRUE(bf16_close(what + " loss", bf16, fp32, kModelTol));
  const auto names = model.named_parameters();
  int checked = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!fp32_grads[i].defined()) continue;
    ASSERT_TRUE(bf16_grads[i].defined()) << names[i].first;
    EXPECT_TRUE(bf16_close(what + " d" + names[i].first, bf16_grads[i], fp32_grads[i], kModelTol, false));
    ++checked;
  }
  EXPECT_GT(checked, 10) << what;
}

TEST(Bf16Models, TransformerForwardBackward) {
  SKIP_WITHOUT_BF16();
  models::TransformerSeq2Seq model(small_transformer());
  const data::Batch batch = copy_batch(1);
  expect_model_close("transformer", model, [&] { return model.loss(batch, 0.1f); });
}

TEST(Bf16Models, RnnSeq2SeqBahdanau) {
  SKIP_WITHOUT_BF16();
  models::Seq2SeqConfig c;
  c.emb = 32;
  c.hidden = 64;
  c.attention = models::AttentionKind::bahdanau;
  c.seed = 5;
  models::Seq2Seq model(c);
  const data::Batch batch = copy_batch(2);
  expect_model_close("seq2seq", model, [&] { return model.loss(batch); });
}

}  // namespace
}  // namespace attn
