#pragma once
// Speech recognition with a trained listen-attend-spell model (models/listen_attend_spell.h):
// loading an ASR checkpoint, transcribing utterances (greedy or beam, with the attention over
// the listener's frames when asked), and scoring a set with CER and WER. What `attn eval` runs
// on an ASR checkpoint and the ASR trainer's validation.
//
// Checkpoint metadata "attn": {"format": "attn-asr", "config" (AsrConfig's JSON), "characters"
// (the speller's character vocabulary, data::CharVocab), "step", "best_val_cer", "best_val_wer"}.
//
// Characters: the vocabulary is built from the training transcripts. A transcript character
// outside it is UNK in training targets (only with --train-limit) and, in a reference, a
// character no hypothesis can produce: it counts as an error.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/data/char_vocab.h"
#include "attn/data/speech.h"
#include "attn/io/safetensors.h"
#include "attn/models/listen_attend_spell.h"

namespace attn::decode {

inline constexpr const char* kAsrFormat = "attn-asr";

struct AsrInfo {
  models::AsrConfig config;
  std::vector<std::string> characters;  // data::CharVocab::characters()
  int64_t step = 0;
  double best_val_cer = 0.0, best_val_wer = 0.0;
};

struct LoadedAsr {
  std::unique_ptr<models::ListenAttendSpell> model;
  data::CharVocab vocab;
  AsrInfo info;
};

nlohmann::json asr_metadata(const AsrInfo& info);
// IoError naming the path for a missing or foreign checkpoint, a bad character list, or one
// whose speller vocabulary differs from its characters.
LoadedAsr load_asr(const std::string& path);
LoadedAsr load_asr(const io::SafetensorsFile& file, const std::string& path);

// Character and word error rates: Σ edit distance / Σ reference length, over the characters
// (Unicode code points, spaces included) and over the words (split at spaces).
struct AsrScore {
  int64_t char_edits = 0, chars = 0;
  int64_t word_edits = 0, words = 0;
  int64_t utterances = 0;
  void add(const std::string& hypothesis, const std::string& reference);
  double cer() const;  // 0 when nothing was counted; a long wrong hypothesis can exceed 1
  double wer() const;
};

struct TranscribeOptions {
  int beam = 1;
  float length_penalty = 1.0f;
  int batch = 32;          // utterances per decoding batch
  bool attention = false;  // also return the weights (output character × listener frame)
};

struct Transcript {
  std::string text;
  std::vector<std::vector<float>> weights;  // with TranscribeOptions::attention: one row per output step (EOS included)
  std::vector<int> frames_read;             // with it: the listener frames read before each step (decode::frames_read)
  int64_t frames = 0;                       // the listener frames of the utterance
};

// Each utterance's transcript, in input order, decoded for at most 2 characters a listener frame
// + 10. ValueError for beam / batch < 1, features whose bins differ from the model's, or an
// utterance with fewer frames than the model's reduction (naming its id).
std::vector<Transcript> transcribe(LoadedAsr& model, const std::vector<data::SpeechUtterance>& utterances,
                                   const TranscribeOptions& options);

// The long-utterance set of Chorowski et al. (2015): every `n` consecutive utterances of `set`
// joined into one (features concatenated, transcripts joined with a space, ids with '+', the
// voice "mixed" when the parts' differ); a
// last group of fewer than n is left out. ValueError for n < 1 or a set of fewer than n.
data::SpeechSet join_utterances(const data::SpeechSet& set, int n);

// The utterance `id` of the .speech file `file`, joined with the next n − 1 as eval --join
// joins them (join_utterances' groups, from the set's start): what attn align and attn view
// show of an ASR model. ValueError for an empty file or id ("an ASR model needs --speech FILE
// --utterance ID"), n < 1, an unknown id, an n past the set, an id that does not start a
// group, or one that starts the last, short group (which eval --join leaves out); IoError for
// a file it cannot read or a damaged one (data::read_speech_set's errors).
data::SpeechUtterance speech_utterance(const std::string& file, const std::string& id, int n);

struct AsrEval {
  AsrScore score;
  double seconds = 0.0;
  // Over every output step (EOS included): the listener frames read before it and the
  // utterance's listener frames, summed (online attention reads fewer).
  int64_t steps = 0, frames_read = 0, frames = 0;
};
AsrEval evaluate_asr(LoadedAsr& model, const std::vector<data::SpeechUtterance>& utterances, TranscribeOptions options);

}  // namespace attn::decode
