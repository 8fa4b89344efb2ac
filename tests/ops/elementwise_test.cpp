#include "attn/ops/elementwise.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "attn/autodiff/tape.h"
#include "op_table.h"
#include "test_support.h"

namespace attn {
namespace {
using namespace attn::testing;  // the helpers of tests/support

TEST(Elementwise, ForwardValues) {
  Tensor a = Tensor::from_vector(std::vector<float>{-1.0f, 0.5f, 2.0f}, {3});
  Tensor b = Tensor::from_vector(std::vector<float>{3.0f, -2.0f, 0.25f}, {3});
  EXPECT_EQ(add(a, b).to_vector(), (std::vector<float>{2.0f, -1.5f, 2.25f}));
  EXPECT_EQ(mul(a, b).to_vector(), (std::vector<float>{-3.0f, -1.0f, 0.5f}));
  EXPECT_EQ(relu(a).to_vector(), (std::vector<float>{0.0f, 0.5f, 2.0f}));
  EXPECT_EQ(scale(a, 2.0f).to_vector(), (std::vector<float>{-2.0f, 1.0f, 4.0f}));
  EXPECT_FLOAT_EQ(tanh(a).to_vector()[2], std::tanh(2.0f));
  EXPECT_FLOAT_EQ(sigmoid(a).to_vector()[0], 1.0f / (1.0f + std::exp(1.0f)));
  // gelu(x) = x Φ(x); Φ(2) = 0.97724987
  EXPECT_NEAR(gelu(a).to_vector()[2], 2.0f * 0.97724987f, 1e-6f);
  EXPECT_FLOAT_EQ(exp(a).to_vector()[1], std::exp(0.5f));
  EXPECT_EQ(log(Tensor::from_vector(std::vector<float>{3.0f, 0.25f}, {2})).to_vector(),
            (std::vector<float>{std::log(3.0f), std::log(0.25f)}));
  Tensor zero = Tensor::zeros({1});
  EXPECT_EQ(log(zero).to_vector()[0], -std::numeric_limits<float>::infinity());  // as torch.log(0)
}

TEST(Elementwise, SigmoidIsStableForLargeInputs) {
  Tensor x = Tensor::from_vector(std::vector<float>{-1000.0f, 1000.0f}, {2});
  EXPECT_EQ(sigmoid(x).to_vector(), (std::vector<float>{0.0f, 1.0f}));
}

// Gradient rows: an op on fresh inputs (wide leaves, seeded as named).
OpRow gradient_row(const std::string& name, std::function<Tensor(const Tensors&)> op, std::function<Tensors()> inputs) {
  OpRow row;
  row.name = name;
  row.inputs = std::move(inputs);
  row.op = [op = std::move(op)](const Tensors& x) { return Tensors{op(x)}; };
  row.outputs = {name};
  row.gradcheck = true;
  return row;
}

std::vector<OpRow> elementwise_rows() {
  auto unary = [](Tensor (*op)(const Tensor&)) { return [op](const Tensors& in) { return op(in[0]); }; };
  auto binary = [](Tensor (*op)(const Tensor&, const Tensor&)) {
    return [op](const Tensors& in) { return op(in[0], in[1]); };
  };
  auto one = [](Shape shape, uint64_t seed, float lo = -2.0f, float hi = 2.0f) {
    return [=] { return Tensors{wide_leaf(shape, seed, lo, hi)}; };
  };
  auto two = [](uint64_t seed) {
    return [=] { return Tensors{wide_leaf({2, 3}, seed), wide_leaf({2, 3}, seed + 1)}; };
  };
  return {
      gradient_row("tanh", unary(tanh), one({3, 4}, 1)),
      gradient_row("sigmoid", unary(sigmoid), one({3, 4}, 2)),
      gradient_row("gelu", unary(gelu), one({3, 4}, 3)),
      gradient_row("exp", unary(exp), one({3, 4}, 12)),
      gradient_row("log", unary(log), one({3, 4}, 13, 0.2f, 3.0f)),  // away from the pole at 0
      // relu away from the kink at 0
      gradient_row("relu_positive", unary(relu), one({3, 4}, 4, 0.1f, 2.0f)),
      gradient_row("relu_negative", unary(relu), one({3, 4}, 5, -2.0f, -0.1f)),
      gradient_row("add", binary(add), two(6)),
      gradient_row("mul", binary(mul), two(8)),
      gradient_row(
          "scale", [](const Tensors& in) { return scale(in[0], -1.5f); }, one({5}, 10)),
      // The same tensor used twice: gradients add up (d(x*x)/dx = 2x).
      gradient_row(
          "mul_by_itself", [](const Tensors& in) { return mul(in[0], in[0]); }, one({4}, 11)),
  };
}

INSTANTIATE_TEST_SUITE_P(Elementwise, OpTable, ::testing::ValuesIn(elementwise_rows()), row_name);

TEST(Elementwise, ErrorsNameOpAndShapes) {
  Tensor a = Tensor::zeros({2, 3});
  Tensor b = Tensor::zeros({3, 2});
  EXPECT_THROW_MSG(add(a, b), ShapeError, "add: 'b' expected (2, 3) (the shape of 'a', no broadcasting), got (3, 2)");
  EXPECT_THROW_MSG(mul(a, Tensor::zeros({2, 3}, DType::i32)), ShapeError, "mul: operands must be float32");
  EXPECT_THROW_MSG(tanh(Tensor::zeros({2}, DType::i32)), ShapeError, "tanh: 'x' expected float32, got int32");
  EXPECT_THROW_MSG(exp(Tensor::zeros({2}, DType::i32)), ShapeError, "exp: 'x' expected float32, got int32");
  EXPECT_THROW_MSG(log(Tensor::from_vector(std::vector<float>{1.0f, -0.5f}, {2})), ValueError,
                   "log: 'x' must be >= 0 (log of a negative number or NaN is NaN), got -0.500000 at flat index 1");
  EXPECT_THROW_MSG(log(Tensor::from_vector(std::vector<float>{std::nanf("")}, {1})), ValueError, "at flat index 0");
  EXPECT_THROW_MSG(relu(Tensor()), ShapeError, "relu: 'x' is undefined");
}

}  // namespace
}  // namespace attn
