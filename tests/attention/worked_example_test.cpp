// The worked example of the attention issue: encoder states
//   H = [[1.0, 0.0, 0.2], [0.5, 0.5, 0.1], [0.1, 0.9, 0.3]], decoder state s = [0.9, 0.1, 0.2]
// give dot-attention scores [0.94, 0.52, 0.24] and weights [0.464, 0.305, 0.231].
#include "attn/ops/attention.h"
#include "test_support.h"

namespace attn {
namespace {

TEST(WorkedExample, LuongDotWeights) {
  Tensor states =
      Tensor::from_vector(std::vector<float>{1.0f, 0.0f, 0.2f, 0.5f, 0.5f, 0.1f, 0.1f, 0.9f, 0.3f}, {1, 3, 3});
  Tensor query = Tensor::from_vector(std::vector<float>{0.9f, 0.1f, 0.2f}, {1, 3});
  Tensor lengths = Tensor::from_vector(std::vector<int32_t>{3}, {1});
  LuongOptions options;
  options.score = LuongScore::dot;
  AttentionResult r = luong_attention(query, states, states, lengths, options);
  const std::vector<float> w = r.weights.to_vector();
  ASSERT_EQ(w.size(), 3u);
  EXPECT_NEAR(w[0], 0.464f, 5e-4f);
  EXPECT_NEAR(w[1], 0.305f, 5e-4f);
  EXPECT_NEAR(w[2], 0.231f, 5e-4f);
  // context = Σ w_s H_s
  const std::vector<float> c = r.context.to_vector();
  EXPECT_NEAR(c[0], w[0] * 1.0f + w[1] * 0.5f + w[2] * 0.1f, 1e-6f);
  EXPECT_NEAR(c[1], w[1] * 0.5f + w[2] * 0.9f, 1e-6f);
}

}  // namespace
}  // namespace attn
