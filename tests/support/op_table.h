#pragma once
// Case tables per op family, as ggml's test-backend-ops: a family lists its cases as rows, and
// one driver (op_table.cpp) expands every row into its own GoogleTest case.
//
//   <Family>/OpTable.Row/<name>       (ctest: "attention/LuongAttention/OpTable.Row/dot_block")
//     forward: every output of `op` against the same output of `reference`, within `tolerance`,
//     and the row's `properties`;
//     gradient: with `gradcheck`, finite differences for every input that requires grad, once
//     per output (test_support.h's gradcheck).
//   <Family>/BadInput.Throws/<name>
//     the call throws ShapeError (a bad shape) or ValueError (a bad value) whose message
//     contains `message`.
//
// A family file builds its rows in a function and instantiates the driver with them:
//   INSTANTIATE_TEST_SUITE_P(LuongAttention, OpTable, ::testing::ValuesIn(luong_rows()), row_name);
//   INSTANTIATE_TEST_SUITE_P(LuongAttention, BadInput, ::testing::ValuesIn(luong_bad_inputs()), row_name);
// Row names are GoogleTest names: letters, digits and '_', unique within the family.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "attn/parallel.h"
#include "attn/tensor.h"
#include "test_support.h"
#include "tolerances.h"

namespace attn::testing {

using Tensors = std::vector<Tensor>;

struct OpRow {
  std::string name;
  // Fresh inputs, the differentiable ones as leaves (leaf(), wide_leaf()).
  std::function<Tensors()> inputs;
  // The op under test on `inputs`: its outputs, named by `outputs` in messages.
  std::function<Tensors(const Tensors&)> op;
  std::vector<std::string> outputs;
  // An independent reference giving the same outputs (double precision, hand-computed); none:
  // no forward check (a row that only checks the gradient).
  std::function<Tensors(const Tensors&)> reference;
  Tolerance tolerance = kOpTol;
  // Further properties of the outputs, as EXPECTs (rows that sum to 1, zeros past a length).
  std::function<void(const Tensors& inputs, const Tensors& outputs)> properties;
  bool gradcheck = false;
  GradcheckOptions gradcheck_options = {};
};

enum class Throws { shape_error, value_error };

struct BadRow {
  std::string name;
  std::function<void()> call;
  Throws error;
  std::string message;  // what the error's message must contain
};

class OpTable : public ::testing::TestWithParam<OpRow> {};
class BadInput : public ::testing::TestWithParam<BadRow> {};

// The row's name as the test's name: INSTANTIATE_TEST_SUITE_P's last argument. (Defined in
// op_table.cpp, so that a program naming it links the driver's TEST_Ps.)
struct RowName {
  std::string operator()(const ::testing::TestParamInfo<OpRow>& info) const;
  std::string operator()(const ::testing::TestParamInfo<BadRow>& info) const;
};
inline constexpr RowName row_name;

// A readable case description as a row name: "block T 10 (BLAS path)" -> "block_T_10_BLAS_path".
std::string row_name_of(const std::string& text);

// The batch of an attention row: B rows of T query steps (T = 0: a one-step query (B, D)) over S
// source positions with these real lengths, and the temperature.
struct AttentionCase {
  const char* name;
  int64_t B, T, S;
  std::vector<int32_t> lengths;
  float temperature;
};

// What the inputs of every attention op hold: the query ((B, D) when T = 0, else (B, T, D)),
// keys and values (B, S, E) as leaves from seed + 1, + 2 and + 3, and the lengths, also as an
// int32 tensor. A family's inputs derive from it and add their parameters.
struct AttentionInputs {
  AttentionInputs() = default;
  AttentionInputs(int64_t B, int64_t T, int64_t S, int64_t D, int64_t E, std::vector<int32_t> lengths, uint64_t seed);
  Tensor query, keys, values;
  std::vector<int32_t> lengths;
  Tensor len;
};

// A row of an attention op: its outputs are an AttentionResult's context and weights, and the
// reference, when `with_reference`, gives a pair of the same names (kFusedTol: the attention
// kernels sum over S and E in their own order).
template <class Op, class Reference>
OpRow attention_row(std::string name, std::function<Tensors()> inputs, Op op, Reference reference, bool with_reference,
                    bool gradcheck) {
  OpRow row;
  row.name = std::move(name);
  row.inputs = std::move(inputs);
  row.op = [op](const Tensors& x) {
    const auto r = op(x);
    return Tensors{r.context, r.weights};
  };
  row.outputs = {"context", "weights"};
  if (with_reference) {
    row.reference = [reference](const Tensors& x) {
      const auto r = reference(x);
      return Tensors{r.context, r.weights};
    };
  }
  row.tolerance = kFusedTol;
  row.gradcheck = gradcheck;
  return row;
}

// Attention weights (B, T, S) over rows with these lengths: no NaN, exactly 0 past each row's
// length, > 0 inside it when `positive_inside`, and each row summing to 1 (0 for a length-0
// row) within 1e-5.
void expect_masked_rows(const Tensor& weights, const std::vector<int32_t>& lengths, bool positive_inside);

// Row `b` of the batch (the first dimension) of each input's gradient is exactly zero, and no
// gradient holds NaN (a length-0 row gives zero gradient, never NaN).
void expect_batch_row_gets_no_gradient(const Tensors& inputs, int64_t b);

// Back-propagates ones from `y` and expects every input that requires grad to get a gradient
// that is finite everywhere (no overflow in a max-subtracted softmax, no NaN from a saturated tanh).
void expect_finite_gradients(const Tensor& y, const Tensors& inputs);

// Calls `run` once at each thread count in turn and gives back its results in that order; the
// thread count in force before is restored.
template <class Run>
auto run_at_thread_counts(Run run, const std::vector<int>& counts) {
  std::vector<decltype(run())> results;
  const int before = num_threads();
  for (int count : counts) {
    set_num_threads(count);
    results.push_back(run());
  }
  set_num_threads(before);
  return results;
}

// Runs `op` on `inputs` at each thread count, back-propagates fixed random weights (from `seed`)
// from its first output, and expects every output and every input's gradient bit-identical at
// every count: reductions have a fixed order (DESIGN.md, Numbers).
void expect_identical_across_threads(const Tensors& inputs, const std::function<Tensors(const Tensors&)>& op,
                                     uint64_t seed, const std::vector<int>& threads = {1, 2, 4});

// --gtest_list_tests prints a row by its name.
inline void PrintTo(const OpRow& row, std::ostream* os) { *os << row.name; }
inline void PrintTo(const BadRow& row, std::ostream* os) { *os << row.name; }

}  // namespace attn::testing
