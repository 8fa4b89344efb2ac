// Listen, attend and spell (models/listen_attend_spell.h): the pyramidal listener's gradients,
// lengths and padding, the configuration's checks, decoding, and a small model learning to spell
// synthetic speech with content and location-aware attention.
#include "attn/models/listen_attend_spell.h"

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "attn/autodiff/tape.h"
#include "attn/data/char_vocab.h"
#include "attn/data/metrics.h"
#include "attn/parallel.h"
#include "attn/train/optimizer.h"
#include "synthetic_speech.h"
#include "test_support.h"

namespace attn::models {
namespace {
using testing::gradcheck;
using testing::leaf;
using testing::random_tensor;
using testing::tensors_close;

AsrConfig tiny_config(int reduction = 4) {
  AsrConfig c;
  c.bins = 3;
  c.projection = 4;
  c.listener_hidden = 3;
  c.reduction = reduction;
  c.speller.emb = 4;
  c.speller.hidden = 5;
  c.speller.vocab = 8;
  return c;
}

Tensor lengths_of(std::vector<int32_t> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return Tensor::from_vector(values, {n});
}

TEST(Listener, GradcheckThroughPairedFrames) {
  ListenAttendSpell model(tiny_config());
  Listener& listener = model.listener;
  const Tensor lengths = lengths_of({7, 5});  // odd lengths: the last pair of each layer is half padding
  auto fn = [&](const std::vector<Tensor>& in) {
    Tensor encoded;
    return listener.forward(in[0], lengths, encoded).outputs;
  };
  // The features, and a weight of each pyramid layer (reading paired frames).
  EXPECT_TRUE(gradcheck(fn, {leaf({2, 7, 3}, 1), listener.blstm[1]->at(0, 0).w_ih, listener.blstm[2]->at(0, 1).w_ih}));
}

TEST(Listener, LengthsAndPaddingChangeNothing) {
  for (int reduction : {4, 8}) {
    ListenAttendSpell model(tiny_config(reduction));
    const Tensor a = random_tensor({1, 5, 3}, 1), b = random_tensor({1, 9, 3}, 2);
    Tensor alone_lengths;
    const EncoderOutput alone = model.listener.forward(a, lengths_of({5}), alone_lengths);
    // a padded to 9 frames with garbage past its end (the listener never reads it), beside b.
    Tensor both = random_tensor({2, 9, 3}, 3);
    std::copy_n(a.f32(), 5 * 3, both.f32());
    std::copy_n(b.f32(), 9 * 3, both.f32() + 9 * 3);
    Tensor lengths;
    const EncoderOutput batched = model.listener.forward(both, lengths_of({5, 9}), lengths);
    const int64_t S = (9 + reduction - 1) / reduction, a_len = (5 + reduction - 1) / reduction;
    EXPECT_EQ(lengths.to_vector_i32(), (std::vector<int32_t>{static_cast<int32_t>(a_len), static_cast<int32_t>(S)}));
    EXPECT_EQ(alone_lengths.to_vector_i32(), (std::vector<int32_t>{static_cast<int32_t>(a_len)}));
    ASSERT_EQ(batched.outputs.shape(), Shape({2, S, 6}));
    ASSERT_EQ(alone.outputs.shape(), Shape({1, a_len, 6}));
    for (int64_t s = 0; s < S; ++s)
      for (int64_t e = 0; e < 6; ++e) {
        const float got = batched.outputs.f32()[s * 6 + e];
        if (s < a_len)
          EXPECT_NEAR(got, alone.outputs.f32()[s * 6 + e], 1e-6f) << "reduction " << reduction << " frame " << s;
        else
          EXPECT_EQ(got, 0.0f) << "padding past the length, reduction " << reduction;
      }
  }
}

TEST(Listener, AnUtteranceShorterThanTheReductionGivesOneFrame) {
  ListenAttendSpell model(tiny_config(8));
  Tensor lengths;
  const EncoderOutput enc = model.listener.forward(random_tensor({1, 3, 3}, 4), lengths_of({3}), lengths);
  EXPECT_EQ(enc.outputs.shape(), Shape({1, 1, 6}));
  EXPECT_EQ(lengths.to_vector_i32(), (std::vector<int32_t>{1}));
  for (float v : enc.outputs.to_vector()) EXPECT_TRUE(std::isfinite(v));
}

TEST(Listener, BadInput) {
  ListenAttendSpell model(tiny_config());
  Tensor lengths;
  EXPECT_THROW_MSG(model.listener.forward(Tensor::zeros({2, 7, 4}), lengths_of({7, 5}), lengths), ShapeError,
                   "Listener: 'features' expected (B, S, F=3), got (2, 7, 4)");
  EXPECT_THROW_MSG(model.listener.forward(Tensor::zeros({2, 7, 3}), lengths_of({7, 0}), lengths), ValueError,
                   "Listener: 'lengths' value 0 at batch index 1 is out of range [1, S=7]");
  EXPECT_THROW_MSG(pack_speech({}, 3), ValueError, "pack_speech: expected at least one utterance, got none");
  const std::vector<float> five(5, 0.0f);
  EXPECT_THROW_MSG(pack_speech({std::span<const float>(five)}, 3), ValueError,
                   "pack_speech: utterance 0 has 5 values, not a positive multiple of 3 bins");
  EXPECT_THROW_MSG(pack_speech({std::span<const float>()}, 3), ValueError, "utterance 0 has 0 values");
}

TEST(AsrConfig, ChecksAndJson) {
  AsrConfig c = tiny_config();
  c.speller.score = nn::StepScore::location_aware;
  c.speller.location_width = 5;
  const AsrConfig back = AsrConfig::from_json(c.to_json());
  EXPECT_EQ(back.to_json(), c.to_json());
  EXPECT_EQ(AsrConfig::from_json(nlohmann::json::object()).to_json(), AsrConfig{}.to_json());
  EXPECT_THROW_MSG(AsrConfig::from_json({{"reductoin", 4}}), ValueError, "unknown key 'reductoin'");
  AsrConfig bad = c;
  bad.reduction = 3;
  EXPECT_THROW_MSG(bad.validate(), ValueError, "reduction must be 2, 4 or 8, got 3");
  bad = c;
  bad.speller.attention = AttentionKind::none;
  bad.speller.score.reset();
  EXPECT_THROW_MSG(bad.validate(), ValueError, "the speller needs attention");
  bad = c;
  bad.speller.pointer = true;
  EXPECT_THROW_MSG(bad.validate(), ValueError, "pointer must be off");
  EXPECT_EQ(c.encoded_length(9), 3);
  EXPECT_EQ(c.encoded_length(8), 2);
  EXPECT_EQ(c.pyramid_layers(), 2);
}

TEST(ListenAttendSpell, ParameterNamesFollowPyTorch) {
  ListenAttendSpell model(tiny_config());
  std::vector<std::string> names;
  for (const auto& [name, t] : model.named_parameters()) names.push_back(name);
  for (const char* want :
       {"listener.input.weight", "listener.blstm0.weight_ih_l0", "listener.blstm2.weight_hh_l0_reverse",
        "speller.embedding.weight", "speller.rnn.weight_ih_l0", "speller.out.weight"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  EXPECT_EQ(std::find(names.begin(), names.end(), "listener.blstm3.weight_ih_l0"), names.end());
}

// The synthetic sets as batches and their CER under greedy decoding.
struct SpeechData {
  std::vector<std::vector<int32_t>> targets;
  SpeechBatch batch;  // every utterance
};

SpeechData encode(const data::SpeechSet& set, const data::CharVocab& vocab, size_t from, size_t count) {
  SpeechData d;
  std::vector<std::span<const float>> frames;
  for (size_t i = from; i < from + count; ++i) {
    d.targets.push_back(vocab.encode(set.utterances[i].text));
    frames.emplace_back(set.utterances[i].features);
  }
  IdRows rows(d.targets.begin(), d.targets.end());
  d.batch = pack_speech(frames, set.bins, rows);
  return d;
}

double character_error_rate(ListenAttendSpell& model, const SpeechData& d) {
  model.eval();
  const DecodeResult r = model.greedy(d.batch.features, d.batch.lengths, 20);
  model.train();
  int64_t edits = 0, chars = 0;
  for (size_t b = 0; b < d.targets.size(); ++b) {
    std::vector<int32_t> hyp = r.tokens[b];
    if (!hyp.empty() && hyp.back() == kEos) hyp.pop_back();
    edits += data::edit_distance(hyp, d.targets[b]);
    chars += static_cast<int64_t>(d.targets[b].size());
  }
  return static_cast<double>(edits) / static_cast<double>(chars);
}

void learns_to_spell(nn::StepScore score) {
  set_num_threads(1);  // a small model: barriers would cost more than the work
  // 800 training utterances (each seen once in 500 steps) and 32 held out; 16 bins keep it quick.
  const data::SpeechSet set = testing::synthetic_speech({.utterances = 832, .seed = 7, .bins = 16});
  std::vector<std::string> texts;
  for (const auto& u : set.utterances) texts.push_back(u.text);
  const data::CharVocab vocab = data::CharVocab::build(texts);
  AsrConfig c;
  c.bins = 16;
  c.projection = 32;
  c.listener_hidden = 32;
  c.reduction = 4;
  c.speller.emb = 16;
  c.speller.hidden = 64;
  c.speller.vocab = vocab.size();
  c.speller.score = score;
  c.speller.location_filters = 4;
  c.speller.location_width = 5;
  ListenAttendSpell model(c);
  const SpeechData test = encode(set, vocab, 800, 32);
  const double untrained = character_error_rate(model, test);
  train::Adam adam(model.parameters(), {.lr = 5e-3f});
  const auto start = std::chrono::steady_clock::now();
  double cer = untrained;
  int step = 0;
  while (step < 500 && cer >= 0.15) {  // 100 steps of 16 utterances, then the CER of 32 others
    for (int i = 0; i < 100; ++i, ++step) {
      const SpeechData batch = encode(set, vocab, static_cast<size_t>(step % 50) * 16, 16);
      backward(model.loss(batch.batch));
      train::clip_grad_norm(model.parameters(), 1.0f);
      adam.step();
      adam.zero_grad();
    }
    cer = character_error_rate(model, test);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: CER %.3f after %d steps (untrained %.3f), %.1f s\n", nn::step_score_name(score), cer, step,
              untrained, seconds);
  EXPECT_GT(untrained, 0.6);
  EXPECT_LT(cer, 0.15) << "after " << step << " steps";
}

TEST(ListenAttendSpell, LearnsSyntheticSpeechWithContentAttention) { learns_to_spell(nn::StepScore::additive); }
TEST(ListenAttendSpell, LearnsSyntheticSpeechWithLocationAwareAttention) {
  learns_to_spell(nn::StepScore::location_aware);
}

TEST(ListenAttendSpell, BeamAndMonotonicDecodingEnd) {
  for (nn::StepScore score : {nn::StepScore::additive, nn::StepScore::monotonic, nn::StepScore::mocha}) {
    AsrConfig c = tiny_config();
    c.speller.score = score;
    ListenAttendSpell model(c);
    model.eval();
    const Tensor features = random_tensor({2, 11, 3}, 5);
    const Tensor lengths = lengths_of({11, 6});
    const DecodeResult greedy = model.greedy(features, lengths, 40);
    const DecodeResult beam = model.beam(features, lengths, {.width = 1, .length_penalty = 0.0f, .max_len = 40});
    EXPECT_EQ(beam.tokens, greedy.tokens) << "beam 1 is greedy";
    const DecodeResult wide = model.beam(features, lengths, {.width = 3, .max_len = 40});
    ASSERT_EQ(wide.tokens.size(), 2u);
    for (size_t b = 0; b < 2; ++b) {
      ASSERT_FALSE(greedy.attention[b].empty());
      EXPECT_EQ(greedy.attention[b][0].size(), 3u) << "weights over the 3 listener frames";
      for (const auto& row : greedy.attention[b])
        for (float w : row) EXPECT_TRUE(std::isfinite(w));
    }
    if (score != nn::StepScore::additive) {
      // Untrained (selection bias r = -4), hard monotonic attention reads to the end at once: the
      // output ends there with EOS instead of running to max_len.
      for (size_t b = 0; b < 2; ++b) {
        ASSERT_FALSE(greedy.tokens[b].empty());
        EXPECT_EQ(greedy.tokens[b].back(), kEos) << nn::step_score_name(score) << " row " << b;
        EXPECT_LT(greedy.tokens[b].size(), 40u);
      }
    }
  }
}

}  // namespace
}  // namespace attn::models
