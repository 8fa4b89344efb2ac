#pragma once
// Shared test helpers: seeded random tensors, loud tensor comparison, finite-difference
// gradient checks, and exception-message assertions.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "attn/tensor.h"

namespace attn::testing {

// Uniform values in [lo, hi) from a fixed seed.
Tensor random_tensor(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f);
Tensor random_ids(const Shape& shape, int32_t vocab, uint64_t seed);
// random_tensor that requires grad: an input of a gradient check. wide_leaf spans [-2, 2), for the
// ops whose interesting ranges (saturation, clipping, the tails of exp) lie beyond ±1.
Tensor leaf(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f);
Tensor wide_leaf(const Shape& shape, uint64_t seed, float lo = -2.0f, float hi = 2.0f);
// Sequence lengths as an int32 (B) tensor.
Tensor lengths_of(const std::vector<int32_t>& lengths);
// An int32 keep-mask of `shape` (..., n) whose row r keeps its first lengths[r] positions
// (rows past lengths.size() keep none).
Tensor ragged_mask(const Shape& shape, const std::vector<int64_t>& lengths);

// The shared data sets (sst2, multi30k, tatoeba-fra-eng): $ATTN_DATA_DIR, else the build's
// ATTN_DATA_DIR (<repo>/../shared/data by default). A test that needs a file from it starts
// with ATTN_SKIP_WITHOUT_DATA("sst2/sentiment-dev") (below), never a bare GTEST_SKIP.
std::string data_dir();
bool data_file_exists(const std::string& relative_path);
// ATTN_REQUIRE_DATA=1 in the environment (.ci/run sets it when ../shared/data exists): a data
// test whose file is missing fails instead of skipping.
bool data_required();

// A folder under the system's temporary folder for this test process, made on first use and
// removed when the process exits; temp_path names a file in it, temp_file writes one there.
std::filesystem::path process_temp_dir();
std::string temp_path(const std::string& name);
std::string temp_file(const std::string& name, const std::string& content);

// A fixture with a fresh folder (dir_) under the system's temporary folder for each test,
// removed afterwards, and helpers to put and read files in it.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static void put(const std::string& file, const std::string& text);
  static std::string read(const std::string& file);
  std::filesystem::path dir_;
};

// Fails with the worst index, expected and actual when |a - e| > atol * scale + rtol |e|, where
// scale = max |e| over the tensor, at least 1 (as tests/parity/parity.py's assert_close):
// float32 rounding is relative to the size of the summed terms, so an element near zero inside
// a large tensor carries errors of the tensor's scale, and its size depends on the summation
// order (SIMD width, BLAS kernel). atol is therefore relative to the tensor, rtol to the element.
::testing::AssertionResult tensors_close(const Tensor& actual, const Tensor& expected, float atol = 1e-5f,
                                         float rtol = 1e-4f);

struct GradcheckOptions {
  double eps = 1e-2;  // finite-difference step (float32 forward: larger steps, less rounding noise)
  double atol = 2e-3;
  double rtol = 2e-2;
};

// Checks the analytic gradient of every input that requires grad against central
// differences. `fn` maps the inputs to one output tensor; the scalar checked is
// sum(output * w) for fixed random weights w, evaluated in double precision.
::testing::AssertionResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                                     std::vector<Tensor> inputs, GradcheckOptions options = {});

}  // namespace attn::testing

// In a test body or SetUp: skips the test (ctest shows it as Skipped) when the data file is
// missing, or fails it when data_required().
#define ATTN_SKIP_WITHOUT_DATA(relative_path)                                                              \
  do {                                                                                                     \
    if (!::attn::testing::data_file_exists(relative_path)) {                                               \
      if (::attn::testing::data_required())                                                                \
        FAIL() << "ATTN_REQUIRE_DATA is set but " << ::attn::testing::data_dir() << "/" << (relative_path) \
               << " is missing";                                                                           \
      GTEST_SKIP() << "no " << (relative_path) << " under " << ::attn::testing::data_dir();                \
    }                                                                                                      \
  } while (0)

// Asserts that `statement` throws `exception_type` whose message contains `substring`.
#define EXPECT_THROW_MSG(statement, exception_type, substring)                              \
  do {                                                                                      \
    try {                                                                                   \
      statement;                                                                            \
      ADD_FAILURE() << "expected " #exception_type " containing \"" << (substring) << "\""; \
    } catch (const exception_type& e) {                                                     \
      EXPECT_NE(std::string(e.what()).find(substring), std::string::npos)                   \
          << "message was: " << e.what() << "\nexpected to contain: " << (substring);       \
    }                                                                                       \
  } while (0)
