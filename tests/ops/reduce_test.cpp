#include "attn/ops/reduce.h"

#include <cmath>

#include "attn/autodiff/tape.h"
#include "attn/parallel.h"
#include "kernels/reduce.h"
#include "op_table.h"
#include "test_support.h"

namespace attn {
namespace {
using namespace attn::testing;  // the helpers of tests/support

double reference_sum(const Tensor& x) {
  double s = 0.0;
  for (int64_t i = 0; i < x.numel(); ++i) s += x.f32()[i];
  return s;
}

TEST(Reduce, SumAndMeanHandComputed) {
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor s = sum(x);
  EXPECT_EQ(s.shape(), Shape({}));
  EXPECT_EQ(s.item(), 21.0f);
  EXPECT_EQ(mean(x).item(), 3.5f);
  EXPECT_EQ(sum_last(x).shape(), Shape({2}));
  EXPECT_EQ(sum_last(x).to_vector(), (std::vector<float>{6, 15}));
  EXPECT_EQ(mean_last(x).to_vector(), (std::vector<float>{2, 5}));
  // Rank 1 reduces to a scalar; a scalar sums to itself.
  EXPECT_EQ(sum_last(Tensor::from_vector(std::vector<float>{1, 2}, {2})).shape(), Shape({}));
  EXPECT_EQ(sum(Tensor::scalar(2.5f)).item(), 2.5f);
  // The sum of nothing is 0.
  EXPECT_EQ(sum(Tensor::zeros({0, 3})).item(), 0.0f);
  EXPECT_EQ(sum_last(Tensor::zeros({3, 0})).to_vector(), (std::vector<float>{0, 0, 0}));
}

TEST(Reduce, AccumulatesInDouble) {
  // In float, 1e8 + 1 - 1e8 is 0; in double it is 1.
  Tensor x = Tensor::from_vector(std::vector<float>{1e8f, 1.0f, -1e8f}, {3});
  EXPECT_EQ(sum(x).item(), 1.0f);
  EXPECT_EQ(sum_last(x).item(), 1.0f);
  // Many chunks of 0.1: a float running sum drifts far more than 1e-6 relative.
  Tensor many = Tensor::full({1000003}, 0.1f);
  const double expect = 1000003.0 * static_cast<double>(0.1f);
  EXPECT_NEAR(sum(many).item(), expect, expect * 1e-7);
  EXPECT_NEAR(mean(many).item(), 0.1f, 1e-8);
}

TEST(Reduce, MatchesReferenceOnLargeInputs) {
  Tensor x = random_tensor({7, 30011}, 1);
  EXPECT_NEAR(sum(x).item(), reference_sum(x), 1e-3);
  EXPECT_NEAR(mean(x).item(), reference_sum(x) / x.numel(), 1e-7);
  Tensor rows = sum_last(x);
  for (int64_t r = 0; r < 7; ++r) {
    double s = 0.0;
    for (int64_t j = 0; j < 30011; ++j) s += x.f32()[r * 30011 + j];
    EXPECT_NEAR(rows.f32()[r], s, 1e-3);
  }
}

TEST(Reduce, Gradcheck) {
  auto fn = [](Tensor (*op)(const Tensor&)) { return [op](const std::vector<Tensor>& in) { return op(in[0]); }; };
  for (auto op : {sum, mean, sum_last, mean_last}) {
    EXPECT_TRUE(gradcheck(fn(op), {leaf({2, 3, 4}, 1)}));
    EXPECT_TRUE(gradcheck(fn(op), {leaf({5}, 2)}));
    EXPECT_TRUE(gradcheck(fn(op), {leaf({1, 1}, 3)}));
    EXPECT_TRUE(gradcheck(fn(op), {leaf({3, 2}, 4, -1000.0f, 1000.0f)}, {.eps = 1.0, .atol = 1e-3, .rtol = 1e-3}));
  }
  EXPECT_TRUE(gradcheck(fn(sum), {leaf({}, 5)}));
  EXPECT_TRUE(gradcheck(fn(mean), {leaf({}, 6)}));
}

TEST(Reduce, BackwardValues) {
  Tensor x = leaf({2, 4}, 1);
  backward(mean(x));
  EXPECT_EQ(x.grad().to_vector(), std::vector<float>(8, 0.125f));
  x.drop_grad();
  backward(mean_last(x), Tensor::from_vector(std::vector<float>{4, 8}, {2}));
  EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{1, 1, 1, 1, 2, 2, 2, 2}));
  x.drop_grad();
  backward(sum(x));
  backward(sum(x));  // accumulates
  EXPECT_EQ(x.grad().to_vector(), std::vector<float>(8, 2.0f));
}

TEST(Reduce, Errors) {
  EXPECT_THROW_MSG(mean(Tensor::zeros({0, 3})), ValueError,
                   "mean: 'x' (0, 3) has no elements; the mean of none is undefined");
  EXPECT_THROW_MSG(mean_last(Tensor::zeros({3, 0})), ValueError,
                   "mean_last: the last dimension of 'x' (3, 0) is 0; the mean of no elements is undefined");
  EXPECT_THROW_MSG(sum_last(Tensor::scalar(1)), ShapeError, "sum_last: 'x' expected (..., N), got ()");
  EXPECT_THROW_MSG(sum(Tensor::zeros({2}, DType::i32)), ShapeError, "sum: 'x' expected dtype float32, got int32");
  EXPECT_THROW_MSG(mean_last(Tensor()), ShapeError, "mean_last: 'x' expected (..., N), got an undefined tensor");
}

// sum, mean, sum_last and their gradients.
std::vector<std::vector<float>> reduce_run() {
  Tensor x = leaf({5, 40009}, 1, -3.0f, 3.0f);
  Tensor s = sum(x), m = mean(x), r = sum_last(x), ml = mean_last(x);
  backward(r, random_tensor({5}, 2));
  backward(m);
  return {{s.item()}, {m.item()}, r.to_vector(), ml.to_vector(), x.grad().to_vector()};
}

TEST(Reduce, BitIdenticalAcrossThreadCounts) {
  const auto runs = run_at_thread_counts(reduce_run, {1, 2, 3});
  const char* names[] = {"sum", "mean", "sum_last", "mean_last", "grad"};
  for (size_t i = 0; i < runs[0].size(); ++i) {
    EXPECT_EQ(runs[0][i], runs[1][i]) << names[i] << ": 1 against 2 threads";
    EXPECT_EQ(runs[0][i], runs[2][i]) << names[i] << ": 1 against 3 threads";
  }
}

// kernels::sum_columns_into: out[j] += Σ_r x[r, j] (bias gradients), rows in order.
std::vector<float> column_sums(int threads, int64_t rows, int64_t n) {
  set_num_threads(threads);
  const Tensor x = random_tensor({rows, n}, 3, -2.0f, 2.0f);
  std::vector<float> out(static_cast<size_t>(n), 0.5f);  // accumulates onto what is there
  kernels::sum_columns_into(x.f32(), rows, n, out.data());
  return out;
}

TEST(Reduce, ColumnSumsMatchReferenceAndThreadCounts) {
  const int before = num_threads();
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 5}, {64, 768}, {2624, 1000}, {3, 70000}}) {
    SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(n));
    const auto one = column_sums(1, rows, n);
    const Tensor x = random_tensor({rows, n}, 3, -2.0f, 2.0f);
    for (int64_t j = 0; j < n; ++j) {
      double want = 0.5;
      for (int64_t r = 0; r < rows; ++r) want += x.f32()[r * n + j];
      ASSERT_NEAR(one[static_cast<size_t>(j)], want, 1e-6 * static_cast<double>(rows) * 2.0 + 1e-6) << "column " << j;
    }
    EXPECT_EQ(one, column_sums(2, rows, n));
    EXPECT_EQ(one, column_sums(3, rows, n));
  }
  set_num_threads(before);
}

}  // namespace
}  // namespace attn
