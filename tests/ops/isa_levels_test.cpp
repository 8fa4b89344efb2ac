// The kernels' ISA levels (include/attn/kernels/isa.h): every level this CPU runs gives the
// baseline level's results within kLevelAtol + kLevelRtol · |baseline|, and the dispatched
// kernel runs the level chosen for the process. Levels differ only in vector width (the
// order of the sums inside a row) and, in the kernels that opt in, FMA contraction.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "attn/cpu.h"
#include "attn/kernels/isa.h"
#include "attn/kernels/softmax.h"
#include "test_support.h"

namespace attn {
namespace {

constexpr float kLevelAtol = 1e-6f;
constexpr float kLevelRtol = 1e-5f;

// The copy of kernel `name` compiled for `level`.
#define AT_LEVEL(level, name) \
  (std::array{&kernels::isa_baseline::name, &kernels::isa_avx2::name, &kernels::isa_avx512::name}[static_cast<int>(level)])

std::vector<float> uniform(int64_t n, uint64_t seed, float lo, float hi) {
  return testing::random_tensor({n}, seed, lo, hi).to_vector();
}

// Keeps roughly three positions in four; every 7th row fully masked.
std::vector<int32_t> ragged_mask(int64_t rows, int64_t n) {
  std::vector<int32_t> m(rows * n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) m[r * n + i] = r % 7 != 3 && (i * 31 + r) % 4 != 0;
  return m;
}

// run(level) at baseline and at every other level this CPU runs: each output equals the
// baseline's within the tolerance (NaN where the baseline has NaN).
void expect_levels_agree(const std::string& what, const std::function<std::vector<float>(IsaLevel)>& run) {
  const CpuFeatures cpu = read_cpu_features();
  const std::vector<float> reference = run(IsaLevel::baseline);
  for (IsaLevel level : kIsaLevels) {
    if (level == IsaLevel::baseline || !isa_level_missing(level, cpu).empty()) continue;
    const std::vector<float> out = run(level);
    ASSERT_EQ(out.size(), reference.size());
    size_t worst = 0;
    float worst_excess = 0.0f;
    for (size_t i = 0; i < out.size(); ++i) {
      const bool nan_differs = std::isnan(out[i]) != std::isnan(reference[i]);
      const float excess = nan_differs ? INFINITY
                                       : std::fabs(out[i] - reference[i]) - (kLevelAtol + kLevelRtol * std::fabs(reference[i]));
      if (excess > worst_excess) worst = i, worst_excess = excess;
    }
    EXPECT_EQ(worst_excess, 0.0f) << what << " at " << isa_level_name(level) << ": element " << worst << " of "
                                  << out.size() << " is " << out[worst] << ", baseline " << reference[worst];
  }
}

// Skips a comparison test on a CPU that runs no level beyond the baseline.
#define SKIP_WITHOUT_HIGHER_LEVELS()                                                   \
  if (best_isa_level(read_cpu_features()) == IsaLevel::baseline)                    \
  GTEST_SKIP() << "this CPU runs only the baseline level: nothing to compare"

TEST(IsaLevels, ChosenLevelIsOneThisCpuRuns) {
  const IsaLevel level = kernels::kernel_isa_level();
  EXPECT_EQ(isa_level_missing(level, read_cpu_features()), "");
  if (std::getenv("ATTN_ISA") == nullptr) EXPECT_EQ(level, best_isa_level(read_cpu_features()));
  else EXPECT_STREQ(isa_level_name(level), std::getenv("ATTN_ISA"));
}

TEST(IsaLevels, DispatchRunsTheChosenLevel) {
  const int64_t rows = 9, n = 133;
  const std::vector<float> x = uniform(rows * n, 1, -4.0f, 4.0f);
  std::vector<float> dispatched(rows * n), direct(rows * n);
  kernels::softmax_forward(x.data(), nullptr, dispatched.data(), rows, n);
  AT_LEVEL(kernels::kernel_isa_level(), softmax_forward)(x.data(), nullptr, direct.data(), rows, n);
  EXPECT_EQ(dispatched, direct);
}

TEST(IsaLevels, Softmax) {
  SKIP_WITHOUT_HIGHER_LEVELS();
  const int64_t rows = 23, n = 301;  // odd sizes: every vector tail
  const std::vector<float> x = uniform(rows * n, 2, -6.0f, 6.0f), dy = uniform(rows * n, 3, -1.0f, 1.0f);
  const std::vector<int32_t> mask = ragged_mask(rows, n);
  for (const int32_t* m : {static_cast<const int32_t*>(nullptr), mask.data()}) {
    const std::string masked = m ? " (masked)" : "";
    expect_levels_agree("softmax_forward" + masked, [&](IsaLevel l) {
      std::vector<float> y(rows * n);
      AT_LEVEL(l, softmax_forward)(x.data(), m, y.data(), rows, n);
      return y;
    });
    expect_levels_agree("log_softmax_forward" + masked, [&](IsaLevel l) {
      std::vector<float> y(rows * n);
      AT_LEVEL(l, log_softmax_forward)(x.data(), m, y.data(), rows, n);
      return y;
    });
    expect_levels_agree("log_softmax_backward" + masked, [&](IsaLevel l) {
      std::vector<float> y(rows * n), dx(rows * n, 0.5f);
      AT_LEVEL(l, log_softmax_forward)(x.data(), m, y.data(), rows, n);
      AT_LEVEL(l, log_softmax_backward)(y.data(), m, dy.data(), dx.data(), rows, n);
      return dx;
    });
    expect_levels_agree("logsumexp_row" + masked, [&](IsaLevel l) {
      std::vector<float> out(rows);
      for (int64_t r = 0; r < rows; ++r) out[r] = AT_LEVEL(l, logsumexp_row)(x.data() + r * n, m ? m + r * n : m, n);
      return out;
    });
  }
  expect_levels_agree("softmax_backward", [&](IsaLevel l) {
    std::vector<float> y(rows * n), dx(rows * n, 0.5f);
    AT_LEVEL(l, softmax_forward)(x.data(), nullptr, y.data(), rows, n);
    AT_LEVEL(l, softmax_backward)(y.data(), dy.data(), dx.data(), rows, n);
    return dx;
  });
}

}  // namespace
}  // namespace attn
