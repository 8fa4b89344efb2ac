#include "attn/ops/embedding.h"

#include "attn/autodiff/tape.h"
#include "attn/parallel.h"
#include "test_support.h"

namespace attn {
namespace {
using testing::gradcheck;
using testing::random_ids;
using testing::random_tensor;
using testing::tensors_close;

Tensor ids_of(std::vector<int32_t> values, const Shape& shape) { return Tensor::from_vector(values, shape); }

TEST(Embedding, ForwardCopiesRows) {
  // weight row v = [10 v, 10 v + 1, 10 v + 2]
  Tensor w = Tensor::from_vector(std::vector<float>{0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32}, {4, 3});
  Tensor y = embedding(ids_of({3, 0, 1, 3}, {2, 2}), w);
  EXPECT_EQ(y.shape(), Shape({2, 2, 3}));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{30, 31, 32, 0, 1, 2, 10, 11, 12, 30, 31, 32}));
  // A rank-0 id gives (D); rank 1 gives (n, D).
  Tensor scalar_id = ids_of({2}, Shape{});
  EXPECT_EQ(embedding(scalar_id, w).shape(), Shape({3}));
  EXPECT_EQ(embedding(scalar_id, w).to_vector(), (std::vector<float>{20, 21, 22}));
  EXPECT_EQ(embedding(ids_of({1, 2}, {2}), w).shape(), Shape({2, 3}));
  // No ids: an empty output.
  EXPECT_EQ(embedding(Tensor::zeros({2, 0}, DType::i32), w).shape(), Shape({2, 0, 3}));
}

TEST(Embedding, PaddingRowIsReturnedButGetsNoGradient) {
  Tensor w = random_tensor({5, 4}, 1).set_requires_grad(true);
  Tensor ids = ids_of({0, 2, 2, 4, 0, 1}, {2, 3});
  Tensor y = embedding(ids, w, {.padding_idx = 0});
  // Forward still reads the row (initialise it to zeros, as torch does).
  for (int j = 0; j < 4; ++j) EXPECT_EQ(y.f32()[j], w.f32()[j]);
  backward(y, random_tensor(y.shape(), 2));
  const float* g = w.grad().f32();
  for (int j = 0; j < 4; ++j) EXPECT_EQ(g[j], 0.0f) << "padding row, column " << j;
  // Row 3 is never used: zero. Rows 1, 2 and 4 are not.
  for (int j = 0; j < 4; ++j) EXPECT_EQ(g[3 * 4 + j], 0.0f);
  float used = 0.0f;
  for (int j = 0; j < 4; ++j) used += std::abs(g[1 * 4 + j]) + std::abs(g[2 * 4 + j]) + std::abs(g[4 * 4 + j]);
  EXPECT_GT(used, 0.0f);
}

TEST(Embedding, RepeatedIdsAccumulate) {
  Tensor w = Tensor::zeros({3, 2}).set_requires_grad(true);
  Tensor ids = ids_of({1, 1, 2, 1}, {4});
  Tensor dy = Tensor::from_vector(std::vector<float>{1, 2, 10, 20, 100, 200, 1000, 2000}, {4, 2});
  backward(embedding(ids, w), dy);
  EXPECT_EQ(w.grad().to_vector(), (std::vector<float>{0, 0, 1011, 2022, 100, 200}));
  // A second backward adds to the gradient that is there.
  backward(embedding(ids, w), dy);
  EXPECT_EQ(w.grad().to_vector(), (std::vector<float>{0, 0, 2022, 4044, 200, 400}));
}

TEST(Embedding, Gradcheck) {
  auto fn = [](const std::vector<Tensor>& in) { return embedding(ids_of({1, 3, 1, 0, 3, 3}, {2, 3}), in[0]); };
  EXPECT_TRUE(gradcheck(fn, {random_tensor({4, 3}, 1).set_requires_grad(true)}));
  auto one = [](const std::vector<Tensor>& in) { return embedding(ids_of({0}, {1}), in[0]); };  // V = 1, D = 1
  EXPECT_TRUE(gradcheck(one, {random_tensor({1, 1}, 2).set_requires_grad(true)}));
  auto large = [](const std::vector<Tensor>& in) { return embedding(ids_of({2, 0}, {2}), in[0]); };
  EXPECT_TRUE(gradcheck(large, {random_tensor({3, 2}, 3, -1000.0f, 1000.0f).set_requires_grad(true)}));
}

TEST(Embedding, IdsAreSavedByValueForBackward) {
  Tensor w = Tensor::zeros({3, 1}).set_requires_grad(true);
  Tensor ids = ids_of({2}, {1});
  Tensor y = embedding(ids, w);
  ids.i32()[0] = 0;  // the caller refills its batch before backward
  backward(y, Tensor::full({1, 1}, 1.0f));
  EXPECT_EQ(w.grad().to_vector(), (std::vector<float>{0, 0, 1}));
}

TEST(Embedding, ErrorsNameTheValueOrShape) {
  Tensor w = Tensor::zeros({5, 4});
  EXPECT_THROW_MSG(embedding(ids_of({1, 2, 3, 7}, {2, 2}), w), ValueError,
                   "embedding: id 7 at position (1, 1) is outside the vocabulary [0, V=5)");
  EXPECT_THROW_MSG(embedding(ids_of({-1, 2}, {2}), w), ValueError,
                   "embedding: id -1 at position (0) is outside the vocabulary [0, V=5)");
  EXPECT_THROW_MSG(embedding(ids_of({5}, {1}), w), ValueError, "id 5 at position (0)");
  EXPECT_THROW_MSG(embedding(ids_of({1}, {1}), w, {.padding_idx = 5}), ValueError,
                   "embedding: padding_idx 5 is outside [0, V=5) (use -1 for none)");
  EXPECT_THROW_MSG(embedding(ids_of({1}, {1}), w, {.padding_idx = -2}), ValueError, "padding_idx -2 is outside");
  EXPECT_THROW_MSG(embedding(Tensor::zeros({2}), w), ShapeError, "embedding: 'ids' expected dtype int32, got float32");
  EXPECT_THROW_MSG(embedding(ids_of({1}, {1}), Tensor::zeros({5})), ShapeError,
                   "embedding: 'weight' expected (V, D), got (5)");
  EXPECT_THROW_MSG(embedding(ids_of({1}, {1}), Tensor::zeros({5, 4}, DType::i32)), ShapeError,
                   "embedding: 'weight' expected dtype float32, got int32");
  EXPECT_THROW_MSG(embedding(Tensor(), w), ShapeError, "embedding: 'ids' expected an int32 tensor");
}

// Forward + backward with `threads` threads, on a D wide enough to be split.
std::pair<std::vector<float>, std::vector<float>> embedding_run(int threads) {
  set_num_threads(threads);
  Tensor w = random_tensor({50, 600}, 1).set_requires_grad(true);
  Tensor ids = random_ids({4, 75}, 50, 2);
  Tensor y = embedding(ids, w, {.padding_idx = 7});
  backward(y, random_tensor(y.shape(), 3));
  return {y.to_vector(), w.grad().to_vector()};
}

TEST(Embedding, BackwardIsBitIdenticalAcrossThreadCountsAndSumsInPositionOrder) {
  const int before = num_threads();
  const auto one = embedding_run(1);
  const auto two = embedding_run(2);
  set_num_threads(before);
  EXPECT_EQ(one.first, two.first);
  EXPECT_EQ(one.second, two.second);
  // The serial reference: float sums in position order, skipping the padding id.
  Tensor ids = random_ids({4, 75}, 50, 2);
  Tensor dy = random_tensor({4, 75, 600}, 3);
  std::vector<float> expect(50 * 600, 0.0f);
  for (int64_t p = 0; p < 300; ++p) {
    const int32_t id = ids.i32()[p];
    if (id == 7) continue;
    for (int64_t j = 0; j < 600; ++j) expect[static_cast<size_t>(id * 600 + j)] += dy.f32()[p * 600 + j];
  }
  EXPECT_EQ(two.second, expect);
}

}  // namespace
}  // namespace attn
