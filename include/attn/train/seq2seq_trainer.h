#pragma once
// Training seq2seq models on the synthetic tasks — what `attn train`, `attn sweep` and
// `attn demo` run. Loading, decoding and evaluating a trained one is attn/decode/seq2seq.h.
//
// A run directory holds:
//   model.safetensors  the best model so far (by validation token accuracy)
//   last.safetensors   the latest model with optimizer state, for --resume
//   log.jsonl          one JSON object per logging step / validation (run.h)
// Both checkpoints carry decode::seq2seq_metadata under the metadata key "attn"
// (configuration, task, vocabulary, training progress).
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "attn/data/tasks.h"
#include "attn/decode/seq2seq.h"
#include "attn/models/seq2seq.h"
#include "attn/train/optimizer.h"
#include "attn/train/run.h"
#include "attn/train/task_result.h"

namespace attn::train {

// The run options (run.h: steps, lr, schedule, clip, seed, log and eval intervals,
// --max-minutes, --save-every, out_dir, resume, progress, stop) and the task's own.
struct TrainOptions : RunOptions {
  std::string task = "copy";
  int min_len = 5;
  int max_len = 80;
  int batch = 64;
  int eval_samples = 200;  // validation set size, lengths drawn like training
  // Length bucketing (a "maxi-batch"): draw bucket·batch examples at once, sort them by
  // length and cut them into `bucket` batches taken in a seeded random order, so a batch
  // holds similar lengths and little padding. The length distribution is unchanged. 1 = off.
  int bucket = 1;

  void validate() const;  // ValueError / naming the bad option
};

// ValueError (memory_estimate.h) when the model, one training batch, the length-bucketing
// pool (bucket x batch sources) or the validation set (decoded at once) would not fit in the
// available memory: called before anything is allocated or written.
void check_run_memory(const models::Seq2SeqConfig& config, const TrainOptions& options);

struct TrainResult : TaskResult {
  // TaskResult: steps_done, interrupted, final_loss, train_seconds, seconds, model_path.
  TrainResult() = default;
  explicit TrainResult(const RunResult& r) : TaskResult(r), best_token_accuracy(r.state.best_score) {}
  double best_token_accuracy = 0.0;
  double tokens_per_second = 0.0;  // training target tokens per second, whole run
};

TrainResult train_seq2seq(const models::Seq2SeqConfig& config, const TrainOptions& options);

// Saves model parameters (+ optimizer state when given) atomically.
void save_checkpoint(const std::string& path, models::Seq2Seq& model, const decode::Seq2SeqInfo& info,
                     const Optimizer* optimizer = nullptr);

}  // namespace attn::train
