#pragma once
// Training, checkpoints and evaluation of seq2seq models on the synthetic tasks — what
// `attn train`, `attn eval`, `attn sweep` and `attn demo` run.
//
// A run directory holds:
//   model.safetensors  the best model so far (by validation token accuracy)
//   last.safetensors   the latest model with optimizer state, for --resume
//   log.jsonl          one JSON object per logging step / validation (run.h)
// Both checkpoints carry the JSON document of CheckpointInfo under the metadata key
// "attn" (configuration, task, vocabulary, training progress).
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "attn/data/metrics.h"
#include "attn/data/tasks.h"
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
  int eval_samples = 200;    // validation set size, lengths drawn like training
  // Length bucketing (a "maxi-batch"): draw bucket·batch examples at once, sort them by
  // length and cut them into `bucket` batches taken in a seeded random order, so a batch
  // holds similar lengths and little padding. The length distribution is unchanged. 1 = off.
  int bucket = 1;

  void validate() const;  // ValueError / naming the bad option
};

struct TrainResult : TaskResult {
  // TaskResult: steps_done, interrupted, final_loss, train_seconds, seconds, model_path.
  using TaskResult::TaskResult;
  double best_token_accuracy = 0.0;
  double tokens_per_second = 0.0;  // training target tokens per second, whole run
};

TrainResult train_seq2seq(const models::Seq2SeqConfig& config, const TrainOptions& options);

// What a checkpoint says about itself.
struct CheckpointInfo {
  models::Seq2SeqConfig config;
  std::string task = "copy";
  int min_len = 0, max_len = 0;
  int64_t step = 0;
  double best_token_accuracy = 0.0;
};

struct LoadedModel {
  std::unique_ptr<models::Seq2Seq> model;
  CheckpointInfo info;
};

// Saves model parameters (+ optimizer state when given) atomically.
void save_checkpoint(const std::string& path, models::Seq2Seq& model, const CheckpointInfo& info,
                     const Optimizer* optimizer = nullptr);
// Loads a model checkpoint: builds the model from its configuration, checks the
// vocabulary, and loads every parameter (IoError naming what differs).
LoadedModel load_checkpoint(const std::string& path);

struct LengthAccuracy {
  int length = 0;
  double token_accuracy = 0.0;
  double sequence_accuracy = 0.0;
};

struct EvalOptions {
  std::vector<int> lengths = {5, 10, 20, 40, 80};
  int samples = 500;  // per length
  int beam = 1;       // 1: greedy; > 1: beam width
  float length_penalty = 1.0f;  // beam: scores divided by length^length_penalty
  uint64_t seed = 12345;
  int batch = 100;

  void validate() const;  // ValueError naming the bad option (--samples, --beam, a length)
};

// Decodes `samples` fresh examples of every length and scores them (token accuracy per
// target position with EOS, exact-sequence accuracy).
std::vector<LengthAccuracy> evaluate(models::Seq2Seq& model, data::TaskKind task, const EvalOptions& options);

// {"lengths": [{"length": 5, "token_accuracy": ..., "sequence_accuracy": ...}, ...]}
std::string accuracy_json(const std::vector<LengthAccuracy>& rows);

}  // namespace attn::train
