#pragma once
// Grapheme-to-phoneme conversion with a trained model: loading a G2P checkpoint, pronouncing
// words (greedy or beam, with the attention weights when asked) and scoring a CMUdict split
// with PER and WER (data::PronunciationScore). What `attn translate` and `attn eval` run on a
// G2P checkpoint and the G2P trainer's validation.
//
// The models are translators (models/translator.h: "rnn" or "transformer") over the fixed
// vocabulary data::g2p_symbols() (letters in, phonemes with stress out), so a checkpoint needs
// no tokenizer file. Metadata "attn": {"format": "attn-g2p", "kind", "config", "symbols" (the
// vocabulary, checked on load), "step", "best_val_per", "best_val_wer"}.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/data/cmudict.h"
#include "attn/data/metrics.h"
#include "attn/io/safetensors.h"
#include "attn/models/translator.h"

namespace attn::decode {

inline constexpr const char* kG2pFormat = "attn-g2p";

struct G2pInfo {
  models::TranslatorKind kind = models::TranslatorKind::rnn;
  nlohmann::json config;
  int64_t step = 0;
  double best_val_per = 0.0, best_val_wer = 0.0;
};

struct LoadedG2p {
  std::unique_ptr<models::Translator> model;
  G2pInfo info;
};

nlohmann::json g2p_metadata(const G2pInfo& info);
// IoError naming the path for a missing or foreign checkpoint, or one whose symbols differ.
LoadedG2p load_g2p(const std::string& path);
LoadedG2p load_g2p(const io::SafetensorsFile& file, const std::string& path);

struct PronounceOptions {
  int beam = 1;
  float length_penalty = 1.0f;
  int batch = 256;         // words per decoding batch
  bool attention = false;  // also return the weights (output phoneme × letter; heads averaged)
};

struct Pronunciation {
  std::vector<std::string> phonemes;
  std::vector<std::vector<float>> weights;  // with PronounceOptions::attention: one row per output step (EOS included)
  std::vector<int> frames_read;             // with it: the letters read before each output step (frames_read below)
};

// The source frames (letters) an attention has read before an output step, from that step's
// weights over `letters` frames: online attention (monotonic, mocha) has read up to the last
// frame with weight, or all of them when it stopped nowhere (the output ends there); soft
// attention reads all of them.
int frames_read(const std::vector<float>& weights, size_t letters, bool online);

// Each word's pronunciation, in input order. ValueError for a character outside the letters
// (naming it and the word), an empty word, a word longer than the model takes, or beam /
// batch < 1.
std::vector<Pronunciation> pronounce(LoadedG2p& model, const std::vector<std::string>& words,
                                     const PronounceOptions& options);

struct G2pEval {
  data::PronunciationScore score;  // PER, WER
  double seconds = 0.0;
  // Models with attention: over every output step (EOS included), the letters read before it
  // (frames_read) and the word's letters, summed.
  int64_t steps = 0, frames_read = 0, letters = 0;
};
// PER and WER of pronouncing every entry's word against all its pronunciations.
// With attention, also the frames read per output step (options.attention is set for it).
G2pEval evaluate_g2p(LoadedG2p& model, const std::vector<data::CmudictEntry>& entries, PronounceOptions options);

}  // namespace attn::decode
