#include "attn/ops/shape_ops.h"

#include "attn/autodiff/tape.h"
#include "test_support.h"

namespace attn {
namespace {
using testing::gradcheck;
using testing::leaf;
using testing::random_tensor;
using testing::tensors_close;

Tensor vec(std::vector<float> values, const Shape& shape) { return Tensor::from_vector(values, shape); }

TEST(Concat, ForwardAlongLastDim) {
  Tensor a = vec({1, 2, 3, 4}, {2, 2});
  Tensor b = vec({5, 6}, {2, 1});
  Tensor c = vec({7, 8, 9, 10, 11, 12}, {2, 3});
  Tensor y = concat({a, b, c});
  EXPECT_EQ(y.shape(), Shape({2, 6}));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{1, 2, 5, 7, 8, 9, 3, 4, 6, 10, 11, 12}));
  // Rank 1, a zero-width part, one part.
  EXPECT_EQ(concat({vec({1}, {1}), Tensor::zeros({0}), vec({2, 3}, {2})}).to_vector(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(concat({a}).to_vector(), a.to_vector());
  // Rank 3.
  Tensor p = random_tensor({2, 3, 4}, 1), q = random_tensor({2, 3, 1}, 2);
  Tensor r = concat({p, q});
  EXPECT_EQ(r.shape(), Shape({2, 3, 5}));
  for (int64_t row = 0; row < 6; ++row) {
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(r.f32()[row * 5 + j], p.f32()[row * 4 + j]);
    EXPECT_EQ(r.f32()[row * 5 + 4], q.f32()[row]);
  }
}

TEST(Split, ForwardAndRoundTrip) {
  Tensor x = vec({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  std::vector<Tensor> parts = split(x, {1, 0, 3});
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].shape(), Shape({2, 1}));
  EXPECT_EQ(parts[1].shape(), Shape({2, 0}));
  EXPECT_EQ(parts[2].shape(), Shape({2, 3}));
  EXPECT_EQ(parts[0].to_vector(), (std::vector<float>{1, 5}));
  EXPECT_EQ(parts[2].to_vector(), (std::vector<float>{2, 3, 4, 6, 7, 8}));
  // concat(split(x)) == x and split(concat(parts)) == parts
  Tensor big = random_tensor({3, 2, 9}, 3);
  EXPECT_EQ(concat(split(big, {4, 2, 3})).to_vector(), big.to_vector());
  std::vector<Tensor> pieces = {random_tensor({3, 2, 2}, 4), random_tensor({3, 2, 5}, 5)};
  std::vector<Tensor> back = split(concat(pieces), {2, 5});
  for (size_t i = 0; i < pieces.size(); ++i) {
    EXPECT_EQ(back[i].shape(), pieces[i].shape());
    EXPECT_EQ(back[i].to_vector(), pieces[i].to_vector());
  }
}

TEST(Concat, Gradcheck) {
  auto fn = [](const std::vector<Tensor>& in) { return concat(in); };
  EXPECT_TRUE(gradcheck(fn, {leaf({2, 3, 2}, 1), leaf({2, 3, 1}, 2), leaf({2, 3, 4}, 3)}));
  EXPECT_TRUE(gradcheck(fn, {leaf({3}, 4), leaf({1}, 5)}));
  // Only the second part requires grad.
  EXPECT_TRUE(gradcheck(fn, {random_tensor({2, 2}, 6), leaf({2, 3}, 7)}));
  // The same tensor twice: both bands flow back into it.
  auto twice = [](const std::vector<Tensor>& in) { return concat({in[0], in[1], in[0]}); };
  EXPECT_TRUE(gradcheck(twice, {leaf({2, 2}, 8), leaf({2, 1}, 9)}));
}

TEST(Split, GradcheckAnySubsetOfOutputs) {
  // One output used: the other bands of dx stay zero.
  auto middle = [](const std::vector<Tensor>& in) { return split(in[0], {2, 3, 1})[1]; };
  EXPECT_TRUE(gradcheck(middle, {leaf({2, 6}, 1)}));
  // Two outputs used, out of order.
  auto two = [](const std::vector<Tensor>& in) {
    std::vector<Tensor> p = split(in[0], {2, 3, 1});
    return concat({p[2], p[0]});
  };
  EXPECT_TRUE(gradcheck(two, {leaf({2, 2, 6}, 2)}));
  auto all = [](const std::vector<Tensor>& in) { return concat(split(in[0], {1, 1, 1})); };
  EXPECT_TRUE(gradcheck(all, {leaf({3}, 3)}));
}

TEST(Split, UnusedOutputsLeaveTheirBandZero) {
  Tensor x = leaf({2, 5}, 1);
  std::vector<Tensor> p = split(x, {2, 3});
  backward(p[1], Tensor::full({2, 3}, 1.0f));
  EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{0, 0, 1, 1, 1, 0, 0, 1, 1, 1}));
}

TEST(Reshape, ForwardGradcheckAndErrors) {
  Tensor x = vec({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = reshape(x, Shape({3, 1, 2}));
  EXPECT_EQ(y.shape(), Shape({3, 1, 2}));
  EXPECT_EQ(y.to_vector(), x.to_vector());
  EXPECT_EQ(reshape(vec({7}, {1, 1}), Shape{}).shape(), Shape{});
  EXPECT_EQ(reshape(Tensor::zeros({0, 3}), Shape({3, 0})).shape(), Shape({3, 0}));
  auto fn = [](const std::vector<Tensor>& in) { return reshape(in[0], Shape({4, 3})); };
  EXPECT_TRUE(gradcheck(fn, {leaf({2, 3, 2}, 3)}));
  EXPECT_THROW_MSG(reshape(x, Shape({4, 2})), ShapeError,
                   "reshape: 'shape' (4, 2) holds 8 elements, 'x' (2, 3) holds 6");
  EXPECT_THROW_MSG(reshape(Tensor::zeros({2}, DType::i32), Shape({2})), ShapeError,
                   "reshape: 'x' expected dtype float32, got int32");
}

TEST(StackRows, ForwardAndGradcheck) {
  Tensor a = vec({1, 2, 3, 4}, {2, 2}), b = vec({5, 6, 7, 8}, {2, 2}), c = vec({9, 10, 11, 12}, {2, 2});
  Tensor y = stack_rows({a, b, c});
  EXPECT_EQ(y.shape(), Shape({3, 2, 2}));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(stack_rows({Tensor::scalar(1), Tensor::scalar(2)}).shape(), Shape({2}));
  EXPECT_EQ(stack_rows({a}).shape(), Shape({1, 2, 2}));
  auto fn = [](const std::vector<Tensor>& in) { return stack_rows(in); };
  EXPECT_TRUE(gradcheck(fn, {leaf({2, 3}, 1), leaf({2, 3}, 2), random_tensor({2, 3}, 3), leaf({2, 3}, 4)}));
  EXPECT_TRUE(gradcheck(fn, {leaf({1, 1}, 5)}));
  auto twice = [](const std::vector<Tensor>& in) { return stack_rows({in[0], in[0]}); };
  EXPECT_TRUE(gradcheck(twice, {leaf({3}, 6)}));
}

TEST(TransposeLast2, ForwardMatchesNaive) {
  // 37 x 45 crosses the 32 x 32 tiles unevenly.
  for (const Shape& shape : {Shape{2, 3}, Shape{1, 1}, Shape{3, 37, 45}, Shape{2, 2, 1, 70}}) {
    Tensor x = random_tensor(shape, 1);
    Tensor y = transpose_last2(x);
    const int64_t m = shape[-2], n = shape[-1], batch = x.numel() / (m * n);
    std::vector<int64_t> dims = shape.dims();
    std::swap(dims[dims.size() - 1], dims[dims.size() - 2]);
    ASSERT_EQ(y.shape(), Shape(dims));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          ASSERT_EQ(y.f32()[(b * n + j) * m + i], x.f32()[(b * m + i) * n + j]) << shape.str();
  }
  EXPECT_EQ(transpose_last2(vec({1, 2, 3, 4, 5, 6}, {2, 3})).to_vector(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(TransposeLast2, Gradcheck) {
  auto fn = [](const std::vector<Tensor>& in) { return transpose_last2(in[0]); };
  EXPECT_TRUE(gradcheck(fn, {leaf({2, 3}, 1)}));
  EXPECT_TRUE(gradcheck(fn, {leaf({2, 3, 4}, 2)}));
  EXPECT_TRUE(gradcheck(fn, {leaf({1, 5}, 3)}));
  // Backward on tiles: dx = dyᵀ exactly.
  Tensor x = leaf({2, 40, 33}, 4);
  Tensor dy = random_tensor({2, 33, 40}, 5);
  backward(transpose_last2(x), dy);
  EXPECT_EQ(x.grad().to_vector(), transpose_last2(dy).to_vector());
}

TEST(PairFrames, ForwardEvenAndOddLengths) {
  // S = 3, B = 2, E = 1: pairs (t0, t1) and (t2, 0).
  Tensor y = pair_frames(vec({1, 2, 3, 4, 5, 6}, {3, 2, 1}));
  EXPECT_EQ(y.shape(), Shape({2, 2, 2}));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{1, 3, 2, 4, 5, 0, 6, 0}));
  // S = 4, B = 1, E = 2.
  Tensor z = pair_frames(vec({1, 2, 3, 4, 5, 6, 7, 8}, {4, 1, 2}));
  EXPECT_EQ(z.shape(), Shape({2, 1, 4}));
  EXPECT_EQ(z.to_vector(), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(pair_frames(vec({7}, {1, 1, 1})).to_vector(), (std::vector<float>{7, 0}));
}

TEST(PairFrames, Gradcheck) {
  auto fn = [](const std::vector<Tensor>& in) { return pair_frames(in[0]); };
  EXPECT_TRUE(gradcheck(fn, {leaf({4, 2, 3}, 1)}));
  EXPECT_TRUE(gradcheck(fn, {leaf({5, 3, 2}, 2)}));  // odd S: the pad half takes no gradient
  EXPECT_TRUE(gradcheck(fn, {leaf({1, 1, 4}, 3)}));
  // The backward is the forward's inverse on the real bands: dx = dy rearranged exactly.
  Tensor x = leaf({5, 2, 3}, 4);
  Tensor dy = random_tensor({3, 2, 6}, 5);
  backward(pair_frames(x), dy);
  for (int64_t t = 0; t < 5; ++t)
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t e = 0; e < 3; ++e)
        ASSERT_EQ(x.grad().f32()[(t * 2 + b) * 3 + e], dy.f32()[((t / 2) * 2 + b) * 6 + (t % 2) * 3 + e]);
}

TEST(ShapeOps, Errors) {
  EXPECT_THROW_MSG(concat({}), ValueError, "concat: expected at least one part, got none");
  EXPECT_THROW_MSG(concat({Tensor::zeros({2, 3, 4}), Tensor::zeros({2, 4, 5})}), ShapeError,
                   "concat: 'parts[1]' expected (2, 3, N) (the leading dimensions of 'parts[0]'), got (2, 4, 5)");
  EXPECT_THROW_MSG(concat({Tensor::zeros({2, 3}), Tensor::zeros({3})}), ShapeError,
                   "concat: 'parts[1]' expected (2, N) (the leading dimensions of 'parts[0]'), got (3)");
  EXPECT_THROW_MSG(concat({Tensor::scalar(1)}), ShapeError, "concat: 'parts[0]' expected (..., N), got ()");
  EXPECT_THROW_MSG(concat({Tensor::zeros({2}), Tensor::zeros({2}, DType::i32)}), ShapeError,
                   "concat: 'parts[1]' expected dtype float32, got int32");
  EXPECT_THROW_MSG(split(Tensor::zeros({2, 8}), {3, 4}), ShapeError,
                   "split: 'x' expected (2, N=7) (the sum of sizes), got (2, 8)");
  EXPECT_THROW_MSG(split(Tensor::zeros({2, 8}), {9, -1}), ValueError, "split: sizes[1] is -1, must be >= 0");
  EXPECT_THROW_MSG(split(Tensor::scalar(1), {1}), ShapeError, "split: 'x' expected (..., N), got ()");
  EXPECT_THROW_MSG(stack_rows({}), ValueError, "stack_rows: expected at least one part, got none");
  EXPECT_THROW_MSG(stack_rows({Tensor::zeros({4, 8}), Tensor::zeros({4, 8}), Tensor::zeros({4, 9})}), ShapeError,
                   "stack_rows: 'parts[2]' expected (4, 8) (the shape of 'parts[0]'), got (4, 9)");
  EXPECT_THROW_MSG(stack_rows({Tensor::zeros({4}), Tensor()}), ShapeError,
                   "stack_rows: 'parts[1]' expected (4), got an undefined tensor");
  EXPECT_THROW_MSG(transpose_last2(Tensor::zeros({5})), ShapeError,
                   "transpose_last2: 'x' expected (..., M, N), got (5)");
  EXPECT_THROW_MSG(transpose_last2(Tensor::zeros({2, 2}, DType::i32)), ShapeError,
                   "transpose_last2: 'x' expected dtype float32, got int32");
  EXPECT_THROW_MSG(pair_frames(Tensor::zeros({4, 3})), ShapeError, "pair_frames: 'x' expected (S, B, E), got (4, 3)");
  EXPECT_THROW_MSG(pair_frames(Tensor::zeros({2, 2, 2}, DType::i32)), ShapeError,
                   "pair_frames: 'x' expected dtype float32, got int32");
}

}  // namespace
}  // namespace attn
