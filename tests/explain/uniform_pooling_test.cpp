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
    c.vocab = 20, c.emb = 6, c.hidden = 4, c.dropout = 0.0f, c.encoder = parse_pooling_encoder(encoder),
    c.pooling = PoolingScore::uniform;
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

// Wiegreffe & Pinter's frozen attention (attn train --attention-from M): the average model
// pools with M's attention, exactly: the context is the M-weighted average of its projected
// embeddings tanh(W e_s + b), and no gradient reaches M.
TEST(FrozenAttention, PoolsWithTheSourceModelsWeightsAndLeavesItUntouched) {
  AttnClassifierConfig mc;
  mc.vocab = 20, mc.emb = 6, mc.hidden = 4, mc.dropout = 0.0f, mc.seed = 7;  // lstm, additive
  AttnClassifier m(mc);
  m.eval();
  AttnClassifierConfig c = mc;
  c.encoder = PoolingEncoder::average, c.pooling = PoolingScore::uniform, c.seed = 3;
  AttnClassifier student(c);
  student.set_attention_source([&m](const Tensor& ids, const Tensor& lengths) {
    autodiff::NoGradGuard no_grad;
    Tensor weights;
    m.logits(ids, lengths, &weights);
    return weights;
  });
  ASSERT_TRUE(student.has_attention_source());
  const Tensor ids = Tensor::from_vector(std::vector<int32_t>{3, 9, 4, 12, 5, 7, 0, 0}, {2, 4});
  const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{4, 2}, {2});
  Tensor m_weights, used;
  {
    autodiff::NoGradGuard no_grad;
    m.logits(ids, lengths, &m_weights);
  }
  const Tensor logits = student.logits(ids, lengths, &used);
  EXPECT_EQ(used.to_vector(), m_weights.to_vector());
  // Not uniform: the test would pass trivially if M's weights were 1/n.
  EXPECT_GT(std::fabs(m_weights.f32()[0] - 0.25f), 1e-4f);
  // The context by hand: Σ_s a_s tanh(W e_s + b), then the output layer.
  const int64_t E = c.state_size(), S = 4;
  const std::vector<float> W = student.projection->weight.to_vector(), bias = student.projection->bias.to_vector();
  const std::vector<float> table = student.embedding.weight.to_vector(), Wo = student.out.weight.to_vector(),
                           bo = student.out.bias.to_vector();
  for (int64_t b = 0; b < 2; ++b) {
    std::vector<double> context(E, 0.0);
    for (int64_t s = 0; s < lengths.i32()[b]; ++s) {
      const int32_t id = ids.i32()[b * S + s];
      for (int64_t e = 0; e < E; ++e) {
        double z = bias[e];
        for (int64_t k = 0; k < c.emb; ++k) z += W[e * c.emb + k] * table[id * c.emb + k];
        context[e] += m_weights.f32()[b * S + s] * std::tanh(z);
      }
    }
    for (int64_t k = 0; k < c.classes; ++k) {
      double y = bo[k];
      for (int64_t e = 0; e < E; ++e) y += Wo[k * E + e] * context[e];
      EXPECT_NEAR(logits.f32()[b * c.classes + k], y, 1e-5 * (1.0 + std::fabs(y)));
    }
  }
  // Training reaches the student's projection; M has no gradient.
  student.zero_grad();
  m.zero_grad();
  backward(sum(logits));
  const Tensor gp = student.projection->weight.grad();
  EXPECT_GT(sum(mul(gp, gp)).item(), 0.0f);
  for (const auto& [name, p] : m.named_parameters()) {
    const Tensor g = p.grad();
    if (g.defined()) {
      EXPECT_EQ(sum(mul(g, g)).item(), 0.0f) << name;
    }
  }
}

}  // namespace
}  // namespace attn::models
