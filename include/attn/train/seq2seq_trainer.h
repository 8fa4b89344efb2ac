#pragma once
// Training, checkpoints and evaluation of seq2seq models on the synthetic tasks — what
// `attn train`, `attn eval`, `attn sweep` and `attn demo` run.
//
// A run directory holds:
//   model.safetensors  the best model so far (by validation token accuracy)
//   last.safetensors   the latest model with optimizer state, for --resume
//   log.jsonl          one JSON object per logging step / validation
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
#include "attn/train/schedule.h"

namespace attn::train {

struct TrainOptions {
  std::string task = "copy";
  int min_len = 5;
  int max_len = 80;
  int64_t steps = 1500;
  int batch = 64;
  float lr = 1e-3f;
  // Learning-rate schedule over `steps` (attn/train/schedule.h): constant, cosine,
  // linear_warmup_decay or inverse_sqrt, with `warmup` linear warm-up steps.
  std::string lr_schedule = "constant";
  int64_t warmup = 0;
  float clip = 1.0f;        // global gradient norm; 0 = no clipping
  uint64_t seed = 1;        // batches, initialisation, validation set
  int64_t log_every = 50;
  int64_t eval_every = 250;  // validation (greedy decoding) every N steps and at the end
  int eval_samples = 200;    // validation set size, lengths drawn like training
  // Length bucketing (a "maxi-batch"): draw bucket·batch examples at once, sort them by
  // length and cut them into `bucket` batches taken in a seeded random order, so a batch
  // holds similar lengths and little padding. The length distribution is unchanged. 1 = off.
  int bucket = 1;
  std::string out_dir;       // required
  bool resume = false;       // continue from out_dir/last.safetensors
  std::FILE* progress = stderr;  // nullptr: silent
  // Checked between steps; when it becomes true the run saves and returns.
  const std::atomic<bool>* stop = nullptr;

  void validate() const;  // ValueError / naming the bad option
  LrSchedule schedule() const;  // the learning-rate schedule these options describe
};

struct TrainResult {
  int64_t steps_done = 0;
  bool interrupted = false;
  double best_token_accuracy = 0.0;
  double final_loss = 0.0;
  double tokens_per_second = 0.0;  // training target tokens per second, whole run
  std::string model_path;          // out_dir/model.safetensors
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
