#include "attn/explain/rollout.h"

#include "attn/error.h"
#include "attn/models/transformer.h"
#include "test_support.h"
#include "tiny_transformer.h"

namespace attn::explain {
namespace {

using attn::testing::tensors_close;

Tensor floats(const std::vector<float>& values, const Shape& shape) { return Tensor::from_vector(values, shape); }

// Two layers, two heads, N = 2, worked by hand:
//   layer 1: mean_h = [[.75 .25] [.25 .75]]  → Ã1 = [[.875 .125] [.125 .875]]
//   layer 2: mean_h = [[0 1] [.5 .5]]        → Ã2 = [[.5 .5] [.25 .75]]
//   rollout R = Ã2 Ã1 = [[.5 .5] [.3125 .6875]]
//   flow (two layers: the paths j → (1, k) → (2, i) share no edge, so the flow is
//   Σ_k min(Ã1[k][j], Ã2[i][k])): row 0 [.625 .625] → [.5 .5]; row 1 [.375 .875] → [.3 .7]
std::vector<Tensor> hand_layers() {
  return {floats({1, 0, .5f, .5f, /* head 1 */ .5f, .5f, 0, 1}, {2, 2, 2}),
          floats({0, 1, 1, 0, /* head 1 */ 0, 1, 0, 1}, {2, 2, 2})};
}

TEST(Rollout, ResidualAttentionByHand) {
  const std::vector<Tensor> a = residual_attention(hand_layers());
  ASSERT_EQ(a.size(), 2u);
  EXPECT_TRUE(tensors_close(a[0], floats({.875f, .125f, .125f, .875f}, {2, 2}), 1e-7f, 0));
  EXPECT_TRUE(tensors_close(a[1], floats({.5f, .5f, .25f, .75f}, {2, 2}), 1e-7f, 0));
}

TEST(Rollout, RolloutByHand) {
  EXPECT_TRUE(tensors_close(attention_rollout(hand_layers()), floats({.5f, .5f, .3125f, .6875f}, {2, 2}), 1e-7f, 0));
}

TEST(Rollout, FlowByHand) {
  EXPECT_TRUE(tensors_close(attention_flow(hand_layers(), {1, 0}), floats({.3f, .7f, .5f, .5f}, {2, 2}), 1e-6f, 0));
}

// One layer: rollout and flow are both Ã itself (each row of Ã sums to 1, and the only path
// from (0, j) to (1, i) is the edge of capacity Ã[i][j]).
TEST(Rollout, OneLayerIsTheResidualAttention) {
  const std::vector<Tensor> one = {hand_layers()[1]};
  const Tensor expected = floats({.5f, .5f, .25f, .75f}, {2, 2});
  EXPECT_TRUE(tensors_close(attention_rollout(one), expected, 1e-7f, 0));
  EXPECT_TRUE(tensors_close(attention_flow(one, {0, 1}), expected, 1e-6f, 0));
}

// Rows of the rollout sum to 1 (a product of row-stochastic matrices), on a real model's
// weights trimmed from a padded batch; flow rows too; and trimming drops only the padding.
TEST(Rollout, ClassifierWeightsRowsSumToOne) {
  models::TransformerClassifier model(testing::tiny_transformer_config(3, 0.0f, 1));
  model.eval();
  const Tensor ids = Tensor::from_vector(std::vector<int32_t>{3, 4, 5, 6, 7, 8, 9, 0}, {2, 4});
  const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{4, 2}, {2});
  const std::vector<Tensor> batch = model.self_attention(ids, lengths);
  ASSERT_EQ(batch.size(), 3u);
  ASSERT_EQ(batch[0].shape(), Shape({2, 2, 5, 5}));
  const std::vector<Tensor> row1 = sentence_layers(batch, 1, 3);  // [CLS] + 2 tokens
  ASSERT_EQ(row1[2].shape(), Shape({2, 3, 3}));
  EXPECT_EQ(row1[2].f32()[3 * 1 + 2], batch[2].f32()[(1 * 2 + 0) * 25 + 5 * 1 + 2]);  // head 0, query 1, key 2
  const Tensor r = attention_rollout(row1);
  const Tensor f = attention_flow(row1, {0, 1, 2});
  for (int64_t i = 0; i < 3; ++i) {
    double rs = 0, fs = 0;
    for (int64_t j = 0; j < 3; ++j) {
      rs += r.f32()[i * 3 + j];
      fs += f.f32()[i * 3 + j];
      EXPECT_GE(r.f32()[i * 3 + j], 0.0f);
    }
    EXPECT_NEAR(rs, 1.0, 1e-5) << "rollout row " << i;
    EXPECT_NEAR(fs, 1.0, 1e-5) << "flow row " << i;
  }
  // The padded batch row and the same sentence alone give the same rollout.
  const Tensor alone_ids = Tensor::from_vector(std::vector<int32_t>{7, 8}, {1, 2});
  const Tensor alone_lengths = Tensor::from_vector(std::vector<int32_t>{2}, {1});
  EXPECT_TRUE(
      tensors_close(attention_rollout(sentence_layers(model.self_attention(alone_ids, alone_lengths), 0, 3)), r));
}

TEST(Rollout, Errors) {
  EXPECT_THROW_MSG(attention_rollout({}), ShapeError, "expected at least one layer");
  EXPECT_THROW_MSG(attention_rollout({Tensor::zeros({2, 3, 3}), Tensor::zeros({2, 4, 4})}), ShapeError, "layers[1]");
  EXPECT_THROW_MSG(attention_rollout({Tensor::zeros({2, 3, 4})}), ShapeError, "layers[0]");
  EXPECT_THROW_MSG(attention_flow(hand_layers(), {2}), ValueError, "attention_flow: row 2 outside [0, N=2)");
  EXPECT_THROW_MSG(sentence_layers({Tensor::zeros({1, 2, 3, 3})}, 1, 2), ValueError, "row b=1 outside [0, B=1)");
  EXPECT_THROW_MSG(sentence_layers({Tensor::zeros({1, 2, 3, 3})}, 0, 4), ValueError, "length n=4 outside [1, S=3]");
  EXPECT_THROW_MSG(sentence_layers({}, 0, 1), ShapeError, "at least one layer");
}

}  // namespace
}  // namespace attn::explain
