#pragma once
// Building a spoken-sentence set (`attn data speech`; docs/data.md, "Spoken sentences"):
// Tatoeba's English sentences spoken by espeak-ng in 12 voices, with log-mel features
// (attn/data/log_mel.h), written as DIR/{train,dev,test}.speech (attn/data/speech.h) and
// DIR/manifest.json.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn::data {

// The voices (espeak-ng language + variant). Test voices are held out of train and dev whole.
const std::vector<std::string>& speech_train_voices();
const std::vector<std::string>& speech_test_voices();

// The transcript of an English sentence, or "" with `*dropped` set to why the sentence is not
// used ("digits", "other characters", "empty"):
//   ASCII letters lower-cased; space and apostrophe kept (’ and ‘ become '); '-' becomes a space;
//   . , ! ? ; : " removed; runs of spaces made one, none at either end. A digit drops the
//   sentence (espeak-ng says "42" as "forty-two", which the transcript would not be), and so
//   does any other character (é, &, +, a soft hyphen: what espeak-ng says for it is not known).
std::string speech_transcript(std::string_view sentence, std::string* dropped);

struct SpeechBuildOptions {
  std::string data_dir;  // the tatoeba-fra-eng folder, holding fra.txt.gz
  std::string out_dir;   // made; must not exist or be empty
  int64_t sentences = 3000;
  std::optional<double> snr_db;  // white noise at this signal-to-noise ratio, or none
  uint64_t seed = 1;
  std::function<void(int64_t done, int64_t total)> progress;  // after each utterance
};

struct SpeechSplitReport {
  std::string name;  // "train", "dev", "test"
  int64_t utterances = 0, frames = 0, bytes = 0;
};

struct SpeechBuildReport {
  std::string espeak_version;
  std::vector<SpeechSplitReport> splits;
  int64_t sentences_read = 0;  // distinct English sentences read before enough were kept
  int64_t dropped_digits = 0, dropped_other = 0, dropped_repeats = 0;
  double seconds = 0;  // wall-clock time of the build
};

// Reads the sentences, speaks them, computes the features and writes the folder (io::NewFolder:
// all of it appears at once, or nothing). IoError when espeak-ng is missing or fails, or the
// data cannot be read; ValueError for options out of range.
SpeechBuildReport build_speech_set(const SpeechBuildOptions& options);

}  // namespace attn::data
