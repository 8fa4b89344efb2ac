#include "attn/ops/coverage.h"

#include "attn/autodiff/tape.h"
#include "attn/ops/reduce.h"
#include "attn/parallel.h"
#include "test_support.h"

namespace attn {
namespace {
using testing::gradcheck;
using testing::random_tensor;
using testing::tensors_close;

TEST(Coverage, AddOuterForwardHandComputed) {
  // x (B=1, S=2, A=3), c = [2, -1], w = [1, 0, 0.5]: y = x + c ⊗ w.
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {1, 2, 3});
  Tensor c = Tensor::from_vector(std::vector<float>{2, -1}, {1, 2});
  Tensor w = Tensor::from_vector(std::vector<float>{1, 0, 0.5f}, {3});
  EXPECT_EQ(add_outer(x, c, w).to_vector(), (std::vector<float>{3, 2, 4, 3, 5, 5.5f}));
}

TEST(Coverage, OverlapForwardHandComputed) {
  // Row 0: min(0.5, 0.2) + min(0.3, 0.9) + min(0.2, 0) = 0.5; row 1 (a masked tail of zeros): 0.8.
  Tensor a = Tensor::from_vector(std::vector<float>{0.5f, 0.3f, 0.2f, 0.6f, 0.4f, 0}, {2, 3});
  Tensor c = Tensor::from_vector(std::vector<float>{0.2f, 0.9f, 0, 0.4f, 1.0f, 0}, {2, 3});
  EXPECT_TRUE(
      tensors_close(coverage_overlap(a, c), Tensor::from_vector(std::vector<float>{0.5f, 0.8f}, {2}), 1e-7f, 1e-6f));
}

TEST(Coverage, Gradients) {
  for (int64_t S : {1, 5}) {
    Tensor x = random_tensor({3, S, 4}, 1).set_requires_grad(true);
    Tensor c = random_tensor({3, S}, 2, 0.0f, 2.0f).set_requires_grad(true);
    Tensor w = random_tensor({4}, 3).set_requires_grad(true);
    EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return add_outer(in[0], in[1], in[2]); }, {x, c, w}));
    // Entries of a and c kept at least 0.1 apart: min is smooth there.
    Tensor a = random_tensor({3, S}, 4, 0.0f, 1.0f);
    std::vector<float> cv = a.to_vector();
    for (size_t i = 0; i < cv.size(); ++i) cv[i] += (i % 2 == 0 ? 0.3f : -0.3f);
    Tensor cov = Tensor::from_vector(cv, {3, S}).set_requires_grad(true);
    EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return coverage_overlap(in[0], in[1]); },
                          {a.set_requires_grad(true), cov}));
  }
}

TEST(Coverage, OverlapTiesSplitTheGradient) {
  // torch.minimum's subgradient: a tie gives half to each side.
  Tensor a = Tensor::from_vector(std::vector<float>{0.5f, 0.1f, 0.7f}, {1, 3}).set_requires_grad(true);
  Tensor c = Tensor::from_vector(std::vector<float>{0.5f, 0.4f, 0.2f}, {1, 3}).set_requires_grad(true);
  backward(sum(coverage_overlap(a, c)));
  EXPECT_EQ(a.grad().to_vector(), (std::vector<float>{0.5f, 1.0f, 0.0f}));
  EXPECT_EQ(c.grad().to_vector(), (std::vector<float>{0.5f, 0.0f, 1.0f}));
}

TEST(Coverage, ThreadCountDoesNotChangeResults) {
  Tensor x = random_tensor({4, 33, 16}, 5), c = random_tensor({4, 33}, 6), w = random_tensor({16}, 7);
  const int threads = num_threads();
  set_num_threads(1);
  const std::vector<float> one = add_outer(x, c, w).to_vector(), overlap_one = coverage_overlap(c, c).to_vector();
  set_num_threads(2);
  EXPECT_EQ(add_outer(x, c, w).to_vector(), one);
  EXPECT_EQ(coverage_overlap(c, c).to_vector(), overlap_one);
  set_num_threads(threads);
}

TEST(Coverage, BadShapes) {
  Tensor x = random_tensor({2, 3, 4}, 1), c = random_tensor({2, 3}, 2), w = random_tensor({4}, 3);
  EXPECT_THROW_MSG(add_outer(x, random_tensor({2, 4}, 4), w), ShapeError, "add_outer: 'c' expected (B=2, S=3)");
  EXPECT_THROW_MSG(add_outer(x, c, random_tensor({5}, 4)), ShapeError, "add_outer: 'w' expected (A=4)");
  EXPECT_THROW_MSG(coverage_overlap(c, random_tensor({3, 3}, 4)), ShapeError,
                   "coverage_overlap: 'c' expected (B=2, S=3)");
  EXPECT_THROW_MSG(coverage_overlap(x, x), ShapeError, "coverage_overlap: 'a' expected (B, S)");
}

}  // namespace
}  // namespace attn
