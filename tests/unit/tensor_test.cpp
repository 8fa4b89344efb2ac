#include "attn/tensor.h"

#include <cstdint>

#include "attn/autodiff/tape.h"
#include "attn/checked_size.h"
#include "attn/ops/elementwise.h"
#include "attn/parallel.h"
#include "attn/random.h"
#include "test_support.h"

namespace attn {
namespace {

TEST(Tensor, ShapeAndData) {
  Tensor t = Tensor::zeros({2, 3, 4});
  EXPECT_EQ(t.rank(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.dim(-1), 4);
  EXPECT_EQ(t.shape().str(), "(2, 3, 4)");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.f32()) % 64, 0u) << "storage must be 64-byte aligned";
  Tensor ids = Tensor::from_vector(std::vector<int32_t>{1, 2, 3}, {3});
  EXPECT_EQ(ids.dtype(), DType::i32);
  EXPECT_THROW_MSG(ids.f32(), ValueError, "expected float32 data, tensor is int32");
  EXPECT_THROW_MSG(Tensor::from_vector(std::vector<float>{1, 2}, {3}), ShapeError, "2 values cannot fill shape (3)");
  EXPECT_THROW_MSG(Tensor::zeros({2, -1}), ValueError, "negative dimension");
}

// Issue 18: numel multiplied without a check, so (2^31, 2^31) float32 needed 2^64 bytes,
// wrapped to 0 and the first kernel wrote past a 64-byte buffer; (2^32)^3 wrapped to 0
// elements and summed to 0.
TEST(Shape, SizeProductsAreChecked) {
  const int64_t two31 = int64_t{1} << 31, two32 = int64_t{1} << 32;
  EXPECT_THROW_MSG(Tensor::zeros({two31, two31}), ValueError, "shape (2147483648, 2147483648): too many elements");
  EXPECT_THROW_MSG(Tensor::zeros({two32, two32, two32}), ValueError, "shape (4294967296, 4294967296, 4294967296)");
  EXPECT_THROW_MSG(Shape({two32, two32, two32}).numel(), ValueError, "too many elements");
  // A zero size does not hide an overflowing product of the others (rows() would wrap).
  EXPECT_THROW_MSG(Tensor::zeros({0, two32, two32}), ValueError, "too many elements");
  EXPECT_THROW_MSG(Shape({two32, two32, 1}).rows(), ValueError, "too many elements");
  EXPECT_THROW_MSG(Tensor::zeros({3, -2}), ValueError, "shape (3, -2): negative dimension -2");
  EXPECT_EQ(Shape({kMaxElements / 2, 2}).numel(), kMaxElements);
  EXPECT_EQ(Shape({two32, 0}).numel(), 0);
  EXPECT_EQ(checked_size_product(two31, 4, "x"), two31 * 4);
  EXPECT_THROW_MSG(checked_size_product(two32, two32, "beam: batch x width"), ValueError,
                   "beam: batch x width: 4294967296 x 4294967296 elements");
}

TEST(Tensor, ViewsShareStorage) {
  Tensor t = Tensor::from_vector(std::vector<float>{0, 1, 2, 3, 4, 5}, {3, 2});
  Tensor rows = t.slice(1, 3);
  EXPECT_EQ(rows.shape(), (Shape{2, 2}));
  EXPECT_EQ(rows.to_vector(), (std::vector<float>{2, 3, 4, 5}));
  rows.f32()[0] = 42.0f;
  EXPECT_EQ(t.to_vector()[2], 42.0f) << "a slice must not copy";
  EXPECT_EQ(t.select(2).to_vector(), (std::vector<float>{4, 5}));
  EXPECT_EQ(t.reshape({6}).to_vector()[5], 5.0f);
  EXPECT_THROW_MSG(t.slice(2, 4), ValueError, "slice: rows [2, 4) out of range for a first dimension of 3");
  EXPECT_THROW_MSG(t.select(3), ValueError, "select: index 3 out of range");
  EXPECT_THROW_MSG(t.reshape({4}), ShapeError, "reshape: cannot view (3, 2) as (4)");
}

TEST(Tensor, ViewGradientsFlowBack) {
  Tensor x = testing::random_tensor({4, 3}, 1).set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) {
        return add(in[0].slice(1, 3), in[0].reshape({2, 6}).select(0).reshape({2, 3}));
      },
      {x}));
}

TEST(ShapeContract, BindsNamesAcrossArguments) {
  ShapeContract c("additive_attention");
  c.check("query", Tensor::zeros({4, 256}), {"B", "D"});
  c.bind("E", 256);
  EXPECT_THROW_MSG(c.check("keys", Tensor::zeros({4, 7, 128}), {"B", "S", "E"}), ShapeError,
                   "additive_attention: 'keys' expected (B=4, S, E=256), got (4, 7, 128)");
  c.check("keys", Tensor::zeros({4, 7, 256}), {"B", "S", "E"});
  EXPECT_EQ(c["S"], 7);
  EXPECT_THROW_MSG(c.check("mask", Tensor::zeros({4, 7}), {"B", "S"}, DType::i32), ShapeError,
                   "'mask' expected dtype int32, got float32");
  EXPECT_THROW_MSG(c.check("w", Tensor::zeros({3, 3}), {"N", "N", "2"}), ShapeError,
                   "'w' expected (N, N, 2), got (3, 3)");
  EXPECT_THROW_MSG(c.check("sq", Tensor::zeros({3, 4}), {"M", "M"}), ShapeError, "'sq' expected (M, M), got (3, 4)");
  EXPECT_FALSE(c.bound("M")) << "a failed check must not bind names";
}

TEST(Autodiff, GradientsAccumulateUntilZeroed) {
  Tensor x = Tensor::from_vector(std::vector<float>{1.0f, 2.0f}, {2}).set_requires_grad(true);
  for (int i = 0; i < 2; ++i) backward(mul(x, x), Tensor::full({2}, 1.0f));
  EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{4.0f, 8.0f}));  // 2 × 2x
  x.zero_grad();
  EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{0.0f, 0.0f}));
}

TEST(Autodiff, NoGradRecordsNothing) {
  Tensor x = Tensor::full({3}, 1.0f).set_requires_grad(true);
  autodiff::tape().clear();
  {
    autodiff::NoGradGuard guard;
    Tensor y = tanh(x);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(autodiff::tape().size(), 0u);
  }
  Tensor y = tanh(x);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_EQ(autodiff::tape().size(), 1u);
  autodiff::tape().clear();
}

TEST(Autodiff, BackwardErrors) {
  EXPECT_THROW_MSG(backward(Tensor::zeros({2})), ValueError, "does not require grad");
  Tensor x = Tensor::full({3}, 1.0f).set_requires_grad(true);
  EXPECT_THROW_MSG(backward(tanh(x)), ShapeError, "backward: expected a scalar loss, got (3)");
  autodiff::tape().clear();
}

TEST(Autodiff, StepsReuseBuffersAndTape) {
  Tensor x = testing::random_tensor({64, 64}, 3).set_requires_grad(true);
  auto step = [&] {
    Tensor y = tanh(mul(x, sigmoid(x)));
    backward(y, Tensor::full(y.shape(), 1.0f));
  };
  step();
  step();
  const AllocatorStats before = allocator_stats();
  const size_t arena = autodiff::tape().arena_bytes();
  for (int i = 0; i < 10; ++i) step();
  const AllocatorStats after = allocator_stats();
  EXPECT_EQ(after.fresh_allocations, before.fresh_allocations) << "a warmed-up step must not allocate new buffers";
  EXPECT_GT(after.reused, before.reused);
  EXPECT_EQ(autodiff::tape().arena_bytes(), arena);
}

TEST(Rng, DeterministicStreams) {
  Rng a(7), b(7), c(8);
  EXPECT_EQ(a.next(), b.next());
  EXPECT_NE(a.next(), c.next());
  double sum = 0, sq = 0;
  Rng n(1);
  for (int i = 0; i < 20000; ++i) {
    float v = n.normal();
    sum += v;
    sq += v * v;
  }
  EXPECT_NEAR(sum / 20000, 0.0, 0.03);
  EXPECT_NEAR(sq / 20000, 1.0, 0.05);
  EXPECT_EQ(uniform_at(3, 10), uniform_at(3, 10));
}

TEST(Parallel, CoversRangeOnce) {
  set_num_threads(2);
  std::vector<int> hits(1000, 0);
  parallel_for(0, 1000, 10, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) hits[i]++;
  });
  for (int h : hits) ASSERT_EQ(h, 1);
  EXPECT_EQ(num_threads(), 2);
}

}  // namespace
}  // namespace attn
