#pragma once
// Training sentence classifiers on SST-2: what `attn train --task sst2` runs.
//
// A run directory holds:
//   model.safetensors  the model with the best dev accuracy so far
//   last.safetensors   the latest model with optimizer state, for --resume
//   log.jsonl          one JSON object per logging step ({"step", "epoch", "loss", "accuracy",
//                      "examples_per_s", "lr", "elapsed_s"}) and per evaluation
//                      ({"step", "dev_accuracy", "dev_loss", "elapsed_s"})
// The checkpoint's metadata: decode/classify.h.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/data/vocab.h"
#include "attn/decode/classify.h"
#include "attn/models/attention_classifier.h"
#include "attn/train/run.h"
#include "attn/train/task_result.h"

namespace attn::train {

// The run options (run.h) with the classifier's defaults, and the task's own.
struct ClassifierTrainOptions : RunOptions {
  std::string data_dir;          // the folder holding sst2/ (or sst2/ itself); required
  std::string model = "bilstm";  // classifier kind (models::classifier_kinds())
  // The model's configuration fields (e.g. {"emb": 300, "hidden": 150, "dropout": 0.5});
  // vocab and classes are filled in from the data, seed from `seed` unless given.
  nlohmann::json model_config = nlohmann::json::object();
  int min_freq = 1;      // vocabulary: words seen at least this often in train
  int64_t max_size = 0;  // vocabulary: at most this many entries (0 = all)
  int batch = 64;
  // Length bucketing: each epoch's shuffled order is cut into pools of bucket·batch
  // examples, sorted by length within a pool, cut into batches, and the batches shuffled.
  int bucket = 50;
  // The training unit: "phrases", every line of the training file (the sentences and their
  // labelled phrases, as GLUE's SST-2), or "sentences", only the full sentences
  // (data::sst2_sentences; Jain & Wallace's protocol).
  std::string sst2_train = "phrases";
  // Pretrained word vectors (data/embeddings.h) for the embedding rows of the vocabulary's
  // words found in the file; the rest start as without them. "" = none. Their file's sha256
  // and the coverage go into the checkpoint's metadata ("embeddings").
  std::string embeddings;
  bool freeze_embeddings = false;  // the embedding matrix gets no gradient (needs embeddings)
  int64_t train_limit = 0;         // use only the first N training examples (0 = all; after sst2_train)
  int64_t dev_limit = 0;           // evaluate on the first N dev examples (0 = all)
  // Wiegreffe & Pinter's frozen attention: a bilstm-attn checkpoint M with this run's
  // vocabulary; the model (bilstm-attn, encoder average, pooling uniform: no pooling
  // parameters) pools with M's attention on each sentence, in training and in the dev
  // evaluation, held constant (M is in eval mode and gets no gradient). "" = off.
  std::string attention_from;

  ClassifierTrainOptions() {
    steps = 0;  // epochs × batches per epoch
    epochs = 3;
    clip = 5.0f;
    eval_every = 0;  // dev evaluation once per epoch; always at the end
  }
  void validate() const;  // ValueError naming the bad option
};

// What --embeddings gave the model: the provenance recorded in the checkpoint.
struct EmbeddingsCoverage {
  int64_t words = 0, found = 0;          // vocabulary words (the specials left out), with a vector
  int64_t tokens = 0, found_tokens = 0;  // training tokens, of a word with a vector
  nlohmann::json to_json() const;
};

// Copies the vectors of `vocab`'s words from options.embeddings into `model`'s
// "embedding.weight" (V, emb) and freezes it when asked. ValueError: a dimension other than
// the model's embedding size (naming both), no vocabulary word in the file. Prints the
// coverage on `log` (one line) and a warning below 50 % of the words. Returns the metadata.
nlohmann::json apply_embeddings(const ClassifierTrainOptions& options, const data::Vocab& vocab,
                                const std::vector<std::string>& training_texts, models::TextClassifier& model,
                                std::FILE* log = stderr);

struct ClassifierTrainResult : TaskResult {
  // TaskResult: steps_done, interrupted, final_loss, train_seconds, seconds, model_path.
  using TaskResult::TaskResult;
  double best_dev_accuracy = 0.0;
  int64_t best_step = 0;
  double first_loss = 0.0;  // mean training loss over the first logging window
  double examples_per_second = 0.0;
  int64_t vocab_size = 0;
};

ClassifierTrainResult train_classifier(const ClassifierTrainOptions& options);

// options.attention_from loaded and checked against the run (ValueError, one line: M missing
// or not a classifier checkpoint, M not bilstm-attn, the model not an average-encoder
// bilstm-attn with uniform pooling, a vocabulary other than the run's), as the source
// AttnClassifier::set_attention_source takes: M's own attention, eval mode, no tape.
models::AttnClassifier::AttentionSource attention_source(const ClassifierTrainOptions& options);

// Saves the model and its metadata (decode::classifier_metadata) atomically.
void save_classifier(const std::string& path, models::TextClassifier& model, const data::Vocab& vocab, int64_t step,
                     double dev_accuracy);

// Loading, evaluation and classification are attn/decode/classify.h (namespace attn::decode).

}  // namespace attn::train
