#pragma once
// Speech the ASR tests make up: each character of `alphabet` is a fixed random pattern of `bins`
// values (the same for every set: drawn from a seed of its own) held for 2 to 5 frames, with
// Gaussian noise on every value; the transcripts are random strings of min_chars..max_chars
// characters, no character twice in a row. A model that reads the frames can spell them; an untrained one cannot.
#include <cstdint>
#include <string>
#include <vector>

#include "attn/data/speech.h"
#include "attn/random.h"

namespace attn::testing {

struct SyntheticSpeechOptions {
  int64_t utterances = 64;
  uint64_t seed = 1;  // transcripts, durations and noise
  int bins = 80;
  std::string alphabet = "abcdefgh ";
  int min_chars = 3, max_chars = 7;
  float noise = 0.3f;  // std of the noise; the patterns are standard normal
};

inline data::SpeechSet synthetic_speech(const SyntheticSpeechOptions& o) {
  std::vector<std::vector<float>> patterns(o.alphabet.size());
  Rng pattern_rng(0x5EEC4ULL);
  for (auto& p : patterns)
    for (int i = 0; i < o.bins; ++i) p.push_back(pattern_rng.normal());
  Rng rng(o.seed);
  data::SpeechSet set;
  set.bins = o.bins;
  set.provenance = "synthetic (tests/support/synthetic_speech.h)";
  for (int64_t u = 0; u < o.utterances; ++u) {
    data::SpeechUtterance utt;
    utt.id = "syn" + std::to_string(u);
    utt.voice = "synthetic";
    const int chars = o.min_chars + static_cast<int>(rng.below(static_cast<uint64_t>(o.max_chars - o.min_chars + 1)));
    size_t previous = o.alphabet.size();
    for (int c = 0; c < chars; ++c) {
      // Never the same character twice in a row: its frames would run together, and how many
      // there were could not be heard.
      const bool after = previous < o.alphabet.size();
      size_t k = rng.below(o.alphabet.size() - (after ? 1 : 0));
      if (after && k >= previous) ++k;
      previous = k;
      utt.text += o.alphabet[k];
      const int hold = 2 + static_cast<int>(rng.below(4));
      for (int f = 0; f < hold; ++f, ++utt.frames)
        for (int i = 0; i < o.bins; ++i)
          utt.features.push_back(patterns[k][static_cast<size_t>(i)] + o.noise * rng.normal());
    }
    set.utterances.push_back(std::move(utt));
  }
  return set;
}

}  // namespace attn::testing
