// Transformer models: TransformerSeq2Seq, TransformerLM, TransformerClassifier, TransformerConfig.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/data/tasks.h"
#include "attn/models/transformer.h"
#include "attn/ops/loss.h"
#include "attn/ops/softmax.h"
#include "attn/train/optimizer.h"
#include "beam_support.h"
#include "test_support.h"
#include "tolerances.h"

namespace attn::models {
namespace {

using attn::testing::gradcheck;
using attn::testing::kOpTol;  // the same computation on two paths (padding, cache vs full)
using attn::testing::random_ids;
using attn::testing::tensors_close;

TransformerConfig tiny_config() {
  TransformerConfig c;
  c.src_vocab = data::kVocabSize;
  c.tgt_vocab = data::kVocabSize;
  c.d_model = 16;
  c.heads = 2;
  c.ffn = 32;
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  c.dropout = 0.0f;
  c.max_len = 32;
  c.seed = 7;
  return c;
}

// The other corner of the options: post-LN, learned positions, gelu, shared embeddings,
// an untied generator.
TransformerConfig tiny_config_variant() {
  TransformerConfig c = tiny_config();
  c.norm_first = false;
  c.positions = PositionKind::learned;
  c.activation = FfnActivation::gelu;
  c.share_embeddings = true;
  c.tie_output = false;
  c.seed = 11;
  return c;
}

std::set<std::string> parameter_names(const nn::Module& m) {
  std::set<std::string> names;
  for (const auto& [name, t] : m.named_parameters()) names.insert(name);
  return names;
}

// A batch of sources with ragged lengths (copy targets).
data::Batch ragged_batch() { return data::make_batch(data::TaskKind::copy, {{3, 4, 5, 6, 7}, {8, 9}, {10, 11, 12}}); }

// tgt_in (B, T) = BOS + prefix[b] for a teacher-forced recomputation.
data::Batch with_prefix(const data::Batch& src, const std::vector<std::vector<int32_t>>& prefix) {
  const int64_t B = src.src.dim(0), T = static_cast<int64_t>(prefix[0].size()) + 1;
  std::vector<int32_t> tgt;
  for (int64_t b = 0; b < B; ++b) {
    tgt.push_back(data::kBos);
    tgt.insert(tgt.end(), prefix[static_cast<size_t>(b)].begin(), prefix[static_cast<size_t>(b)].end());
  }
  data::Batch out = src;
  out.tgt_in = Tensor::from_vector(tgt, {B, T});
  out.tgt_out = Tensor::from_vector(std::vector<int32_t>(tgt.size(), data::kPad), {B, T});
  return out;
}

// Greedy decoding by recomputing the full teacher-forced logits every step: per row, the
// tokens up to and including the first EOS, and the last layer's head-mean cross-attention.
DecodeResult greedy_by_recompute(TransformerSeq2Seq& model, const data::Batch& batch, int max_len) {
  const int64_t B = batch.src.dim(0), S = batch.src.dim(1), V = model.config().tgt_vocab;
  std::vector<std::vector<int32_t>> prefix(static_cast<size_t>(B));
  for (int t = 0; t < max_len; ++t) {
    const data::Batch b = with_prefix(batch, prefix);
    const Tensor logits = model.logits(b);  // (B, t + 1, V)
    for (int64_t r = 0; r < B; ++r) {
      const float* row = logits.f32() + (r * (t + 1) + t) * V;
      prefix[static_cast<size_t>(r)].push_back(static_cast<int32_t>(std::max_element(row, row + V) - row));
    }
  }
  const data::Batch full = with_prefix(batch, prefix);
  const Tensor w = model.cross_attention(full).back();  // (B, H, T, S)
  const int64_t H = w.dim(1), T = w.dim(2);
  DecodeResult r;
  r.tokens.resize(static_cast<size_t>(B));
  r.attention.resize(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < max_len; ++t) {
      const int32_t y = prefix[static_cast<size_t>(b)][static_cast<size_t>(t)];
      r.tokens[static_cast<size_t>(b)].push_back(y);
      std::vector<float> a(static_cast<size_t>(S), 0.0f);
      for (int64_t h = 0; h < H; ++h)
        for (int64_t s = 0; s < S; ++s) a[static_cast<size_t>(s)] += w.f32()[((b * H + h) * T + t) * S + s] / H;
      r.attention[static_cast<size_t>(b)].push_back(a);
      if (y == data::kEos) break;
    }
  }
  return r;
}

void expect_attention_near(const std::vector<std::vector<float>>& actual,
                           const std::vector<std::vector<float>>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t t = 0; t < actual.size(); ++t) {
    ASSERT_EQ(actual[t].size(), expected[t].size()) << what << " step " << t;
    for (size_t s = 0; s < actual[t].size(); ++s)
      EXPECT_NEAR(actual[t][s], expected[t][s], 1e-5f) << what << " step " << t << " source " << s;
  }
}

// Source row `row` of `batch` (S positions, its length) with tgt_in = BOS + tokens[:-1].
data::Batch teacher_forced_row(const data::Batch& batch, int64_t row, const std::vector<int32_t>& tokens) {
  data::Batch one;
  const int64_t S = batch.src.dim(1);
  std::vector<int32_t> src(batch.src.i32() + row * S, batch.src.i32() + (row + 1) * S);
  one.src = Tensor::from_vector(src, {1, S});
  one.src_lengths = Tensor::from_vector(std::vector<int32_t>{batch.src_lengths.i32()[row]}, {1});
  return with_prefix(one, {std::vector<int32_t>(tokens.begin(), tokens.end() - 1)});
}

// Sum of the log-probabilities the model gives `tokens` for source row `row` of `batch`.
double sequence_log_prob(TransformerSeq2Seq& model, const data::Batch& batch, int64_t row,
                         const std::vector<int32_t>& tokens) {
  autodiff::NoGradGuard no_grad;
  const Tensor logp = log_softmax(model.logits(teacher_forced_row(batch, row, tokens)));  // (1, T, V)
  const int64_t V = logp.dim(2);
  double sum = 0.0;
  for (size_t t = 0; t < tokens.size(); ++t) sum += logp.f32()[static_cast<int64_t>(t) * V + tokens[t]];
  return sum;
}

// ---- TransformerConfig ----------------------------------------------------------------------------

TEST(TransformerConfig, JsonRoundTripKeepsEveryField) {
  TransformerConfig c = tiny_config_variant();
  c.classes = 5;
  c.ffn = 48;
  c.dropout = 0.25f;
  c.max_len = 77;
  c.seed = 123456789012345ULL;
  const nlohmann::json j = c.to_json();
  EXPECT_EQ(j.size(), 16u) << j.dump();
  const TransformerConfig d = TransformerConfig::from_json(j);
  EXPECT_EQ(d.to_json(), j);
  EXPECT_EQ(d.src_vocab, c.src_vocab);
  EXPECT_EQ(d.classes, 5);
  EXPECT_EQ(d.ffn, 48);
  EXPECT_FLOAT_EQ(d.dropout, 0.25f);
  EXPECT_FALSE(d.norm_first);
  EXPECT_EQ(d.activation, FfnActivation::gelu);
  EXPECT_EQ(d.positions, PositionKind::learned);
  EXPECT_EQ(d.to_json().at("activation"), "gelu");  // the JSON keeps the names
  EXPECT_EQ(d.to_json().at("positions"), "learned");
  EXPECT_EQ(d.max_len, 77);
  EXPECT_TRUE(d.share_embeddings);
  EXPECT_FALSE(d.tie_output);
  EXPECT_EQ(d.seed, 123456789012345ULL);
  // A subset keeps the defaults for the rest.
  const TransformerConfig e = TransformerConfig::from_json(nlohmann::json{{"d_model", 32}, {"heads", 8}});
  EXPECT_EQ(e.d_model, 32);
  EXPECT_EQ(e.heads, 8);
  EXPECT_EQ(e.ffn, TransformerConfig{}.ffn);
  EXPECT_EQ(e.layer_options().d_model, 32);
  EXPECT_EQ(e.layer_options().heads, 8);
}

TEST(TransformerConfig, FromJsonRejectsUnknownKeysAndWrongTypes) {
  EXPECT_THROW_MSG(TransformerConfig::from_json(nlohmann::json{{"d_modle", 16}}), ValueError,
                   "transformer config: unknown key 'd_modle' (valid: src_vocab");
  EXPECT_THROW_MSG(TransformerConfig::from_json(nlohmann::json{{"d_model", "16"}}), ValueError,
                   "transformer config: 'd_model' must be an integer, got \"16\"");
  EXPECT_THROW_MSG(TransformerConfig::from_json(nlohmann::json{{"encoder_layers", 1.5}}), ValueError,
                   "'encoder_layers' must be an integer, got 1.5");
  EXPECT_THROW_MSG(TransformerConfig::from_json(nlohmann::json{{"norm_first", 1}}), ValueError,
                   "'norm_first' must be a boolean, got 1");
  EXPECT_THROW_MSG(TransformerConfig::from_json(nlohmann::json{{"dropout", "x"}}), ValueError,
                   "'dropout' must be a number");
  EXPECT_THROW_MSG(TransformerConfig::from_json(nlohmann::json{{"seed", -1}}), ValueError,
                   "'seed' must be a non-negative integer, got -1");
  EXPECT_THROW_MSG(TransformerConfig::from_json(nlohmann::json{{"activation", 3}}), ValueError,
                   "'activation' must be a string");
  EXPECT_THROW_MSG(TransformerConfig::from_json(nlohmann::json::array()), ValueError,
                   "transformer config: expected a JSON object, got array");
  // from_json validates.
  EXPECT_THROW_MSG(TransformerConfig::from_json(nlohmann::json{{"d_model", 10}, {"heads", 4}}), ValueError,
                   "d_model=10 is not divisible by heads=4");
}

TEST(TransformerConfig, ValidateNamesTheField) {
  auto bad = [](auto change) {
    TransformerConfig c = tiny_config();
    change(c);
    return c;
  };
  EXPECT_THROW_MSG(bad([](TransformerConfig& c) { c.dropout = 1.0f; }).validate(), ValueError,
                   "dropout must be in [0, 1), got 1");
  EXPECT_THROW_MSG(parse_ffn_activation("tanh"), ValueError, "unknown activation 'tanh' (valid: relu, gelu)");
  EXPECT_THROW_MSG(parse_position_kind("rope"), ValueError, "unknown positions 'rope' (valid: sinusoidal, learned)");
  EXPECT_THROW_MSG(TransformerConfig::from_json(nlohmann::json{{"activation", "tanh"}}), ValueError,
                   "unknown activation 'tanh' (valid: relu, gelu)");
  EXPECT_THROW_MSG(TransformerConfig::from_json(nlohmann::json{{"positions", "rope"}}), ValueError,
                   "unknown positions 'rope' (valid: sinusoidal, learned)");
  EXPECT_THROW_MSG(bad([](TransformerConfig& c) { c.d_model = 0; }).validate(), ValueError,
                   "d_model must be >= 1, got 0");
  EXPECT_THROW_MSG(bad([](TransformerConfig& c) { c.max_len = 0; }).validate(), ValueError,
                   "max_len must be >= 1, got 0");
  EXPECT_THROW_MSG(bad([](TransformerConfig& c) {
                     c.share_embeddings = true;
                     c.src_vocab = 10;
                   }).validate(),
                   ValueError, "share_embeddings needs src_vocab == tgt_vocab, got src_vocab=10 and tgt_vocab=32");
  EXPECT_NO_THROW(tiny_config().validate());
  // Model-specific requirements.
  EXPECT_THROW_MSG(TransformerSeq2Seq(bad([](TransformerConfig& c) { c.tgt_vocab = 2; })), ValueError,
                   "TransformerSeq2Seq: tgt_vocab must be > 2");
  EXPECT_THROW_MSG(TransformerLM(bad([](TransformerConfig& c) { c.decoder_layers = 0; })), ValueError,
                   "TransformerLM: decoder_layers must be >= 1, got 0");
  EXPECT_THROW_MSG(TransformerClassifier(bad([](TransformerConfig& c) { c.src_vocab = 0; })), ValueError,
                   "TransformerClassifier: src_vocab must be >= 1, got 0");
}

// ---- TransformerSeq2Seq ---------------------------------------------------------------------------

TEST(TransformerSeq2Seq, ShapesAndParameterNames) {
  TransformerSeq2Seq model(tiny_config());
  const data::Batch batch = ragged_batch();
  const int64_t B = 3, S = 5, T = 6, D = 16, V = 32;
  EXPECT_EQ(model.encode(batch.src, batch.src_lengths).shape(), (Shape{B, S, D}));
  EXPECT_EQ(model.logits(batch).shape(), (Shape{B, T, V}));
  const Tensor loss = model.loss(batch);
  EXPECT_EQ(loss.shape(), Shape{});
  // An untrained model is near the uniform distribution: loss ≈ log V.
  EXPECT_NEAR(loss.item(), std::log(32.0f), 1.5f);
  const std::vector<Tensor> cross = model.cross_attention(batch);
  ASSERT_EQ(cross.size(), 2u);
  EXPECT_EQ(cross[1].shape(), (Shape{B, 2, T, S}));
  EXPECT_FALSE(cross[1].requires_grad());

  const std::set<std::string> names = parameter_names(model);
  for (const char* n :
       {"src_embedding.weight", "tgt_embedding.weight", "encoder.layers.0.self_attn.in_proj_weight",
        "encoder.layers.1.linear2.bias", "encoder.norm.weight", "decoder.layers.0.multihead_attn.in_proj_weight",
        "decoder.layers.1.norm3.weight", "decoder.norm.bias"})
    EXPECT_TRUE(names.count(n)) << "missing " << n;
  EXPECT_FALSE(names.count("generator.weight"));  // tied to tgt_embedding
  EXPECT_FALSE(names.count("positions.weight"));  // sinusoidal

  TransformerSeq2Seq variant(tiny_config_variant());
  const std::set<std::string> vnames = parameter_names(variant);
  for (const char* n : {"embedding.weight", "positions.weight", "generator.weight", "generator.bias"})
    EXPECT_TRUE(vnames.count(n)) << "missing " << n;
  EXPECT_FALSE(vnames.count("src_embedding.weight"));
  EXPECT_FALSE(vnames.count("encoder.norm.weight"));  // post-LN: no final norm
  EXPECT_EQ(variant.logits(batch).shape(), (Shape{B, T, V}));
}

TEST(TransformerSeq2Seq, LossGradientsReachEveryParameter) {
  TransformerSeq2Seq model(tiny_config_variant());
  backward(model.loss(ragged_batch(), 0.1f));
  for (const auto& [name, p] : model.named_parameters()) {
    ASSERT_TRUE(p.has_grad()) << name;
    double norm = 0.0;
    for (float g : p.grad().to_vector()) norm += static_cast<double>(g) * g;
    EXPECT_GT(norm, 0.0) << name;
    EXPECT_TRUE(std::isfinite(norm)) << name;
  }
}

TEST(TransformerSeq2Seq, PaddingDoesNotChangeARow) {
  // Row 1 alone vs inside the ragged batch (padded source and target).
  TransformerSeq2Seq model(tiny_config());
  model.eval();
  const data::Batch batch = ragged_batch();
  const data::Batch alone = data::make_batch(data::TaskKind::copy, {{8, 9}});
  const Tensor full = model.logits(batch);  // (3, 6, V)
  const Tensor one = model.logits(alone);   // (1, 3, V)
  const int64_t V = 32;
  std::vector<float> row(full.f32() + (1 * 6) * V, full.f32() + (1 * 6 + 3) * V);
  EXPECT_TRUE(tensors_close(Tensor::from_vector(row, {1, 3, V}), one, kOpTol));
}

TEST(TransformerSeq2Seq, DropoutOnlyInTrainingMode) {
  TransformerConfig c = tiny_config();
  c.dropout = 0.3f;
  TransformerSeq2Seq model(c);
  const data::Batch batch = ragged_batch();
  const Tensor a = model.logits(batch), b = model.logits(batch);  // fresh masks each call
  EXPECT_FALSE(tensors_close(a, b, 1e-3f, 0.0f));
  model.eval();
  EXPECT_TRUE(tensors_close(model.logits(batch), model.logits(batch), 0.0f, 0.0f));
}

class TransformerSeq2SeqDecode : public ::testing::TestWithParam<int> {};

TEST_P(TransformerSeq2SeqDecode, GreedyWithCacheEqualsFullRecompute) {
  TransformerSeq2Seq model(GetParam() == 0 ? tiny_config() : tiny_config_variant());
  model.eval();
  const data::Batch batch = ragged_batch();
  const int max_len = 7;
  const DecodeResult cached = model.greedy(batch.src, batch.src_lengths, max_len);
  const DecodeResult full = greedy_by_recompute(model, batch, max_len);
  ASSERT_EQ(cached.tokens.size(), 3u);
  for (size_t b = 0; b < 3; ++b) {
    EXPECT_EQ(cached.tokens[b], full.tokens[b]) << "row " << b;
    expect_attention_near(cached.attention[b], full.attention[b], "row " + std::to_string(b));
    // Zeros past the row's source length, and each step sums to 1 over the real ones.
    const int len = batch.src_lengths.i32()[b];
    for (const std::vector<float>& a : cached.attention[b]) {
      ASSERT_EQ(a.size(), 5u);
      float sum = 0.0f;
      for (int s = 0; s < 5; ++s) {
        if (s >= len) {
          EXPECT_EQ(a[static_cast<size_t>(s)], 0.0f);
        }
        sum += a[static_cast<size_t>(s)];
      }
      EXPECT_NEAR(sum, 1.0f, 1e-5f);
    }
  }
}

// A sparse normaliser on every attention (sdpa's materialised path): the cached decoder gives
// what a full recompute gives, each cross-attention row sums to 1, gradients are finite, and
// the configuration stores it.
TEST(TransformerSeq2Seq, SparseNormalizerDecodesAndTrains) {
  for (const Normalizer& n : {Normalizer{NormalizerKind::sparsemax}, Normalizer{NormalizerKind::entmax, 1.25f}}) {
    TransformerConfig c = tiny_config();
    c.normalizer = n;
    const nlohmann::json j = c.to_json();
    EXPECT_EQ(j.at("normalizer"), normalizer_name(n.kind));
    EXPECT_EQ(TransformerConfig::from_json(j).normalizer, n);
    TransformerSeq2Seq model(c);
    const data::Batch batch = ragged_batch();
    const Tensor loss = model.loss(batch, 0.0f);
    ASSERT_TRUE(std::isfinite(loss.item())) << normalizer_name(n.kind);
    backward(loss);
    for (const auto& [name, t] : model.named_parameters()) {
      if (!t.has_grad()) continue;
      for (float g : t.grad().to_vector()) ASSERT_TRUE(std::isfinite(g)) << name;
    }
    model.eval();
    const DecodeResult cached = model.greedy(batch.src, batch.src_lengths, 6);
    const DecodeResult full = greedy_by_recompute(model, batch, 6);
    for (size_t b = 0; b < 3; ++b) {
      EXPECT_EQ(cached.tokens[b], full.tokens[b]) << normalizer_name(n.kind) << " row " << b;
      expect_attention_near(cached.attention[b], full.attention[b], "row " + std::to_string(b));
      for (const std::vector<float>& a : cached.attention[b]) {
        float sum = 0.0f;
        for (float w : a) sum += w;
        EXPECT_NEAR(sum, 1.0f, 1e-5f) << normalizer_name(n.kind);
      }
    }
  }
  TransformerConfig bad = tiny_config();
  bad.normalizer = {NormalizerKind::entmax, 1.0f};
  EXPECT_THROW_MSG(bad.validate(), ValueError, "transformer config: entmax's alpha must be finite and > 1, got 1");
  EXPECT_FALSE(tiny_config().to_json().contains("normalizer"));  // older checkpoints' form
}

TEST_P(TransformerSeq2SeqDecode, BeamWidthOneEqualsGreedy) {
  TransformerSeq2Seq model(GetParam() == 0 ? tiny_config() : tiny_config_variant());
  model.eval();
  const data::Batch batch = ragged_batch();
  const AttentionSelect select{.layer = 0, .head = 1};
  const DecodeResult greedy = model.greedy(batch.src, batch.src_lengths, 9, select);
  const DecodeResult beam =
      model.beam(batch.src, batch.src_lengths, {.width = 1, .length_penalty = 0.0f, .max_len = 9}, select);
  for (size_t b = 0; b < 3; ++b) {
    EXPECT_EQ(beam.tokens[b], greedy.tokens[b]) << "row " << b;
    expect_attention_near(beam.attention[b], greedy.attention[b], "row " + std::to_string(b));
  }
  // The selected layer/head is the one reported: layer 0, head 1 of the teacher-forced pass.
  const std::vector<Tensor> cross = model.cross_attention(with_prefix(
      batch, {std::vector<int32_t>(greedy.tokens[0].begin(), greedy.tokens[0].end()),
              std::vector<int32_t>(greedy.tokens[0].size(), 3), std::vector<int32_t>(greedy.tokens[0].size(), 3)}));
  const Tensor& w = cross[0];  // (B, H, T, S)
  const int64_t T = w.dim(2), S = w.dim(3);
  for (size_t t = 0; t < greedy.attention[0].size(); ++t)
    for (int64_t s = 0; s < S; ++s)
      EXPECT_NEAR(greedy.attention[0][t][static_cast<size_t>(s)], w.f32()[((0 * 2 + 1) * T + t) * S + s], 1e-5f);
}

// Beam search reorders the decoding state (KV cache) with its hypotheses every step and drops
// the rows that finished: every hypothesis it keeps scores (α = 0: the raw log-prob) what the
// model gives its tokens without the cache, teacher-forced row by row, and its attention is
// that pass's last-layer cross-attention (head mean). EOS is made likelier so that the rows end
// at different steps (the test checks they do).
TEST_P(TransformerSeq2SeqDecode, BeamHypothesesEqualTheModelWithoutTheCache) {
  TransformerConfig c = GetParam() == 0 ? tiny_config() : tiny_config_variant();
  c.tie_output = false;  // a generator bias to raise EOS with
  TransformerSeq2Seq model(c);
  model.eval();
  model.generator->bias.f32()[data::kEos] += 0.8f;  // untrained logits are near-uniform: 0 never ends, 1 ends at once
  const data::Batch batch = ragged_batch();
  const DecodeResult beam =
      model.beam(batch.src, batch.src_lengths, {.width = 3, .length_penalty = 0.0f, .max_len = 10});
  std::set<size_t> lengths;
  for (int64_t r = 0; r < 3; ++r) {
    const std::vector<DecodeResult::Hypothesis>& hypotheses = beam.hypotheses[static_cast<size_t>(r)];
    ASSERT_FALSE(hypotheses.empty()) << "row " << r;
    lengths.insert(hypotheses[0].tokens.size());
    for (size_t i = 0; i < hypotheses.size(); ++i) {
      const std::vector<int32_t>& tokens = hypotheses[i].tokens;
      const std::string what = "row " + std::to_string(r) + " hypothesis " + std::to_string(i);
      EXPECT_NEAR(hypotheses[i].score, sequence_log_prob(model, batch, r, tokens), 1e-4) << what;
      autodiff::NoGradGuard no_grad;
      const Tensor w = model.cross_attention(teacher_forced_row(batch, r, tokens)).back();  // (1, H, T, S)
      const int64_t H = w.dim(1), T = w.dim(2), S = w.dim(3);
      std::vector<std::vector<float>> expected(static_cast<size_t>(T), std::vector<float>(static_cast<size_t>(S)));
      for (int64_t t = 0; t < T; ++t)
        for (int64_t s = 0; s < S; ++s)
          for (int64_t h = 0; h < H; ++h)
            expected[static_cast<size_t>(t)][static_cast<size_t>(s)] += w.f32()[(h * T + t) * S + s] / H;
      expect_attention_near(hypotheses[i].attention, expected, what);
    }
  }
  EXPECT_GE(lengths.size(), 2u) << "the rows' best hypotheses should end at different steps";
}

// CTranslate2's rules (BeamRules::ctranslate2) through the model's batched, row-dropping beam:
// every hypothesis scores raw / len^α, its raw log-prob the model's teacher-forced one with
// the first step renormalised without EOS (− log(1 − p(EOS))), its first token is never EOS,
// and each row's hypotheses are those of the row decoded alone.
TEST_P(TransformerSeq2SeqDecode, Ctranslate2RulesScoreByLengthAndDecodeEachRowAsAlone) {
  TransformerConfig c = GetParam() == 0 ? tiny_config() : tiny_config_variant();
  c.tie_output = false;
  TransformerSeq2Seq model(c);
  model.eval();
  // Rows that end at different steps, some at max_len (lengths 5 10 10 and 4 8 2 of the configs).
  model.generator->bias.f32()[data::kEos] += 1.0f;
  const data::Batch batch = ragged_batch();
  const BeamOptions options{.width = 3, .length_penalty = 1.0f, .max_len = 10, .rules = BeamRules::ctranslate2};
  const DecodeResult beam = model.beam(batch.src, batch.src_lengths, options);
  std::set<size_t> lengths;
  for (int64_t r = 0; r < 3; ++r) {
    const std::vector<DecodeResult::Hypothesis>& hypotheses = beam.hypotheses[static_cast<size_t>(r)];
    ASSERT_FALSE(hypotheses.empty()) << "row " << r;
    lengths.insert(hypotheses[0].tokens.size());
    const double first_eos = std::exp(sequence_log_prob(model, batch, r, {data::kEos}));
    for (size_t i = 0; i < hypotheses.size(); ++i) {
      const std::vector<int32_t>& tokens = hypotheses[i].tokens;
      const std::string what = "row " + std::to_string(r) + " hypothesis " + std::to_string(i);
      ASSERT_FALSE(tokens.empty()) << what;
      EXPECT_NE(tokens[0], data::kEos) << what;
      const double raw = sequence_log_prob(model, batch, r, tokens) - std::log1p(-first_eos);
      EXPECT_NEAR(hypotheses[i].score, raw / static_cast<double>(tokens.size()), 1e-4) << what;
    }
    const int64_t S = batch.src.dim(1), length = batch.src_lengths.i32()[r];
    const data::Batch one = data::make_batch(
        data::TaskKind::copy, {std::vector<int32_t>(batch.src.i32() + r * S, batch.src.i32() + r * S + length)});
    const DecodeResult alone = model.beam(one.src, one.src_lengths, options);
    ASSERT_EQ(alone.hypotheses[0].size(), hypotheses.size()) << "row " << r;
    for (size_t i = 0; i < hypotheses.size(); ++i) {
      EXPECT_EQ(alone.hypotheses[0][i].tokens, hypotheses[i].tokens) << "row " << r << " hypothesis " << i;
      EXPECT_NEAR(alone.hypotheses[0][i].score, hypotheses[i].score, 1e-4f) << "row " << r << " hypothesis " << i;
    }
  }
  EXPECT_GE(lengths.size(), 2u) << "the rows' best hypotheses should end at different steps";
}

INSTANTIATE_TEST_SUITE_P(Configs, TransformerSeq2SeqDecode, ::testing::Values(0, 1));

TEST(TransformerSeq2Seq, LearnsToCopyThenGreedyAndBeamCopy) {
  TransformerConfig c = tiny_config();
  c.d_model = 32;
  c.heads = 2;
  c.ffn = 64;
  TransformerSeq2Seq model(c);
  // 200 Adam steps, warm-up over 30 then linear decay: loss ≈ 3.6 → ≈ 0.1 (seeds 1-4, 7 checked).
  const int steps = 200, warmup = 30;
  const float lr = 1e-2f;
  train::Adam opt(model.parameters(), {.lr = lr});
  data::TaskGenerator gen(data::TaskKind::copy, 2, 5, 3);
  float first = 0.0f, last = 0.0f;
  for (int step = 0; step < steps; ++step) {
    const Tensor loss = model.loss(gen.next(32));
    if (step == 0) first = loss.item();
    last = loss.item();
    backward(loss);
    train::clip_grad_norm(model.parameters(), 1.0f);
    opt.set_lr(step < warmup ? lr * static_cast<float>(step + 1) / warmup
                             : lr * (1.0f - static_cast<float>(step - warmup) / (steps - warmup)));
    opt.step();
    opt.zero_grad();
  }
  EXPECT_LT(last, 0.1f * first) << "first " << first << ", last " << last;
  model.eval();
  const std::vector<std::vector<int32_t>> sources = {{5, 17, 9}, {12, 4, 30, 7}};
  const data::Batch b = data::make_batch(data::TaskKind::copy, sources);
  const DecodeResult greedy = model.greedy(b.src, b.src_lengths, 10);
  const DecodeResult beam = model.beam(b.src, b.src_lengths, {.width = 3, .length_penalty = 1.0f, .max_len = 10});
  for (size_t r = 0; r < sources.size(); ++r) {
    std::vector<int32_t> expected = sources[r];
    expected.push_back(data::kEos);
    EXPECT_EQ(greedy.tokens[r], expected) << "greedy row " << r;
    EXPECT_EQ(beam.tokens[r], expected) << "beam row " << r;
    ASSERT_EQ(beam.attention[r].size(), beam.tokens[r].size());
  }
  // Beam width 3 ends every row with EOS and its hypothesis (raw score, α = 0) is at least
  // as likely as greedy's.
  const data::Batch longer = data::make_batch(data::TaskKind::copy, {{3, 8, 8, 20, 4, 6}, {29, 31}});
  const DecodeResult g = model.greedy(longer.src, longer.src_lengths, 12);
  const DecodeResult bm =
      model.beam(longer.src, longer.src_lengths, {.width = 3, .length_penalty = 0.0f, .max_len = 12});
  for (int64_t r = 0; r < 2; ++r) {
    ASSERT_FALSE(bm.tokens[static_cast<size_t>(r)].empty());
    EXPECT_EQ(bm.tokens[static_cast<size_t>(r)].back(), data::kEos) << "row " << r;
    if (g.tokens[static_cast<size_t>(r)].back() == data::kEos) {
      EXPECT_GE(sequence_log_prob(model, longer, r, bm.tokens[static_cast<size_t>(r)]),
                sequence_log_prob(model, longer, r, g.tokens[static_cast<size_t>(r)]) - 1e-4)
          << "row " << r;
    }
  }
  // The rows end at different steps and leave the decoder batch (its KV cache drops them):
  // each row's hypotheses are those of the row decoded alone.
  for (int64_t r = 0; r < 2; ++r) {
    const std::vector<int32_t> source = r == 0 ? std::vector<int32_t>{3, 8, 8, 20, 4, 6} : std::vector<int32_t>{29, 31};
    const data::Batch one = data::make_batch(data::TaskKind::copy, {source});
    const DecodeResult alone =
        model.beam(one.src, one.src_lengths, {.width = 3, .length_penalty = 0.0f, .max_len = 12});
    const auto& batched = bm.hypotheses[static_cast<size_t>(r)];
    ASSERT_EQ(alone.hypotheses[0].size(), batched.size()) << "row " << r;
    for (size_t i = 0; i < batched.size(); ++i) {
      EXPECT_EQ(alone.hypotheses[0][i].tokens, batched[i].tokens) << "row " << r << " hypothesis " << i;
      EXPECT_NEAR(alone.hypotheses[0][i].score, batched[i].score, 1e-4f) << "row " << r << " hypothesis " << i;
    }
  }
}

// GNMT's coverage penalty on the cross-attention at decoding time: each finished hypothesis's
// score moves by β Σ_{i < |X|} log(min(Σ_t a_{t,i}, 1)) of its own reported attention (the
// selected layer's heads averaged), padding left out; a batch decodes as its rows alone.
TEST(TransformerSeq2Seq, CoveragePenaltyOnCrossAttention) {
  TransformerSeq2Seq model(tiny_config());
  model.eval();
  const data::Batch batch = ragged_batch();
  const float beta = 0.3f;
  const BeamOptions plain{.width = 3, .length_penalty = 0.0f, .max_len = 6};
  BeamOptions covered = plain;
  covered.coverage_penalty = beta;
  const testing::CoveragePenaltyRun run =
      testing::expect_scores_move_by_coverage_penalty(model, batch.src, batch.src_lengths, plain, beta);
  for (size_t r = 0; r < 3; ++r) {
    const int32_t length = batch.src_lengths.i32()[r];
    const data::Batch alone =
        data::make_batch(data::TaskKind::copy, {std::vector<int32_t>(batch.src.i32() + r * batch.src.dim(1),
                                                                     batch.src.i32() + r * batch.src.dim(1) + length)});
    const DecodeResult one = model.beam(alone.src, alone.src_lengths, covered);
    EXPECT_EQ(one.tokens[0], run.with.tokens[r]) << "row " << r;
    EXPECT_NEAR(one.hypotheses[0][0].score, run.with.hypotheses[r][0].score, 1e-4) << "row " << r;
  }
  EXPECT_GE(run.penalties.size(), 2u);
}

TEST(TransformerSeq2Seq, ErrorsNameTheArgument) {
  TransformerSeq2Seq model(tiny_config());
  const data::Batch batch = ragged_batch();
  EXPECT_THROW_MSG(model.encode(batch.src, Tensor::from_vector(std::vector<int32_t>{5, 2}, {2})), ShapeError,
                   "TransformerSeq2Seq.encode: 'src_lengths' expected (B=3)");
  EXPECT_THROW_MSG(model.encode(batch.src, Tensor::from_vector(std::vector<int32_t>{5, 6, 1}, {3})), ValueError,
                   "TransformerSeq2Seq.encode: 'src_lengths' value 6 at batch index 1 is out of range [1, S=5]");
  EXPECT_THROW_MSG(model.encode(batch.src, Tensor::from_vector(std::vector<int32_t>{5, 0, 1}, {3})), ValueError,
                   "'src_lengths' value 0 at batch index 1 is out of range [1, S=5]");
  EXPECT_THROW_MSG(model.greedy(batch.src, batch.src_lengths, 0), ValueError,
                   "TransformerSeq2Seq.greedy: max_len must be >= 1, got 0");
  EXPECT_THROW_MSG(model.greedy(batch.src, batch.src_lengths, 5, {.layer = 2}), ValueError,
                   "TransformerSeq2Seq.greedy: attention layer 2 out of range (valid: -1 for the last, 0..1)");
  EXPECT_THROW_MSG(model.beam(batch.src, batch.src_lengths, {.width = 0}), ValueError,
                   "TransformerSeq2Seq.beam: width must be >= 1, got 0");
  EXPECT_THROW_MSG(model.beam(batch.src, batch.src_lengths, {.width = 2}, {.head = 2}), ValueError,
                   "TransformerSeq2Seq.beam: attention head 2 out of range (valid: -1 for the mean, 0..1)");
  data::Batch bad = batch;
  bad.tgt_out = Tensor::zeros({3, 2}, DType::i32);
  EXPECT_THROW_MSG(model.loss(bad), ShapeError, "TransformerSeq2Seq.loss: 'tgt_out' expected (B=3, T=6)");
  bad = batch;
  bad.src = Tensor::full({3, 5}, 1.0f);
  EXPECT_THROW_MSG(model.logits(bad), ShapeError, "TransformerSeq2Seq.logits: 'src'");
  // A source longer than the positions cover.
  const data::Batch too_long = data::make_batch(data::TaskKind::copy, {std::vector<int32_t>(40, 5)});
  EXPECT_THROW_MSG(model.encode(too_long.src, too_long.src_lengths), ValueError, "exceed max_len=32");
}

// ---- TransformerLM --------------------------------------------------------------------------------

TransformerConfig lm_config() {
  TransformerConfig c = tiny_config();
  c.tgt_vocab = 20;
  return c;
}

// attention_maps (for attn view): every layer's encoder self, decoder self and cross
// weights, rows summing to 1 over the real keys, the decoder's causal, cross = cross_attention.
TEST(TransformerSeq2Seq, AttentionMapsCoverEveryLayer) {
  TransformerSeq2Seq model(tiny_config());
  model.eval();
  const data::Batch batch = ragged_batch();
  const TransformerSeq2Seq::AttentionMaps maps = model.attention_maps(batch);
  const int64_t B = 3, H = 2, S = 5, T = 6;
  ASSERT_EQ(maps.encoder_self.size(), 2u);
  ASSERT_EQ(maps.decoder_self.size(), 2u);
  ASSERT_EQ(maps.cross.size(), 2u);
  const std::vector<Tensor> cross = model.cross_attention(batch);
  for (size_t l = 0; l < 2; ++l) {
    EXPECT_EQ(maps.encoder_self[l].shape(), (Shape{B, H, S, S}));
    EXPECT_EQ(maps.decoder_self[l].shape(), (Shape{B, H, T, T}));
    EXPECT_TRUE(tensors_close(maps.cross[l], cross[l], 0.0f, 0.0f));
    const float* e = maps.encoder_self[l].f32();
    const float* d = maps.decoder_self[l].f32();
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = batch.src_lengths.i32()[b];
      for (int64_t h = 0; h < H; ++h) {
        for (int64_t q = 0; q < len; ++q) {
          double sum = 0.0;
          for (int64_t k = 0; k < S; ++k) sum += e[((b * H + h) * S + q) * S + k];
          EXPECT_NEAR(sum, 1.0, 1e-5) << "encoder layer " << l << " row " << b << " head " << h << " query " << q;
        }
        for (int64_t q = 0; q < T; ++q)
          for (int64_t k = q + 1; k < T; ++k) EXPECT_EQ(d[((b * H + h) * T + q) * T + k], 0.0f) << "causal";
      }
    }
  }
}

TEST(TransformerLM, ShapesNamesAndPaddingIgnoredByLoss) {
  TransformerLM model(lm_config());
  const Tensor ids = random_ids({2, 6}, 20, 3);
  EXPECT_EQ(model.logits(ids).shape(), (Shape{2, 6, 20}));
  const std::set<std::string> names = parameter_names(model);
  for (const char* n : {"embedding.weight", "decoder.layers.0.self_attn.in_proj_weight", "decoder.layers.1.norm2.bias",
                        "decoder.norm.weight"})
    EXPECT_TRUE(names.count(n)) << "missing " << n;
  EXPECT_FALSE(names.count("generator.weight"));

  // Trailing PAD changes nothing: inputs before it are causal, PAD targets are ignored.
  const Tensor a = Tensor::from_vector(std::vector<int32_t>{1, 5, 6, 7, 9}, {1, 5});
  const Tensor b = Tensor::from_vector(std::vector<int32_t>{1, 5, 6, 7, 9, 0, 0}, {1, 7});
  EXPECT_NEAR(model.loss(a).item(), model.loss(b).item(), 1e-5f);
  // The loss is the mean next-token cross-entropy of the logits of ids[:, :-1].
  const Tensor inputs = Tensor::from_vector(std::vector<int32_t>{1, 5, 6, 7}, {1, 4});
  const Tensor lp = log_softmax(model.logits(inputs));
  const int32_t next[4] = {5, 6, 7, 9};
  double expected = 0.0;
  for (int t = 0; t < 4; ++t) expected -= lp.f32()[t * 20 + next[t]];
  EXPECT_NEAR(model.loss(a).item(), expected / 4.0, 1e-5);
}

TEST(TransformerLM, CausalLaterTokensDoNotChangeEarlierLogits) {
  TransformerLM model(lm_config());
  model.eval();
  const Tensor a = Tensor::from_vector(std::vector<int32_t>{1, 4, 9, 12, 3, 7}, {1, 6});
  const Tensor b = Tensor::from_vector(std::vector<int32_t>{1, 4, 9, 15, 18, 2}, {1, 6});
  const Tensor la = model.logits(a), lb = model.logits(b);
  const int64_t V = 20;
  std::vector<float> pa(la.f32(), la.f32() + 3 * V), pb(lb.f32(), lb.f32() + 3 * V);
  EXPECT_TRUE(tensors_close(Tensor::from_vector(pb, {3, V}), Tensor::from_vector(pa, {3, V}), kOpTol));
  // ... and position 3 does change (the check can fail).
  float diff = 0.0f;
  for (int64_t v = 0; v < V; ++v) diff = std::max(diff, std::fabs(la.f32()[3 * V + v] - lb.f32()[3 * V + v]));
  EXPECT_GT(diff, 1e-3f);
}

class TransformerLMSample : public ::testing::TestWithParam<int> {};

TEST_P(TransformerLMSample, TemperatureZeroEqualsArgmaxOfFullLogits) {
  TransformerConfig c = GetParam() == 0 ? lm_config() : tiny_config_variant();
  c.tgt_vocab = 20;
  c.src_vocab = 20;
  TransformerLM model(c);
  model.eval();
  const std::vector<int32_t> prefix = {1, 7, 3};
  const std::vector<int32_t> got = model.sample(prefix, {.max_len = 8, .temperature = 0.0f});
  std::vector<int32_t> seq = prefix, expected;
  for (int n = 0; n < 8; ++n) {
    const Tensor l = model.logits(Tensor::from_vector(seq, {1, static_cast<int64_t>(seq.size())}));
    const float* row = l.f32() + (static_cast<int64_t>(seq.size()) - 1) * 20;
    const int32_t y = static_cast<int32_t>(std::max_element(row, row + 20) - row);
    expected.push_back(y);
    seq.push_back(y);
  }
  EXPECT_EQ(got, expected);
  // top_k = 1 is argmax whatever the temperature; stop_id ends the sample.
  EXPECT_EQ(model.sample(prefix, {.max_len = 8, .temperature = 2.0f, .top_k = 1, .seed = 9}), expected);
  const std::vector<int32_t> stopped =
      model.sample(prefix, {.max_len = 8, .temperature = 0.0f, .stop_id = expected[2]});
  const size_t first = static_cast<size_t>(std::find(expected.begin(), expected.end(), expected[2]) - expected.begin());
  EXPECT_EQ(stopped, std::vector<int32_t>(expected.begin(), expected.begin() + static_cast<std::ptrdiff_t>(first) + 1));
}

INSTANTIATE_TEST_SUITE_P(Configs, TransformerLMSample, ::testing::Values(0, 1));

TEST(TransformerLM, SelfAttentionPerLayerIsCausal) {
  TransformerConfig c = tiny_config();
  TransformerLM model(c);
  model.eval();
  const Tensor ids = Tensor::from_vector(std::vector<int32_t>{1, 5, 6, 7}, {1, 4});
  const std::vector<Tensor> layers = model.self_attention(ids);
  ASSERT_EQ(layers.size(), static_cast<size_t>(c.decoder_layers));
  for (const Tensor& w : layers) {
    ASSERT_EQ(w.shape(), (Shape{1, 2, 4, 4}));
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t q = 0; q < 4; ++q) {
        double sum = 0.0;
        for (int64_t k = 0; k < 4; ++k) {
          const float v = w.f32()[(h * 4 + q) * 4 + k];
          if (k > q) {
            EXPECT_EQ(v, 0.0f);
          }
          sum += v;
        }
        EXPECT_NEAR(sum, 1.0, 1e-5);
      }
  }
}

TEST(TransformerLM, SamplingIsSeededAndStaysInTopK) {
  TransformerLM model(lm_config());
  model.eval();
  const std::vector<int32_t> prefix = {1, 4};
  const SampleOptions o{.max_len = 10, .temperature = 1.5f, .top_k = 3, .seed = 42};
  const std::vector<int32_t> a = model.sample(prefix, o);
  EXPECT_EQ(model.sample(prefix, o), a);  // same seed, same sample
  ASSERT_EQ(a.size(), 10u);
  // Every token is among the 3 most likely continuations of its prefix.
  std::vector<int32_t> seq = prefix;
  for (int32_t y : a) {
    const Tensor l = model.logits(Tensor::from_vector(seq, {1, static_cast<int64_t>(seq.size())}));
    const float* row = l.f32() + (static_cast<int64_t>(seq.size()) - 1) * 20;
    int better = 0;
    for (int v = 0; v < 20; ++v) better += row[v] > row[y];
    EXPECT_LT(better, 3) << "token " << y << " after " << seq.size() << " ids";
    seq.push_back(y);
  }
  // Different seeds over many draws at a high temperature give different samples.
  const std::vector<int32_t> b = model.sample(prefix, {.max_len = 10, .temperature = 5.0f, .seed = 1});
  const std::vector<int32_t> c = model.sample(prefix, {.max_len = 10, .temperature = 5.0f, .seed = 2});
  EXPECT_NE(b, c);
  // The positions cap the sample: max_len 32 positions, 2 given.
  EXPECT_EQ(model.sample(prefix, {.max_len = 100, .temperature = 0.0f}).size(), 31u);
}

TEST(TransformerLM, ErrorsNameTheValue) {
  TransformerLM model(lm_config());
  EXPECT_THROW_MSG(model.sample({}, {}), ValueError, "TransformerLM.sample: the prefix is empty");
  EXPECT_THROW_MSG(model.sample({1, 25}, {}), ValueError,
                   "TransformerLM.sample: prefix[1] = 25 outside the vocabulary [0, 20)");
  EXPECT_THROW_MSG(model.sample({1}, {.temperature = -1.0f}), ValueError,
                   "temperature must be finite and >= 0, got -1");
  EXPECT_THROW_MSG(model.sample({1}, {.top_k = -2}), ValueError, "top_k must be >= 0, got -2");
  EXPECT_THROW_MSG(model.sample({1}, {.max_len = 0}), ValueError, "max_len must be >= 1, got 0");
  EXPECT_THROW_MSG(model.loss(Tensor::from_vector(std::vector<int32_t>{1, 2}, {2, 1})), ValueError,
                   "TransformerLM.loss: 'ids' needs T >= 2");
  EXPECT_THROW_MSG(model.logits(Tensor::full({1, 3}, 1.0f)), ShapeError, "TransformerLM.logits: 'ids'");
  EXPECT_THROW_MSG(model.logits(Tensor::from_vector(std::vector<int32_t>{1, 2, 3}, {1, 3}),
                                Tensor::from_vector(std::vector<int32_t>{4}, {1})),
                   ValueError, "TransformerLM.logits: 'lengths' value 4 at batch index 0 is out of range [1, T=3]");
}

// ---- TransformerClassifier ------------------------------------------------------------------------

TransformerConfig classifier_config() {
  TransformerConfig c = tiny_config();
  c.src_vocab = 12;
  c.classes = 3;
  return c;
}

TEST(TransformerClassifier, ShapesPaddingInvarianceAndClsAttention) {
  for (bool norm_first : {true, false}) {
    TransformerConfig c = classifier_config();
    c.norm_first = norm_first;
    TransformerClassifier model(c);
    model.eval();
    EXPECT_TRUE(parameter_names(model).count("cls"));
    EXPECT_TRUE(parameter_names(model).count("head.weight"));
    EXPECT_TRUE(parameter_names(model).count("encoder.layers.1.self_attn.out_proj.weight"));
    // Row 0 has 2 real tokens then padding (arbitrary ids: they must not matter); row 1 is full.
    const Tensor ids = Tensor::from_vector(std::vector<int32_t>{4, 7, 9, 11, 3, 5, 6, 8}, {2, 4});
    const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{2, 4}, {2});
    Tensor att;
    const Tensor l = model.logits(ids, lengths, &att);
    EXPECT_EQ(l.shape(), (Shape{2, 3}));
    ASSERT_EQ(att.shape(), (Shape{2, 5}));
    const Tensor l0 = model.logits(Tensor::from_vector(std::vector<int32_t>{4, 7}, {1, 2}),
                                   Tensor::from_vector(std::vector<int32_t>{2}, {1}));
    std::vector<float> row0(l.f32(), l.f32() + 3);
    EXPECT_TRUE(tensors_close(Tensor::from_vector(row0, {1, 3}), l0, kOpTol)) << "norm_first " << norm_first;
    // [CLS] attention: rows sum to 1 over [CLS] + real tokens, zero at padding.
    for (int64_t b = 0; b < 2; ++b) {
      const int real = lengths.i32()[b] + 1;
      float sum = 0.0f;
      for (int s = 0; s < 5; ++s) {
        const float a = att.f32()[b * 5 + s];
        if (s >= real) {
          EXPECT_EQ(a, 0.0f) << "row " << b << " position " << s;
        } else {
          EXPECT_GT(a, 0.0f) << "row " << b << " position " << s;  // every real token is seen
        }
        EXPECT_GE(a, 0.0f);
        sum += a;
      }
      EXPECT_NEAR(sum, 1.0f, 1e-5f) << "row " << b;
    }
  }
}

TEST(TransformerClassifier, GradcheckLogitsWithRespectToParameters) {
  TransformerConfig c;
  c.src_vocab = 6;
  c.classes = 2;
  c.d_model = 8;
  c.heads = 2;
  c.ffn = 8;
  c.encoder_layers = 1;
  c.dropout = 0.0f;
  c.max_len = 8;
  for (bool norm_first : {true, false}) {
    c.norm_first = norm_first;
    TransformerClassifier model(c);
    const Tensor ids = Tensor::from_vector(std::vector<int32_t>{1, 4, 5, 2, 3, 0}, {2, 3});
    const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{3, 1}, {2});  // ragged, length 1
    const Tensor w_in = model.encoder.layers[0]->self_attn.in_proj_weight;
    std::vector<Tensor> inputs = {model.cls, model.head.weight, model.embedding.weight, w_in};
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>&) { return model.logits(ids, lengths); }, inputs))
        << "norm_first " << norm_first;
  }
}

TEST(TransformerClassifier, LearnsWhetherTokenFiveOccurs) {
  TransformerConfig c = classifier_config();
  c.classes = 2;
  c.encoder_layers = 1;
  TransformerClassifier model(c);
  train::Adam opt(model.parameters(), {.lr = 3e-3f});
  Rng rng(5);
  auto make = [&](int B, std::vector<int32_t>& labels) {
    const int S = 6;
    std::vector<int32_t> ids(static_cast<size_t>(B * S), 0), lens(static_cast<size_t>(B));
    labels.assign(static_cast<size_t>(B), 0);
    for (int b = 0; b < B; ++b) {
      const int len = 1 + static_cast<int>(rng.below(S));
      lens[static_cast<size_t>(b)] = len;
      const bool has = rng.below(2) == 1;
      for (int s = 0; s < len; ++s) {
        int32_t id = 3 + static_cast<int32_t>(rng.below(9));  // 3..11
        if (id == 5) id = 6;
        ids[static_cast<size_t>(b * S + s)] = id;
      }
      if (has) ids[static_cast<size_t>(b * S + static_cast<int>(rng.below(static_cast<uint64_t>(len))))] = 5;
      labels[static_cast<size_t>(b)] = has ? 1 : 0;
    }
    return std::pair{Tensor::from_vector(ids, {B, S}), Tensor::from_vector(lens, {B})};
  };
  std::vector<int32_t> labels;
  for (int step = 0; step < 150; ++step) {
    const auto [ids, lens] = make(32, labels);
    const Tensor loss = cross_entropy(model.logits(ids, lens), Tensor::from_vector(labels, {32}));
    backward(loss);
    opt.step();
    opt.zero_grad();
  }
  model.eval();
  const auto [ids, lens] = make(200, labels);
  const Tensor l = model.logits(ids, lens);
  int correct = 0;
  for (int b = 0; b < 200; ++b)
    correct += (l.f32()[b * 2 + 1] > l.f32()[b * 2]) == (labels[static_cast<size_t>(b)] == 1);
  EXPECT_GE(correct, 190) << "accuracy " << correct << " / 200";
}

TEST(TransformerClassifier, ErrorsNameTheArgument) {
  TransformerClassifier model(classifier_config());
  const Tensor ids = Tensor::from_vector(std::vector<int32_t>{4, 7, 9}, {1, 3});
  EXPECT_THROW_MSG(model.logits(ids, Tensor::from_vector(std::vector<int32_t>{0}, {1})), ValueError,
                   "TransformerClassifier.logits: 'lengths' value 0 at batch index 0 is out of range [1, S=3]");
  EXPECT_THROW_MSG(model.logits(ids, Tensor::from_vector(std::vector<int32_t>{1, 1}, {2})), ShapeError,
                   "TransformerClassifier.logits: 'lengths' expected (B=1)");
  EXPECT_THROW_MSG(model.logits(Tensor::from_vector(std::vector<int32_t>{4, 12}, {1, 2}),
                                Tensor::from_vector(std::vector<int32_t>{2}, {1})),
                   ValueError, "12");
  EXPECT_THROW_MSG(model.logits(Tensor::zeros({1, 32}, DType::i32), Tensor::from_vector(std::vector<int32_t>{1}, {1})),
                   ValueError, "TransformerClassifier.logits: S=32 plus [CLS] exceeds max_len=32");
}

}  // namespace
}  // namespace attn::models
