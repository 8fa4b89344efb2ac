// autodiff::accumulate_weight_grad: small weight-gradient products wait and run stacked.
#include <cmath>
#include <cstdint>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/linear.h"
#include "attn/ops/reduce.h"
#include "test_support.h"

namespace attn {
namespace {

constexpr int64_t kOut = 5, kIn = 3, kRows = 4;

// Σ_t sum(linear(x_t, w) ⊙ s_t) and the exact dW = Σ_t s_tᵀ x_t (in double).
struct Steps {
  std::vector<Tensor> x, s;
  std::vector<double> expected_dw = std::vector<double>(kOut * kIn, 0.0);

  explicit Steps(int64_t steps) {
    for (int64_t t = 0; t < steps; ++t) {
      x.push_back(testing::random_tensor({kRows, kIn}, 1000 + static_cast<uint64_t>(t)));
      s.push_back(testing::random_tensor({kRows, kOut}, 5000 + static_cast<uint64_t>(t)));
      const float* xs = x.back().f32();
      const float* ss = s.back().f32();
      for (int64_t r = 0; r < kRows; ++r)
        for (int64_t o = 0; o < kOut; ++o)
          for (int64_t i = 0; i < kIn; ++i)
            expected_dw[o * kIn + i] += static_cast<double>(ss[r * kOut + o]) * xs[r * kIn + i];
    }
  }

  Tensor loss(const Tensor& w) const {
    Tensor total;
    for (size_t t = 0; t < x.size(); ++t) {
      Tensor term = sum(mul(linear(x[t], w), s[t]));
      total = total.defined() ? add(total, term) : term;
    }
    return total;
  }
};

void expect_grad_near(const Tensor& w, const std::vector<double>& expected, double factor) {
  ASSERT_TRUE(w.has_grad());
  const std::vector<float> got = w.grad().to_vector();
  for (size_t k = 0; k < expected.size(); ++k) {
    const double want = factor * expected[k];
    EXPECT_NEAR(got[k], want, 1e-4 * (1.0 + std::fabs(want))) << "dW element " << k;
  }
}

TEST(WeightGrad, StackedStepProductsMatchTheExactSum) {
  // 1100 steps of 4 rows: 4400 rows, so the waiting products are flushed once at 4096
  // rows and the rest when backward ends.
  const Steps steps(1100);
  Tensor w = testing::random_tensor({kOut, kIn}, 7).set_requires_grad(true);
  backward(steps.loss(w));
  expect_grad_near(w, steps.expected_dw, 1.0);
  // A second backward adds the same again: nothing was left waiting from the first.
  backward(steps.loss(w));
  expect_grad_near(w, steps.expected_dw, 2.0);
}

TEST(WeightGrad, NonLeafWeightPassesItsGradientOn) {
  // w2 = 2 w is produced by an op: its gradient must be complete when mul's backward runs,
  // so its products cannot wait for the end of backward.
  const Steps steps(3);
  Tensor w = testing::random_tensor({kOut, kIn}, 8).set_requires_grad(true);
  Tensor w2 = mul(w, Tensor::full({kOut, kIn}, 2.0f));
  backward(steps.loss(w2));
  expect_grad_near(w, steps.expected_dw, 2.0);
}

TEST(WeightGrad, LargeProductsRunAtOnce) {
  // 300 rows in one step: above the deferral threshold, the same result.
  const Steps steps(1);
  Tensor x = testing::random_tensor({300, kIn}, 9);
  Tensor s = testing::random_tensor({300, kOut}, 10);
  Tensor w = testing::random_tensor({kOut, kIn}, 11).set_requires_grad(true);
  backward(sum(mul(linear(x, w), s)));
  std::vector<double> expected(kOut * kIn, 0.0);
  for (int64_t r = 0; r < 300; ++r)
    for (int64_t o = 0; o < kOut; ++o)
      for (int64_t i = 0; i < kIn; ++i)
        expected[o * kIn + i] += static_cast<double>(s.f32()[r * kOut + o]) * x.f32()[r * kIn + i];
  expect_grad_near(w, expected, 1.0);
}

}  // namespace
}  // namespace attn
