#include "attn/explain/diagnostic.h"

#include <cmath>

#include "attn/autodiff/tape.h"
#include "attn/ops/softmax.h"
#include "test_support.h"
#include "tiny_classifier.h"

namespace attn::explain {
namespace {
using models::AttnClassifier;

TEST(Diagnostic, OwnWeightsReproduceTheModelAndImposedWeightsChangeIt) {
  AttnClassifier average(testing::tiny_classifier_config("average", "additive", 5));
  AttnClassifier lstm(testing::tiny_classifier_config("lstm", "dot", 5));
  const std::vector<int32_t> ids = {3, 9, 4, 12, 7};
  const std::vector<float> own = own_attention(average, ids);
  EXPECT_TRUE(average.is_training()) << "the training flag is restored";
  const std::vector<float> with_own = probabilities_with_weights(average, ids, own);
  average.eval();
  std::vector<float> direct;
  {
    autodiff::NoGradGuard no_grad;
    direct =
        softmax(average.logits(Tensor::from_vector(ids, {1, 5}), Tensor::from_vector(std::vector<int32_t>{5}, {1})))
            .to_vector();
  }
  for (size_t c = 0; c < 2; ++c) EXPECT_NEAR(with_own[c], direct[c], 1e-6);
  // Uniform weights: the average of the states; a one-hot weight: that token's state alone.
  const std::vector<float> uniform(5, 0.2f);
  const std::vector<float> with_uniform = probabilities_with_weights(average, ids, uniform);
  const std::vector<float> imposed = probabilities_with_weights(average, ids, own_attention(lstm, ids));
  EXPECT_GT(std::fabs(with_uniform[0] - with_own[0]) + std::fabs(imposed[0] - with_own[0]), 1e-5);
  const std::vector<float> one_hot = probabilities_with_weights(average, ids, {0, 0, 1, 0, 0});
  const std::vector<float> alone = probabilities_with_weights(average, {4}, {1.0f});
  for (size_t c = 0; c < 2; ++c) EXPECT_NEAR(one_hot[c], alone[c], 1e-6) << "the states are non-contextual";
  EXPECT_THROW_MSG(probabilities_with_weights(average, ids, {0.5f, 0.5f}), ShapeError, "2 weights for 5 tokens");
  EXPECT_THROW_MSG(own_attention(average, {}), ValueError, "no tokens");
}

}  // namespace
}  // namespace attn::explain
