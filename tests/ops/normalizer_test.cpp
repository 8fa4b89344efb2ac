// The sparse normalisers (sparsemax, entmax15, entmax_bisect) and the masked-normaliser kernel
// they share with softmax: values against an independent double-precision reference (τ by
// bisection to 1e-13, not by sorting), hand-computed rows, masks and -inf (the `entmax`
// package's issues #16, #17, #30), gradients against the closed form and finite differences.
#include "kernels/normalizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/ops/softmax.h"
#include "attn/parallel.h"
#include "op_table.h"
#include "test_support.h"
#include "tolerances.h"

namespace attn {
namespace {
using namespace attn::testing;  // the helpers of tests/support
// kRowTol: the sort-based kinds compute τ in double, the bisection stops at 2^-50 of its
// bracket: both are a few float ulps from the exact row.
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// α of each normaliser: 2 sparsemax, 1.5 entmax15, the given α for entmax.
double alpha_of(const Normalizer& n) {
  return n.kind == NormalizerKind::sparsemax ? 2.0 : n.kind == NormalizerKind::entmax15 ? 1.5 : n.alpha;
}

// The exact α-entmax of one row's kept entries in double: y = [(α−1) x − τ]₊^{1/(α−1)} with τ
// found by bisection until Σ y = 1 to double precision (independent of the sort-based kernels).
std::vector<double> reference_row(const std::vector<double>& x, const std::vector<bool>& keep, double alpha) {
  std::vector<double> y(x.size(), 0.0);
  double top = -INFINITY;
  for (size_t i = 0; i < x.size(); ++i)
    if (keep[i] && x[i] > -INFINITY) top = std::max(top, x[i]);
  if (top == -INFINITY) return y;
  auto p = [&](double t) { return t > 0.0 ? std::pow(t, 1.0 / (alpha - 1.0)) : 0.0; };
  auto mass = [&](double tau) {
    double s = 0.0;
    for (size_t i = 0; i < x.size(); ++i)
      if (keep[i] && x[i] > -INFINITY) s += p((alpha - 1.0) * (x[i] - top) - tau);
    return s;
  };
  double lo = -1.0, hi = 0.0;  // mass(lo) >= 1 > mass(0) = 0
  for (int it = 0; it < 200 && hi - lo > 1e-15; ++it) {
    const double mid = 0.5 * (lo + hi);
    (mass(mid) >= 1.0 ? lo : hi) = mid;
  }
  for (size_t i = 0; i < x.size(); ++i)
    if (keep[i] && x[i] > -INFINITY) y[i] = p((alpha - 1.0) * (x[i] - top) - lo);
  return y;
}

// The reference over the rows of x (mask undefined: keep all).
Tensor reference(const Tensor& x, const Tensor& mask, double alpha) {
  const int64_t n = x.shape().last(), rows = x.numel() / n;
  const std::vector<float> xv = x.to_vector();
  const std::vector<int32_t> mv = mask.defined() ? mask.to_vector_i32() : std::vector<int32_t>(xv.size(), 1);
  std::vector<float> out(xv.size());
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> row(n);
    std::vector<bool> keep(n);
    for (int64_t i = 0; i < n; ++i) {
      row[i] = xv[r * n + i];
      keep[i] = mv[r * n + i] != 0;
    }
    const std::vector<double> y = reference_row(row, keep, alpha);
    for (int64_t i = 0; i < n; ++i) out[r * n + i] = static_cast<float>(y[i]);
  }
  return Tensor::from_vector(out, x.shape());
}

const std::vector<Normalizer> kSparse = {{NormalizerKind::sparsemax},     {NormalizerKind::entmax15},
                                         {NormalizerKind::entmax, 1.25f}, {NormalizerKind::entmax, 1.5f},
                                         {NormalizerKind::entmax, 2.0f},  {NormalizerKind::entmax, 3.0f}};

std::string name_of(const Normalizer& n) {
  return std::string(normalizer_name(n.kind)) + (n.kind == NormalizerKind::entmax ? "@" + std::to_string(n.alpha) : "");
}

TEST(Normalizer, ForwardMatchesBisectionReference) {
  const Tensor x = random_tensor({6, 9}, 1, -3.0f, 3.0f);
  const Tensor mask = ragged_mask({6, 9}, {9, 5, 1, 0, 2, 7});
  for (const Normalizer& n : kSparse) {
    EXPECT_TRUE(tensors_close(normalize(x, n), reference(x, Tensor(), alpha_of(n)), kRowTol)) << name_of(n);
    EXPECT_TRUE(tensors_close(normalize(x, n, mask), reference(x, mask, alpha_of(n)), kRowTol)) << name_of(n);
  }
}

TEST(Normalizer, HandComputedRows) {
  // sparsemax([0.5, 0.1, -2]): support {0, 1}, τ = (0.6 − 1) / 2 = −0.2.
  const Tensor a = Tensor::from_vector(std::vector<float>{0.5f, 0.1f, -2.0f}, {3});
  EXPECT_TRUE(tensors_close(sparsemax(a), Tensor::from_vector(std::vector<float>{0.7f, 0.3f, 0.0f}, {3}), 1e-6f, 0));
  // entmax15([1, 0]): (0.5 − τ)² + τ² = 1 gives 0.5 − τ = (1 + √7) / 4.
  const Tensor b = Tensor::from_vector(std::vector<float>{1.0f, 0.0f}, {2});
  const double top = (1.0 + std::sqrt(7.0)) / 4.0;
  const std::vector<float> expected = {static_cast<float>(top * top), static_cast<float>((top - 0.5) * (top - 0.5))};
  EXPECT_TRUE(tensors_close(entmax15(b), Tensor::from_vector(expected, {2}), 1e-6f, 0));
  // One large value takes everything; all equal gives uniform weights; length 1 gives 1.
  const Tensor c =
      Tensor::from_vector(std::vector<float>{50.0f, 1.0f, 0.0f, 1.0f, 1.0f, 1.0f, 3.0f, 9.0f, 9.0f}, {3, 3});
  for (const Normalizer& n : kSparse) {
    const std::vector<float> y = normalize(c, n).to_vector();
    EXPECT_EQ(y[0], 1.0f) << name_of(n);
    EXPECT_EQ(y[1], 0.0f) << name_of(n);
    for (int i = 3; i < 6; ++i) EXPECT_NEAR(y[i], 1.0f / 3.0f, 1e-6f) << name_of(n);
    EXPECT_EQ(y[6], 0.0f) << name_of(n);  // 3 against a tie of two 9s
    EXPECT_NEAR(y[7], 0.5f, 1e-6f) << name_of(n);
    EXPECT_EQ(normalize(Tensor::from_vector(std::vector<float>{-7.0f}, {1, 1}), n).item(), 1.0f) << name_of(n);
  }
}

TEST(Normalizer, MinusInfinityAndFullyMaskedRows) {
  // entmax #16/#30: -inf scores are left out, not NaN; #17: a row with nothing kept is zero.
  Tensor x = Tensor::from_vector(std::vector<float>{-kInf, 1.0f, 2.0f, -kInf, -kInf, -kInf, 0.3f, kNaN, kInf}, {3, 3})
                 .set_requires_grad(true);
  const Tensor mask = Tensor::from_vector(std::vector<int32_t>{1, 1, 1, 1, 1, 1, 1, 0, 0}, {3, 3});
  const Tensor finite = Tensor::from_vector(std::vector<float>{1.0f, 2.0f}, {2});
  for (const Normalizer& n : kSparse) {
    x.drop_grad();
    const Tensor y = normalize(x, n, mask);
    const std::vector<float> v = y.to_vector(), f = normalize(finite, n).to_vector();
    EXPECT_EQ(v[0], 0.0f) << name_of(n);
    EXPECT_EQ(v[1], f[0]) << name_of(n);
    EXPECT_EQ(v[2], f[1]) << name_of(n);
    for (int i = 3; i < 6; ++i) EXPECT_EQ(v[i], 0.0f) << name_of(n) << " all -inf row";
    EXPECT_EQ(v[6], 1.0f) << name_of(n) << " masked NaN / +inf are never read";
    EXPECT_EQ(v[7], 0.0f);
    EXPECT_EQ(v[8], 0.0f);
    backward(y, random_tensor({3, 3}, 2));
    const std::vector<float> g = x.grad().to_vector();
    for (int i : {0, 3, 4, 5, 6, 7, 8}) EXPECT_EQ(g[i], 0.0f) << name_of(n) << " position " << i;
  }
  // Fully masked by the mask: zeros and zero gradient.
  Tensor z = wide_leaf({2, 4}, 3);
  for (const Normalizer& n : kSparse) {
    z.drop_grad();
    const Tensor y = normalize(z, n, ragged_mask({2, 4}, {0, 0}));
    for (float v : y.to_vector()) EXPECT_EQ(v, 0.0f) << name_of(n);
    backward(y, random_tensor({2, 4}, 4));
    for (float v : z.grad().to_vector()) EXPECT_EQ(v, 0.0f) << name_of(n);
  }
}

TEST(Normalizer, KeptNaNOrInfinityGivesNaN) {
  const Tensor x = Tensor::from_vector(std::vector<float>{1.0f, kNaN, 0.0f, kInf}, {2, 2});
  for (const Normalizer& n : kSparse)
    for (float v : normalize(x, n).to_vector()) EXPECT_TRUE(std::isnan(v)) << name_of(n);
}

TEST(Normalizer, BackwardMatchesClosedForm) {
  // dx = g ⊙ (dy − Σ g dy / Σ g), g = y^{2−α} on the support.
  Tensor x = wide_leaf({4, 7}, 5, -2.0f, 2.0f);
  const Tensor mask = ragged_mask({4, 7}, {7, 3, 0, 1});
  const Tensor dy = random_tensor({4, 7}, 6);
  for (const Normalizer& n : kSparse) {
    x.drop_grad();
    const Tensor y = normalize(x, n, mask);
    backward(y, dy);
    const std::vector<float> yv = y.to_vector(), dyv = dy.to_vector();
    std::vector<float> expected(28, 0.0f);
    for (int r = 0; r < 4; ++r) {
      double sg = 0.0, sgd = 0.0;
      for (int i = 0; i < 7; ++i) {
        const double g = yv[r * 7 + i] > 0.0f ? std::pow(static_cast<double>(yv[r * 7 + i]), 2.0 - alpha_of(n)) : 0.0;
        sg += g;
        sgd += g * dyv[r * 7 + i];
      }
      for (int i = 0; i < 7; ++i) {
        const double g = yv[r * 7 + i] > 0.0f ? std::pow(static_cast<double>(yv[r * 7 + i]), 2.0 - alpha_of(n)) : 0.0;
        if (sg > 0.0) expected[r * 7 + i] = static_cast<float>(g * (dyv[r * 7 + i] - sgd / sg));
      }
    }
    EXPECT_TRUE(tensors_close(x.grad(), Tensor::from_vector(expected, {4, 7}), 1e-6f, 1e-5f)) << name_of(n);
  }
}

// The least distance of a kept score from the threshold τ (in units of x): above the
// finite-difference step (1e-2), the differences never cross a kink of the map.
double threshold_margin(const Tensor& x, const Tensor& mask, const Normalizer& n) {
  const double a = alpha_of(n);
  const int64_t cols = x.shape().last(), rows = x.numel() / cols;
  const std::vector<float> xv = x.to_vector(), yv = normalize(x, n, mask).to_vector();
  const std::vector<int32_t> mv = mask.defined() ? mask.to_vector_i32() : std::vector<int32_t>(xv.size(), 1);
  double margin = INFINITY;
  for (int64_t r = 0; r < rows; ++r) {
    double tau = NAN;  // (α−1) x_i − y_i^{α−1} on the support, relative to nothing: same for every i
    for (int64_t i = 0; i < cols; ++i)
      if (mv[r * cols + i] && yv[r * cols + i] > 0.0f)
        tau = (a - 1.0) * xv[r * cols + i] - std::pow(static_cast<double>(yv[r * cols + i]), a - 1.0);
    if (std::isnan(tau)) continue;
    for (int64_t i = 0; i < cols; ++i)
      if (mv[r * cols + i]) margin = std::min(margin, std::fabs((a - 1.0) * xv[r * cols + i] - tau) / (a - 1.0));
  }
  return margin;
}

TEST(Normalizer, Gradcheck) {
  // Spread-out scores (steps of 0.7 plus a little noise) keep every score away from τ.
  std::vector<float> spread(30);
  const std::vector<float> noise = random_tensor({30}, 7, -0.05f, 0.05f).to_vector();
  for (int i = 0; i < 30; ++i) spread[i] = 0.7f * static_cast<float>((i * 7) % 10) - 3.0f + noise[i];
  const Tensor x = Tensor::from_vector(spread, {3, 10});
  const Tensor mask = Tensor::from_vector(std::vector<int32_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                                               1, 0, 1, 1, 0, 1, 1, 1, 0, 1,  //
                                                               0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
                                          {3, 10});
  for (const Normalizer& n : kSparse) {
    for (const Tensor& m : {Tensor(), mask}) {
      // α < 2: y ∝ [t]₊^{1/(α−1)} with 1/(α−1) > 1 is C¹ at τ, so differences across it are fine;
      // α >= 2 has a kink (sparsemax) or an unbounded slope (α = 3) there.
      if (alpha_of(n) >= 2.0) {
        ASSERT_GT(threshold_margin(x, m, n), 0.03) << name_of(n) << ": the test's rows must keep away from τ";
      }
      const auto fn = [n, m](const std::vector<Tensor>& in) { return normalize(in[0], n, m); };
      EXPECT_TRUE(gradcheck(fn, {x.clone().set_requires_grad(true)})) << name_of(n);
    }
    EXPECT_TRUE(gradcheck([n](const std::vector<Tensor>& in) { return normalize(in[0], n); }, {wide_leaf({1, 1}, 8)}))
        << name_of(n) << " length 1";
  }
}

TEST(Normalizer, AlphaTwoIsSparsemaxAndOnePointFiveIsEntmax15) {
  const Tensor x = random_tensor({5, 13}, 9, -2.0f, 2.0f);
  EXPECT_TRUE(tensors_close(entmax_bisect(x, 2.0f), sparsemax(x), 1e-6f, 1e-5f));
  EXPECT_TRUE(tensors_close(entmax_bisect(x, 1.5f), entmax15(x), 1e-6f, 1e-5f));
}

TEST(Normalizer, RowsAreThreadCountIndependent) {
  const Tensor x = random_tensor({64, 300}, 10, -5.0f, 5.0f);
  const Tensor mask = testing::random_ids({64, 300}, 2, 11);
  const int saved = num_threads();
  for (const Normalizer& n : kSparse) {
    set_num_threads(1);
    const std::vector<float> one = normalize(x, n, mask).to_vector();
    set_num_threads(3);
    const std::vector<float> three = normalize(x, n, mask).to_vector();
    EXPECT_EQ(one, three) << name_of(n);
  }
  set_num_threads(saved);
}

TEST(Normalizer, SoftmaxKindIsSoftmax) {
  const Tensor x = random_tensor({3, 11}, 12, -4.0f, 4.0f);
  const Tensor mask = ragged_mask({3, 11}, {11, 4, 0});
  EXPECT_EQ(normalize(x, {}, mask).to_vector(), softmax(x, mask).to_vector());
}

TEST(Normalizer, ScaledKernelRowsWithExtents) {
  // normalizer_forward over (B=2, T=2, S=4) with extents {4, 2}, a keep mask and scale 0.5
  // equals the op on 0.5 x with the combined mask; positions past the extent are 0.
  const Tensor x = random_tensor({2, 2, 4}, 13, -3.0f, 3.0f);
  const std::vector<int32_t> extents = {4, 2}, keep = {1, 0, 1, 1, 1, 1, 1, 1};
  std::vector<int32_t> combined(16);
  for (int r = 0; r < 4; ++r)
    for (int s = 0; s < 4; ++s) combined[r * 4 + s] = s < extents[r / 2] && keep[(r / 2) * 4 + s];
  std::vector<float> hv = x.to_vector();
  for (float& v : hv) v *= 0.5f;
  for (const Normalizer& n : kSparse) {
    kernels::Normalizer k{n.kind == NormalizerKind::sparsemax  ? kernels::NormalizerKind::sparsemax
                          : n.kind == NormalizerKind::entmax15 ? kernels::NormalizerKind::entmax15
                                                               : kernels::NormalizerKind::entmax_bisect,
                          0.5f, n.alpha};
    std::vector<float> y(16, 7.0f);
    kernels::normalizer_forward(k, {.rows = 4, .n = 4, .group = 2, .extents = extents.data(), .mask = keep.data()},
                                x.f32(), y.data());
    const Tensor expected = normalize(Tensor::from_vector(hv, {2, 2, 4}), n, Tensor::from_vector(combined, {2, 2, 4}));
    EXPECT_TRUE(tensors_close(Tensor::from_vector(y, {2, 2, 4}), expected, 1e-6f, 1e-5f)) << name_of(n);
  }
}

std::vector<BadRow> normalizer_bad_inputs() {
  const Tensor x = Tensor::zeros({2, 3});
  const Throws shape = Throws::shape_error, value = Throws::value_error;
  return {
      {"entmax_alpha_1", [=] { entmax_bisect(x, 1.0f); }, value,
       "entmax_bisect: entmax's alpha must be finite and > 1, got 1"},
      {"entmax_alpha_0_5", [=] { entmax_bisect(x, 0.5f); }, value, "got 0.5"},
      {"entmax_alpha_nan", [=] { entmax_bisect(x, kNaN); }, value, "got nan"},
      {"entmax_alpha_inf", [=] { entmax_bisect(x, kInf); }, value, "got inf"},
      {"normalize_alpha_0_9",
       [=] {
         normalize(x, {NormalizerKind::softmax, 0.9f});
       },
       value, "alpha must be finite and > 1"},
      {"sparsemax_mask_rows",
       [=] {
         sparsemax(x, Tensor::zeros({2, 1}, DType::i32));
       },
       shape, "sparsemax: 'mask' expected (2, 3) (exactly the shape of 'x', no broadcasting), got (2, 1)"},
      {"entmax15_mask_float",
       [=] {
         entmax15(x, Tensor::zeros({2, 3}));
       },
       shape, "entmax15: 'mask' expected dtype int32, got float32"},
      {"entmax15_x_int",
       [] {
         entmax15(Tensor::zeros({2, 3}, DType::i32));
       },
       shape, "entmax15: 'x' expected dtype float32, got int32"},
      {"sparsemax_x_scalar", [] { sparsemax(Tensor::scalar(1.0f)); }, shape,
       "sparsemax: 'x' expected (..., N) with rank >= 1"},
      {"unknown_name", [] { parse_normalizer("sparsemx"); }, value,
       "unknown normaliser 'sparsemx': expected softmax, sparsemax, entmax15 or entmax"},
  };
}

INSTANTIATE_TEST_SUITE_P(Normalizer, BadInput, ::testing::ValuesIn(normalizer_bad_inputs()), row_name);

TEST(Normalizer, ParsesItsNames) { EXPECT_EQ(parse_normalizer("entmax15"), NormalizerKind::entmax15); }

}  // namespace
}  // namespace attn
