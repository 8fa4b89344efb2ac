// The driver of the case tables (op_table.h): one TEST_P per kind of row.
#include "op_table.h"

#include <cctype>
#include <cmath>
#include <cstddef>
#include <utility>

#include "attn/autodiff/tape.h"
#include "attn/error.h"

namespace attn::testing {

std::string RowName::operator()(const ::testing::TestParamInfo<OpRow>& info) const { return info.param.name; }
std::string RowName::operator()(const ::testing::TestParamInfo<BadRow>& info) const { return info.param.name; }

std::string row_name_of(const std::string& text) {
  std::string name;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      name += c;
    else if (!name.empty() && name.back() != '_')
      name += '_';
  }
  while (!name.empty() && name.back() == '_') name.pop_back();
  return name;
}

AttentionInputs::AttentionInputs(int64_t B, int64_t T, int64_t S, int64_t D, int64_t E, std::vector<int32_t> lengths_,
                                 uint64_t seed)
    : query(leaf(T == 0 ? Shape{B, D} : Shape{B, T, D}, seed + 1)),
      keys(leaf({B, S, E}, seed + 2)),
      values(leaf({B, S, E}, seed + 3)),
      lengths(std::move(lengths_)),
      len(lengths_of(lengths)) {}

void expect_masked_rows(const Tensor& weights, const std::vector<int32_t>& lengths, bool positive_inside) {
  const int64_t B = weights.dim(0), T = weights.dim(1), S = weights.dim(2);
  const std::vector<float> w = weights.to_vector();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      double sum = 0;
      for (int64_t s = 0; s < S; ++s) {
        const float x = w[(b * T + t) * S + s];
        EXPECT_FALSE(std::isnan(x)) << "b=" << b << " t=" << t << " s=" << s;
        if (s >= lengths[b]) {
          EXPECT_EQ(x, 0.0f) << "past the length: b=" << b << " t=" << t << " s=" << s;
        } else if (positive_inside) {
          EXPECT_GT(x, 0.0f) << "b=" << b << " t=" << t << " s=" << s;
        }
        sum += x;
      }
      EXPECT_NEAR(sum, lengths[b] > 0 ? 1.0 : 0.0, 1e-5) << "b=" << b << " t=" << t;
    }
}

void expect_batch_row_gets_no_gradient(const Tensors& inputs, int64_t b) {
  for (size_t k = 0; k < inputs.size(); ++k) {
    const std::vector<float> g = inputs[k].grad().to_vector();
    const int64_t n = inputs[k].numel() / inputs[k].dim(0);
    for (int64_t i = b * n; i < (b + 1) * n; ++i) ASSERT_EQ(g[i], 0.0f) << "input " << k << ", flat index " << i;
    for (float x : g) ASSERT_FALSE(std::isnan(x)) << "input " << k;
  }
}

void expect_finite_gradients(const Tensor& y, const Tensors& inputs) {
  backward(y, Tensor::full(y.shape(), 1.0f));
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!inputs[k].requires_grad()) continue;
    ASSERT_TRUE(inputs[k].has_grad()) << "input " << k << " got no gradient";
    const std::vector<float> g = inputs[k].grad().to_vector();
    for (size_t i = 0; i < g.size(); ++i) ASSERT_TRUE(std::isfinite(g[i])) << "input " << k << ", flat index " << i;
  }
}

void expect_identical_across_threads(const Tensors& inputs, const std::function<Tensors(const Tensors&)>& op,
                                     uint64_t seed, const std::vector<int>& threads) {
  auto run = [&] {
    for (Tensor t : inputs)
      if (t.requires_grad()) t.drop_grad();
    const Tensors outputs = op(inputs);
    backward(outputs[0], random_tensor(outputs[0].shape(), seed));
    std::vector<std::vector<float>> values;
    for (const Tensor& y : outputs) values.push_back(y.to_vector());
    for (const Tensor& x : inputs)
      if (x.requires_grad()) values.push_back(x.grad().to_vector());
    return values;
  };
  const auto runs = run_at_thread_counts(run, threads);
  for (size_t k = 1; k < runs.size(); ++k)
    for (size_t i = 0; i < runs[0].size(); ++i)
      EXPECT_EQ(runs[0][i], runs[k][i]) << "output or gradient " << i << ": " << threads[0] << " threads against "
                                        << threads[k];
}

// A program may use one kind of table and not the other.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpTable);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BadInput);

TEST_P(OpTable, Row) {
  const OpRow& row = GetParam();
  ASSERT_TRUE(row.reference || row.properties || row.gradcheck) << "row " << row.name << " checks nothing";
  const Tensors inputs = row.inputs();
  const Tensors outputs = row.op(inputs);
  ASSERT_EQ(outputs.size(), row.outputs.size()) << "row " << row.name << " names " << row.outputs.size() << " outputs";
  if (row.reference) {
    const Tensors expected = row.reference(inputs);
    ASSERT_EQ(expected.size(), outputs.size()) << "the reference gives " << expected.size() << " outputs";
    for (size_t i = 0; i < outputs.size(); ++i)
      EXPECT_TRUE(tensors_close(outputs[i], expected[i], row.tolerance)) << "forward: " << row.outputs[i];
  }
  if (row.properties) row.properties(inputs, outputs);
  if (row.gradcheck) {
    for (size_t i = 0; i < outputs.size(); ++i)
      EXPECT_TRUE(gradcheck([&](const Tensors& x) { return row.op(x)[i]; }, inputs, row.gradcheck_options))
          << "gradient: " << row.outputs[i];
  }
}

TEST_P(BadInput, Throws) {
  const BadRow& row = GetParam();
  if (row.error == Throws::shape_error)
    EXPECT_THROW_MSG(row.call(), ShapeError, row.message);
  else
    EXPECT_THROW_MSG(row.call(), ValueError, row.message);
}

}  // namespace attn::testing
