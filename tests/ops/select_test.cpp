// where_rows, transpose_01, gather_rows: forward values against hand-computed results,
// gradchecks of every differentiable input, error paths.
#include "attn/ops/select.h"

#include "attn/autodiff/tape.h"
#include "test_support.h"

namespace attn {
namespace {

using testing::gradcheck;
using testing::random_tensor;
using testing::tensors_close;

Tensor floats(const std::vector<float>& v, const Shape& s) { return Tensor::from_vector(v, s); }
Tensor ints(const std::vector<int32_t>& v) { return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}); }

TEST(WhereRows, ForwardPicksRows) {
  const Tensor a = floats({1, 2, 3, 4, 5, 6}, {3, 2});
  const Tensor b = floats({-1, -2, -3, -4, -5, -6}, {3, 2});
  EXPECT_TRUE(tensors_close(where_rows(ints({1, 0, 7}), a, b), floats({1, 2, -3, -4, 5, 6}, {3, 2})));
  EXPECT_TRUE(tensors_close(where_rows(ints({0, 1, 0}), a), floats({0, 0, 3, 4, 0, 0}, {3, 2})));
  // All kept: a itself.
  EXPECT_TRUE(where_rows(ints({1, 1, 1}), a, b).same(a));
  // Rank 3 rows.
  const Tensor a3 = random_tensor({2, 2, 3}, 1), b3 = random_tensor({2, 2, 3}, 2);
  const Tensor y = where_rows(ints({0, 1}), a3, b3);
  EXPECT_TRUE(tensors_close(y.select(0).clone(), b3.select(0).clone()));
  EXPECT_TRUE(tensors_close(y.select(1).clone(), a3.select(1).clone()));
}

TEST(WhereRows, Gradcheck) {
  for (const auto& keep :
       {std::vector<int32_t>{1, 0, 1, 0}, std::vector<int32_t>{0, 0, 0, 0}, std::vector<int32_t>{1, 1, 1, 1}}) {
    Tensor a = random_tensor({4, 3}, 3).set_requires_grad(true);
    Tensor b = random_tensor({4, 3}, 4).set_requires_grad(true);
    const Tensor k = ints(keep);
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return where_rows(k, in[0], in[1]); }, {a, b}));
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return where_rows(k, in[0]); }, {a}));
  }
  // Batch 1.
  Tensor a = random_tensor({1, 5}, 5).set_requires_grad(true);
  Tensor b = random_tensor({1, 5}, 6).set_requires_grad(true);
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return where_rows(ints({0}), in[0], in[1]); }, {a, b}));
}

TEST(WhereRows, Errors) {
  const Tensor a = random_tensor({3, 2}, 1);
  EXPECT_THROW_MSG(where_rows(ints({1, 0}), a), ShapeError, "where_rows: 'keep' expected (B=3), got (2)");
  EXPECT_THROW_MSG(where_rows(floats({1, 0, 1}, {3}), a), ShapeError, "'keep' expected");
  EXPECT_THROW_MSG(where_rows(ints({1, 0, 1}), a, random_tensor({3, 3}, 2)), ShapeError,
                   "where_rows: 'b' expected (3, 2) (the shape of 'a'), got (3, 3)");
  EXPECT_THROW_MSG(where_rows(ints({1}), Tensor()), ShapeError, "'a' expected (B, ...), got an undefined tensor");
}

TEST(Transpose01, ForwardAndGradcheck) {
  const Tensor x = floats({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 3, 2});
  EXPECT_TRUE(tensors_close(transpose_01(x), floats({1, 2, 7, 8, 3, 4, 9, 10, 5, 6, 11, 12}, {3, 2, 2})));
  EXPECT_TRUE(tensors_close(transpose_01(floats({1, 2, 3, 4, 5, 6}, {2, 3})), floats({1, 4, 2, 5, 3, 6}, {3, 2})));
  for (const Shape& s : {Shape{3, 4, 2}, Shape{1, 5, 3}, Shape{4, 1}}) {
    Tensor t = random_tensor(s, 9).set_requires_grad(true);
    EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return transpose_01(in[0]); }, {t}));
  }
  EXPECT_THROW_MSG(transpose_01(random_tensor({3}, 1)), ShapeError,
                   "transpose_01: 'x' expected (N0, N1, ...), got (3)");
}

TEST(GatherRows, ForwardAndGradcheck) {
  const Tensor x = floats({1, 2, 3, 4, 5, 6}, {3, 2});
  EXPECT_TRUE(tensors_close(gather_rows(x, ints({2, 0, 2, 1})), floats({5, 6, 1, 2, 5, 6, 3, 4}, {4, 2})));
  Tensor t = random_tensor({3, 2, 2}, 4).set_requires_grad(true);
  // Repeated and missing rows: gradients sum over repeats, zero for rows never gathered.
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return gather_rows(in[0], ints({1, 1, 0})); }, {t}));
  EXPECT_THROW_MSG(gather_rows(x, ints({0, 3})), ValueError,
                   "gather_rows: index 3 at position 1 is out of range [0, N=3)");
  EXPECT_THROW_MSG(gather_rows(x, floats({0.0f}, {1})), ShapeError, "'index'");
}

}  // namespace
}  // namespace attn
