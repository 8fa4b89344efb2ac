// Log-mel features and audio reading (attn/data/log_mel.h), and the speech transcripts
// (attn/data/speech_build.h). Parity with torch.stft: tests/parity/test_log_mel.py.
#include "attn/data/log_mel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "attn/data/speech_build.h"
#include "attn/error.h"
#include "test_support.h"

namespace attn::data {
namespace {

// A 16-bit PCM WAV of `channels` interleaved channels.
std::string wav_bytes(int sample_rate, int channels, const std::vector<float>& samples) {
  std::string out;
  auto u32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  auto u16 = [&](uint32_t v) {
    for (int i = 0; i < 2; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  const uint32_t data_bytes = static_cast<uint32_t>(samples.size() * 2);
  out += "RIFF";
  u32(36 + data_bytes);
  out += "WAVEfmt ";
  u32(16);
  u16(1);  // PCM
  u16(static_cast<uint32_t>(channels));
  u32(static_cast<uint32_t>(sample_rate));
  u32(static_cast<uint32_t>(sample_rate * channels * 2));
  u16(static_cast<uint32_t>(channels * 2));
  u16(16);
  out += "data";
  u32(data_bytes);
  for (float x : samples) u16(static_cast<uint16_t>(static_cast<int16_t>(std::lround(x * 32767.0f))));
  return out;
}

std::vector<float> sine(int sample_rate, double hz, int n, float amplitude = 0.5f) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    x[static_cast<size_t>(i)] = amplitude * static_cast<float>(std::sin(2 * M_PI * hz * i / sample_rate));
  return x;
}

TEST(LogMel, WindowHopAndFramesFollowTheSampleRate) {
  const LogMel espeak(22050);
  EXPECT_EQ(espeak.window(), 551);  // round(0.025 * 22050) = round(551.25)
  EXPECT_EQ(espeak.hop(), 221);     // round(220.5): half away from zero
  const LogMel sixteen(16000);
  EXPECT_EQ(sixteen.window(), 400);
  EXPECT_EQ(sixteen.hop(), 160);
  EXPECT_EQ(sixteen.frames(399), 0);
  EXPECT_EQ(sixteen.frames(400), 1);
  EXPECT_EQ(sixteen.frames(559), 1);
  EXPECT_EQ(sixteen.frames(560), 2);
  EXPECT_EQ(sixteen.compute(std::vector<float>(16000, 0.1f)).size(), size_t{98} * 80);  // 1 + 15600 / 160
  EXPECT_EQ(sixteen.filterbank().size(), size_t{80} * 201);
}

TEST(LogMel, ASineLightsTheFilterAroundItsFrequency) {
  const int sr = 16000;
  const LogMel log_mel(sr);
  const std::vector<float> f = log_mel.compute(sine(sr, 1000.0, sr));
  // Filter m peaks at mel_to_hz((m + 1) * mel(8000) / 81): 1000 Hz is mel 1000 (HTK), so m + 1 = 81 * 1000 / 2840.
  const double mel_8000 = 2595.0 * std::log10(1.0 + 8000.0 / 700.0);
  const int expected = static_cast<int>(std::lround(81.0 * 999.99 / mel_8000)) - 1;
  for (int t = 0; t < log_mel.frames(sr); t += 30) {
    const float* row = f.data() + static_cast<size_t>(t) * 80;
    const int peak = static_cast<int>(std::max_element(row, row + 80) - row);
    EXPECT_NEAR(peak, expected, 1) << "frame " << t;
    EXPECT_GT(row[peak] - row[5], 10.0f) << "frame " << t << ": a low filter is not far below the peak";
  }
}

TEST(LogMel, SilenceIsTheFloorAndBadAudioIsAClearError) {
  const LogMel log_mel(22050);
  const std::vector<float> quiet = log_mel.compute(std::vector<float>(5000, 0.0f));
  ASSERT_EQ(quiet.size(), static_cast<size_t>(log_mel.frames(5000)) * 80);
  for (float x : quiet) ASSERT_FLOAT_EQ(x, std::log(1e-10f));
  EXPECT_THROW_MSG(log_mel.compute(std::vector<float>(550, 0.1f)), ValueError,
                   "log-mel: audio of 550 samples (24.9 ms) is shorter than one window (551 samples, 25 ms)");
  std::vector<float> nan(1000, 0.0f);
  nan[700] = std::nanf("");
  EXPECT_THROW_MSG(log_mel.compute(nan), ValueError, "log-mel: sample 700 is not finite");
  EXPECT_THROW_MSG(LogMel(8000, LogMelOptions{.bins = 200}), ValueError, "covers no FFT bin");
  EXPECT_THROW_MSG(LogMel(500), ValueError, "below 1000 Hz");
}

TEST(LogMel, ReadsMonoWavAndRefusesStereoAndGarbage) {
  const std::vector<float> x = sine(16000, 440.0, 1600, 0.25f);
  const Audio a = read_audio_bytes(wav_bytes(16000, 1, x), "mem.wav");
  EXPECT_EQ(a.sample_rate, 16000);
  ASSERT_EQ(a.samples.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(a.samples[i], x[i], 1.0 / 32768) << "sample " << i;
  EXPECT_THROW_MSG(read_audio_bytes(wav_bytes(16000, 2, x), "two.wav"), ValueError,
                   "two.wav: 2 channels; log-mel features take mono audio");
  EXPECT_THROW_MSG(read_audio_bytes("not audio at all", "junk.wav"), IoError, "junk.wav: cannot read audio");
  const std::string file = testing::temp_file("a.wav", wav_bytes(22050, 1, x));
  EXPECT_EQ(read_audio(file).samples.size(), x.size());
  EXPECT_THROW_MSG(read_audio("/nonexistent/a.wav"), IoError, "/nonexistent/a.wav");
}

TEST(SpeechTranscript, TheDocumentedMapping) {
  std::string why;
  EXPECT_EQ(speech_transcript("Go.", &why), "go");
  EXPECT_EQ(why, "");
  EXPECT_EQ(speech_transcript("I\xe2\x80\x99m a well-known \"cook\", right?!", &why), "i'm a well known cook right");
  EXPECT_EQ(speech_transcript("  Tom's   here -- ok ", &why), "tom's here ok");
  EXPECT_EQ(speech_transcript("I'm 42.", &why), "");
  EXPECT_EQ(why, "digits");
  EXPECT_EQ(speech_transcript("Caf\xc3\xa9 au lait.", &why), "");
  EXPECT_EQ(why, "other characters");
  EXPECT_EQ(speech_transcript("Tom & Mary.", &why), "");
  EXPECT_EQ(why, "other characters");
  EXPECT_EQ(speech_transcript("?!", &why), "");
  EXPECT_EQ(why, "empty");
}

TEST(SpeechVoices, TestVoicesAreHeldOut) {
  EXPECT_GE(speech_train_voices().size() + speech_test_voices().size(), 8u);
  for (const std::string& v : speech_test_voices())
    EXPECT_EQ(std::count(speech_train_voices().begin(), speech_train_voices().end(), v), 0) << v;
}

}  // namespace
}  // namespace attn::data
