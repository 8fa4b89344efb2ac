#include "attn/ops/dropout.h"

#include <cmath>
#include <limits>

#include "attn/autodiff/tape.h"
#include "attn/parallel.h"
#include "attn/random.h"
#include "op_table.h"
#include "test_support.h"

namespace attn {
namespace {
using namespace attn::testing;  // the helpers of tests/support

// A large tensor of ones: y / scale is then the mask itself.
constexpr int64_t kLarge = 1 << 18;  // above the kernel grain, so it runs threaded

TEST(Dropout, FractionKeptIsOneMinusP) {
  Tensor x = Tensor::full({kLarge}, 1.0f);
  for (float p : {0.1f, 0.5f, 0.9f}) {
    std::vector<float> y = dropout(x, p, 42).to_vector();
    int64_t kept = 0;
    double sum = 0.0;
    for (float v : y) {
      kept += v != 0.0f;
      sum += v;
    }
    const double fraction = static_cast<double>(kept) / kLarge;
    const double sigma = std::sqrt(p * (1.0 - p) / kLarge);
    EXPECT_NEAR(fraction, 1.0 - p, 5 * sigma) << "p = " << p;
    // inverted dropout preserves the mean
    EXPECT_NEAR(sum / kLarge, 1.0, 5 * sigma / (1.0 - p)) << "p = " << p;
  }
}

TEST(Dropout, KeptValuesAreScaledAndMaskComesFromUniformAt) {
  const float p = 0.3f;
  const uint64_t seed = 7;
  Tensor x = random_tensor({4, 5, 6}, 1, 0.5f, 2.0f);  // no zeros in x
  std::vector<float> xv = x.to_vector();
  std::vector<float> y = dropout(x, p, seed).to_vector();
  for (size_t i = 0; i < xv.size(); ++i) {
    const bool keep = uniform_at(seed, i) >= p;
    if (keep)
      EXPECT_FLOAT_EQ(y[i], xv[i] / (1.0f - p)) << i;
    else
      EXPECT_EQ(y[i], 0.0f) << i;
  }
}

TEST(Dropout, SameSeedSameMaskDifferentSeedDifferentMask) {
  Tensor x = Tensor::full({kLarge}, 1.0f);
  std::vector<float> a = dropout(x, 0.5f, 123).to_vector();
  std::vector<float> b = dropout(x, 0.5f, 123).to_vector();
  std::vector<float> c = dropout(x, 0.5f, 124).to_vector();
  EXPECT_EQ(a, b);
  int64_t differ = 0;
  for (int64_t i = 0; i < kLarge; ++i) differ += a[i] != c[i];
  // Independent masks at p = 0.5 differ in half the positions.
  EXPECT_NEAR(static_cast<double>(differ) / kLarge, 0.5, 0.01);
}

TEST(Dropout, ThreadCountIndependent) {
  Tensor x = wide_leaf({kLarge}, 2);
  // Outputs and gradients (dy from seed 3) are bit-identical at 1, 2 and 3 threads.
  expect_identical_across_threads({x}, [](const Tensors& in) { return Tensors{dropout(in[0], 0.25f, 99)}; }, 3,
                                  {1, 2, 3});
}

TEST(Dropout, BackwardUsesTheSameMask) {
  // dx = dy ⊙ mask / (1 − p)
  const float p = 0.4f;
  Tensor x = wide_leaf({3, 50}, 4);
  Tensor dy = random_tensor({3, 50}, 5);
  Tensor y = dropout(x, p, 11);
  backward(y, dy);
  std::vector<float> yv = y.to_vector(), xv = x.to_vector(), dyv = dy.to_vector(), g = x.grad().to_vector();
  int kept = 0;
  for (size_t i = 0; i < yv.size(); ++i) {
    const bool keep = yv[i] != 0.0f;
    kept += keep;
    EXPECT_FLOAT_EQ(g[i], keep ? dyv[i] / (1.0f - p) : 0.0f) << i;
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, 150);
}

TEST(Dropout, IdentityWhenPIsZeroOrEvaluating) {
  Tensor x = wide_leaf({2, 3}, 6);
  EXPECT_TRUE(dropout(x, 0.0f, 1).same(x));
  EXPECT_TRUE(dropout(x, 0.5f, 1, /*training=*/false).same(x));
  // Still differentiable: the gradient reaches x.
  Tensor y = dropout(x, 0.5f, 1, false);
  backward(y, Tensor::full({2, 3}, 2.0f));
  EXPECT_EQ(x.grad().to_vector(), std::vector<float>(6, 2.0f));
}

TEST(Dropout, Gradcheck) {
  for (float p : {0.0f, 0.2f, 0.7f}) {
    auto fn = [p](const std::vector<Tensor>& in) { return dropout(in[0], p, 1234); };
    EXPECT_TRUE(gradcheck(fn, {wide_leaf({3, 7}, 7)})) << "p = " << p;
    EXPECT_TRUE(gradcheck(fn, {wide_leaf({1}, 8)})) << "p = " << p;
    EXPECT_TRUE(gradcheck(fn, {wide_leaf({2, 3, 4}, 9, 998.0f, 1001.0f)})) << "p = " << p;
  }
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return dropout(in[0], 0.5f, 3, false); }, {wide_leaf({4}, 10)}));
}

TEST(Dropout, NearOneKeepsAlmostNothing) {
  Tensor x = Tensor::full({1 << 16}, 1.0f);
  std::vector<float> y = dropout(x, 0.999f, 5).to_vector();
  int64_t kept = 0;
  for (float v : y) {
    EXPECT_TRUE(std::isfinite(v));
    kept += v != 0.0f;
  }
  EXPECT_LT(kept, 200);  // expected 65.5
}

TEST(Dropout, Errors) {
  Tensor x = Tensor::zeros({2, 3});
  EXPECT_THROW_MSG(dropout(x, 1.0f, 0), ValueError, "dropout: p must be in [0, 1), got 1");
  EXPECT_THROW_MSG(dropout(x, -0.1f, 0), ValueError, "dropout: p must be in [0, 1), got -0.1");
  EXPECT_THROW_MSG(dropout(x, std::numeric_limits<float>::quiet_NaN(), 0), ValueError,
                   "dropout: p must be in [0, 1), got nan");
  // Checked even when not training.
  EXPECT_THROW_MSG(dropout(x, 1.5f, 0, false), ValueError, "dropout: p must be in [0, 1), got 1.5");
  EXPECT_THROW_MSG(dropout(Tensor::zeros({2}, DType::i32), 0.1f, 0), ShapeError,
                   "dropout: 'x' expected dtype float32, got int32");
  EXPECT_THROW_MSG(dropout(Tensor(), 0.1f, 0), ShapeError,
                   "dropout: 'x' expected a float32 tensor, got an undefined tensor");
}

}  // namespace
}  // namespace attn
