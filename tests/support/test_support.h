#pragma once
// Shared test helpers: seeded random tensors, loud tensor comparison, finite-difference
// gradient checks, and exception-message assertions.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "attn/tensor.h"

namespace attn::testing {

// Uniform values in [lo, hi) from a fixed seed.
Tensor random_tensor(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f);
Tensor random_ids(const Shape& shape, int32_t vocab, uint64_t seed);

// The shared data sets (sst2, multi30k, tatoeba-fra-eng): $ATTN_DATA_DIR, else the build's
// ATTN_DATA_DIR (<repo>/../shared/data by default). Tests that need a file from it call
//   if (!data_file_exists("sst2/sentiment-dev")) GTEST_SKIP() << "no data";
std::string data_dir();
bool data_file_exists(const std::string& relative_path);

// Fails with the worst index, expected and actual when |a - e| > atol + rtol |e|.
::testing::AssertionResult tensors_close(const Tensor& actual, const Tensor& expected, float atol = 1e-5f,
                                         float rtol = 1e-4f);

struct GradcheckOptions {
  double eps = 1e-2;   // finite-difference step (float32 forward: larger steps, less rounding noise)
  double atol = 2e-3;
  double rtol = 2e-2;
};

// Checks the analytic gradient of every input that requires grad against central
// differences. `fn` maps the inputs to one output tensor; the scalar checked is
// sum(output * w) for fixed random weights w, evaluated in double precision.
::testing::AssertionResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                                     std::vector<Tensor> inputs, GradcheckOptions options = {});

}  // namespace attn::testing

// Asserts that `statement` throws `exception_type` whose message contains `substring`.
#define EXPECT_THROW_MSG(statement, exception_type, substring)                                 \
  do {                                                                                        \
    try {                                                                                     \
      statement;                                                                              \
      ADD_FAILURE() << "expected " #exception_type " containing \"" << (substring) << "\"";   \
    } catch (const exception_type& e) {                                                       \
      EXPECT_NE(std::string(e.what()).find(substring), std::string::npos)                     \
          << "message was: " << e.what() << "\nexpected to contain: " << (substring);         \
    }                                                                                         \
  } while (0)
