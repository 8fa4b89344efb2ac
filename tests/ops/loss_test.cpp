#include "attn/ops/loss.h"

#include <cmath>
#include <limits>

#include "attn/autodiff/tape.h"
#include "attn/parallel.h"
#include "test_support.h"

namespace attn {
namespace {
using testing::gradcheck;
using testing::random_ids;
using testing::random_tensor;
using testing::tensors_close;
using testing::wide_leaf;

// Double-precision cross-entropy (PyTorch semantics), returns the sum and the count.
std::pair<double, int64_t> reference_sum(const Tensor& logits, const Tensor& targets, int32_t ignore, double eps) {
  const int64_t v = logits.shape().last();
  const int64_t rows = targets.numel();
  std::vector<float> x = logits.to_vector();
  std::vector<int32_t> t = targets.to_vector_i32();
  double total = 0.0;
  int64_t count = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (t[r] == ignore) continue;
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < v; ++j) m = std::max(m, static_cast<double>(x[r * v + j]));
    double s = 0.0;
    for (int64_t j = 0; j < v; ++j) s += std::exp(x[r * v + j] - m);
    const double lse = m + std::log(s);
    double smooth = 0.0;
    for (int64_t j = 0; j < v; ++j) smooth += lse - x[r * v + j];
    total += (1.0 - eps) * (lse - x[r * v + t[r]]) + eps * smooth / static_cast<double>(v);
    ++count;
  }
  return {total, count};
}

double reference_mean(const Tensor& logits, const Tensor& targets, int32_t ignore, double eps) {
  auto [sum, count] = reference_sum(logits, targets, ignore, eps);
  return count == 0 ? 0.0 : sum / static_cast<double>(count);
}

TEST(CrossEntropy, HandComputedValues) {
  // Row 0: logits (1, 2, 3), target 2: lse = 3 + log(1 + e^-1 + e^-2) = 3.40760596,
  // −log p = 0.40760596. Row 1: uniform logits, −log p = log 3 = 1.09861229.
  // Mean = 0.75310912 (torch.nn.functional.cross_entropy gives 0.7531).
  Tensor logits = Tensor::from_vector(std::vector<float>{1, 2, 3, 1, 1, 1}, {2, 3});
  Tensor targets = Tensor::from_vector(std::vector<int32_t>{2, 0}, {2});
  EXPECT_NEAR(cross_entropy(logits, targets).item(), 0.75310912, 1e-6);
  EXPECT_NEAR(cross_entropy_sum(logits, targets).item(), 1.50621825, 2e-6);
  // ε = 0.1: row 0 smoothing term mean_j(lse − x_j) = 3.40760596 − 2 = 1.40760596, so
  // loss_0 = 0.9 · 0.40760596 + 0.1 · 1.40760596 = 0.50760596; row 1 stays log 3.
  EXPECT_NEAR(cross_entropy(logits, targets, {.label_smoothing = 0.1f}).item(), (0.50760596 + 1.09861229) / 2, 1e-6);
  // Ignoring row 1 leaves row 0 alone.
  Tensor ignored = Tensor::from_vector(std::vector<int32_t>{2, -100}, {2});
  EXPECT_NEAR(cross_entropy(logits, ignored).item(), 0.40760596, 1e-6);
  EXPECT_EQ(cross_entropy_count(ignored), 1);
  // ε = 1: pure uniform target, loss = mean_j(lse − x_j), independent of the target.
  EXPECT_NEAR(cross_entropy(logits, targets, {.label_smoothing = 1.0f}).item(), (1.40760596 + 1.09861229) / 2, 1e-6);
}

TEST(CrossEntropy, MatchesDoubleReference) {
  Tensor logits = random_tensor({3, 5, 11}, 1, -4.0f, 4.0f);
  Tensor targets = random_ids({3, 5}, 11, 2);
  int32_t* t = targets.i32();
  t[1] = -100;
  t[7] = -100;
  for (float eps : {0.0f, 0.1f, 0.5f}) {
    CrossEntropyOptions o{.ignore_index = -100, .label_smoothing = eps};
    EXPECT_NEAR(cross_entropy(logits, targets, o).item(), reference_mean(logits, targets, -100, eps), 1e-5) << eps;
    EXPECT_NEAR(cross_entropy_sum(logits, targets, o).item(), reference_sum(logits, targets, -100, eps).first, 1e-4)
        << eps;
    // (N, V) and (B, T, V) agree.
    EXPECT_EQ(cross_entropy(logits.reshape({15, 11}), targets.reshape({15}), o).item(),
              cross_entropy(logits, targets, o).item());
  }
  EXPECT_EQ(cross_entropy_count(targets), 13);
}

TEST(CrossEntropy, CustomIgnoreIndexSuchAsPad) {
  Tensor logits = random_tensor({6, 4}, 3, -2.0f, 2.0f);
  Tensor targets = Tensor::from_vector(std::vector<int32_t>{0, 3, 0, 1, 2, 0}, {6});
  CrossEntropyOptions o{.ignore_index = 0, .label_smoothing = 0.2f};
  EXPECT_NEAR(cross_entropy(logits, targets, o).item(), reference_mean(logits, targets, 0, 0.2), 1e-6);
  EXPECT_EQ(cross_entropy_count(targets, 0), 3);
  // With ignore_index 0, a -100 target is out of range.
  Tensor bad = Tensor::from_vector(std::vector<int32_t>{0, -100}, {2});
  EXPECT_THROW_MSG(cross_entropy(random_tensor({2, 4}, 4), bad, o), ValueError,
                   "cross_entropy: target -100 at index 1 is outside [0, V=4) and is not ignore_index (0)");
}

TEST(CrossEntropy, AllIgnoredGivesZeroLossAndZeroGradient) {
  Tensor logits = wide_leaf({3, 5}, 5);
  Tensor targets = Tensor::from_vector(std::vector<int32_t>{-100, -100, -100}, {3});
  Tensor loss = cross_entropy(logits, targets, {.label_smoothing = 0.1f});
  EXPECT_EQ(loss.item(), 0.0f);
  backward(loss);
  ASSERT_TRUE(logits.has_grad());
  for (float g : logits.grad().to_vector()) EXPECT_EQ(g, 0.0f);
  EXPECT_EQ(cross_entropy_sum(logits, targets).item(), 0.0f);
}

TEST(CrossEntropy, StableForLargeLogits) {
  Tensor logits = Tensor::from_vector(std::vector<float>{1000, 1001, 999, -1000, 1000, -1000}, {2, 3});
  Tensor targets = Tensor::from_vector(std::vector<int32_t>{1, 0}, {2});
  const double expected = reference_mean(logits, targets, -100, 0.1);
  const float got = cross_entropy(logits, targets, {.label_smoothing = 0.1f}).item();
  EXPECT_TRUE(std::isfinite(got));
  EXPECT_NEAR(got, expected, 1e-3);  // row 1 holds −log p = 2000: float32 resolution there is ~1e-4
  // Exact where the answer is exact: a certain prediction has zero loss.
  Tensor sure = Tensor::from_vector(std::vector<float>{-1000, 1000}, {1, 2});
  EXPECT_EQ(cross_entropy(sure, Tensor::from_vector(std::vector<int32_t>{1}, {1})).item(), 0.0f);
  EXPECT_EQ(cross_entropy(sure, Tensor::from_vector(std::vector<int32_t>{0}, {1})).item(), 2000.0f);
}

TEST(CrossEntropy, BackwardMatchesFormula) {
  // dlogits_i = (p_i − (1 − ε) onehot(y_i) − ε / V) / count, 0 for ignored rows
  Tensor logits = wide_leaf({4, 6}, 6);
  Tensor targets = Tensor::from_vector(std::vector<int32_t>{5, -100, 0, 2}, {4});
  const double eps = 0.25;
  backward(cross_entropy(logits, targets, {.label_smoothing = 0.25f}));
  std::vector<float> x = logits.to_vector();
  std::vector<float> expected(24, 0.0f);
  for (int r = 0; r < 4; ++r) {
    const int32_t t = targets.to_vector_i32()[r];
    if (t == -100) continue;
    double m = -1e300, s = 0.0;
    for (int j = 0; j < 6; ++j) m = std::max(m, static_cast<double>(x[r * 6 + j]));
    for (int j = 0; j < 6; ++j) s += std::exp(x[r * 6 + j] - m);
    for (int j = 0; j < 6; ++j) {
      const double p = std::exp(x[r * 6 + j] - m) / s;
      expected[r * 6 + j] = static_cast<float>((p - (j == t ? 1.0 - eps : 0.0) - eps / 6.0) / 3.0);
    }
  }
  EXPECT_TRUE(tensors_close(logits.grad(), Tensor::from_vector(expected, {4, 6}), 1e-7f, 1e-5f));
}

TEST(CrossEntropy, Gradcheck) {
  auto ce = [](Tensor targets, CrossEntropyOptions o) {
    return [targets, o](const std::vector<Tensor>& in) { return cross_entropy(in[0], targets, o); };
  };
  auto ce_sum = [](Tensor targets, CrossEntropyOptions o) {
    return [targets, o](const std::vector<Tensor>& in) { return cross_entropy_sum(in[0], targets, o); };
  };
  Tensor t5 = Tensor::from_vector(std::vector<int32_t>{3, -100, 0, 4, 1}, {5});
  EXPECT_TRUE(gradcheck(ce(t5, {}), {wide_leaf({5, 6}, 10)}));
  EXPECT_TRUE(gradcheck(ce(t5, {.label_smoothing = 0.1f}), {wide_leaf({5, 6}, 11)}));
  EXPECT_TRUE(gradcheck(ce_sum(t5, {.label_smoothing = 0.3f}), {wide_leaf({5, 6}, 12)}));
  Tensor tbt = Tensor::from_vector(std::vector<int32_t>{1, 2, 7, 7, 0, 3}, {2, 3});  // 7 = pad
  EXPECT_TRUE(gradcheck(ce(tbt, {.ignore_index = 7, .label_smoothing = 0.2f}), {wide_leaf({2, 3, 4}, 13)}));
  // batch 1, one token; V = 1 (loss identically 0)
  EXPECT_TRUE(gradcheck(ce(Tensor::from_vector(std::vector<int32_t>{2}, {1, 1}), {}), {wide_leaf({1, 1, 3}, 14)}));
  EXPECT_TRUE(gradcheck(ce(Tensor::from_vector(std::vector<int32_t>{0, 0}, {2}), {}), {wide_leaf({2, 1}, 15)}));
  // large magnitudes
  EXPECT_TRUE(gradcheck(ce(Tensor::from_vector(std::vector<int32_t>{1, 0}, {2}), {.label_smoothing = 0.1f}),
                        {wide_leaf({2, 4}, 16, 998.0f, 1001.0f)}));
  // all ignored: zero loss, zero gradient
  EXPECT_TRUE(gradcheck(ce(Tensor::from_vector(std::vector<int32_t>{-100, -100}, {2}), {}), {wide_leaf({2, 3}, 17)}));
}

TEST(CrossEntropy, ThreadCountIndependent) {
  Tensor logits = random_tensor({300, 257}, 20, -5.0f, 5.0f);
  Tensor targets = random_ids({300}, 257, 21);
  const int saved = num_threads();
  set_num_threads(1);
  const float one = cross_entropy(logits, targets, {.label_smoothing = 0.1f}).item();
  set_num_threads(3);
  const float three = cross_entropy(logits, targets, {.label_smoothing = 0.1f}).item();
  set_num_threads(saved);
  EXPECT_EQ(one, three);
  EXPECT_NEAR(one, reference_mean(logits, targets, -100, 0.1), 1e-5);
}

TEST(CrossEntropy, Errors) {
  Tensor logits = Tensor::zeros({3, 5});
  Tensor targets = Tensor::from_vector(std::vector<int32_t>{0, 5, 1}, {3});
  EXPECT_THROW_MSG(cross_entropy(logits, targets), ValueError,
                   "cross_entropy: target 5 at index 1 is outside [0, V=5) and is not ignore_index (-100)");
  Tensor negative = Tensor::from_vector(std::vector<int32_t>{0, 1, -1}, {3});
  EXPECT_THROW_MSG(cross_entropy_sum(logits, negative), ValueError,
                   "cross_entropy_sum: target -1 at index 2 is outside [0, V=5)");
  Tensor ok = Tensor::from_vector(std::vector<int32_t>{0, 1, 2}, {3});
  EXPECT_THROW_MSG(cross_entropy(logits, ok, {.label_smoothing = 1.5f}), ValueError,
                   "cross_entropy: label_smoothing must be in [0, 1], got 1.5");
  EXPECT_THROW_MSG(cross_entropy(logits, ok, {.label_smoothing = -0.1f}), ValueError,
                   "label_smoothing must be in [0, 1], got -0.1");
  EXPECT_THROW_MSG(cross_entropy(logits, ok, {.label_smoothing = std::numeric_limits<float>::quiet_NaN()}), ValueError,
                   "label_smoothing must be in [0, 1], got nan");
  EXPECT_THROW_MSG(cross_entropy(Tensor::zeros({5}), ok), ShapeError,
                   "cross_entropy: 'logits' expected (N, V) or (B, T, V), got (5)");
  EXPECT_THROW_MSG(cross_entropy(Tensor(), ok), ShapeError,
                   "cross_entropy: 'logits' expected (N, V) or (B, T, V), got an undefined tensor");
  EXPECT_THROW_MSG(cross_entropy(logits, Tensor::from_vector(std::vector<int32_t>{0, 1}, {2})), ShapeError,
                   "cross_entropy: 'targets' expected (N=3), got (2)");
  EXPECT_THROW_MSG(cross_entropy(Tensor::zeros({2, 3, 5}), ok), ShapeError,
                   "cross_entropy: 'targets' expected (B=2, T=3), got (3)");
  EXPECT_THROW_MSG(cross_entropy(logits, Tensor::zeros({3})), ShapeError,
                   "cross_entropy: 'targets' expected dtype int32, got float32");
  EXPECT_THROW_MSG(cross_entropy(Tensor::zeros({3, 5}, DType::i32), ok), ShapeError,
                   "cross_entropy: 'logits' expected dtype float32, got int32");
}

}  // namespace
}  // namespace attn
