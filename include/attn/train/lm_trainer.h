#pragma once
// A character-level causal language model (decoder-only Transformer) on the English side
// of the Tatoeba English–French pairs (<data>/fra.txt.gz: "English<TAB>French" per line):
// what `attn train --task charlm` runs. Each distinct English sentence is
// one sequence BOS c_1 … c_n EOS over Unicode characters; every 50th distinct sentence
// (by position in the file) is held out for validation.
//
// A run directory holds model.safetensors (best validation loss), last.safetensors and
// log.jsonl. Metadata: decode/sample.h.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "attn/decode/sample.h"
#include "attn/train/run.h"
#include "attn/train/task_result.h"

namespace attn::train {

// The run options (run.h) with the LM's defaults, and the task's own.
struct LmOptions : RunOptions {
  std::string data_dir;     // the directory holding fra.txt.gz
  int max_chars = 128;      // longer sentences are cut to this many characters
  int64_t train_limit = 0;  // first N distinct sentences only (0: all)
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

struct LmResult : TaskResult {
  // TaskResult: steps_done, interrupted, final_loss, train_seconds, seconds, model_path.
  using TaskResult::TaskResult;
  double best_val_loss = 0.0;  // nats per character (EOS included)
  double best_val_bits_per_char = 0.0;
};

// config: a TransformerConfig whose tgt_vocab is set from the data.
LmResult train_char_lm(models::TransformerConfig config, const LmOptions& options);

// Loading and sampling are attn/decode/sample.h (namespace attn::decode).

}  // namespace attn::train
