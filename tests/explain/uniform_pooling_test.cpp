// bilstm-attn with --pooling uniform (Wiegreffe & Pinter's baseline): the weights are 1/n over
// the real tokens, the context is the mean of the states, and training still reaches the encoder.
#include <cmath>

#include "attn/autodiff/tape.h"
#include "attn/models/attention_classifier.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/reduce.h"
#include "test_support.h"

namespace attn::models {
namespace {

TEST(UniformPooling, WeightsAreOneOverLengthAndContextIsTheMean) {
  for (const char* encoder : {"lstm", "average"}) {
    SCOPED_TRACE(encoder);
    AttnClassifierConfig c;
    c.vocab = 20, c.emb = 6, c.hidden = 4, c.dropout = 0.0f, c.encoder = parse_pooling_encoder(encoder), c.pooling = PoolingScore::uniform;
    AttnClassifier model(c);
    for (const auto& [name, p] : model.named_parameters()) EXPECT_NE(name.rfind("pooling.", 0), 0u) << name;
    const Tensor ids = Tensor::from_vector(std::vector<int32_t>{3, 9, 4, 12, 5, 7, 0, 0}, {2, 4});
    const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{4, 2}, {2});
    Tensor states;
    {
      autodiff::NoGradGuard no_grad;
      states = model.encode(model.embed(ids), lengths);  // (2, 4, 8)
    }
    const AttentionPooling pooled = model.pool(states, lengths);
    const std::vector<float> expected_weights = {0.25f, 0.25f, 0.25f, 0.25f, 0.5f, 0.5f, 0.0f, 0.0f};
    EXPECT_EQ(pooled.weights.to_vector(), expected_weights);
    const int64_t E = states.dim(2);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t e = 0; e < E; ++e) {
        const int32_t n = lengths.i32()[b];
        double mean = 0.0;
        for (int32_t s = 0; s < n; ++s) mean += states.f32()[(b * 4 + s) * E + e] / n;
        EXPECT_NEAR(pooled.context.f32()[b * E + e], mean, 1e-6);
      }
    // The loss reaches the encoder and the output layer.
    model.zero_grad();
    backward(sum(model.logits(ids, lengths)));
    const Tensor ge = model.embedding.weight.grad(), go = model.out.weight.grad();
    EXPECT_GT(sum(mul(ge, ge)).item(), 0.0f);
    EXPECT_GT(sum(mul(go, go)).item(), 0.0f);
  }
  EXPECT_THROW_MSG(parse_pooling_score("mean"), ValueError, "'pooling' must be additive, dot or uniform, got 'mean'");
}

}  // namespace
}  // namespace attn::models
