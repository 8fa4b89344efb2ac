#pragma once
// A character-level causal language model (decoder-only Transformer) on the English side
// of the Tatoeba English–French pairs (<data>/fra.txt.gz: "English<TAB>French" per line):
// what `attn train --task charlm` and `attn sample` run. Each distinct English sentence is
// one sequence BOS c_1 … c_n EOS over Unicode characters; every 50th distinct sentence
// (by position in the file) is held out for validation.
//
// A run directory holds model.safetensors (best validation loss), last.safetensors and
// log.jsonl. Metadata "attn": {"format": "attn-lm", "config": TransformerConfig,
// "characters": [...], "step", "best_val_loss", "max_chars"}.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "attn/models/transformer.h"
#include "attn/train/run.h"

namespace attn::train {

// Characters ↔ ids: PAD 0, BOS 1, EOS 2, UNK 3, then the characters (UTF-8 strings of one
// code point each) by falling frequency.
class CharVocab {
 public:
  static constexpr int32_t kUnk = 3;
  CharVocab() = default;
  // Every character seen in `lines`, most frequent first (ties by code point order).
  static CharVocab build(const std::vector<std::string>& lines);
  explicit CharVocab(std::vector<std::string> characters);
  std::vector<int32_t> encode(const std::string& text) const;  // no BOS/EOS; unknown → UNK
  std::string decode(const std::vector<int32_t>& ids) const;   // skips specials, stops at EOS
  int32_t size() const { return static_cast<int32_t>(characters_.size()) + 4; }
  const std::vector<std::string>& characters() const { return characters_; }

 private:
  std::vector<std::string> characters_;
  std::unordered_map<std::string, int32_t> index_;
};

// The code points of a UTF-8 string, each as its own UTF-8 string. Invalid bytes become
// U+FFFD.
std::vector<std::string> utf8_characters(const std::string& text);

// The run options (run.h) with the LM's defaults, and the task's own.
struct LmOptions : RunOptions {
  std::string data_dir;      // the directory holding fra.txt.gz
  int max_chars = 128;       // longer sentences are cut to this many characters
  int64_t train_limit = 0;   // first N distinct sentences only (0: all)
  int batch = 64;
  int64_t eval_sentences = 2000;  // validation sentences (0: all held out)

  LmOptions() {
    steps = 3000;
    lr_schedule = "cosine";
    warmup = 200;
    log_every = 100;
    eval_every = 500;
  }
  void validate() const;
};

struct LmResult {
  int64_t steps_done = 0;
  bool interrupted = false;
  double best_val_loss = 0.0;     // nats per character (EOS included)
  double best_val_bits_per_char = 0.0;
  double final_loss = 0.0;
  double train_seconds = 0.0;
  std::string model_path;
};

// config: a TransformerConfig whose tgt_vocab is set from the data.
LmResult train_char_lm(models::TransformerConfig config, const LmOptions& options);

struct LoadedLm {
  std::unique_ptr<models::TransformerLM> model;
  CharVocab vocab;
  int64_t step = 0;
  double best_val_loss = 0.0;
};
LoadedLm load_char_lm(const std::string& path);

// Continues `prompt` (may be empty: starts after BOS) with up to max_chars characters.
std::string sample_text(LoadedLm& lm, const std::string& prompt, const models::SampleOptions& options);

}  // namespace attn::train
