#include "attn/models/classifier.h"

#include <cmath>

#include "attn/autodiff/tape.h"
#include "attn/ops/loss.h"
#include "attn/train/optimizer.h"
#include "padded_ids.h"
#include "test_support.h"

namespace attn::models {
namespace {
using testing::ids_of;
using testing::tensors_close;

BiLstmConfig small_config(int64_t emb = 8, int64_t hidden = 6) {
  return BiLstmConfig{.vocab = 20, .emb = emb, .hidden = hidden, .layers = 1, .dropout = 0.0f, .classes = 2, .seed = 3};
}

TEST(BiLstmClassifier, ShapesAndParameterNames) {
  BiLstmConfig c = small_config();
  c.layers = 2;
  BiLstmClassifier model(c);
  Tensor lengths;
  Tensor ids = ids_of({{3, 4, 5}, {6}, {7, 8}}, 3, &lengths);
  Tensor logits = model.logits(ids, lengths);
  EXPECT_EQ(logits.shape(), (Shape{3, 2}));
  std::vector<std::string> names;
  for (const auto& [name, t] : model.named_parameters()) names.push_back(name);
  EXPECT_EQ(names.front(), "embedding.weight");
  EXPECT_NE(std::find(names.begin(), names.end(), "rnn.weight_hh_l1_reverse"), names.end());
  EXPECT_EQ(names.back(), "out.bias");
  EXPECT_EQ(model.out.weight.shape(), (Shape{2, 4 * 6}));
  // The padding row of the embedding starts at zero (torch's padding_idx).
  for (int64_t d = 0; d < 8; ++d) EXPECT_EQ(model.embedding.weight.f32()[d], 0.0f);
}

TEST(BiLstmClassifier, PaddingDoesNotChangeResults) {
  BiLstmConfig c = small_config();
  c.dropout = 0.3f;  // eval mode switches it off
  BiLstmClassifier model(c);
  model.eval();
  Tensor l1, l2;
  Tensor alone = ids_of({{3, 4, 5, 9}}, 4, &l1);
  Tensor padded = ids_of({{1, 2}, {3, 4, 5, 9}, {6, 7, 8, 10, 11, 12, 13}}, 9, &l2);
  Tensor a = model.logits(alone, l1);
  Tensor b = model.logits(padded, l2).select(1).reshape({1, 2});
  EXPECT_TRUE(tensors_close(b, a, 1e-5f, 1e-4f));
}

TEST(BiLstmClassifier, AttentionCoversRealTokensOnly) {
  BiLstmClassifier model(small_config());
  model.eval();
  Tensor lengths;
  Tensor ids = ids_of({{3, 4, 5}, {6, 7, 8, 9, 10}}, 5, &lengths);
  Tensor attention;
  model.logits(ids, lengths, &attention);
  ASSERT_TRUE(attention.defined());
  EXPECT_EQ(attention.shape(), (Shape{2, 5}));
  const auto a = attention.to_vector();
  EXPECT_EQ(a[3], 0.0f);
  EXPECT_EQ(a[4], 0.0f);
  for (int b = 0; b < 2; ++b) {
    double total = 0.0;
    for (int s = 0; s < 5; ++s) {
      EXPECT_GE(a[static_cast<size_t>(b * 5 + s)], 0.0f);
      total += a[static_cast<size_t>(b * 5 + s)];
    }
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
}

TEST(BiLstmClassifier, LearnsWhetherAWordOccurs) {
  // Label 1 iff word 5 occurs anywhere in the sentence (lengths 1..8).
  BiLstmClassifier model(small_config(12, 12));
  train::Adam adam(model.parameters(), {.lr = 0.02f});
  Rng rng(5);
  auto sentence = [&] {
    const int len = 1 + static_cast<int>(rng.below(8));
    std::vector<int32_t> row;
    for (int s = 0; s < len; ++s) {
      int32_t w = 2 + static_cast<int32_t>(rng.below(18));
      if (w == 5) w = 6;
      row.push_back(w);
    }
    const bool positive = rng.below(2) == 1;
    if (positive) row[rng.below(static_cast<uint64_t>(len))] = 5;
    return std::pair{row, int32_t{positive}};
  };
  auto make = [&](int64_t B, Tensor* lengths, Tensor* labels) {
    return testing::labelled_batch(B, 8, sentence, lengths, labels);
  };
  double first_loss = 0.0, last_loss = 0.0;
  for (int step = 0; step < 150; ++step) {
    Tensor lengths, labels;
    Tensor ids = make(32, &lengths, &labels);
    Tensor loss = cross_entropy(model.logits(ids, lengths), labels);
    if (step == 0) first_loss = loss.item();
    last_loss = loss.item();
    backward(loss);
    adam.step();
    adam.zero_grad();
  }
  model.eval();
  Tensor lengths, labels;
  Tensor ids = make(200, &lengths, &labels);
  Tensor logits = model.logits(ids, lengths);
  int right = 0;
  for (int b = 0; b < 200; ++b) right += (logits.f32()[2 * b + 1] > logits.f32()[2 * b]) == (labels.i32()[b] == 1);
  EXPECT_GT(right, 190) << "accuracy " << right / 2.0 << " %, loss " << first_loss << " -> " << last_loss;
  EXPECT_LT(last_loss, 0.5 * first_loss);
}

TEST(BiLstmClassifier, ConfigJsonAndErrors) {
  BiLstmConfig c = small_config();
  nlohmann::json j = c.to_json();
  EXPECT_EQ(j.at("kind"), "bilstm");
  BiLstmConfig back = BiLstmConfig::from_json(j);
  EXPECT_EQ(back.to_json(), j);
  EXPECT_EQ(BiLstmConfig::from_json({{"vocab", 50}}).hidden, 150);
  EXPECT_THROW_MSG(BiLstmConfig::from_json({{"vocab", 50}, {"hiden", 3}}), ValueError, "unknown key 'hiden'");
  EXPECT_THROW_MSG(BiLstmConfig::from_json({{"vocab", 50}, {"hidden", "big"}}), ValueError,
                   "'hidden' must be an integer, got \"big\"");
  EXPECT_THROW_MSG(BiLstmConfig::from_json({{"vocab", 50}, {"dropout", 1.0}}), ValueError,
                   "'dropout' must be in [0, 1), got 1.0");
  EXPECT_THROW_MSG(BiLstmConfig::from_json({{"vocab", 2}}), ValueError, "'vocab' must be >= 3");
  EXPECT_THROW_MSG(BiLstmConfig::from_json({{"kind", "gru"}, {"vocab", 50}}), ValueError,
                   "'kind' is 'gru', expected 'bilstm'");
  EXPECT_THROW_MSG(BiLstmConfig::from_json({{"vocab", 50}, {"classes", 1}}), ValueError,
                   "'classes' must be >= 2, got 1");
}

TEST(BiLstmClassifier, InputErrors) {
  BiLstmClassifier model(small_config());
  Tensor ids = Tensor::zeros({2, 3}, DType::i32);
  EXPECT_THROW_MSG(model.logits(ids, Tensor::from_vector(std::vector<int32_t>{1, 4}, {2})), ValueError,
                   "BiLstmClassifier: 'lengths' value 4 at batch index 1 is out of range [1, S=3]");
  EXPECT_THROW_MSG(model.logits(ids, Tensor::from_vector(std::vector<int32_t>{0, 1}, {2})), ValueError,
                   "'lengths' value 0 at batch index 0");
  EXPECT_THROW_MSG(model.logits(ids, Tensor::from_vector(std::vector<int32_t>{1}, {1})), ShapeError,
                   "BiLstmClassifier: 'lengths' expected (B=2), got (1)");
  Tensor bad = Tensor::from_vector(std::vector<int32_t>{1, 25}, {1, 2});
  EXPECT_THROW(model.logits(bad, Tensor::from_vector(std::vector<int32_t>{2}, {1})), ValueError);
}

TEST(Classifier, FactoryBuildsKindsAndRejectsUnknown) {
  nlohmann::json cfg = classifier_config_with_vocab("bilstm", {{"emb", 4}, {"hidden", 3}}, 30, 2);
  EXPECT_EQ(cfg.at("vocab"), 30);
  std::unique_ptr<TextClassifier> model = make_classifier("bilstm", cfg);
  EXPECT_EQ(model->kind(), "bilstm");
  EXPECT_EQ(model->vocab_size(), 30);
  EXPECT_EQ(model->classes(), 2);
  EXPECT_EQ(model->config_json().at("hidden"), 3);
  EXPECT_EQ(classifier_config_with_vocab("transformer-cls", nlohmann::json::object(), 30, 2).at("src_vocab"), 30);
  EXPECT_THROW_MSG(make_classifier("cnn", cfg), ValueError, "unknown classifier kind 'cnn' (valid: bilstm");
}

}  // namespace
}  // namespace attn::models
