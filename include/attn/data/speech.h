#pragma once
// Spoken sentences as log-mel features: what `attn data speech` writes and
// `attn train --task asr` reads (docs/data.md, "Spoken sentences").
//
//   data::SpeechSet train = data::read_speech_set(dir / "train.speech");
//   for (const data::SpeechUtterance& u : train.utterances)
//     // u.features: u.frames rows of train.bins log-mel energies; u.text: the transcript
//
// A folder holds one file per split: train.speech, dev.speech, test.speech. Test voices are held
// out of training whole.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace attn::data {

// One utterance: `frames` rows of `bins` log-mel energies (25 ms window, 10 ms hop), row-major.
struct SpeechUtterance {
  std::string id;     // unique within the set
  std::string voice;  // the espeak-ng voice and variant, e.g. "en-us+f3"
  std::string text;   // the transcript, as spoken
  int64_t frames = 0;
  std::vector<float> features;  // [frames, bins]
};

struct SpeechSet {
  int bins = 80;
  std::string provenance;  // how the set was made: the espeak-ng version, voices, rates, seed
  std::vector<SpeechUtterance> utterances;
};

// The set in `file`. IoError when it cannot be read; ValueError naming the file and what is
// wrong (bad magic, a length past the end, a non-finite feature) for a bad one.
SpeechSet read_speech_set(const std::filesystem::path& file);
// Writes `set` atomically: beside `file`, then renamed over it, so that a failed write leaves
// any earlier file as it was.
void write_speech_set(const std::filesystem::path& file, const SpeechSet& set);

}  // namespace attn::data
