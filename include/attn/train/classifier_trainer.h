#pragma once
// Training, checkpoints, evaluation and inspection of sentence classifiers on SST-2 —
// what `attn train --task sst2`, `attn eval` (classifier checkpoints) and `attn classify` run.
//
// A run directory holds:
//   model.safetensors  the model with the best dev accuracy so far
//   last.safetensors   the latest model with optimizer state, for --resume
//   log.jsonl          one JSON object per logging step ({"step", "epoch", "loss", "accuracy",
//                      "examples_per_s", "lr", "elapsed_s"}) and per evaluation
//                      ({"step", "dev_accuracy", "dev_loss", "elapsed_s"})
// The checkpoint carries under the metadata key "attn" the JSON document
//   {"format": "attn-classifier", "version": 1, "kind": "bilstm", "config": {...},
//    "vocabulary": {"min_freq": .., "max_size": .., "tokens": [...]}, "labels": ["negative", "positive"],
//    "step": .., "dev_accuracy": ..}
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/data/sst2.h"
#include "attn/data/vocab.h"
#include "attn/models/classifier.h"
#include "attn/train/run.h"

namespace attn::train {

// The run options (run.h) with the classifier's defaults, and the task's own.
struct ClassifierTrainOptions : RunOptions {
  std::string data_dir;          // the folder holding sst2/ (or sst2/ itself); required
  std::string model = "bilstm";  // classifier kind (models::classifier_kinds())
  // The model's configuration fields (e.g. {"emb": 300, "hidden": 150, "dropout": 0.5});
  // vocab and classes are filled in from the data, seed from `seed` unless given.
  nlohmann::json model_config = nlohmann::json::object();
  int min_freq = 1;              // vocabulary: words seen at least this often in train
  int64_t max_size = 0;          // vocabulary: at most this many entries (0 = all)
  int batch = 64;
  // Length bucketing: each epoch's shuffled order is cut into pools of bucket·batch
  // examples, sorted by length within a pool, cut into batches, and the batches shuffled.
  int bucket = 50;
  int64_t train_limit = 0;       // use only the first N training examples (0 = all)
  int64_t dev_limit = 0;         // evaluate on the first N dev examples (0 = all)

  ClassifierTrainOptions() {
    steps = 0;  // epochs × batches per epoch
    epochs = 3;
    clip = 5.0f;
    eval_every = 0;  // dev evaluation once per epoch; always at the end
  }
  void validate() const;  // ValueError naming the bad option
};

struct ClassifierTrainResult {
  int64_t steps_done = 0;
  bool interrupted = false;
  double best_dev_accuracy = 0.0;
  int64_t best_step = 0;
  double first_loss = 0.0;        // mean training loss over the first logging window
  double final_loss = 0.0;        // mean training loss over the last logging window
  double examples_per_second = 0.0;
  double seconds = 0.0;
  int64_t vocab_size = 0;
  std::string model_path;         // out_dir/model.safetensors
};

ClassifierTrainResult train_classifier(const ClassifierTrainOptions& options);

// What a classifier checkpoint holds.
struct LoadedClassifier {
  std::unique_ptr<models::TextClassifier> model;
  data::Vocab vocab;
  std::vector<std::string> labels;  // class names
  int64_t step = 0;
  double dev_accuracy = 0.0;
};

// The SST-2 class names, index = label.
const std::vector<std::string>& sst2_labels();

// Saves the model and its metadata atomically.
void save_classifier(const std::string& path, models::TextClassifier& model, const data::Vocab& vocab,
                     int64_t step, double dev_accuracy);
// Builds the model from the checkpoint's metadata and loads every tensor. IoError naming
// the path for a missing file, a checkpoint of another format, or mismatching tensors.
LoadedClassifier load_classifier(const std::string& path);

struct ClassifierEval {
  double accuracy = 0.0;
  double loss = 0.0;  // mean cross-entropy
  int64_t examples = 0;
};
// Batched evaluation in eval mode without recording (the model's training flag is
// restored). Examples are sorted by length into batches of `batch`. Texts that encode to
// no tokens are fed as one <unk>.
ClassifierEval evaluate_classifier(models::TextClassifier& model, const data::Vocab& vocab,
                                   const std::vector<data::LabeledText>& examples, int batch = 256);
// {"accuracy": .., "examples": .., "loss": ..}
std::string classifier_eval_json(const ClassifierEval& eval);

struct Classification {
  int32_t label = 0;
  float probability = 0.0f;               // of `label`
  std::vector<float> probabilities;       // per class
  std::vector<std::string> tokens;        // the text's whitespace tokens
  std::vector<int32_t> ids;               // their ids (<unk> = 1)
  std::vector<float> attention;           // per token (empty when the model has none)
};
// Classifies one text (eval mode, no recording). ValueError for a text without tokens.
Classification classify_text(models::TextClassifier& model, const data::Vocab& vocab, const std::string& text);

}  // namespace attn::train
