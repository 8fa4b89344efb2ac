#include "attn/ops/softmax.h"

#include <cmath>
#include <limits>

#include "attn/autodiff/tape.h"
#include "attn/parallel.h"
#include "kernels/normalizer.h"
#include "kernels/softmax.h"
#include "op_table.h"
#include "test_support.h"
#include "tolerances.h"
// The kernels' one exp is private to src/kernels; its accuracy is tested here directly.
#include "../../src/kernels/fast_math.h"

namespace attn {
namespace {
using namespace attn::testing;  // the helpers of tests/support

// Double-precision references over the last dimension; mask may be undefined.
Tensor reference(const Tensor& x, const Tensor& mask, bool log) {
  const int64_t n = x.shape().last();
  const int64_t rows = x.numel() / n;
  std::vector<float> xv = x.to_vector();
  std::vector<int32_t> mv = mask.defined() ? mask.to_vector_i32() : std::vector<int32_t>(xv.size(), 1);
  std::vector<float> out(xv.size(), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < n; ++i)
      if (mv[r * n + i]) m = std::max(m, static_cast<double>(xv[r * n + i]));
    if (std::isinf(m)) continue;
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i)
      if (mv[r * n + i]) s += std::exp(static_cast<double>(xv[r * n + i]) - m);
    for (int64_t i = 0; i < n; ++i) {
      if (!mv[r * n + i]) continue;
      const double z = static_cast<double>(xv[r * n + i]) - m;
      out[r * n + i] = static_cast<float>(log ? z - std::log(s) : std::exp(z) / s);
    }
  }
  return Tensor::from_vector(out, x.shape());
}

TEST(Softmax, ForwardMatchesDoubleReference) {
  Tensor x = random_tensor({3, 4, 7}, 1, -3.0f, 3.0f);
  EXPECT_TRUE(tensors_close(softmax(x), reference(x, Tensor(), false), kRowTol));
  EXPECT_TRUE(tensors_close(log_softmax(x), reference(x, Tensor(), true), kRowTol));
  // Rows sum to one.
  std::vector<float> y = softmax(x).to_vector();
  for (int r = 0; r < 12; ++r) {
    double s = 0.0;
    for (int i = 0; i < 7; ++i) s += y[r * 7 + i];
    EXPECT_NEAR(s, 1.0, 1e-6) << "row " << r;
  }
}

TEST(Softmax, HandComputedValues) {
  // softmax(0, ln 2, ln 3) = (1, 2, 3) / 6
  Tensor x = Tensor::from_vector(std::vector<float>{0.0f, std::log(2.0f), std::log(3.0f)}, {1, 3});
  EXPECT_TRUE(tensors_close(softmax(x), Tensor::from_vector(std::vector<float>{1 / 6.f, 2 / 6.f, 3 / 6.f}, {1, 3}),
                            1e-7f, 1e-6f));
  EXPECT_TRUE(tensors_close(
      log_softmax(x),
      Tensor::from_vector(std::vector<float>{std::log(1 / 6.f), std::log(2 / 6.f), std::log(3 / 6.f)}, {1, 3}), 1e-6f,
      1e-6f));
  // A single element: softmax 1, log-softmax 0.
  Tensor one = Tensor::from_vector(std::vector<float>{123.0f}, {1});
  EXPECT_EQ(softmax(one).to_vector(), std::vector<float>{1.0f});
  EXPECT_EQ(log_softmax(one).to_vector(), std::vector<float>{0.0f});
}

TEST(Softmax, MaskedMatchesReferenceAndZerosMaskedPositions) {
  Tensor x = random_tensor({4, 6}, 2, -3.0f, 3.0f);
  Tensor mask = Tensor::from_vector(std::vector<int32_t>{1, 0, 1, 1, 0, 1,  //
                                                         0, 0, 0, 0, 0, 0,  // fully masked
                                                         0, 0, 0, 0, 0, 7,  // one kept (any nonzero keeps)
                                                         1, 1, 1, 1, 1, 1},
                                    {4, 6});
  Tensor y = softmax(x, mask);
  Tensor ly = log_softmax(x, mask);
  EXPECT_TRUE(tensors_close(y, reference(x, mask, false), kRowTol));
  EXPECT_TRUE(tensors_close(ly, reference(x, mask, true), kRowTol));
  std::vector<float> yv = y.to_vector();
  std::vector<float> lv = ly.to_vector();
  std::vector<int32_t> mv = mask.to_vector_i32();
  for (size_t i = 0; i < yv.size(); ++i) {
    if (mv[i] == 0) {
      EXPECT_EQ(yv[i], 0.0f) << i;
      EXPECT_EQ(lv[i], 0.0f) << i;
    }
  }
  EXPECT_EQ(yv[17], 1.0f);
  EXPECT_EQ(lv[17], 0.0f);
}

TEST(Softmax, MaskedPositionsMayHoldInfAndNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_vector(std::vector<float>{1.0f, inf, 2.0f, nan, -inf, nan}, {2, 3});
  Tensor mask = Tensor::from_vector(std::vector<int32_t>{1, 0, 1, 0, 0, 0}, {2, 3});
  const double e = std::exp(-1.0);
  std::vector<float> y = softmax(x, mask).to_vector();
  EXPECT_NEAR(y[0], e / (1 + e), 1e-7);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_NEAR(y[2], 1 / (1 + e), 1e-7);
  for (int i = 3; i < 6; ++i) EXPECT_EQ(y[i], 0.0f) << i;
  std::vector<float> ly = log_softmax(x, mask).to_vector();
  for (float v : ly) EXPECT_FALSE(std::isnan(v));
}

TEST(Softmax, StableForLargeMagnitudes) {
  Tensor x = Tensor::from_vector(std::vector<float>{1000.0f, 1001.0f, 999.0f, -1000.0f, 1000.0f, -1000.0f}, {2, 3});
  EXPECT_TRUE(tensors_close(softmax(x), reference(x, Tensor(), false), 1e-7f, 1e-6f));
  EXPECT_TRUE(tensors_close(log_softmax(x), reference(x, Tensor(), true), 1e-5f, 1e-6f));
  std::vector<float> y = softmax(x).to_vector();
  EXPECT_EQ(y[3], 0.0f);
  EXPECT_EQ(y[4], 1.0f);
  EXPECT_EQ(y[5], 0.0f);
  std::vector<float> ly = log_softmax(x).to_vector();
  EXPECT_EQ(ly[3], -2000.0f);
  EXPECT_EQ(ly[4], 0.0f);
  // -1e30 and 1e30 in the same row
  Tensor big = Tensor::from_vector(std::vector<float>{-1e30f, 1e30f}, {2});
  EXPECT_EQ(softmax(big).to_vector(), (std::vector<float>{0.0f, 1.0f}));
}

TEST(Softmax, FastExpIsAccurate) {
  double worst = 0.0;
  float worst_x = 0.0f;
  for (float x = -87.0f; x <= 88.0f; x += 0.001953125f) {
    const double e = std::exp(static_cast<double>(x));
    const double rel = std::fabs(kernels::fast_exp(x) - e) / e;
    if (rel > worst) {
      worst = rel;
      worst_x = x;
    }
  }
  EXPECT_LT(worst, 3e-7) << "at x = " << worst_x;
  EXPECT_EQ(kernels::fast_exp(0.0f), 1.0f);
  EXPECT_EQ(kernels::fast_exp(-100.0f), 0.0f);
  EXPECT_EQ(kernels::fast_exp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isinf(kernels::fast_exp(100.0f)));
  EXPECT_TRUE(std::isnan(kernels::fast_exp(std::numeric_limits<float>::quiet_NaN())));
}

TEST(Softmax, RowKernelsMatchOps) {
  Tensor x = random_tensor({5}, 3, -4.0f, 4.0f);
  Tensor mask = Tensor::from_vector(std::vector<int32_t>{1, 1, 0, 1, 0}, {5});
  Tensor y = Tensor::empty({5});
  kernels::normalizer_row_forward(kernels::Normalizer{}, x.f32(), mask.i32(), y.f32(), 5);
  EXPECT_TRUE(tensors_close(y, reference(x, mask, false), kRowTol));
  kernels::log_softmax_row_forward(x.f32(), nullptr, y.f32(), 5);
  EXPECT_TRUE(tensors_close(y, reference(x, Tensor(), true), kRowTol));
  // logsumexp_row
  double s = 0.0;
  std::vector<float> xv = x.to_vector();
  for (int i : {0, 1, 3}) s += std::exp(static_cast<double>(xv[i]));
  EXPECT_NEAR(kernels::logsumexp_row(x.f32(), mask.i32(), 5), std::log(s), 1e-6);
  std::vector<int32_t> none(5, 0);
  EXPECT_EQ(kernels::logsumexp_row(x.f32(), none.data(), 5), -std::numeric_limits<float>::infinity());
  // Backward kernels accumulate.
  Tensor dy = random_tensor({5}, 4);
  Tensor p = Tensor::empty({5});
  kernels::normalizer_row_forward(kernels::Normalizer{}, x.f32(), nullptr, p.f32(), 5);
  std::vector<float> dx(5, 1.0f);
  kernels::normalizer_row_backward(kernels::Normalizer{}, nullptr, p.f32(), dy.f32(), dx.data(), 5);
  std::vector<float> pv = p.to_vector(), dyv = dy.to_vector();
  double dot = 0.0;
  for (int i = 0; i < 5; ++i) dot += static_cast<double>(pv[i]) * dyv[i];
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(dx[i], 1.0 + pv[i] * (dyv[i] - dot), 1e-6) << i;
}

TEST(Softmax, BackwardMatchesFormula) {
  // softmax: dx = y ⊙ (dy − Σ dy⊙y); log-softmax: dx = dy − softmax ⊙ Σ dy (kept positions).
  Tensor x = wide_leaf({3, 5}, 5);
  Tensor mask = ragged_mask({3, 5}, {5, 2, 0});
  Tensor dy = random_tensor({3, 5}, 6);
  for (bool log : {false, true}) {
    x.drop_grad();
    Tensor y = log ? log_softmax(x, mask) : softmax(x, mask);
    backward(y, dy);
    std::vector<float> p = reference(x, mask, false).to_vector();
    std::vector<float> g = dy.to_vector();
    std::vector<int32_t> m = mask.to_vector_i32();
    std::vector<float> expected(15, 0.0f);
    for (int r = 0; r < 3; ++r) {
      double sum = 0.0;
      for (int i = 0; i < 5; ++i)
        if (m[r * 5 + i]) sum += log ? g[r * 5 + i] : static_cast<double>(g[r * 5 + i]) * p[r * 5 + i];
      for (int i = 0; i < 5; ++i) {
        const int k = r * 5 + i;
        if (!m[k]) continue;
        expected[k] = static_cast<float>(log ? g[k] - p[k] * sum : p[k] * (g[k] - sum));
      }
    }
    EXPECT_TRUE(tensors_close(x.grad(), Tensor::from_vector(expected, {3, 5}), 1e-6f, 1e-5f)) << "log " << log;
  }
}

TEST(Softmax, FullyMaskedRowGetsExactlyZeroGradient) {
  Tensor x = wide_leaf({2, 4}, 7);
  Tensor mask = ragged_mask({2, 4}, {0, 3});
  for (bool log : {false, true}) {
    x.drop_grad();
    Tensor y = log ? log_softmax(x, mask) : softmax(x, mask);
    for (float v : y.to_vector()) EXPECT_FALSE(std::isnan(v));
    backward(y, random_tensor({2, 4}, 8));
    std::vector<float> g = x.grad().to_vector();
    for (int i = 0; i < 4; ++i) EXPECT_EQ(g[i], 0.0f) << "fully masked row, log " << log;
    EXPECT_EQ(g[7], 0.0f) << "masked position, log " << log;
    EXPECT_NE(g[4], 0.0f);
  }
}

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

TEST(Softmax, Gradcheck) {
  const std::vector<std::function<Fn(const Tensor&)>> ops = {
      [](const Tensor& m) -> Fn { return [m](const std::vector<Tensor>& in) { return softmax(in[0], m); }; },
      [](const Tensor& m) -> Fn { return [m](const std::vector<Tensor>& in) { return log_softmax(in[0], m); }; }};
  for (const auto& make : ops) {
    EXPECT_TRUE(gradcheck(make(Tensor()), {wide_leaf({2, 3, 5}, 10)}));
    EXPECT_TRUE(gradcheck(make(Tensor()), {wide_leaf({1, 1}, 11)}));  // length 1, batch 1
    EXPECT_TRUE(gradcheck(make(Tensor()), {wide_leaf({1, 6}, 12)}));  // batch 1
    EXPECT_TRUE(gradcheck(make(Tensor()), {wide_leaf({7}, 13)}));     // rank 1
    // ragged lengths with a fully masked row and a length-1 row
    EXPECT_TRUE(gradcheck(make(ragged_mask({4, 5}, {5, 3, 0, 1})), {wide_leaf({4, 5}, 14)}));
    // scattered mask over a (B, T, S) tensor, one fully masked row
    Tensor scattered = Tensor::from_vector(std::vector<int32_t>{1, 0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0}, {2, 2, 3});
    EXPECT_TRUE(gradcheck(make(scattered), {wide_leaf({2, 2, 3}, 15)}));
    // large magnitudes: 1e3 offset with O(1) spread
    EXPECT_TRUE(gradcheck(make(Tensor()), {wide_leaf({2, 4}, 16, 998.0f, 1001.0f)}));
    EXPECT_TRUE(gradcheck(make(Tensor()), {wide_leaf({2, 4}, 17, -1001.0f, -998.0f)}));
  }
}

TEST(Softmax, LongRowsAreThreadCountIndependent) {
  Tensor x = random_tensor({64, 1000}, 20, -5.0f, 5.0f);
  Tensor mask = testing::random_ids({64, 1000}, 2, 21);
  const int saved = num_threads();
  set_num_threads(1);
  std::vector<float> one = softmax(x, mask).to_vector();
  std::vector<float> lone = log_softmax(x).to_vector();
  set_num_threads(3);
  std::vector<float> three = softmax(x, mask).to_vector();
  std::vector<float> lthree = log_softmax(x).to_vector();
  set_num_threads(saved);
  EXPECT_EQ(one, three);
  EXPECT_EQ(lone, lthree);
  EXPECT_TRUE(tensors_close(softmax(x, mask), reference(x, mask, false), kRowTol));
}

TEST(Softmax, NoGradModeRecordsNothing) {
  Tensor x = wide_leaf({2, 3}, 30);
  autodiff::NoGradGuard guard;
  EXPECT_FALSE(softmax(x).requires_grad());
  EXPECT_FALSE(log_softmax(x).requires_grad());
}

std::vector<BadRow> softmax_bad_inputs() {
  const Tensor x = Tensor::zeros({2, 3});
  const Throws shape = Throws::shape_error;
  return {
      {"mask_rows",
       [=] {
         softmax(x, Tensor::zeros({2, 1}, DType::i32));
       },
       shape, "softmax: 'mask' expected (2, 3) (exactly the shape of 'x', no broadcasting), got (2, 1)"},
      {"log_softmax_mask_rank_1", [=] { log_softmax(x, Tensor::zeros({3}, DType::i32)); }, shape,
       "log_softmax: 'mask' expected (2, 3) (exactly the shape of 'x', no broadcasting), got (3)"},
      {"mask_rank_3",
       [=] {
         softmax(x, Tensor::zeros({1, 2, 3}, DType::i32));
       },
       shape, "got (1, 2, 3)"},
      {"mask_float",
       [=] {
         softmax(x, Tensor::zeros({2, 3}));
       },
       shape, "softmax: 'mask' expected dtype int32, got float32"},
      {"x_int",
       [] {
         softmax(Tensor::zeros({2, 3}, DType::i32));
       },
       shape, "softmax: 'x' expected dtype float32, got int32"},
      {"log_softmax_x_undefined", [] { log_softmax(Tensor()); }, shape,
       "log_softmax: 'x' expected (..., N), got an undefined tensor"},
      {"x_scalar", [] { softmax(Tensor::scalar(1.0f)); }, shape,
       "softmax: 'x' expected (..., N) with rank >= 1, got a scalar"},
  };
}

INSTANTIATE_TEST_SUITE_P(Softmax, BadInput, ::testing::ValuesIn(softmax_bad_inputs()), row_name);

}  // namespace
}  // namespace attn
