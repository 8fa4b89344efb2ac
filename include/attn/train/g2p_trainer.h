#pragma once
// Grapheme-to-phoneme conversion on CMUdict (data/cmudict.h): letters in, ARPAbet phonemes with
// stress out, on the split by a hash of the word (docs/data.md). Every pronunciation of a
// training word is a training pair; token-budget batches (data::token_batches), Adam with a
// learning-rate schedule, label smoothing; the validation scores PER and WER (greedy) on the
// dev split, and the model with the lowest dev PER is kept. What `attn train --task g2p` runs.
//
// A run directory holds model.safetensors (best dev PER), last.safetensors (with optimizer
// state, for --resume) and log.jsonl. Checkpoint metadata: decode/g2p.h.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "attn/models/translator.h"
#include "attn/train/run.h"
#include "attn/train/task_result.h"

namespace attn::train {

struct G2pOptions : RunOptions {
  std::string data_dir;       // the folder holding cmudict.dict[.gz] (or a cmudict/ folder with it); required
  int64_t train_limit = 0;    // the first N training words only (0: all)
  int64_t eval_words = 0;     // dev words validated (0: the whole dev split)
  int64_t max_tokens = 4096;  // padded tokens per batch (source + target)
  int max_sentences = 256;    // rows per batch
  float label_smoothing = 0.0f;

  G2pOptions() {
    steps = 20000;
    lr_schedule = "cosine";
    warmup = 500;
    log_every = 100;
    eval_every = 2000;
  }
  void validate() const;  // ValueError naming the option
};

struct G2pResult : TaskResult {
  G2pResult() = default;
  explicit G2pResult(const RunResult& r) : TaskResult(r), best_val_per(r.state.best_score) {}
  double best_val_per = 0.0;  // dev PER of the kept model
  double best_val_wer = 0.0;
  int64_t train_pairs = 0, dev_words = 0;
};

// The CMUdict file under `data_dir`: the first of cmudict.dict.gz and cmudict.dict (plain) in
// data_dir, then in data_dir/cmudict; IoError naming the paths looked at when none exists.
std::string cmudict_path(const std::string& data_dir);

// kind rnn (config: a Seq2SeqConfig JSON) or transformer (a TransformerConfig JSON); the
// vocabulary fields are set to data::g2p_symbols()'s size.
G2pResult train_g2p(models::TranslatorKind kind, nlohmann::json config, const G2pOptions& options);

}  // namespace attn::train
