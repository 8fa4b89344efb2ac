#pragma once
// Speech recognition on spoken sentences (data/speech.h): a listen-attend-spell model
// (models/listen_attend_spell.h) spells each utterance's transcript from its log-mel frames.
// Frame-budget batches (data::token_batches over frames and characters), Adam with a
// learning-rate schedule, label smoothing; the validation scores CER and WER (greedy) on the dev
// set, and the model with the lowest dev CER is kept. What `attn train --task asr` runs.
//
// The data folder holds train.speech and dev.speech (`attn data speech` writes them, with
// test.speech). The character vocabulary is built from the training transcripts.
// A run directory holds model.safetensors (best dev CER), last.safetensors (with optimizer
// state, for --resume) and log.jsonl. Checkpoint metadata: decode/asr.h.
#include <cstdint>
#include <string>

#include "attn/models/listen_attend_spell.h"
#include "attn/train/run.h"
#include "attn/train/task_result.h"

namespace attn::train {

struct AsrOptions : RunOptions {
  std::string data_dir;         // the folder holding train.speech and dev.speech; required
  int64_t train_limit = 0;      // the first N training utterances only (0: all)
  int64_t eval_utterances = 0;  // dev utterances validated (0: all)
  int64_t max_tokens = 20000;   // padded frames + characters per batch
  int max_sentences = 32;       // utterances per batch
  float label_smoothing = 0.0f;

  AsrOptions() {
    steps = 5000;
    lr_schedule = "cosine";
    warmup = 200;
    log_every = 50;
    eval_every = 500;
  }
  void validate() const;  // ValueError naming the option
};

struct AsrResult : TaskResult {
  AsrResult() = default;
  explicit AsrResult(const RunResult& r) : TaskResult(r), best_val_cer(r.state.best_score) {}
  double best_val_cer = 0.0;  // dev CER of the kept model
  double best_val_wer = 0.0;
  int64_t train_utterances = 0, dev_utterances = 0;
};

// The set `split` ("train", "dev", "test") of a data folder: data_dir/<split>.speech.
// IoError naming the path when it is missing.
std::string speech_split_path(const std::string& data_dir, const std::string& split);

// config.speller.vocab is set from the training transcripts' characters. ValueError for an
// empty set, features whose bins differ from config.bins, or an utterance with fewer frames
// than config.reduction or an empty transcript (naming its id).
AsrResult train_asr(models::AsrConfig config, const AsrOptions& options);

}  // namespace attn::train
