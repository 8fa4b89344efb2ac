#include "attn/models/attention_classifier.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "attn/autodiff/tape.h"
#include "attn/decode/classify.h"
#include "attn/ops/loss.h"
#include "attn/train/classifier_trainer.h"
#include "attn/train/optimizer.h"
#include "padded_ids.h"
#include "test_support.h"

namespace attn::models {
namespace {
using testing::ids_of;
using testing::tensors_close;

AttnClassifierConfig small_config(const std::string& encoder = "lstm", const std::string& pooling = "additive") {
  AttnClassifierConfig c;
  c.vocab = 20;
  c.emb = 6;
  c.hidden = 4;
  c.attention = 5;
  c.dropout = 0.0f;
  c.encoder = parse_pooling_encoder(encoder);
  c.pooling = parse_pooling_score(pooling);
  c.seed = 3;
  return c;
}

const std::vector<std::pair<std::string, std::string>> kVariants = {
    {"lstm", "additive"}, {"lstm", "dot"}, {"average", "additive"}, {"average", "dot"}};

TEST(AttnClassifier, ParameterNamesPerVariant) {
  auto names_of = [](const AttnClassifier& m) {
    std::vector<std::string> names;
    for (const auto& [name, t] : const_cast<AttnClassifier&>(m).named_parameters()) names.push_back(name);
    return names;
  };
  auto has = [](const std::vector<std::string>& names, const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  AttnClassifier lstm_additive(small_config("lstm", "additive"));
  auto a = names_of(lstm_additive);
  EXPECT_TRUE(has(a, "rnn.weight_hh_l0_reverse"));
  EXPECT_TRUE(has(a, "pooling.w") && has(a, "pooling.bias") && has(a, "pooling.v"));
  EXPECT_FALSE(has(a, "pooling.query") || has(a, "projection.weight"));
  EXPECT_EQ(lstm_additive.pool_w.shape(), (Shape{5, 8}));
  AttnClassifier average_dot(small_config("average", "dot"));
  auto d = names_of(average_dot);
  EXPECT_TRUE(has(d, "projection.weight") && has(d, "pooling.query"));
  EXPECT_FALSE(has(d, "rnn.weight_ih_l0") || has(d, "pooling.v"));
  EXPECT_EQ(d.back(), "out.bias");
}

TEST(AttnClassifier, AttentionIsADistributionOverRealTokensAndPaddingIsInert) {
  for (const auto& [encoder, pooling] : kVariants) {
    SCOPED_TRACE(encoder + "/" + pooling);
    AttnClassifier model(small_config(encoder, pooling));
    model.eval();
    Tensor l1, l2;
    Tensor alone = ids_of({{3, 4, 5, 9}}, 4, &l1);
    Tensor padded = ids_of({{1, 2}, {3, 4, 5, 9}, {6, 7, 8, 10, 11, 12, 13}}, 7, &l2);
    Tensor a1, a2;
    Tensor y1 = model.logits(alone, l1, &a1);
    Tensor y2 = model.logits(padded, l2, &a2);
    EXPECT_TRUE(tensors_close(y2.select(1).reshape({1, 2}), y1, 1e-5f, 1e-4f));
    const auto w = a2.to_vector();
    for (int s = 0; s < 4; ++s) EXPECT_NEAR(w[7 + s], a1.to_vector()[s], 1e-6);
    for (int s = 4; s < 7; ++s) EXPECT_EQ(w[7 + s], 0.0f);
    double total = 0.0;
    for (int s = 0; s < 7; ++s) total += w[14 + s];
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
}

// The pooling with a sparse normaliser: its weights are the normaliser of the softmax model's
// log-weights (the same parameters: a normaliser adds none), padding stays inert, and the
// configuration stores it (and refuses it with uniform pooling).
TEST(AttnClassifier, SparseNormalizerPooling) {
  for (const auto& [encoder, pooling] : kVariants) {
    SCOPED_TRACE(encoder + "/" + pooling);
    AttnClassifier softmax_model(small_config(encoder, pooling));
    AttnClassifierConfig c = small_config(encoder, pooling);
    c.normalizer = {NormalizerKind::sparsemax};
    AttnClassifier sparse_model(c);
    softmax_model.eval();
    sparse_model.eval();
    Tensor lengths;
    const Tensor ids = ids_of({{1, 2}, {3, 4, 5, 9}, {6, 7, 8, 10, 11, 12, 13}}, 7, &lengths);
    Tensor soft, sparse;
    softmax_model.logits(ids, lengths, &soft);
    sparse_model.logits(ids, lengths, &sparse);
    std::vector<float> log_w = soft.to_vector();
    for (float& w : log_w) w = w > 0.0f ? std::log(w) : 0.0f;
    const Tensor expected = sparsemax(Tensor::from_vector(log_w, {3, 7}), testing::ragged_mask({3, 7}, {2, 4, 7}));
    EXPECT_TRUE(tensors_close(sparse, expected, 1e-5f, 1e-4f));
    const nlohmann::json j = c.to_json();
    EXPECT_EQ(j.at("normalizer"), "sparsemax");
    EXPECT_EQ(AttnClassifierConfig::from_json(j).normalizer, c.normalizer);
  }
  EXPECT_FALSE(small_config().to_json().contains("normalizer"));  // older checkpoints' form
  AttnClassifierConfig uniform = small_config("average", "uniform");
  uniform.normalizer = {NormalizerKind::entmax15};
  EXPECT_THROW_MSG(uniform.validate(), ValueError, "the entmax15 normaliser needs pooling additive or dot");
}

TEST(AttnClassifier, PoolWithOwnWeightsReproducesTheLogits) {
  for (const auto& [encoder, pooling] : kVariants) {
    SCOPED_TRACE(encoder + "/" + pooling);
    AttnClassifier model(small_config(encoder, pooling));
    model.eval();
    Tensor lengths;
    Tensor ids = ids_of({{3, 4, 5}, {6, 7, 8, 9, 10}}, 5, &lengths);
    Tensor states = model.encode(model.embed(ids), lengths);
    AttentionPooling p = model.pool(states, lengths);
    EXPECT_TRUE(tensors_close(model.pool_with(p.weights, states), p.context, 1e-6f, 1e-5f));
    EXPECT_TRUE(
        tensors_close(model.output(model.pool_with(p.weights, states)), model.logits(ids, lengths), 1e-6f, 1e-5f));
  }
}

// The composition (embeddings → encoder → pooling → linear) against central differences, for
// the embeddings and every pooling parameter, in each variant.
TEST(AttnClassifier, GradcheckOfTheComposition) {
  for (const auto& [encoder, pooling] : kVariants) {
    SCOPED_TRACE(encoder + "/" + pooling);
    AttnClassifier model(small_config(encoder, pooling));
    Tensor lengths;
    Tensor ids = ids_of({{3, 4, 5}, {6, 7, 8, 9}}, 4, &lengths);
    Tensor emb;
    {
      autodiff::NoGradGuard no_grad;
      emb = model.embed(ids).clone();
    }
    emb.set_requires_grad(true);
    std::vector<Tensor> inputs = {emb};
    if (pooling == "additive") {
      inputs.push_back(model.pool_w);
      inputs.push_back(model.pool_bias);
      inputs.push_back(model.pool_v);
    } else {
      inputs.push_back(model.pool_query);
    }
    auto fn = [&](const std::vector<Tensor>& x) {
      const Tensor states = model.encode(x[0], lengths);
      return model.output(model.pool(states, lengths).context);
    };
    EXPECT_TRUE(testing::gradcheck(fn, inputs));
  }
}

TEST(AttnClassifier, LearnsWhetherAWordOccursAndAttendsToIt) {
  for (const auto& [encoder, pooling] : kVariants) {
    SCOPED_TRACE(encoder + "/" + pooling);
    AttnClassifierConfig c = small_config(encoder, pooling);
    c.hidden = 10;
    c.emb = 10;
    AttnClassifier model(c);
    train::Adam adam(model.parameters(), {.lr = 0.02f});
    Rng rng(5);
    auto sentence = [&] {
      const int len = 2 + static_cast<int>(rng.below(7));
      std::vector<int32_t> row;
      for (int s = 0; s < len; ++s) row.push_back(6 + static_cast<int32_t>(rng.below(14)));
      const bool positive = rng.below(2) == 1;
      row[rng.below(static_cast<uint64_t>(len))] = positive ? 5 : 4;  // the cue: 5 or 4
      return std::pair{row, int32_t{positive}};
    };
    auto make = [&](int64_t B, Tensor* lengths, Tensor* labels) {
      return testing::labelled_batch(B, 8, sentence, lengths, labels);
    };
    for (int step = 0; step < 150; ++step) {
      Tensor lengths, labels;
      Tensor ids = make(32, &lengths, &labels);
      backward(cross_entropy(model.logits(ids, lengths), labels));
      adam.step();
      adam.zero_grad();
    }
    model.eval();
    autodiff::NoGradGuard no_grad;
    Tensor lengths, labels, attention;
    Tensor ids = make(200, &lengths, &labels);
    Tensor logits = model.logits(ids, lengths, &attention);
    int right = 0, cue_on_top = 0;
    for (int b = 0; b < 200; ++b) {
      right += (logits.f32()[2 * b + 1] > logits.f32()[2 * b]) == (labels.i32()[b] == 1);
      const float* a = attention.f32() + b * 8;
      const int top = static_cast<int>(std::max_element(a, a + lengths.i32()[b]) - a);
      const int32_t word = ids.i32()[b * 8 + top];
      cue_on_top += word == 4 || word == 5;
    }
    EXPECT_GT(right, 190);
    // Chance is about 1 in 5 (40 of 200). The average encoder sees the cue only at its own
    // position, so its attention must find it; the LSTM carries the cue to its neighbours, and
    // its attention is free to spread.
    EXPECT_GT(cue_on_top, encoder == "average" ? 170 : 100) << cue_on_top << " of 200 sentences attend most to the cue";
  }
}

TEST(AttnClassifier, CheckpointRoundTrip) {
  for (const auto& [encoder, pooling] : kVariants) {
    SCOPED_TRACE(encoder + "/" + pooling);
    std::vector<std::string> words;
    for (int w = 0; w < 18; ++w) words.push_back("w" + std::to_string(w));
    std::string text;
    for (const auto& w : words) text += w + " ";
    const data::Vocab vocab = data::Vocab::build({text});
    AttnClassifierConfig c = small_config(encoder, pooling);
    c.vocab = vocab.size();
    AttnClassifier model(c);
    model.eval();
    const std::string path =
        (std::filesystem::temp_directory_path() / ("attn_attn_cls_" + encoder + pooling + ".safetensors")).string();
    train::save_classifier(path, model, vocab, 7, 0.5);
    decode::LoadedClassifier loaded = decode::load_classifier(path);
    std::filesystem::remove(path);
    EXPECT_EQ(loaded.model->kind(), "bilstm-attn");
    EXPECT_EQ(loaded.model->config_json(), model.config_json());
    Tensor lengths;
    Tensor ids = ids_of({{3, 4, 5}, {6, 7, 8, 9, 10}}, 5, &lengths);
    Tensor a1, a2;
    Tensor y1 = model.logits(ids, lengths, &a1);
    Tensor y2 = loaded.model->logits(ids, lengths, &a2);
    EXPECT_TRUE(tensors_close(y2, y1, 0.0f, 0.0f));
    EXPECT_TRUE(tensors_close(a2, a1, 0.0f, 0.0f));
  }
}

TEST(AttnClassifier, ConfigJsonAndErrors) {
  AttnClassifierConfig c = small_config("average", "dot");
  nlohmann::json j = c.to_json();
  EXPECT_EQ(j.at("kind"), "bilstm-attn");
  EXPECT_EQ(AttnClassifierConfig::from_json(j).to_json(), j);
  EXPECT_EQ(make_classifier("bilstm-attn", j)->kind(), "bilstm-attn");
  EXPECT_THROW_MSG(AttnClassifierConfig::from_json({{"vocab", 50}, {"encoder", "gru"}}), ValueError,
                   "'encoder' must be lstm or average, got 'gru'");
  EXPECT_THROW_MSG(AttnClassifierConfig::from_json({{"vocab", 50}, {"pooling", "max"}}), ValueError,
                   "'pooling' must be additive, dot or uniform, got 'max'");
  EXPECT_THROW_MSG(AttnClassifierConfig::from_json({{"vocab", 50}, {"pooling", 3}}), ValueError,
                   "'pooling' must be a string, got 3");
  EXPECT_THROW_MSG(AttnClassifierConfig::from_json({{"vocab", 50}, {"hiden", 3}}), ValueError, "unknown key 'hiden'");
  EXPECT_THROW_MSG(AttnClassifierConfig::from_json({{"kind", "bilstm"}, {"vocab", 50}}), ValueError,
                   "'kind' is 'bilstm', expected 'bilstm-attn'");
  EXPECT_THROW_MSG(make_classifier("cnn", j), ValueError, "(valid: bilstm, bilstm-attn, transformer-cls)");
  AttnClassifier model(small_config());
  EXPECT_THROW_MSG(
      model.logits(Tensor::zeros({2, 3}, DType::i32), Tensor::from_vector(std::vector<int32_t>{1, 4}, {2})), ValueError,
      "AttnClassifier: 'lengths' value 4 at batch index 1 is out of range [1, S=3]");
  EXPECT_THROW_MSG(model.encode(Tensor::zeros({1, 3, 5}), Tensor::from_vector(std::vector<int32_t>{3}, {1})),
                   ShapeError, "AttnClassifier: 'embeddings' expected");
  EXPECT_THROW_MSG(model.pool_with(Tensor::zeros({1, 2}), Tensor::zeros({1, 3, 8})), ShapeError,
                   "AttnClassifier::pool_with: 'weights' expected");
}

}  // namespace
}  // namespace attn::models
