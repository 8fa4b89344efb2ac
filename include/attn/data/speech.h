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
//
// The file (version 1; every integer little-endian; docs/data.md, "Spoken sentences"):
//   "ATTNSPCH"  u32 version  u32 bins  u32 encoding (1: IEEE fp16)  u32 P  provenance[P]  u64 count
//   count times: u32 n id[n]  u32 n voice[n]  u32 n text[n]  u32 frames  fp16 features[frames * bins]
// and nothing after. Features are stored as fp16 (2 bytes a value: 160 bytes a frame of 80 bins,
// 16 KB a second of speech); a log-mel value in [-23, 12] keeps 10 mantissa bits, an error of at
// most 2^-11 of its size (0.004 at 10). Strings are UTF-8.
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

inline constexpr uint32_t kSpeechSetVersion = 1;
inline constexpr int kSpeechSetMaxBins = 1024;
// The bytes one frame of `bins` features takes in the file.
inline constexpr int64_t speech_set_bytes_per_frame(int bins) { return int64_t{2} * bins; }

struct SpeechSet {
  int bins = 80;
  std::string provenance;  // how the set was made: the espeak-ng version, voices, rates, seed
  std::vector<SpeechUtterance> utterances;
};

// The set in `file`. IoError when it cannot be read; ValueError naming the file and what is
// wrong (bad magic, a length past the end, a non-finite feature, a repeated id, bytes after
// the last utterance) for a bad one.
SpeechSet read_speech_set(const std::filesystem::path& file);
// Writes `set` atomically: beside `file`, then renamed over it, so that a failed write leaves
// any earlier file as it was. ValueError, before anything is written, for a set the file cannot
// hold: bins outside 1..1024, an empty or repeated id, features.size() != frames * bins, a
// non-finite feature or one outside fp16's range (|x| > 65504).
void write_speech_set(const std::filesystem::path& file, const SpeechSet& set);

}  // namespace attn::data
