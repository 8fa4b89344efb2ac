// explain/asr_alignment.h and decode::speech_utterance (what attn align and attn view show of an
// ASR model) on an untrained tiny listen-attend-spell model and synthetic speech
// (tests/support/synthetic_speech.h): the alignment's shape, the stops of monotonic attention,
// the spectrogram's padding, and the utterance lookup's refusals.
#include "attn/explain/asr_alignment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "attn/data/speech.h"
#include "attn/decode/asr.h"
#include "attn/error.h"
#include "attn/io/atomic_file.h"
#include "synthetic_speech.h"
#include "test_support.h"

namespace attn::explain {
namespace {

// An untrained model over the synthetic alphabet: reduction 4, 80 bins.
decode::LoadedAsr tiny_model(nn::StepScore score) {
  decode::LoadedAsr m;
  m.vocab = data::CharVocab::build({"abcdefgh "});
  m.info.config.projection = 16;
  m.info.config.listener_hidden = 16;
  m.info.config.speller.emb = 8;
  m.info.config.speller.hidden = 16;
  m.info.config.speller.score = score;
  m.info.config.speller.vocab = m.vocab.size();
  m.info.characters = m.vocab.characters();
  m.model = std::make_unique<models::ListenAttendSpell>(m.info.config);
  return m;
}

class AsrAlignmentTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    set_ = testing::synthetic_speech({.utterances = 5, .seed = 7});
    data::write_speech_set(path("s.speech"), set_);
  }
  data::SpeechSet set_;
};

TEST_F(AsrAlignmentTest, ShapesStopsAndSpectrogram) {
  for (nn::StepScore score : {nn::StepScore::additive, nn::StepScore::monotonic}) {
    SCOPED_TRACE(nn::step_score_name(score));
    decode::LoadedAsr model = tiny_model(score);
    const data::SpeechUtterance u = decode::speech_utterance(path("s.speech"), "syn2", 2);
    const int64_t frames = set_.utterances[2].frames + set_.utterances[3].frames;
    ASSERT_EQ(u.frames, frames);
    const int64_t C = (frames + 3) / 4;  // listener frames
    const AsrAlignment a = asr_alignment(model, u, 1, 1.0f);
    const size_t R = a.rows.size();
    ASSERT_GT(R, 0u);
    EXPECT_EQ(a.frames, C);
    EXPECT_EQ(a.weights.size(), R * static_cast<size_t>(C)) << "(R, C) weights";
    ASSERT_EQ(a.frames_read.size(), R);
    EXPECT_EQ(a.online, score == nn::StepScore::monotonic);
    for (size_t r = 0; r < R; ++r) {
      const auto row = a.weights.begin() + static_cast<std::ptrdiff_t>(r * C);
      const auto last = std::find_if(std::make_reverse_iterator(row + C), std::make_reverse_iterator(row),
                                     [](float w) { return w > 0.0f; });
      const int64_t stop = last == std::make_reverse_iterator(row) ? -1 : (last.base() - row) - 1;
      if (!a.online) {
        EXPECT_EQ(a.frames_read[r], C) << "soft attention reads every frame, row " << r;
        continue;
      }
      ASSERT_EQ(a.stops.size(), R);
      EXPECT_EQ(a.stops[r], stop) << "row " << r;
      EXPECT_EQ(a.frames_read[r], stop < 0 ? C : stop + 1) << "row " << r;
    }
    if (!a.online) {
      EXPECT_TRUE(a.stops.empty());
    }
    // The characters of the hypothesis, a space as "_", then EOS's row when it ended.
    std::string spelled;
    for (size_t r = 0; r < R; ++r)
      if (a.rows[r] != "</s>") spelled += a.rows[r] == "_" ? " " : a.rows[r];
    EXPECT_EQ(spelled, a.text);

    const AsrSpectrogram s = asr_spectrogram(model, u);
    EXPECT_EQ(s.reduction, 4);
    EXPECT_EQ(s.bins, 80);
    EXPECT_EQ(s.input_frames, frames);
    ASSERT_EQ(s.values.size(), static_cast<size_t>(4 * C * 80)) << "padded to whole listener frames";
    EXPECT_TRUE(std::equal(u.features.begin(), u.features.end(), s.values.begin()));
    const float floor = *std::min_element(u.features.begin(), u.features.end());
    EXPECT_TRUE(std::all_of(s.values.begin() + static_cast<std::ptrdiff_t>(u.features.size()), s.values.end(),
                            [&](float x) { return x == floor; }));
  }
}

TEST_F(AsrAlignmentTest, UtteranceLookup) {
  const data::SpeechUtterance one = decode::speech_utterance(path("s.speech"), "syn4", 1);
  EXPECT_EQ(one.id, "syn4");
  EXPECT_EQ(one.text, set_.utterances[4].text);
  const data::SpeechUtterance two = decode::speech_utterance(path("s.speech"), "syn0", 2);
  EXPECT_EQ(two.id, "syn0+syn1");
  EXPECT_EQ(two.text, set_.utterances[0].text + " " + set_.utterances[1].text);
  const std::string file = path("s.speech");
  EXPECT_THROW_MSG(decode::speech_utterance("", "syn0", 1), ValueError,
                   "an ASR model needs --speech FILE --utterance ID");
  EXPECT_THROW_MSG(decode::speech_utterance(file, "", 1), ValueError,
                   "an ASR model needs --speech FILE --utterance ID");
  EXPECT_THROW_MSG(decode::speech_utterance(file, "syn0", 0), ValueError, "--join must be >= 1, got 0");
  EXPECT_THROW_MSG(decode::speech_utterance(file, "nope", 1), ValueError, "no utterance 'nope' in " + file);
  EXPECT_THROW_MSG(decode::speech_utterance(file, "syn0", 6), ValueError,
                   "--join 6: " + file + " has only 5 utterances");
  EXPECT_THROW_MSG(decode::speech_utterance(file, "syn1", 2), ValueError,
                   "utterance 'syn1' does not start a group of --join 2 (eval's groups from the set's start); its "
                   "group starts at 'syn0'");
  EXPECT_THROW_MSG(decode::speech_utterance(file, "syn4", 2), ValueError,
                   "utterance 'syn4' starts the last group, of fewer than 2 utterances");
  io::write_file_atomically(path("cut.speech"), read(file).substr(0, 100));
  EXPECT_THROW(decode::speech_utterance(path("cut.speech"), "syn0", 1), IoError) << "a damaged file";
  EXPECT_THROW(decode::speech_utterance(path("none.speech"), "syn0", 1), IoError);
}

}  // namespace
}  // namespace attn::explain
