// Seq2Seq models: configuration, parameter names, packed (padding-invariant) encoding,
// gradients of the loss for every attention type, greedy and beam decoding.
#include "attn/models/seq2seq.h"

#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "attn/autodiff/tape.h"
#include "attn/data/tasks.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/loss.h"
#include "attn/parallel.h"
#include "attn/train/optimizer.h"
#include "beam_support.h"
#include "test_support.h"

namespace attn::models {
namespace {

using testing::gradcheck;
using testing::tensors_close;

// The tiny models here gain nothing from threads (and a loaded machine makes OpenMP
// barriers expensive): one thread unless a test says otherwise. Only for this file's tests:
// the other tests/models files share this test program.
class OneThreadInThisFile : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo& test) override {
    if (std::string(test.file()) != __FILE__) return;
    saved_ = num_threads();
    set_num_threads(1);
  }
  void OnTestEnd(const ::testing::TestInfo& test) override {
    if (std::string(test.file()) == __FILE__) set_num_threads(saved_);
  }

 private:
  int saved_ = 1;
};
const bool kOneThreadInThisFile = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new OneThreadInThisFile);
  return true;
}();

// A batch from explicit sources (content ids 3..).
data::Batch batch_of(const std::vector<std::vector<int32_t>>& sources) {
  return data::make_batch(data::TaskKind::copy, sources);
}

// Row b of a (B, ...) int32 tensor, cut to `len` elements: a batch of one.
Tensor row_ids(const Tensor& ids, int64_t b, int64_t len) {
  const int64_t T = ids.dim(1);
  std::vector<int32_t> v(ids.i32() + b * T, ids.i32() + b * T + len);
  return Tensor::from_vector(v, {1, len});
}

Seq2SeqConfig tiny(const std::string& attention, const std::string& score = "", const std::string& encoder = "gru",
                   bool bidirectional = false, int layers = 1) {
  Seq2SeqConfig c;
  c.encoder = parse_rnn_cell(encoder);
  c.attention = parse_attention_kind(attention);
  c.score = parse_score(c.attention, score);
  c.bidirectional = bidirectional;
  c.layers = layers;
  c.emb = 3;
  c.hidden = 4;
  c.vocab = 6;
  c.max_src_len = 5;
  c.heads = 2;
  c.window = 1;  // narrower than the sources: the local windows clip
  c.location_filters = 2;
  c.location_width = 3;
  c.monotonic_noise = 0.0f;  // monotonic / mocha: deterministic training-mode steps
  c.seed = 7;
  return c;
}

struct Variant {
  std::string attention, score, encoder;
  bool bidirectional;
  int layers;
  bool input_feeding = true;
};

std::vector<Variant> all_variants() {
  return {{"none", "", "gru", false, 1},
          {"none", "", "lstm", true, 2},
          {"bahdanau", "additive", "gru", false, 1},
          {"bahdanau", "additive_normalized", "lstm", false, 1},
          {"bahdanau", "additive", "gru", true, 2},
          {"bahdanau", "location_aware", "lstm", true, 1},
          {"bahdanau", "monotonic", "gru", false, 1},
          {"bahdanau", "mocha", "lstm", true, 1},
          {"luong", "dot", "gru", false, 1},
          {"luong", "general", "lstm", true, 1},
          {"luong", "general", "gru", false, 1, false},
          {"luong", "concat", "gru", true, 1},
          {"luong", "location", "gru", false, 1},
          {"luong", "scaled_dot", "lstm", false, 2},
          {"luong", "multihead", "gru", false, 1},
          {"luong", "multihead", "lstm", true, 2},
          {"luong", "local_m", "gru", false, 1},
          {"luong", "local_p", "lstm", true, 1},
          {"luong", "hard", "gru", false, 1}};
}

// Hard attention samples in training mode; the deterministic tests run it in eval mode
// (argmax), its REINFORCE training has tests of its own.
void deterministic(Seq2Seq& model) {
  if (model.config().effective_score() == "hard") model.eval();
}

Seq2SeqConfig variant_config(const Variant& v) {
  Seq2SeqConfig c = tiny(v.attention, v.score, v.encoder, v.bidirectional, v.layers);
  c.input_feeding = v.input_feeding;
  return c;
}

std::string variant_name(const Variant& v) {
  return v.attention + "/" + v.score + "/" + v.encoder + (v.bidirectional ? "/bi" : "/uni") + "/l" +
         std::to_string(v.layers) + (v.input_feeding ? "" : "/no-feed");
}

// ---- configuration --------------------------------------------------------------------------

TEST(Seq2SeqConfig, JsonRoundTrip) {
  Seq2SeqConfig c;
  c.encoder = RnnCell::lstm;
  c.layers = 3;
  c.bidirectional = true;
  c.emb = 17;
  c.hidden = 33;
  c.dropout = 0.25f;
  c.attention = AttentionKind::luong;
  c.score = nn::StepScore::concat;
  c.input_feeding = false;
  c.vocab = 40;
  c.max_src_len = 99;
  c.location_filters = 4;
  c.location_width = 7;
  c.location_sharpening = 1.5f;
  c.location_smoothing = true;
  c.seed = 123456789012345ULL;
  const Seq2SeqConfig r = Seq2SeqConfig::from_json_string(c.to_json_string());
  EXPECT_EQ(r.location_filters, 4);
  EXPECT_EQ(r.location_width, 7);
  EXPECT_FLOAT_EQ(r.location_sharpening, 1.5f);
  EXPECT_TRUE(r.location_smoothing);
  EXPECT_EQ(r.to_json(), c.to_json());
  EXPECT_EQ(r.encoder, RnnCell::lstm);
  EXPECT_EQ(r.layers, 3);
  EXPECT_TRUE(r.bidirectional);
  EXPECT_EQ(r.emb, 17);
  EXPECT_EQ(r.hidden, 33);
  EXPECT_FLOAT_EQ(r.dropout, 0.25f);
  EXPECT_EQ(r.attention, AttentionKind::luong);
  EXPECT_EQ(r.score, nn::StepScore::concat);
  // The JSON keeps the names (what checkpoints written before the enums hold).
  EXPECT_EQ(c.to_json().at("encoder"), "lstm");
  EXPECT_EQ(c.to_json().at("attention"), "luong");
  EXPECT_EQ(c.to_json().at("score"), "concat");
  EXPECT_EQ(Seq2SeqConfig{}.to_json().at("score"), "");  // unset: the attention's default
  EXPECT_FALSE(r.input_feeding);
  EXPECT_EQ(r.vocab, 40);
  EXPECT_EQ(r.max_src_len, 99);
  EXPECT_EQ(r.seed, 123456789012345ULL);
  // A subset keeps the defaults.
  const Seq2SeqConfig d = Seq2SeqConfig::from_json_string(R"({"attention": "none"})");
  EXPECT_EQ(d.attention, AttentionKind::none);
  EXPECT_EQ(d.hidden, 256);
  EXPECT_EQ(d.effective_score(), "none");
  EXPECT_EQ(Seq2SeqConfig{}.effective_score(), "additive");
}

TEST(Seq2SeqConfig, LocationAwareOptionsAreChecked) {
  Seq2SeqConfig c = Seq2SeqConfig::from_json_string(R"({"attention": "bahdanau", "score": "location_aware"})");
  EXPECT_EQ(c.step_score(), nn::StepScore::location_aware);
  EXPECT_EQ(c.location_filters, 10);  // ESPnet AttLoc's channels and kernel width
  EXPECT_EQ(c.location_width, 201);
  c.location_width = 100;
  EXPECT_THROW_MSG(c.validate(), ValueError, "location_width must be odd (a filter centred on the position), got 100");
  c.location_width = 5;
  c.location_filters = 0;
  EXPECT_THROW_MSG(c.validate(), ValueError, "location_filters must be >= 1, got 0");
  c.location_filters = 2;
  c.location_sharpening = 0.0f;
  EXPECT_THROW_MSG(c.validate(), ValueError, "location_sharpening must be finite and > 0, got 0");
  EXPECT_THROW_MSG(Seq2SeqConfig::from_json_string(R"({"location_width": 2000000})"), ValueError, "location_width");
}

TEST(Seq2SeqConfig, MonotonicOptionsAreCheckedAndStoredOnlyWhenSet) {
  Seq2SeqConfig c = Seq2SeqConfig::from_json_string(R"({"attention": "bahdanau", "score": "mocha"})");
  EXPECT_EQ(c.step_score(), nn::StepScore::mocha);
  EXPECT_FLOAT_EQ(c.monotonic_bias, -4.0f);  // Raffel et al.'s r
  EXPECT_FLOAT_EQ(c.monotonic_noise, 1.0f);
  EXPECT_EQ(c.chunk, 2);
  EXPECT_FALSE(c.to_json().contains("chunk"));  // defaults: older checkpoints keep their form
  EXPECT_FALSE(c.to_json().contains("monotonic_bias"));
  c.chunk = 4;
  c.monotonic_bias = -2.5f;
  c.monotonic_noise = 0.0f;
  const Seq2SeqConfig r = Seq2SeqConfig::from_json_string(c.to_json_string());
  EXPECT_EQ(r.chunk, 4);
  EXPECT_FLOAT_EQ(r.monotonic_bias, -2.5f);
  EXPECT_FLOAT_EQ(r.monotonic_noise, 0.0f);
  c.chunk = 0;
  EXPECT_THROW_MSG(c.validate(), ValueError, "chunk must be >= 1, got 0");
  c.chunk = 2;
  c.monotonic_noise = -1.0f;
  EXPECT_THROW_MSG(c.validate(), ValueError, "monotonic_noise must be finite and >= 0, got -1");
  c.monotonic_noise = 1.0f;
  c.monotonic_bias = std::numeric_limits<float>::infinity();
  EXPECT_THROW_MSG(c.validate(), ValueError, "monotonic_bias must be finite, got inf");
  EXPECT_THROW_MSG(Seq2SeqConfig::from_json_string(R"({"chunk": 2000000})"), ValueError, "chunk");
}

TEST(Seq2SeqConfig, ChoicesAreParsedIntoEnums) {
  Seq2SeqConfig c;
  EXPECT_EQ(c.encoder, RnnCell::gru);
  EXPECT_EQ(c.attention, AttentionKind::bahdanau);
  EXPECT_FALSE(c.score.has_value());
  EXPECT_EQ(c.step_score(), nn::StepScore::additive);  // the default score of bahdanau
  c.attention = AttentionKind::luong;
  EXPECT_EQ(c.step_score(), nn::StepScore::general);  // the default score of luong
  EXPECT_EQ(c.effective_score(), "general");
  // Every name parses to its enum and back.
  for (const std::string name : {"gru", "lstm"}) EXPECT_EQ(to_string(parse_rnn_cell(name)), name);
  for (const std::string name : {"none", "bahdanau", "luong"}) EXPECT_EQ(to_string(parse_attention_kind(name)), name);
  for (const std::string score :
       {"dot", "general", "concat", "location", "scaled_dot", "multihead", "local_m", "local_p", "hard"}) {
    c.score = parse_score(AttentionKind::luong, score);
    EXPECT_EQ(c.score_name(), score);
    EXPECT_EQ(c.effective_score(), score);
  }
  for (const std::string score : {"additive", "additive_normalized"})
    EXPECT_EQ(nn::step_score_name(*parse_score(AttentionKind::bahdanau, score)), score);
  EXPECT_FALSE(parse_score(AttentionKind::luong, "").has_value());
  EXPECT_FALSE(parse_score(AttentionKind::none, "none").has_value());
  EXPECT_FALSE(parse_score(AttentionKind::none, "").has_value());
  c = {};
  c.attention = AttentionKind::none;
  EXPECT_EQ(c.effective_score(), "none");
  EXPECT_THROW_MSG(parse_attention_kind("Luong"), ValueError,
                   "unknown attention 'Luong' (valid: none, bahdanau, luong)");
  // The model parses once; its modules follow the choice.
  Seq2Seq model(tiny("luong", "multihead"));
  EXPECT_EQ(model.decoder.kind(), AttentionKind::luong);
  EXPECT_NE(dynamic_cast<nn::MultiheadStepAttention*>(model.decoder.attention.get()), nullptr);
  EXPECT_EQ(Seq2Seq(tiny("none")).decoder.attention, nullptr);
}

TEST(Seq2SeqConfig, ValidationErrorsListValidNames) {
  EXPECT_THROW_MSG(parse_attention_kind("foo"), ValueError, "unknown attention 'foo' (valid: none, bahdanau, luong)");
  EXPECT_THROW_MSG(parse_rnn_cell("rnn"), ValueError, "unknown encoder 'rnn' (valid: gru, lstm)");
  EXPECT_THROW_MSG(parse_score(AttentionKind::bahdanau, "dot"), ValueError,
                   "unknown score for bahdanau attention 'dot' (valid: additive, additive_normalized, location_aware, "
                   "monotonic, mocha)");
  EXPECT_THROW_MSG(parse_score(AttentionKind::bahdanau, "none"), ValueError,
                   "unknown score for bahdanau attention 'none' (valid: additive, additive_normalized, location_aware, "
                   "monotonic, mocha)");
  EXPECT_THROW_MSG(parse_score(AttentionKind::luong, "additive"), ValueError,
                   "(valid: dot, general, concat, location, scaled_dot, multihead, local_m, local_p, hard)");
  EXPECT_THROW_MSG(parse_score(AttentionKind::none, "general"), ValueError,
                   "score 'general' given for attention 'none'");
  // A score set in code that does not belong to the attention: validate() says so as the parser does.
  Seq2SeqConfig c;
  c.score = nn::StepScore::dot;
  EXPECT_THROW_MSG(c.validate(), ValueError,
                   "unknown score for bahdanau attention 'dot' (valid: additive, additive_normalized, location_aware, "
                   "monotonic, mocha)");
  c = {};
  c.attention = AttentionKind::luong;
  c.score = nn::StepScore::additive;
  EXPECT_THROW_MSG(c.validate(), ValueError,
                   "(valid: dot, general, concat, location, scaled_dot, multihead, local_m, local_p, hard)");
  c = {};
  c.attention = AttentionKind::none;
  c.score = nn::StepScore::general;
  EXPECT_THROW_MSG(c.validate(), ValueError, "score 'general' given for attention 'none'");
  EXPECT_THROW_MSG(Seq2SeqConfig::from_json_string(R"({"attention": "foo"})"), ValueError,
                   "unknown attention 'foo' (valid: none, bahdanau, luong)");
  EXPECT_THROW_MSG(Seq2SeqConfig::from_json_string(R"({"encoder": "rnn"})"), ValueError,
                   "unknown encoder 'rnn' (valid: gru, lstm)");
  EXPECT_THROW_MSG(Seq2SeqConfig::from_json_string(R"({"attention": "none", "score": "dot"})"), ValueError,
                   "score 'dot' given for attention 'none'");
  c = {};
  c.attention = AttentionKind::luong;
  c.score = nn::StepScore::dot;
  c.bidirectional = true;
  EXPECT_THROW_MSG(c.validate(), ValueError, "luong dot: decoder state D=256 differs from encoder state E=512");
  c = {};
  c.layers = 0;
  EXPECT_THROW_MSG(c.validate(), ValueError, "layers must be >= 1, got 0");
  c = {};
  c.dropout = 1.0f;
  EXPECT_THROW_MSG(c.validate(), ValueError, "dropout must be in [0, 1), got 1");
  EXPECT_THROW_MSG(Seq2SeqConfig::from_json_string(R"({"hiden": 3})"), ValueError, "unknown key 'hiden'");
  EXPECT_THROW_MSG(Seq2SeqConfig::from_json_string(R"({"hidden": "3"})"), ValueError, "'hidden' must be an integer");
  EXPECT_THROW_MSG(Seq2SeqConfig::from_json_string("{nope"), ValueError, "not valid JSON");
  EXPECT_THROW_MSG(Seq2SeqConfig::from_json_string(R"({"attention": "bahdanau", "score": "location"})"), ValueError,
                   "unknown score for bahdanau attention 'location'");
  c = {};
  c.attention = AttentionKind::luong;
  c.score = nn::StepScore::multihead;
  c.heads = 3;
  EXPECT_THROW_MSG(c.validate(), ValueError, "multihead: hidden=256 is not divisible by heads=3");
  c.score = nn::StepScore::local_p;
  c.window = 0;
  EXPECT_THROW_MSG(c.validate(), ValueError, "window must be >= 1, got 0");
  c.score = nn::StepScore::local_m;
  EXPECT_NO_THROW(c.validate());
  c.score = nn::StepScore::additive;
  EXPECT_THROW_MSG(Seq2Seq model(c), ValueError,
                   "(valid: dot, general, concat, location, scaled_dot, multihead, local_m, local_p, hard)");
}

// ---- parameter names ------------------------------------------------------------------------

std::vector<std::string> names_of(const nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& [name, t] : m.named_parameters()) {
    names.push_back(name);
    EXPECT_EQ(t.name(), name);
  }
  return names;
}

TEST(Seq2Seq, ParameterNamesBahdanauGru) {
  Seq2SeqConfig c = tiny("bahdanau");
  Seq2Seq model(c);
  const std::vector<std::string> expected = {
      "encoder.embedding.weight", "encoder.rnn.weight_ih_l0", "encoder.rnn.weight_hh_l0", "encoder.rnn.bias_ih_l0",
      "encoder.rnn.bias_hh_l0",   "decoder.embedding.weight", "decoder.rnn.weight_ih_l0", "decoder.rnn.weight_hh_l0",
      "decoder.rnn.bias_ih_l0",   "decoder.rnn.bias_hh_l0",   "decoder.attention.w_q",    "decoder.attention.w_k",
      "decoder.attention.bias",   "decoder.attention.v",      "decoder.out.weight",       "decoder.out.bias"};
  EXPECT_EQ(names_of(model), expected);
  auto params = model.named_parameters();
  // Shapes: E = D = 4, emb 3, V 6, A = D.
  EXPECT_EQ(params[6].second.shape(), Shape({12, 3 + 4}));  // decoder input [emb; c]
  EXPECT_EQ(params[10].second.shape(), Shape({4, 4}));
  EXPECT_EQ(params[14].second.shape(), Shape({6, 4 + 4 + 3}));  // out over [s; c; emb]
}

TEST(Seq2Seq, ParameterNamesLuongBidirectionalLstm) {
  Seq2SeqConfig c = tiny("luong", "general", "lstm", true, 2);
  Seq2Seq model(c);
  const std::vector<std::string> names = names_of(model);
  auto has = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  for (const char* n :
       {"encoder.rnn.weight_ih_l0", "encoder.rnn.weight_ih_l0_reverse", "encoder.rnn.weight_hh_l1_reverse",
        "encoder.rnn.bias_hh_l1_reverse", "encoder.bridge.h_l0.weight", "encoder.bridge.c_l1.bias",
        "decoder.rnn.weight_ih_l1", "decoder.attention.w", "decoder.linear_out.weight", "decoder.out.weight"})
    EXPECT_TRUE(has(n)) << n;
  EXPECT_FALSE(has("decoder.rnn.weight_ih_l0_reverse"));
  EXPECT_FALSE(has("decoder.linear_out.bias"));
  for (const auto& [name, t] : model.named_parameters()) {
    if (name == "encoder.rnn.weight_ih_l1") {
      EXPECT_EQ(t.shape(), Shape({16, 8}));
    }  // input = 2H
    if (name == "decoder.attention.w") {
      EXPECT_EQ(t.shape(), Shape({4, 8}));
    }  // (D, E)
    if (name == "decoder.rnn.weight_ih_l0") {
      EXPECT_EQ(t.shape(), Shape({16, 3 + 4}));
    }  // [emb; h̃]
    if (name == "decoder.linear_out.weight") {
      EXPECT_EQ(t.shape(), Shape({4, 8 + 4}));
    }
  }
  // encoder: embedding 1, rnn 2 layers x 2 directions x 4, bridge 2 layers x (h, c) x 2;
  // decoder: embedding 1, rnn 2 x 4, attention.w 1, linear_out 1, out 2.
  EXPECT_EQ(names.size(), 1u + 16u + 8u + 1u + 8u + 1u + 1u + 2u);
}

TEST(Seq2Seq, ParameterNamesMultiheadFollowTorch) {
  Seq2Seq model(tiny("luong", "multihead", "gru", true, 1));  // E = 8, D = 4
  std::map<std::string, Shape> shapes;
  for (const auto& [name, t] : model.named_parameters()) shapes[name] = t.shape();
  EXPECT_EQ(shapes.at("decoder.attention.q_proj_weight"), Shape({4, 4}));
  EXPECT_EQ(shapes.at("decoder.attention.k_proj_weight"), Shape({4, 8}));
  EXPECT_EQ(shapes.at("decoder.attention.v_proj_weight"), Shape({4, 8}));
  EXPECT_EQ(shapes.at("decoder.attention.in_proj_bias"), Shape({12}));
  EXPECT_EQ(shapes.at("decoder.attention.out_proj.weight"), Shape({4, 4}));
  EXPECT_EQ(shapes.at("decoder.linear_out.weight"), Shape({4, 4 + 4}));  // [c (D); s]
  Seq2Seq local(tiny("luong", "local_p"));
  std::map<std::string, Shape> local_shapes;
  for (const auto& [name, t] : local.named_parameters()) local_shapes[name] = t.shape();
  EXPECT_EQ(local_shapes.at("decoder.attention.w_p"), Shape({4, 4}));
  EXPECT_EQ(local_shapes.at("decoder.attention.v_p"), Shape({4}));
}

// ---- packed semantics -----------------------------------------------------------------------

void expect_encoder_padding_invariant(const Seq2SeqConfig& c) {
  SCOPED_TRACE(c.to_json_string());
  Seq2Seq model(c);
  const data::Batch batch = batch_of({{3, 4, 5, 3, 4}, {5, 4}, {4, 4, 3, 5}, {3}});
  autodiff::NoGradGuard no_grad;
  const EncoderOutput full = model.encoder.forward(batch.src, batch.src_lengths);
  const int64_t S = batch.src.dim(1), E = model.encoder.output_size();
  ASSERT_EQ(full.outputs.shape(), Shape({4, S, E}));
  for (int64_t b = 0; b < 4; ++b) {
    const int64_t len = batch.src_lengths.i32()[b];
    const EncoderOutput alone =
        model.encoder.forward(row_ids(batch.src, b, len), Tensor::from_vector(std::vector<int32_t>{int32_t(len)}, {1}));
    const Tensor row = full.outputs.select(b);  // (S, E)
    EXPECT_TRUE(tensors_close(row.slice(0, len).clone(), alone.outputs.select(0).clone(), 1e-6f, 1e-5f)) << "row " << b;
    for (int64_t i = len * E; i < S * E; ++i) ASSERT_EQ(row.f32()[i], 0.0f) << "row " << b << " padded output " << i;
    for (size_t l = 0; l < full.h.size(); ++l) {
      EXPECT_TRUE(tensors_close(full.h[l].select(b).clone(), alone.h[l].select(0).clone(), 1e-6f, 1e-5f))
          << "row " << b << " layer " << l;
      if (!full.c.empty()) {
        EXPECT_TRUE(tensors_close(full.c[l].select(b).clone(), alone.c[l].select(0).clone(), 1e-6f, 1e-5f));
      }
    }
  }
}

TEST(Seq2Seq, EncoderPaddingInvariance) {
  expect_encoder_padding_invariant(tiny("none"));
  expect_encoder_padding_invariant(tiny("none", "", "gru", true, 2));
  expect_encoder_padding_invariant(tiny("bahdanau", "", "lstm", true, 2));
  expect_encoder_padding_invariant(tiny("bahdanau", "", "lstm", false, 1));
}

TEST(Seq2Seq, LogitsAndLossArePaddingInvariant) {
  const data::Batch batch = batch_of({{3, 4, 5}, {5}, {4, 4}});
  for (const Variant& v : all_variants()) {
    SCOPED_TRACE(variant_name(v));
    Seq2Seq model(variant_config(v));
    deterministic(model);
    autodiff::NoGradGuard no_grad;
    const Tensor logits = model.logits(batch);  // (T, B, V)
    const int64_t B = 3, T = batch.tgt_in.dim(1), V = 6;
    ASSERT_EQ(logits.shape(), Shape({T, B, V}));
    double summed = 0.0;
    int64_t count = 0;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t sl = batch.src_lengths.i32()[b], tl = batch.tgt_lengths.i32()[b];
      data::Batch one{row_ids(batch.src, b, sl), Tensor::from_vector(std::vector<int32_t>{int32_t(sl)}, {1}),
                      row_ids(batch.tgt_in, b, tl), row_ids(batch.tgt_out, b, tl),
                      Tensor::from_vector(std::vector<int32_t>{int32_t(tl)}, {1})};
      const Tensor alone = model.logits(one);  // (tl, 1, V)
      for (int64_t t = 0; t < tl; ++t)
        for (int64_t k = 0; k < V; ++k)
          ASSERT_NEAR(logits.f32()[(t * B + b) * V + k], alone.f32()[t * V + k], 1e-5f) << "b " << b << " t " << t;
      summed += model.loss(one).item() * tl;
      count += tl;
    }
    EXPECT_NEAR(model.loss(batch).item(), summed / count, 1e-5);
  }
}

// ---- gradients ------------------------------------------------------------------------------

TEST(Seq2Seq, LossGradcheckEveryAttention) {
  const data::Batch batch = batch_of({{3, 4, 5}, {5, 3}});  // S = 3, ragged
  for (const Variant& v : all_variants()) {
    SCOPED_TRACE(variant_name(v));
    if (v.score == "hard") continue;  // argmax/sampling is piecewise constant: HardAttention* tests
    Seq2Seq model(variant_config(v));
    std::vector<Tensor> params = model.parameters();
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>&) { return model.loss(batch); }, params,
                          {.eps = 1e-2, .atol = 3e-3, .rtol = 3e-2}));
    EXPECT_EQ(autodiff::tape().size(), 0u);
  }
}

TEST(Seq2Seq, DropoutOnlyInTraining) {
  Seq2SeqConfig c = tiny("bahdanau", "", "gru", false, 2);
  c.dropout = 0.5f;
  c.hidden = 16;
  Seq2Seq model(c);
  const data::Batch batch = batch_of({{3, 4, 5, 3}, {5, 3}});
  autodiff::NoGradGuard no_grad;
  const float a = model.loss(batch).item(), b = model.loss(batch).item();
  EXPECT_NE(a, b);  // fresh masks each call
  model.eval();
  const float e1 = model.loss(batch).item(), e2 = model.loss(batch).item();
  EXPECT_EQ(e1, e2);
}

// ---- hard attention (REINFORCE) -------------------------------------------------------------

TEST(Seq2Seq, HardAttentionTrainsThroughReinforce) {
  const data::Batch batch = batch_of({{3, 4, 5}, {5, 3}});
  Seq2Seq model(tiny("luong", "hard"));
  // Training mode: CE + the REINFORCE surrogate; the score's parameter w gets a gradient
  // only through the surrogate (the sampled context does not depend on it).
  const Tensor loss = model.loss(batch);
  EXPECT_TRUE(std::isfinite(loss.item()));
  EXPECT_EQ(model.decoder.hard_baseline.updates, 1);
  EXPECT_LT(model.decoder.hard_baseline.value, 0.0f);  // a mean log-likelihood
  backward(loss);
  const Tensor w_grad = dynamic_cast<nn::HardAttention&>(*model.decoder.attention).w.grad();
  ASSERT_TRUE(w_grad.defined());
  double norm = 0.0;
  for (int64_t i = 0; i < w_grad.numel(); ++i) norm += std::abs(w_grad.f32()[i]);
  EXPECT_GT(norm, 0.0);
  // Evaluation mode: the argmax, no surrogate, no baseline update: the loss is plain CE.
  model.eval();
  autodiff::NoGradGuard no_grad;
  const Tensor logits = model.logits(batch);
  EXPECT_NEAR(model.loss(batch).item(),
              cross_entropy(logits, time_major_ids(batch.tgt_out), {.ignore_index = data::kPad}).item(), 1e-6);
  EXPECT_EQ(model.decoder.hard_baseline.updates, 1);
}

TEST(Seq2Seq, HardAttentionLogProbsComeWithTheLogits) {
  const data::Batch batch = batch_of({{3, 4, 5}, {5, 3}});
  Seq2Seq model(tiny("luong", "hard"));
  const DecoderOutput train = model.forward(batch);
  const int64_t T = batch.tgt_in.dim(1), B = batch.tgt_in.dim(0);
  ASSERT_TRUE(train.hard_log_probs.defined());
  EXPECT_EQ(train.hard_log_probs.shape(), Shape({T, B}));
  for (float lp : train.hard_log_probs.to_vector()) EXPECT_LE(lp, 0.0f);  // log π(k) of a sampled position
  autodiff::tape().clear();                                               // nothing to backpropagate here
  // The loss adds the REINFORCE term to the cross-entropy it reports, once, in training.
  const Seq2Seq::Loss terms = model.loss_terms(batch);
  EXPECT_EQ(terms.logits.shape(), Shape({T, B, int64_t{model.config().vocab}}));
  EXPECT_EQ(terms.cross_entropy.item(),
            cross_entropy(terms.logits, time_major_ids(batch.tgt_out), {.ignore_index = data::kPad}).item());
  EXPECT_NE(terms.loss.item(), terms.cross_entropy.item());
  autodiff::tape().clear();
  autodiff::NoGradGuard no_grad;
  model.eval();
  EXPECT_FALSE(model.forward(batch).hard_log_probs.defined());  // the argmax: nothing to reinforce
  Seq2Seq soft(tiny("luong", "general"));
  EXPECT_FALSE(soft.forward(batch).hard_log_probs.defined());
}

// ---- decoding -------------------------------------------------------------------------------

void expect_same_decode(const DecodeResult& a, const DecodeResult& b) {
  ASSERT_EQ(a.tokens, b.tokens);
  ASSERT_EQ(a.attention.size(), b.attention.size());
  for (size_t r = 0; r < a.attention.size(); ++r) {
    ASSERT_EQ(a.attention[r].size(), b.attention[r].size());
    for (size_t t = 0; t < a.attention[r].size(); ++t)
      for (size_t s = 0; s < a.attention[r][t].size(); ++s)
        ASSERT_NEAR(a.attention[r][t][s], b.attention[r][t][s], 1e-6f);
  }
}

TEST(Seq2Seq, BeamWidthOneEqualsGreedyUntrained) {
  const data::Batch batch = batch_of({{3, 4, 5}, {5}, {4, 4}});
  for (const Variant& v : all_variants()) {
    SCOPED_TRACE(variant_name(v));
    Seq2Seq model(variant_config(v));
    deterministic(model);
    const DecodeResult g = model.greedy(batch.src, batch.src_lengths, 7);
    const DecodeResult b = model.beam(batch.src, batch.src_lengths, {.width = 1, .length_penalty = 0.0f, .max_len = 7});
    expect_same_decode(g, b);
    ASSERT_EQ(g.tokens.size(), 3u);
    for (size_t r = 0; r < 3; ++r) {
      EXPECT_LE(g.tokens[r].size(), 7u);
      const bool eos = !g.tokens[r].empty() && g.tokens[r].back() == data::kEos;
      EXPECT_TRUE(eos || g.tokens[r].size() == 7u);
      for (size_t i = 0; i + 1 < g.tokens[r].size(); ++i) EXPECT_NE(g.tokens[r][i], data::kEos);
    }
    EXPECT_EQ(autodiff::tape().size(), 0u);
  }
}

// Greedy decoding splits an eval-mode batch into one block of rows per thread
// (detail::decode_row_blocks): with 2 threads every variant gives the tokens and attention of
// the undivided 1-thread run, and a bad length is reported at its row in the whole batch.
TEST(Seq2Seq, GreedyInRowBlocksEqualsOneThread) {
  std::vector<std::vector<int32_t>> sources;
  for (int r = 0; r < 19; ++r) {  // 19 rows: blocks of 9 and 10, lengths 1..5
    std::vector<int32_t> row;
    for (int i = 0; i <= r % 5; ++i) row.push_back(3 + (r + i) % 3);
    sources.push_back(row);
  }
  const data::Batch batch = batch_of(sources);
  for (const Variant& v : all_variants()) {
    SCOPED_TRACE(variant_name(v));
    Seq2Seq model(variant_config(v));
    model.eval();
    set_num_threads(1);
    const DecodeResult whole = model.greedy(batch.src, batch.src_lengths, 7);
    set_num_threads(2);
    const DecodeResult blocks = model.greedy(batch.src, batch.src_lengths, 7);
    set_num_threads(1);
    ASSERT_EQ(blocks.tokens.size(), sources.size());
    expect_same_decode(whole, blocks);
  }
  Seq2Seq model(tiny("bahdanau"));
  model.eval();
  std::vector<int32_t> lengths = batch.src_lengths.to_vector_i32();
  lengths[15] = 6;  // S = 5
  set_num_threads(2);
  EXPECT_THROW_MSG(model.greedy(batch.src, Tensor::from_vector(lengths, {19}), 3), ValueError,
                   "'src_lengths' value 6 at batch index 15 is out of range [1, S=5]");
  set_num_threads(1);
}

// Online monotonic attention that never stops (its offset r far below every energy) reads
// each input to the end at the first step (a zero context; that step's token is the model's
// choice): greedy and beam decoding both end the output with EOS at the next step, although
// the output layer here never prefers EOS, with zero weights and no NaN; no loop to max_len.
TEST(Seq2Seq, MonotonicAttentionThatNeverStopsEndsWithEos) {
  const data::Batch batch = batch_of({{3, 4, 5}, {5}, {4, 4}});
  for (const char* score : {"monotonic", "mocha"}) {
    SCOPED_TRACE(score);
    Seq2SeqConfig c = tiny("bahdanau", score);
    c.monotonic_bias = -1e4f;
    Seq2Seq model(c);
    model.eval();
    model.decoder.out.bias.f32()[data::kEos] = -100.0f;  // left to itself, the model would never end an output
    const DecodeResult g = model.greedy(batch.src, batch.src_lengths, 9);
    const DecodeResult b = model.beam(batch.src, batch.src_lengths, {.width = 3, .max_len = 9});
    for (const DecodeResult* r : {&g, &b})
      for (size_t row = 0; row < 3; ++row) {
        const std::vector<int32_t>& tokens = r->tokens[row];
        ASSERT_EQ(tokens.size(), 2u);
        EXPECT_EQ(tokens.back(), data::kEos);
        ASSERT_EQ(r->attention[row].size(), tokens.size());
        for (const std::vector<float>& step : r->attention[row])
          for (float w : step) EXPECT_EQ(w, 0.0f);
      }
    // Teacher forcing in eval mode: finite logits although the context is zero.
    autodiff::NoGradGuard no_grad;
    for (float x : model.logits(batch).to_vector()) EXPECT_TRUE(std::isfinite(x));
  }
}

// In eval mode the attention reads left to right: each step's stop (the last frame with
// weight) is at or after the previous one, whatever the model has (not) learned.
TEST(Seq2Seq, OnlineMonotonicAttentionNeverReadsBackwards) {
  const data::Batch batch = batch_of({{3, 4, 5, 3, 4}, {5, 4}, {4, 4, 3}});
  for (const char* score : {"monotonic", "mocha"}) {
    SCOPED_TRACE(score);
    Seq2SeqConfig c = tiny("bahdanau", score);
    c.monotonic_bias = 0.0f;
    Seq2Seq model(c);
    model.eval();
    const DecodeResult g = model.greedy(batch.src, batch.src_lengths, 9);
    for (size_t row = 0; row < 3; ++row) {
      int64_t last_stop = 0;
      for (const std::vector<float>& w : g.attention[row]) {
        int64_t stop = -1;
        for (size_t s = 0; s < w.size(); ++s)
          if (w[s] > 0.0f) stop = static_cast<int64_t>(s);
        if (stop < 0) continue;  // read to the end: the output ends here
        EXPECT_GE(stop, last_stop);
        last_stop = stop;
      }
    }
  }
}

TEST(Seq2Seq, DecodeErrors) {
  Seq2Seq model(tiny("bahdanau"));
  const data::Batch batch = batch_of({{3, 4, 5}});
  EXPECT_THROW_MSG(model.greedy(batch.src, batch.src_lengths, 0), ValueError, "max_len must be >= 1, got 0");
  EXPECT_THROW_MSG(model.beam(batch.src, batch.src_lengths, {.width = 0}), ValueError, "width must be >= 1, got 0");
  EXPECT_THROW_MSG(model.greedy(batch.src, Tensor::from_vector(std::vector<int32_t>{4}, {1}), 3), ValueError,
                   "'src_lengths' value 4 at batch index 0 is out of range [1, S=3]");
  EXPECT_THROW_MSG(model.greedy(batch.src, Tensor::from_vector(std::vector<int32_t>{3, 3}, {2}), 3), ShapeError,
                   "src_lengths");
}

// Overfits four fixed copy examples, then decodes them.
TEST(Seq2Seq, TrainedTinyModelDecodesGreedyAndBeam) {
  const std::vector<std::vector<int32_t>> sources = {{3, 9, 4}, {12, 7}, {5, 5, 20, 8}, {30}};
  const data::Batch batch = batch_of(sources);
  for (const char* attention : {"bahdanau", "luong"}) {
    SCOPED_TRACE(attention);
    Seq2SeqConfig c;
    c.attention = parse_attention_kind(attention);
    c.emb = 16;
    c.hidden = 32;
    c.seed = 3;
    Seq2Seq model(c);
    train::Adam adam(model.parameters(), {.lr = 1e-2f});
    float loss = 0.0f;
    for (int step = 0; step < 150; ++step) {
      Tensor l = model.loss(batch);
      loss = l.item();
      backward(l);
      adam.step();
      adam.zero_grad();
    }
    ASSERT_LT(loss, 0.02f);
    model.eval();
    const DecodeResult g = model.greedy(batch.src, batch.src_lengths, 10);
    for (size_t r = 0; r < sources.size(); ++r) {
      std::vector<int32_t> want = sources[r];
      want.push_back(data::kEos);
      EXPECT_EQ(g.tokens[r], want) << "row " << r;
      ASSERT_EQ(g.attention[r].size(), want.size());
      for (const std::vector<float>& w : g.attention[r]) {
        ASSERT_EQ(w.size(), 4u);  // S of the batch
        double sum = 0.0;
        for (size_t s = 0; s < w.size(); ++s) {
          if (s >= sources[r].size()) {
            EXPECT_EQ(w[s], 0.0f);
          }
          sum += w[s];
        }
        EXPECT_NEAR(sum, 1.0, 1e-5);
      }
    }
    expect_same_decode(g,
                       model.beam(batch.src, batch.src_lengths, {.width = 1, .length_penalty = 0.0f, .max_len = 10}));
    const DecodeResult b4 =
        model.beam(batch.src, batch.src_lengths, {.width = 4, .length_penalty = 1.0f, .max_len = 10});
    EXPECT_EQ(b4.tokens, g.tokens);
    for (size_t r = 0; r < sources.size(); ++r) EXPECT_EQ(b4.attention[r].size(), b4.tokens[r].size());
    // The n-best list: at most 4 hypotheses per row, best first, the first the winner.
    ASSERT_EQ(b4.hypotheses.size(), sources.size());
    EXPECT_TRUE(g.hypotheses.empty());
    for (size_t r = 0; r < sources.size(); ++r) {
      const auto& list = b4.hypotheses[r];
      ASSERT_GE(list.size(), 1u);
      ASSERT_LE(list.size(), 4u);
      EXPECT_EQ(list.front().tokens, b4.tokens[r]);
      EXPECT_EQ(list.front().attention, b4.attention[r]);
      for (size_t k = 0; k < list.size(); ++k) {
        EXPECT_EQ(list[k].attention.size(), list[k].tokens.size()) << "row " << r << " hypothesis " << k;
        EXPECT_EQ(list[k].tokens.back(), data::kEos);
        if (k > 0) {
          EXPECT_LE(list[k].score, list[k - 1].score) << "row " << r << " hypothesis " << k;
        }
      }
    }
  }
}

// ---- coverage (See et al. 2017) and GNMT's coverage penalty ---------------------------------

Seq2SeqConfig tiny_coverage() {
  Seq2SeqConfig c = tiny("bahdanau");
  c.coverage = CoverageKind::see;
  c.coverage_loss = 0.5f;
  return c;
}

TEST(Seq2SeqConfig, CoverageInTheJsonOnlyWhenUsed) {
  EXPECT_FALSE(tiny("bahdanau").to_json().contains("coverage"));  // older checkpoints' form
  const Seq2SeqConfig c = tiny_coverage();
  const nlohmann::json j = c.to_json();
  EXPECT_EQ(j.at("coverage"), "see");
  const Seq2SeqConfig back = Seq2SeqConfig::from_json(j);
  EXPECT_EQ(back.coverage, CoverageKind::see);
  EXPECT_EQ(back.coverage_loss, 0.5f);
  Seq2SeqConfig luong = tiny("luong");
  luong.coverage = CoverageKind::see;
  EXPECT_THROW_MSG(luong.validate(), ValueError, "coverage 'see' needs bahdanau attention");
  Seq2SeqConfig bad = tiny_coverage();
  bad.coverage_loss = -1.0f;
  EXPECT_THROW_MSG(bad.validate(), ValueError, "coverage_loss must be finite and >= 0, got -1");
  EXPECT_THROW_MSG(parse_coverage_kind("tu2"), ValueError, "unknown coverage 'tu2' (valid: none, see, tu)");
  Seq2SeqConfig tu = tiny("bahdanau");
  tu.coverage = CoverageKind::tu;
  EXPECT_EQ(Seq2SeqConfig::from_json(tu.to_json()).coverage, CoverageKind::tu);
}

// ---- sparse normalisers (Martins & Astudillo 2016, Peters et al. 2019) -------------------------

TEST(Seq2SeqConfig, NormalizerInTheJsonOnlyWhenNotSoftmax) {
  EXPECT_FALSE(tiny("bahdanau").to_json().contains("normalizer"));  // older checkpoints' form
  EXPECT_FALSE(tiny("bahdanau").to_json().contains("alpha"));
  Seq2SeqConfig c = tiny("luong", "concat");
  c.normalizer = {NormalizerKind::entmax, 1.25f};
  nlohmann::json j = c.to_json();
  EXPECT_EQ(j.at("normalizer"), "entmax");
  EXPECT_EQ(j.at("alpha"), 1.25f);
  EXPECT_EQ(Seq2SeqConfig::from_json(j).normalizer, c.normalizer);
  c.normalizer = {NormalizerKind::sparsemax};
  j = c.to_json();
  EXPECT_FALSE(j.contains("alpha"));
  EXPECT_EQ(Seq2SeqConfig::from_json(j).normalizer.kind, NormalizerKind::sparsemax);
  j["normalizer"] = "sparsemx";
  EXPECT_THROW_MSG(Seq2SeqConfig::from_json(j), ValueError, "unknown normaliser 'sparsemx'");
  Seq2SeqConfig bad = tiny("bahdanau");
  bad.normalizer = {NormalizerKind::entmax, 1.0f};
  EXPECT_THROW_MSG(bad.validate(), ValueError, "seq2seq config: entmax's alpha must be finite and > 1, got 1");
  Seq2SeqConfig multihead = tiny("luong", "multihead");
  multihead.normalizer = {NormalizerKind::entmax15};
  EXPECT_THROW_MSG(multihead.validate(), ValueError, "normalizer 'entmax15' needs bahdanau or luong attention");
  Seq2SeqConfig none = tiny("none");
  none.normalizer = {NormalizerKind::sparsemax};
  EXPECT_THROW_MSG(none.validate(), ValueError, "got none (none)");
}

TEST(Seq2Seq, SparseNormalizerDecoderTrainsAndDecodes) {
  const data::Batch batch = batch_of({{3, 4, 5, 3}, {5}, {4, 4}});
  for (const std::string attention : {"bahdanau", "luong"}) {
    Seq2SeqConfig c = tiny(attention);
    c.normalizer = {NormalizerKind::sparsemax};
    Seq2Seq model(c);
    const Tensor loss = model.loss(batch);
    EXPECT_TRUE(std::isfinite(loss.item())) << attention;
    backward(loss);
    for (const auto& [name, t] : model.named_parameters()) {
      if (!t.has_grad()) continue;
      for (float g : t.grad().to_vector()) ASSERT_TRUE(std::isfinite(g)) << attention << " " << name;
    }
    autodiff::NoGradGuard no_grad;
    const DecodeResult r = model.greedy(batch.src, batch.src_lengths, 6);
    for (size_t b = 0; b < r.attention.size(); ++b)
      for (const std::vector<float>& row : r.attention[b]) {
        double sum = 0.0;
        for (float w : row) sum += w;
        EXPECT_NEAR(sum, 1.0, 1e-5) << attention << " row of sequence " << b;
      }
  }
}

// The loss adds λ times the mean over target tokens (padding left out) of Σ_i min(a_i, c_i).
TEST(Seq2Seq, CoverageLossIsTheMeanOverTargetTokens) {
  const data::Batch batch = batch_of({{3, 4, 5, 3}, {5}, {4, 4}});
  Seq2Seq model(tiny_coverage());
  const Seq2Seq::Loss terms = model.loss_terms(batch);
  const DecoderOutput out = model.forward(batch);
  ASSERT_TRUE(out.coverage_terms.defined());
  const Tensor targets = time_major_ids(batch.tgt_out);
  double sum = 0.0;
  int64_t tokens = 0;
  for (int64_t i = 0; i < targets.numel(); ++i)
    if (targets.i32()[i] != data::kPad) {
      sum += out.coverage_terms.f32()[i];
      ++tokens;
    }
  EXPECT_GT(sum, 0.0);
  EXPECT_NEAR(terms.loss.item() - terms.cross_entropy.item(), 0.5 * sum / static_cast<double>(tokens), 1e-5);
  Tensor w_c;  // the coverage weight, zeros at the start: its gradient comes from c_t > 0
  for (const auto& [name, t] : model.named_parameters())
    if (name == "decoder.attention.w_c") w_c = t;
  ASSERT_TRUE(w_c.defined());
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>&) { return model.loss(batch); }, {w_c}));
  autodiff::tape().clear();
}

// CTranslate2 #906 / #915: the penalty sums over the source columns of the attention, and
// leaves padding out (a padded column sums to 0, whose log would be -inf).
TEST(Seq2Seq, CoveragePenaltySumsSourceColumns) {
  const std::vector<std::vector<int32_t>> sources = {{3, 4, 5, 3, 4}, {5, 3}};
  const data::Batch batch = batch_of(sources);
  Seq2Seq model(tiny("bahdanau"));
  const testing::CoveragePenaltyRun run = testing::expect_scores_move_by_coverage_penalty(
      model, batch.src, batch.src_lengths, {.width = 3, .length_penalty = 0.0f, .max_len = 6}, 0.4f);
  for (double penalty : run.penalties) EXPECT_LT(penalty, 0.0);
  EXPECT_GE(run.penalties.size(), 2u);  // (a penalty summed over the rows would be 0: each row sums to 1)
}

// ESPnet #665: a batch decodes as its rows one at a time, coverage penalty included.
TEST(Seq2Seq, BatchedBeamWithCoveragePenaltyEqualsRowByRow) {
  const std::vector<std::vector<int32_t>> sources = {{3, 4, 5, 3, 4}, {5}, {4, 4, 3}};
  Seq2Seq model(tiny_coverage());
  const BeamOptions options{.width = 3, .length_penalty = 1.0f, .max_len = 8, .coverage_penalty = 0.3f};
  const data::Batch batch = batch_of(sources);
  const DecodeResult all = model.beam(batch.src, batch.src_lengths, options);
  for (size_t r = 0; r < sources.size(); ++r) {
    const data::Batch one = batch_of({sources[r]});
    const DecodeResult alone = model.beam(one.src, one.src_lengths, options);
    EXPECT_EQ(all.tokens[r], alone.tokens[0]) << "row " << r;
    ASSERT_EQ(all.hypotheses[r].size(), alone.hypotheses[0].size());
    for (size_t k = 0; k < alone.hypotheses[0].size(); ++k)
      EXPECT_NEAR(all.hypotheses[r][k].score, alone.hypotheses[0][k].score, 1e-5) << "row " << r << " hypothesis " << k;
  }
}

// OpenNMT-py #2471: a penalty on a model with no attention is a clear error, not a crash; a
// one-position source and a hypothesis that ends at once score finitely.
TEST(Seq2Seq, CoveragePenaltyEdgeCases) {
  const data::Batch one = batch_of({{5}});
  Seq2Seq none(tiny("none"));
  EXPECT_THROW_MSG(none.beam(one.src, one.src_lengths, {.width = 2, .max_len = 4, .coverage_penalty = 1.0f}),
                   ValueError, "coverage_penalty needs the attention weights, and this model has none");
  Seq2Seq model(tiny_coverage());
  EXPECT_THROW_MSG(model.beam(one.src, one.src_lengths, {.width = 2, .max_len = 4, .coverage_penalty = -1.0f}),
                   ValueError, "coverage_penalty must be finite and >= 0, got -1");
  const DecodeResult r = model.beam(one.src, one.src_lengths, {.width = 2, .max_len = 1, .coverage_penalty = 5.0f});
  for (const auto& h : r.hypotheses[0]) EXPECT_TRUE(std::isfinite(h.score));
}

// ---- training in row blocks (Seq2Seq::loss_backward_in_row_blocks) -----------------------------

// Copies of every parameter's gradient, by name (undefined where none arrived).
std::map<std::string, Tensor> gradients_of(const Seq2Seq& model) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, p] : model.named_parameters()) out[name] = p.has_grad() ? p.grad().clone() : Tensor();
  return out;
}

// With 2 threads a training step runs as one block of rows per thread, each on a replica with
// its own tape and gradients: the loss, the cross-entropy, the logits and every parameter's
// gradient equal the undivided 1-thread step's within fp32 rounding, for every RNN attention
// variant (monotonic and MoChA without noise), with label smoothing, coverage and the pointer.
TEST(Seq2Seq, TrainingInRowBlocksEqualsOneThread) {
  std::vector<std::vector<int32_t>> sources;
  for (int r = 0; r < 19; ++r) {  // 19 rows: blocks of 9 and 10, lengths 1..5
    std::vector<int32_t> row;
    for (int i = 0; i <= (r * 3) % 5; ++i) row.push_back(3 + (r + i) % 3);
    sources.push_back(row);
  }
  const data::Batch batch = batch_of(sources);
  struct Case {
    std::string name;
    Seq2SeqConfig config;
    float label_smoothing = 0.0f;
  };
  std::vector<Case> cases;
  for (const Variant& v : all_variants())
    if (v.score != "hard") cases.push_back({variant_name(v), variant_config(v)});
  cases.push_back({"bahdanau, label smoothing 0.1", tiny("bahdanau"), 0.1f});
  cases.push_back({"bahdanau, coverage", tiny_coverage()});
  Seq2SeqConfig pointer = tiny("luong", "general");
  pointer.pointer = true;
  cases.push_back({"luong general, pointer", pointer});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(training_splits_rows(c.config));
    Seq2Seq model(c.config);
    model.train();
    EXPECT_FALSE(model.loss_backward_in_row_blocks(batch, c.label_smoothing).has_value());  // one thread: whole
    const Seq2Seq::Loss whole = model.loss_terms(batch, c.label_smoothing);
    backward(whole.loss);
    const std::map<std::string, Tensor> expected = gradients_of(model);
    model.zero_grad();

    set_num_threads(2);
    const std::optional<Seq2Seq::StepValues> blocks =
        model.loss_backward_in_row_blocks(batch, c.label_smoothing, /*with_logits=*/true);
    set_num_threads(1);
    ASSERT_TRUE(blocks.has_value());
    EXPECT_EQ(blocks->blocks, 2);
    EXPECT_NEAR(blocks->loss, whole.loss.item(), 1e-5);
    EXPECT_NEAR(blocks->cross_entropy, whole.cross_entropy.item(), 1e-5);
    EXPECT_TRUE(tensors_close(blocks->logits, whole.logits));
    for (const auto& [name, grad] : gradients_of(model)) {
      SCOPED_TRACE(name);
      ASSERT_EQ(grad.defined(), expected.at(name).defined());
      if (grad.defined()) {
        EXPECT_TRUE(tensors_close(grad, expected.at(name)));
      }
    }
    EXPECT_EQ(autodiff::tape().size(), 0u);
  }
}

// The blocks' gradients add to those already there, as backward()'s do; what draws random
// numbers (hard attention's samples, monotonic noise) or keeps state across rows runs whole
// (nullopt, nothing touched); a bad row is reported at its index in the whole batch and
// leaves no gradient behind, in this model or in the next step's.
TEST(Seq2Seq, TrainingInRowBlocksAccumulatesRefusesAndFailsCleanly) {
  std::vector<std::vector<int32_t>> sources;
  for (int r = 0; r < 19; ++r) sources.push_back(std::vector<int32_t>(static_cast<size_t>(1 + r % 5), 3 + r % 3));
  const data::Batch batch = batch_of(sources);
  set_num_threads(2);
  Seq2Seq model(tiny("bahdanau"));
  const std::optional<Seq2Seq::StepValues> first = model.loss_backward_in_row_blocks(batch);
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(first->logits.defined());  // asked for only
  const std::map<std::string, Tensor> once = gradients_of(model);
  ASSERT_TRUE(model.loss_backward_in_row_blocks(batch).has_value());
  for (const auto& [name, grad] : gradients_of(model)) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(tensors_close(grad, scale(once.at(name), 2.0f)));
  }

  Seq2SeqConfig noisy = tiny("bahdanau", "monotonic");
  noisy.monotonic_noise = 1.0f;
  Seq2SeqConfig dropout = tiny("bahdanau", "", "gru", false, 2);
  dropout.dropout = 0.3f;
  for (const Seq2SeqConfig& c : {tiny("luong", "hard"), noisy, dropout}) {
    SCOPED_TRACE(c.effective_score());
    EXPECT_FALSE(training_splits_rows(c));
    Seq2Seq whole(c);
    EXPECT_FALSE(whole.loss_backward_in_row_blocks(batch).has_value());
    for (const auto& [name, grad] : gradients_of(whole)) EXPECT_FALSE(grad.defined()) << name;
  }

  Seq2Seq fresh(tiny("bahdanau"));
  std::vector<int32_t> lengths = batch.src_lengths.to_vector_i32();
  lengths[15] = 6;  // S = 5
  data::Batch bad = batch;
  bad.src_lengths = Tensor::from_vector(lengths, {19});
  EXPECT_THROW_MSG(fresh.loss_backward_in_row_blocks(bad), ValueError,
                   "'src_lengths' value 6 at batch index 15 is out of range [1, S=5]");
  for (const auto& [name, grad] : gradients_of(fresh)) EXPECT_FALSE(grad.defined()) << name;
  ASSERT_TRUE(fresh.loss_backward_in_row_blocks(batch).has_value());  // the same model, a good batch
  for (const auto& [name, grad] : gradients_of(fresh)) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(tensors_close(grad, once.at(name)));
  }
  set_num_threads(1);
  EXPECT_EQ(autodiff::tape().size(), 0u);
}

}  // namespace
}  // namespace attn::models
