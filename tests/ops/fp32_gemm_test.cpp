// The fp32 products' two paths (src/kernels/blas.cpp, gemm_onednn.cpp; docs/performance.md,
// "GEMM kernel selection"): which products go to oneDNN at this process's ISA level, oneDNN's
// product against a float64 reference over layouts, strides, alpha and beta, and the weights
// packed under ops::FrozenWeights: the same results as unpacked, and a weight changed between
// two scopes read anew. Runs at every ISA level (ctest isa/<level>/ops).
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/ops/gemm.h"
#include "attn/ops/linear.h"
#include "kernels/blas.h"
#include "kernels/isa.h"
#include "test_support.h"

namespace attn {
namespace {

using attn::testing::random_tensor;
using attn::testing::tensors_close;

bool forced() {
  const char* v = std::getenv("ATTN_FP32_GEMM");
  return v != nullptr && *v != '\0';
}

TEST(Fp32Gemm, DispatchFollowsTheMeasuredRule) {
  if (forced()) GTEST_SKIP() << "ATTN_FP32_GEMM is set";
  const IsaLevel level = kernels::kernel_isa_level();
  const bool vector = level != IsaLevel::baseline;
  EXPECT_EQ(kernels::use_onednn_f32(false, 64, 256, 256), vector);                        // a decoder step's product
  EXPECT_EQ(kernels::use_onednn_f32(false, 5, 6000, 256), vector);                        // one sentence's beam
  EXPECT_FALSE(kernels::use_onednn_f32(false, 1, 6000, 256));                             // a gemv: OpenBLAS
  EXPECT_FALSE(kernels::use_onednn_f32(false, 32, 32, 64));                               // under 64³ multiply-adds
  EXPECT_FALSE(kernels::use_onednn_f32(true, 256, 256, 2500));                            // dW = dYᵀ X: OpenBLAS
  EXPECT_EQ(kernels::use_onednn_f32(false, 2500, 256, 1024), level == IsaLevel::avx512);  // avx2: <= 512 rows
}

// C = alpha op(A) op(B) + beta C in float64, on the stored layouts.
std::vector<float> reference(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                             int64_t lda, const float* b, int64_t ldb, float beta, std::vector<float> c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < k; ++p)
        sum += static_cast<double>(ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
      float& out = c[static_cast<size_t>(i * ldc + j)];
      out = static_cast<float>(alpha * sum + static_cast<double>(beta) * out);
    }
  return c;
}

TEST(Fp32Gemm, OneDnnMatchesAFloat64Reference) {
  if (kernels::kernel_isa_level() == IsaLevel::baseline) GTEST_SKIP() << "oneDNN's fp32 path is off at baseline";
  struct Case {
    bool ta, tb;
    int64_t m, n, k, pad;  // pad: extra elements per stored row (strided operands)
    float alpha, beta;
  };
  const Case cases[] = {{false, true, 64, 256, 256, 0, 1.0f, 0.0f},   {false, false, 5, 300, 128, 3, 1.0f, 1.0f},
                        {true, false, 70, 90, 200, 5, 0.5f, -2.0f},   {true, true, 33, 65, 129, 1, 2.0f, 0.0f},
                        {false, true, 320, 1024, 256, 0, 1.0f, 1.0f}, {false, false, 4, 17, 1024, 7, 1.0f, 0.5f}};
  for (const Case& c : cases) {
    const int64_t a_rows = c.ta ? c.k : c.m, a_cols = c.ta ? c.m : c.k;
    const int64_t b_rows = c.tb ? c.n : c.k, b_cols = c.tb ? c.k : c.n;
    const int64_t lda = a_cols + c.pad, ldb = b_cols + c.pad, ldc = c.n + c.pad;
    const Tensor a = random_tensor({a_rows, lda}, 1), b = random_tensor({b_rows, ldb}, 2);
    const Tensor c0 = random_tensor({c.m, ldc}, 3);
    std::vector<float> actual(c0.f32(), c0.f32() + c.m * ldc);
    kernels::gemm_f32_onednn(c.ta, c.tb, c.m, c.n, c.k, c.alpha, a.f32(), lda, b.f32(), ldb, c.beta, actual.data(),
                             ldc);
    const std::vector<float> expected = reference(c.ta, c.tb, c.m, c.n, c.k, c.alpha, a.f32(), lda, b.f32(), ldb,
                                                  c.beta, std::vector<float>(c0.f32(), c0.f32() + c.m * ldc), ldc);
    // Entries sum k products of magnitude <= |alpha|: fp32 rounding is about 1e-7 · k of that.
    EXPECT_TRUE(
        tensors_close(Tensor::from_vector(actual, {c.m, ldc}), Tensor::from_vector(expected, {c.m, ldc}), 1e-5f, 1e-5f))
        << "ta " << c.ta << " tb " << c.tb << " m " << c.m << " n " << c.n << " k " << c.k << " pad " << c.pad;
  }
}

TEST(Fp32Gemm, PackedWeightsGiveTheUnpackedResultAndFollowChanges) {
  autodiff::NoGradGuard no_grad;
  const Tensor x = random_tensor({64, 256}, 4);
  Tensor weight = random_tensor({512, 256}, 5);
  const Tensor bias = random_tensor({512}, 6);
  const Tensor unpacked = linear(x, weight, bias);
  {
    ops::FrozenWeights frozen;
    for (int use = 0; use < 3; ++use)  // the first use reads the weight as stored, later ones the packed copy
      EXPECT_TRUE(tensors_close(linear(x, weight, bias), unpacked, 1e-6f, 1e-6f)) << "use " << use;
  }
  for (int64_t i = 0; i < weight.numel(); ++i) weight.f32()[i] *= 2.0f;  // between two scopes: allowed
  const Tensor doubled = linear(x, weight, bias);
  ops::FrozenWeights frozen;
  for (int use = 0; use < 3; ++use)
    EXPECT_TRUE(tensors_close(linear(x, weight, bias), doubled, 1e-6f, 1e-6f)) << "after the change, use " << use;
}

}  // namespace
}  // namespace attn
