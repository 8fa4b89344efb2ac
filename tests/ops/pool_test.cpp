#include "attn/ops/pool.h"

#include <cmath>
#include <limits>

#include "attn/autodiff/tape.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/reduce.h"
#include "attn/parallel.h"
#include "attn/random.h"
#include "test_support.h"

namespace attn {
namespace {
using testing::gradcheck;
using testing::random_tensor;
using testing::tensors_close;

Tensor lens(std::vector<int32_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector(v, {n});
}

// Independent reference: plain loops in double.
Tensor reference(const Tensor& x, const std::vector<int32_t>& lengths, bool max) {
  const int64_t B = x.dim(0), S = x.dim(1), E = x.dim(2);
  std::vector<float> y(static_cast<size_t>(B * E), 0.0f);
  const auto v = x.to_vector();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t e = 0; e < E; ++e) {
      const int L = lengths[static_cast<size_t>(b)];
      if (L == 0) continue;
      double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
      for (int s = 0; s < L; ++s) {
        const double xv = v[static_cast<size_t>((b * S + s) * E + e)];
        acc = max ? std::max(acc, xv) : acc + xv;
      }
      y[static_cast<size_t>(b * E + e)] = static_cast<float>(max ? acc : acc / L);
    }
  return Tensor::from_vector(y, {B, E});
}

TEST(Pool, ForwardHandComputed) {
  // x (B=2, S=3, E=2); row 1 has length 2, so its third position (value 100) is ignored.
  Tensor x = Tensor::from_vector(std::vector<float>{1, -4, 3, 2, -5, 0,  //
                                                    7, 1, -2, 6, 100, 100},
                                 {2, 3, 2});
  Tensor l = lens({3, 2});
  EXPECT_EQ(masked_max_time(x, l).to_vector(), (std::vector<float>{3, 2, 7, 6}));
  EXPECT_EQ(masked_mean_time(x, l).to_vector(), (std::vector<float>{-1.0f / 3.0f, -2.0f / 3.0f, 2.5f, 3.5f}));
  MaxTimeResult r = masked_max_time_with_indices(x, l);
  EXPECT_EQ(r.argmax.to_vector_i32(), (std::vector<int32_t>{1, 1, 0, 1}));
}

TEST(Pool, MatchesReferenceOnRaggedBatches) {
  const std::vector<int32_t> lengths = {5, 1, 3, 0, 4};
  Tensor x = random_tensor({5, 5, 7}, 11, -3.0f, 3.0f);
  EXPECT_TRUE(tensors_close(masked_max_time(x, lens(lengths)), reference(x, lengths, true), 0.0f, 0.0f));
  EXPECT_TRUE(tensors_close(masked_mean_time(x, lens(lengths)), reference(x, lengths, false), 1e-6f, 1e-6f));
}

TEST(Pool, FullyMaskedRowIsZeroWithZeroGradient) {
  Tensor x = random_tensor({2, 3, 4}, 3).set_requires_grad(true);
  Tensor l = lens({0, 2});
  Tensor y = add(masked_max_time(x, l), masked_mean_time(x, l));
  for (int e = 0; e < 4; ++e) EXPECT_EQ(y.to_vector()[static_cast<size_t>(e)], 0.0f);
  backward(sum(y));
  const auto g = x.grad().to_vector();
  for (int i = 0; i < 12; ++i) EXPECT_EQ(g[static_cast<size_t>(i)], 0.0f) << "row 0, flat " << i;
  for (int i = 12; i < 24; ++i) EXPECT_TRUE(std::isfinite(g[static_cast<size_t>(i)]));
}

TEST(Pool, MaxGradientGoesToFirstArgmaxOnTies) {
  // Equal values at s = 0 and s = 2: the gradient goes to s = 0 only (as torch.max).
  Tensor x = Tensor::from_vector(std::vector<float>{5, 1, 5}, {1, 3, 1}).set_requires_grad(true);
  backward(sum(masked_max_time(x, lens({3}))));
  EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{1, 0, 0}));
}

TEST(Pool, Gradcheck) {
  auto max_fn = [](std::vector<int32_t> l) {
    return [l](const std::vector<Tensor>& in) { return masked_max_time(in[0], lens(l)); };
  };
  auto mean_fn = [](std::vector<int32_t> l) {
    return [l](const std::vector<Tensor>& in) { return masked_mean_time(in[0], lens(l)); };
  };
  // Max: values well separated (gaps >> eps) so finite differences do not cross a tie.
  auto separated = [](const Shape& shape, uint64_t seed) {
    Tensor t = random_tensor(shape, seed, 0.0f, 1.0f);
    const int64_t n = t.numel();
    std::vector<float> v(static_cast<size_t>(n));
    Rng rng(seed);
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
    for (int64_t i = n - 1; i > 0; --i)
      std::swap(v[static_cast<size_t>(i)], v[rng.below(static_cast<uint64_t>(i) + 1)]);
    for (auto& x : v) x = 0.2f * x - 3.0f;  // gaps 0.2 > 2 eps
    return Tensor::from_vector(v, shape).set_requires_grad(true);
  };
  for (const auto& l : std::vector<std::vector<int32_t>>{{4, 1, 3}, {4, 4, 4}, {0, 2, 1}}) {
    EXPECT_TRUE(gradcheck(max_fn(l), {separated({3, 4, 5}, 7)}));
    EXPECT_TRUE(gradcheck(mean_fn(l), {random_tensor({3, 4, 5}, 8).set_requires_grad(true)}));
  }
  // S = 1, batch 1, length 1.
  EXPECT_TRUE(gradcheck(max_fn({1}), {random_tensor({1, 1, 3}, 9).set_requires_grad(true)}));
  EXPECT_TRUE(gradcheck(mean_fn({1}), {random_tensor({1, 1, 3}, 10).set_requires_grad(true)}));
  // Large magnitudes.
  testing::GradcheckOptions big{.eps = 1.0, .atol = 1e-1, .rtol = 1e-3};
  Tensor large = separated({2, 3, 2}, 12);
  std::vector<float> v = large.to_vector();
  for (auto& x : v) x *= 1000.0f;
  EXPECT_TRUE(gradcheck(max_fn({3, 2}), {Tensor::from_vector(v, {2, 3, 2}).set_requires_grad(true)}, big));
  EXPECT_TRUE(gradcheck(mean_fn({3, 2}), {Tensor::from_vector(v, {2, 3, 2}).set_requires_grad(true)}, big));
}

TEST(Pool, ResultsDoNotDependOnThreadCount) {
  Tensor x = random_tensor({37, 9, 33}, 21);
  std::vector<int32_t> l(37);
  for (int i = 0; i < 37; ++i) l[static_cast<size_t>(i)] = i % 10;
  const int threads = num_threads();
  set_num_threads(1);
  Tensor a1 = masked_mean_time(x, lens(l)), m1 = masked_max_time(x, lens(l));
  set_num_threads(2);
  Tensor a2 = masked_mean_time(x, lens(l)), m2 = masked_max_time(x, lens(l));
  set_num_threads(threads);
  EXPECT_TRUE(tensors_close(a2, a1, 0.0f, 0.0f));
  EXPECT_TRUE(tensors_close(m2, m1, 0.0f, 0.0f));
  EXPECT_TRUE(tensors_close(a1, reference(x, l, false), 1e-6f, 1e-5f));
  EXPECT_TRUE(tensors_close(m1, reference(x, l, true), 0.0f, 0.0f));
}

TEST(Pool, ErrorsNameOpArgumentAndShapes) {
  Tensor x = Tensor::zeros({4, 7, 8});
  EXPECT_THROW_MSG(masked_max_time(x, lens({1, 2, 3})), ShapeError,
                   "masked_max_time: 'lengths' expected (B=4), got (3)");
  EXPECT_THROW_MSG(masked_mean_time(Tensor::zeros({4, 7}), lens({1, 2, 3, 4})), ShapeError,
                   "masked_mean_time: 'x' expected (B, S, E), got (4, 7)");
  EXPECT_THROW_MSG(masked_mean_time(x, Tensor::zeros({4})), ShapeError,
                   "masked_mean_time: 'lengths' expected dtype int32, got float32");
  EXPECT_THROW_MSG(masked_max_time(Tensor::zeros({4, 7, 8}, DType::i32), lens({1, 2, 3, 4})), ShapeError,
                   "masked_max_time: 'x' expected dtype float32, got int32");
  EXPECT_THROW_MSG(masked_max_time(x, lens({1, 8, 3, 4})), ValueError,
                   "masked_max_time: 'lengths' value 8 at batch index 1 is out of range [0, S=7]");
  EXPECT_THROW_MSG(masked_mean_time(x, lens({1, 2, -1, 4})), ValueError,
                   "masked_mean_time: 'lengths' value -1 at batch index 2 is out of range [0, S=7]");
  EXPECT_THROW_MSG(masked_max_time(Tensor(), lens({1})), ShapeError,
                   "masked_max_time: 'x' expected (B, S, E), got an undefined tensor");
}

}  // namespace
}  // namespace attn
