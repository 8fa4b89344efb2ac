// Head reshaping ops: values against index formulas, gradchecks, errors.
#include "attn/ops/heads.h"

#include <gtest/gtest.h>

#include "attn/ops/reduce.h"
#include "test_support.h"

namespace attn {
namespace {

using testing::gradcheck;
using testing::random_tensor;
using testing::tensors_close;

TEST(SplitHeads, MatchesIndexFormula) {
  const int64_t B = 2, T = 3, H = 4, Dh = 5;
  Tensor x = random_tensor({B, T, H * Dh}, 1);
  Tensor y = split_heads(x, H);
  ASSERT_EQ(y.shape(), (Shape{B, H, T, Dh}));
  Tensor expected = Tensor::empty({B, H, T, Dh});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < Dh; ++d)
          expected.f32()[((b * H + h) * T + t) * Dh + d] = x.f32()[(b * T + t) * H * Dh + h * Dh + d];
  EXPECT_TRUE(tensors_close(y, expected, 0, 0));
  // merge_heads is the exact inverse.
  EXPECT_TRUE(tensors_close(merge_heads(y), x, 0, 0));
}

TEST(SplitHeads, PackedPartsAreColumnBands) {
  const int64_t B = 2, T = 3, H = 2, Dh = 3, P = 3;
  Tensor x = random_tensor({B, T, P * H * Dh}, 2);
  auto parts = split_heads_packed(x, H, P);
  ASSERT_EQ(parts.size(), 3u);
  for (int64_t p = 0; p < P; ++p) {
    ASSERT_EQ(parts[p].shape(), (Shape{B, H, T, Dh}));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t t = 0; t < T; ++t)
          for (int64_t d = 0; d < Dh; ++d)
            ASSERT_EQ(parts[p].f32()[((b * H + h) * T + t) * Dh + d],
                      x.f32()[(b * T + t) * P * H * Dh + p * H * Dh + h * Dh + d]);
  }
}

TEST(SplitHeads, Gradcheck) {
  Tensor x = random_tensor({2, 3, 6}, 3).set_requires_grad(true);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return split_heads(in[0], 3); }, {x}));
  Tensor one = random_tensor({1, 1, 4}, 4).set_requires_grad(true);  // batch 1, T = 1
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return split_heads(in[0], 1); }, {one}));
}

TEST(SplitHeads, PackedGradcheckWithSomePartsUnused) {
  Tensor x = random_tensor({2, 2, 12}, 5).set_requires_grad(true);
  // Only parts 0 and 2 reach the output: part 1's band must get zero gradient.
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        auto p = split_heads_packed(in[0], 2, 3);
        return merge_heads(p[2]);
      },
      {x}));
  x.drop_grad();  // gradcheck left its own gradient
  backward(sum(split_heads_packed(x, 2, 3)[0]));
  Tensor g = x.grad();
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t j = 0; j < 12; ++j) EXPECT_EQ(g.f32()[r * 12 + j], j < 4 ? 1.0f : 0.0f) << r << "," << j;
}

TEST(MergeHeads, Gradcheck) {
  Tensor x = random_tensor({2, 3, 2, 2}, 6).set_requires_grad(true);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return merge_heads(in[0]); }, {x}));
}

TEST(SelectHeads, ValuesAndGradientWithDuplicates) {
  const int64_t B = 2, H = 3, T = 2, S = 4;
  Tensor x = random_tensor({B, H, T, S}, 7).set_requires_grad(true);
  Tensor y = select_heads(x, {2, 0, 2});
  ASSERT_EQ(y.shape(), (Shape{B, 3, T, S}));
  const int heads[] = {2, 0, 2};
  for (int64_t b = 0; b < B; ++b)
    for (int i = 0; i < 3; ++i)
      for (int64_t j = 0; j < T * S; ++j)
        ASSERT_EQ(y.f32()[(b * 3 + i) * T * S + j], x.f32()[(b * H + heads[i]) * T * S + j]);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return select_heads(in[0], {2, 0, 2}); }, {x}));
  x.drop_grad();
  backward(sum(select_heads(x, {2, 0, 2})));
  // Head 2 selected twice gets 2, head 0 once 1, head 1 never 0.
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      EXPECT_EQ(x.grad().f32()[(b * H + h) * T * S], h == 2 ? 2.0f : (h == 0 ? 1.0f : 0.0f));
}

TEST(MeanHeads, ValuesAndGradcheck) {
  const int64_t B = 2, H = 3, T = 2, S = 3;
  Tensor x = random_tensor({B, H, T, S}, 8).set_requires_grad(true);
  Tensor y = mean_heads(x);
  ASSERT_EQ(y.shape(), (Shape{B, T, S}));
  Tensor expected = Tensor::empty({B, T, S});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < T * S; ++j) {
      float s = 0;
      for (int64_t h = 0; h < H; ++h) s += x.f32()[(b * H + h) * T * S + j];
      expected.f32()[b * T * S + j] = s / 3.0f;
    }
  EXPECT_TRUE(tensors_close(y, expected, 1e-6f, 1e-6f));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return mean_heads(in[0]); }, {x}));
}

TEST(HeadMatmul, ValuesAndGradcheck) {
  const int64_t B = 2, H = 3, T = 4, M = 3, K = 2;
  Tensor x = random_tensor({B, H, T, M}, 9).set_requires_grad(true);
  Tensor w = random_tensor({H, M, K}, 10).set_requires_grad(true);
  Tensor y = head_matmul(x, w);
  Tensor expected = Tensor::empty({B, H, T, K});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t k = 0; k < K; ++k) {
          double s = 0;
          for (int64_t m = 0; m < M; ++m)
            s += double(x.f32()[((b * H + h) * T + t) * M + m]) * w.f32()[(h * M + m) * K + k];
          expected.f32()[((b * H + h) * T + t) * K + k] = static_cast<float>(s);
        }
  EXPECT_TRUE(tensors_close(y, expected, 1e-5f, 1e-5f));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return head_matmul(in[0], in[1]); }, {x, w}));
  // Large magnitudes, T = 1, batch 1.
  Tensor x1 = random_tensor({1, 2, 1, 2}, 11, -50, 50).set_requires_grad(true);
  Tensor w1 = random_tensor({2, 2, 3}, 12).set_requires_grad(true);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return head_matmul(in[0], in[1]); }, {x1, w1},
                        {.eps = 1e-2, .atol = 2e-2, .rtol = 2e-2}));
}

TEST(Heads, Errors) {
  EXPECT_THROW_MSG(split_heads(Tensor::zeros({2, 3, 10}), 3), ValueError,
                   "split_heads: last dimension 10 is not divisible by heads=3");
  EXPECT_THROW_MSG(split_heads(Tensor::zeros({2, 3, 10}), 0), ValueError, "split_heads: heads must be positive, got 0");
  EXPECT_THROW_MSG(split_heads_packed(Tensor::zeros({2, 3, 12}), 4, 2), ValueError,
                   "not divisible by parts=2 x heads=4");
  EXPECT_THROW_MSG(split_heads(Tensor::zeros({2, 10}), 2), ShapeError,
                   "split_heads: 'x' expected (B, T, N), got (2, 10)");
  EXPECT_THROW_MSG(merge_heads(Tensor::zeros({2, 3, 4})), ShapeError,
                   "merge_heads: 'x' expected (B, H, T, Dh), got (2, 3, 4)");
  EXPECT_THROW_MSG(select_heads(Tensor::zeros({1, 4, 2, 2}), {1, 4}), ValueError,
                   "select_heads: head 4 is out of range [0, H=4)");
  EXPECT_THROW_MSG(select_heads(Tensor::zeros({1, 4, 2, 2}), {-1}), ValueError, "head -1 is out of range");
  EXPECT_THROW_MSG(select_heads(Tensor::zeros({1, 4, 2, 2}), {}), ValueError, "select_heads: no heads selected");
  EXPECT_THROW_MSG(head_matmul(Tensor::zeros({1, 2, 3, 4}), Tensor::zeros({2, 3, 5})), ShapeError,
                   "head_matmul: 'w' expected (H=2, M=4, K), got (2, 3, 5)");
  EXPECT_THROW_MSG(mean_heads(Tensor::zeros({2, 3})), ShapeError, "mean_heads: 'x' expected (B, H, T, S), got (2, 3)");
}

}  // namespace
}  // namespace attn
