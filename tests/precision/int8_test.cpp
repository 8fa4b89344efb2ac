// int8 inference (attn/precision.h, docs/precision.md): who may run it (int8_missing, the
// refusal), the int8 GEMM against an fp32 reference computed on the dequantized operands of the
// documented scheme (tight: only fp32 rounding of the dequantization differs) and against the
// fp32 GEMM (the int8 tolerance), the refusals (a NaN or inf weight, a recorded gradient), the
// weight cache, and models' logits under int8 against fp32's. The tolerance tests skip, saying
// why, on a CPU without VNNI or AMX-INT8 and at ATTN_ISA levels that limit it; the refusal
// tests run everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/data/tasks.h"
#include "attn/error.h"
#include "attn/models/seq2seq.h"
#include "attn/models/transformer.h"
#include "attn/ops/linear.h"
#include "attn/precision.h"
#include "kernels/blas.h"
#include "kernels/gemm_int8.h"
#include "kernels/isa.h"
#include "precision_support.h"
#include "test_support.h"

namespace attn {
namespace {

using attn::testing::copy_batch;
using attn::testing::random_tensor;
using attn::testing::small_transformer;

// ---- Tolerances (docs/precision.md) -----------------------------------------------------------
// Against the reference on the dequantized operands: the same integer sums, so only the fp32
// rounding of the scales' products differs (a few ulp of each output).
constexpr double kDequantizedTol = 1e-6;  // max |int8 − reference| / max |reference|
// Against fp32, the relative error in the 2-norm, ‖int8 − fp32‖ / ‖fp32‖. Symmetric 8-bit
// rounding errs by up to half a step, max|row| / 254, on each input; over K terms of uniform
// inputs that is about 0.5 % of a product, and a model's layers compound it.
constexpr double kGemmTol = 2e-2;   // one GEMM, linear
constexpr double kModelTol = 6e-2;  // a Transformer's, an RNN seq2seq's, a classifier's logits
// Measured here (Zen 4, AVX512_VNNI), the largest of each group: gemm and linear 0.0054; models:
// the Transformer 0.0064, the RNN seq2seqs 0.013 (additive), the classifier 0.035 (two logits
// near zero at random initialisation, so a small norm).
constexpr double kQuantizedAtLeast = 1e-5;  // an int8 result this close to fp32 means int8 did not run

std::string int8_unavailable() { return int8_missing(read_cpu_features(), kernels::kernel_isa_level()); }

#define SKIP_WITHOUT_INT8()                                                                             \
  do {                                                                                                  \
    if (const std::string why = int8_unavailable(); !why.empty()) GTEST_SKIP() << "int8 needs " << why; \
  } while (0)

::testing::AssertionResult int8_close(const std::string& what, const Tensor& actual, const Tensor& expected,
                                      double tol) {
  return attn::testing::precision_close(Precision::int8, what, actual, expected, tol, kQuantizedAtLeast);
}

// ---- The documented scheme, written out (docs/precision.md) -----------------------------------

// Symmetric s8 of v (n values at stride `step`): scale max|v| / 127, q = round-half-even(v · 127 / max|v|).
float quantize(const float* v, int64_t n, int64_t step, std::vector<int32_t>& q) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(v[i * step]));
  q.assign(static_cast<size_t>(n), 0);
  if (amax == 0.0f) return 0.0f;
  const float inverse = 127.0f / amax;
  for (int64_t i = 0; i < n; ++i) q[i] = static_cast<int32_t>(std::nearbyint(v[i * step] * inverse));
  return amax / 127.0f;
}

// C = alpha · (A quantized per row) (op(B) quantized per column), in double, + beta · C.
void reference_gemm(bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* a, int64_t lda, const float* b,
                    int64_t ldb, float beta, float* c, int64_t ldc) {
  std::vector<std::vector<int32_t>> qa(M), qb(N);
  std::vector<float> sa(M), sb(N);
  for (int64_t i = 0; i < M; ++i) sa[i] = quantize(a + i * lda, K, 1, qa[i]);
  for (int64_t j = 0; j < N; ++j) sb[j] = tb ? quantize(b + j * ldb, K, 1, qb[j]) : quantize(b + j, K, ldb, qb[j]);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      int64_t sum = 0;
      for (int64_t k = 0; k < K; ++k) sum += int64_t{qa[i][k]} * qb[j][k];
      const double value = static_cast<double>(alpha) * sa[i] * sb[j] * static_cast<double>(sum);
      c[i * ldc + j] = static_cast<float>(value + (beta == 0.0f ? 0.0 : static_cast<double>(beta) * c[i * ldc + j]));
    }
}

double max_abs_difference(const Tensor& a, const Tensor& b, double* scale) {
  double worst = 0, largest = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(a.f32()[i]) - b.f32()[i]));
    largest = std::max(largest, std::fabs(static_cast<double>(b.f32()[i])));
  }
  *scale = largest;
  return worst;
}

// ---- Who runs int8 ---------------------------------------------------------------------------

TEST(Precision, Int8MissingNamesWhatIsMissing) {
  const CpuFeatures zen4 = attn::testing::zen4_cpu();
  CpuFeatures zen5 = zen4;  // Alder Lake, Zen 5: AVX-VNNI runs at the avx2 level
  zen5.avx_vnni = true;
  CpuFeatures no_vnni = zen5;  // AVX-512 without VNNI (Skylake-SP)
  no_vnni.avx_vnni = no_vnni.avx512_vnni = false;
  const CpuFeatures amx_off = attn::testing::with_amx(no_vnni, false), amx = attn::testing::with_amx(no_vnni, true);
  attn::testing::expect_missing(
      int8_missing,
      {{"Zen 4", zen4, IsaLevel::avx512, ""},
       {"Zen 4", zen4, IsaLevel::avx2, "the avx512 kernel level (ATTN_ISA=avx2 limits this process to AVX2)"},
       {"Zen 4", zen4, IsaLevel::baseline, "the avx512 kernel level (ATTN_ISA=baseline limits this process to SSE4.2)"},
       {"Zen 5", zen5, IsaLevel::avx2, ""},
       {"Zen 5", zen5, IsaLevel::baseline, "the avx2 kernel level (ATTN_ISA=baseline limits this process to SSE4.2)"},
       {"no VNNI", no_vnni, IsaLevel::avx512, "AVX512_VNNI, AVX-VNNI or AMX-INT8 (this CPU has none)"},
       {"AMX off", amx_off, IsaLevel::avx512,
        "AVX512_VNNI, AVX-VNNI or AMX-INT8 (the operating system does not enable AMX tiles)"},
       {"AMX", amx, IsaLevel::avx512, ""},
       {"no features", CpuFeatures{}, IsaLevel::baseline, "AVX512_VNNI, AVX-VNNI or AMX-INT8 (an x86-64 CPU)"}});
}

TEST(Precision, Int8RefusedAtTheBaselineLevel) { attn::testing::expect_refused_at_baseline(Precision::int8); }

TEST(Precision, Int8Names) {
  EXPECT_EQ(parse_precision("int8"), Precision::int8);
  EXPECT_STREQ(precision_name(Precision::int8), "int8");
}

// ---- The int8 GEMM ---------------------------------------------------------------------------

// Both layouts of B, alpha and beta, with and without a bias, ldc > N, a zero row: equal to
// the reference on the dequantized operands, within kGemmTol of fp32, and the columns past N
// untouched.
TEST(Int8Gemm, MatchesTheDequantizedReference) {
  SKIP_WITHOUT_INT8();
  const int64_t M = 37, N = 29, K = 70, ldc = N + 3;
  const Tensor bias = random_tensor({N}, 9);
  for (bool tb : {false, true})
    for (bool with_bias : {false, true})
      for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, {0.5f, 1.0f}, {1.0f, -0.25f}}) {
        SCOPED_TRACE(::testing::Message()
                     << "tb " << tb << " bias " << with_bias << " alpha " << alpha << " beta " << beta);
        Tensor a = random_tensor({M, K}, 1);
        std::fill(a.f32() + 5 * K, a.f32() + 6 * K, 0.0f);  // row 5: scale 0
        const Tensor b = random_tensor(tb ? Shape{N, K} : Shape{K, N}, 2);
        const Tensor c0 = random_tensor({M, ldc}, 3);
        const int64_t ldb = tb ? K : N;
        Tensor reference = c0.clone(), exact = c0.clone(), int8 = c0.clone();
        reference_gemm(tb, M, N, K, alpha, a.f32(), K, b.f32(), ldb, beta, reference.f32(), ldc);
        kernels::gemm(false, tb, M, N, K, alpha, a.f32(), K, b.f32(), ldb, beta, exact.f32(), ldc);
        if (with_bias)
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              reference.f32()[i * ldc + j] += bias.f32()[j];
              exact.f32()[i * ldc + j] += bias.f32()[j];
            }
        const auto w = kernels::quantize_weight_int8(tb, K, N, b.f32(), ldb);
        ASSERT_TRUE(w->finite);
        kernels::gemm_int8(M, N, K, alpha, a.f32(), K, *w, beta, int8.f32(), ldc, with_bias ? bias.f32() : nullptr);
        double scale = 0;
        const double worst = max_abs_difference(int8, reference, &scale);
        EXPECT_LE(worst, kDequantizedTol * scale) << "largest |reference| " << scale;
        EXPECT_TRUE(int8_close("gemm", int8, exact, kGemmTol));
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = N; j < ldc; ++j) ASSERT_EQ(int8.f32()[i * ldc + j], c0.f32()[i * ldc + j]);
        for (int64_t j = 0; j < N; ++j)  // the zero row gives bias + beta · C
          EXPECT_FLOAT_EQ(int8.f32()[5 * ldc + j], (with_bias ? bias.f32()[j] : 0.0f) + beta * c0.f32()[5 * ldc + j]);
      }
}

// A row of activations holding NaN, +inf or -inf gives a NaN output row, wherever the value
// sits (a vector's first lane, or the tail after the last whole vector of K = 70); the other
// rows are unaffected.
TEST(Int8Gemm, NonFiniteActivationRowStaysNan) {
  SKIP_WITHOUT_INT8();
  const int64_t M = 6, N = 8, K = 70;
  const float inf = std::numeric_limits<float>::infinity();
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(), inf, -inf};
  const Tensor b = random_tensor({N, K}, 5);
  const auto w = kernels::quantize_weight_int8(true, K, N, b.f32(), K);
  for (float value : bad)
    for (int64_t at : {int64_t{0}, int64_t{3}, K - 1}) {
      SCOPED_TRACE(::testing::Message() << "value " << value << " at k = " << at);
      Tensor a = random_tensor({M, K}, 4);
      a.f32()[2 * K + at] = value;
      Tensor c = Tensor::zeros({M, N});
      kernels::gemm_int8(M, N, K, 1.0f, a.f32(), K, *w, 0.0f, c.f32(), N);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
          EXPECT_EQ(std::isnan(c.f32()[i * N + j]), i == 2) << "row " << i << " column " << j;
    }
}

// ---- linear under int8 -----------------------------------------------------------------------

TEST(Int8Ops, LinearMatchesReferenceAndFp32) {
  SKIP_WITHOUT_INT8();
  const Tensor x = random_tensor({4, 9, 48}, 6), w = random_tensor({40, 48}, 7), bias = random_tensor({40}, 8);
  const Tensor fp32 = linear(x, w, bias);
  Tensor int8;
  {
    PrecisionScope scope(Precision::int8);
    int8 = linear(x, w, bias);
  }
  Tensor reference = Tensor::empty({36, 40});
  for (int64_t i = 0; i < 36; ++i) std::copy(bias.f32(), bias.f32() + 40, reference.f32() + i * 40);
  reference_gemm(true, 36, 40, 48, 1.0f, x.f32(), 48, w.f32(), 48, 1.0f, reference.f32(), 40);
  double scale = 0;
  const double worst = max_abs_difference(int8.reshape({36, 40}), reference, &scale);
  EXPECT_LE(worst, kDequantizedTol * scale) << "largest |reference| " << scale;
  EXPECT_TRUE(int8_close("linear", int8, fp32, kGemmTol));
}

// A weight holding NaN or inf is refused with one line naming it; fp32 runs it.
TEST(Int8Ops, NonFiniteWeightRefused) {
  SKIP_WITHOUT_INT8();
  const Tensor x = random_tensor({3, 16}, 9);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    Tensor w = random_tensor({8, 16}, 10);
    w.set_name("decoder.out.weight");
    w.f32()[17] = bad;
    PrecisionScope scope(Precision::int8);
    EXPECT_THROW_MSG(linear(x, w, Tensor()), ValueError,
                     "linear: int8 needs finite weights; 'decoder.out.weight' holds NaN or inf");
  }
}

// int8 is for inference: a weight whose gradient is being recorded is refused.
TEST(Int8Ops, RecordedGradientRefused) {
  SKIP_WITHOUT_INT8();
  const Tensor x = random_tensor({3, 16}, 11);
  Tensor w = random_tensor({8, 16}, 12);
  w.set_requires_grad(true);
  PrecisionScope scope(Precision::int8);
  EXPECT_THROW_MSG(linear(x, w, Tensor()), ValueError, "linear: int8 is for inference");
  autodiff::NoGradGuard no_grad;
  EXPECT_EQ(linear(x, w, Tensor()).shape(), Shape({3, 8}));
}

// The quantized weight is kept while int8 stays set; a switch into int8 quantizes again, so a
// weight changed at another precision is seen.
TEST(Int8Ops, WeightsQuantizedAgainAfterASwitch) {
  SKIP_WITHOUT_INT8();
  const Tensor x = random_tensor({5, 32}, 13);
  Tensor w = random_tensor({12, 32}, 14);
  Tensor before, kept, after;
  {
    PrecisionScope scope(Precision::int8);
    before = linear(x, w, Tensor());
    for (int64_t i = 0; i < w.numel(); ++i) w.f32()[i] *= -2.0f;  // changed while int8 is set: not seen
    kept = linear(x, w, Tensor());
  }
  {
    PrecisionScope scope(Precision::int8);
    after = linear(x, w, Tensor());
  }
  EXPECT_TRUE(attn::testing::tensors_close(kept, before, 0.0f, 0.0f));
  for (int64_t i = 0; i < before.numel(); ++i) EXPECT_FLOAT_EQ(after.f32()[i], -2.0f * before.f32()[i]) << i;
}

// ---- Models: int8 logits against fp32 --------------------------------------------------------

template <class Logits>
void expect_logits_close(const std::string& what, Logits logits) {
  autodiff::NoGradGuard no_grad;
  const Tensor fp32 = logits();
  Tensor int8;
  {
    PrecisionScope scope(Precision::int8);
    int8 = logits();
  }
  EXPECT_TRUE(int8_close(what + " logits", int8, fp32, kModelTol));
}

TEST(Int8Models, Transformer) {
  SKIP_WITHOUT_INT8();
  models::TransformerSeq2Seq model(small_transformer());
  model.eval();
  const data::Batch batch = copy_batch(1);
  expect_logits_close("transformer", [&] { return model.logits(batch); });
}

// Every weight GEMM of the RNN models: the cells' input and hidden products, the additive,
// Luong general (B not transposed), concat (two blocks of one weight) and location scores.
TEST(Int8Models, RnnSeq2Seq) {
  SKIP_WITHOUT_INT8();
  struct Variant {
    models::AttentionKind attention;
    nn::StepScore score;
    models::RnnCell cell;
  };
  for (const Variant& v : {Variant{models::AttentionKind::bahdanau, nn::StepScore::additive, models::RnnCell::gru},
                           Variant{models::AttentionKind::luong, nn::StepScore::general, models::RnnCell::lstm},
                           Variant{models::AttentionKind::luong, nn::StepScore::concat, models::RnnCell::gru},
                           Variant{models::AttentionKind::luong, nn::StepScore::location, models::RnnCell::gru}}) {
    models::Seq2SeqConfig c;
    c.emb = 32;
    c.hidden = 64;
    c.attention = v.attention;
    c.score = v.score;
    c.encoder = v.cell;
    c.seed = 5;
    models::Seq2Seq model(c);
    model.eval();
    const data::Batch batch = copy_batch(2);
    expect_logits_close(std::string("seq2seq ") + nn::step_score_name(v.score), [&] { return model.logits(batch); });
  }
}

TEST(Int8Models, TransformerClassifier) {
  SKIP_WITHOUT_INT8();
  models::TransformerConfig c = small_transformer();
  c.classes = 2;
  models::TransformerClassifier model(c);
  model.eval();
  const data::Batch batch = copy_batch(3);
  expect_logits_close("classifier", [&] { return model.logits(batch.src, batch.src_lengths); });
}

}  // namespace
}  // namespace attn
