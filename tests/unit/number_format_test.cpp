// Issue 16: five hand-made float formatters for messages, which disagreed: two trimmed
// std::to_string, so a tiny value printed as "0" ("temperature must be > 0, got -0").
#include "attn/number_format.h"

#include <limits>

#include "attn/ops/sdpa.h"
#include "test_support.h"

namespace attn {
namespace {

TEST(NumberFormat, ShortestRoundTrip) {
  EXPECT_EQ(format_number(0.1f), "0.1");
  EXPECT_EQ(format_number(0.1), "0.1");
  EXPECT_EQ(format_number(1.0f), "1");
  EXPECT_EQ(format_number(-1.5f), "-1.5");
  EXPECT_EQ(format_number(1e-7f), "1e-07");
  EXPECT_EQ(format_number(3e37f), "3e+37");
  EXPECT_EQ(format_number(1e-5f), "1e-05");
  EXPECT_EQ(format_number(std::numeric_limits<float>::quiet_NaN()), "nan");
  EXPECT_EQ(format_number(-std::numeric_limits<float>::infinity()), "-inf");
  EXPECT_EQ(format_number(0.30000001192092896), "0.30000001192092896");  // a double keeps its digits
}

TEST(NumberFormat, MessagesShowTinyValues) {
  const Tensor q = Tensor::zeros({1, 1, 2, 4});
  EXPECT_THROW_MSG(sdpa(q, q, q, {.temperature = -1e-9f}), ValueError,
                   "sdpa: temperature must be a finite value > 0, got -1e-09");
}

}  // namespace
}  // namespace attn
