#pragma once
// Sentence classification with a trained model: loading a classifier checkpoint, batched
// evaluation on labelled texts, and classifying one text with its class probabilities and
// attention. What `attn classify`, `attn eval` (classifier checkpoints), `attn explain` and
// the classifier trainer's dev evaluation run.
//
// The checkpoint carries under the metadata key "attn" the JSON document
//   {"format": "attn-classifier", "version": 1, "kind": "bilstm", "config": {...},
//    "vocabulary": {"min_freq": .., "max_size": .., "tokens": [...]}, "labels": ["negative", "positive"],
//    "step": .., "dev_accuracy": ..}
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/data/sst2.h"
#include "attn/data/vocab.h"
#include "attn/models/classifier.h"

namespace attn::decode {

inline constexpr const char* kClassifierFormat = "attn-classifier";

// The SST-2 class names, index = label.
const std::vector<std::string>& sst2_labels();

// A labelled text as the model reads it.
struct EncodedText {
  std::vector<int32_t> ids;  // never empty (an empty text becomes one <unk>)
  int32_t label = 0;
};
// Each text's ids, cut to the model's max_tokens (0: no limit).
std::vector<EncodedText> encode_texts(const data::Vocab& vocab, const std::vector<data::LabeledText>& examples,
                                      int64_t max_tokens);

struct ClassifierBatch {
  Tensor ids, lengths, labels;  // (B, S) PAD after each text, (B), (B)
};
ClassifierBatch make_classifier_batch(const std::vector<EncodedText>& data, const std::vector<size_t>& rows);

// The checkpoint metadata of a classifier trained on SST-2.
nlohmann::json classifier_metadata(models::TextClassifier& model, const data::Vocab& vocab, int64_t step,
                                   double dev_accuracy);

// What a classifier checkpoint holds.
struct LoadedClassifier {
  std::unique_ptr<models::TextClassifier> model;
  data::Vocab vocab;
  std::vector<std::string> labels;  // class names
  int64_t step = 0;
  double dev_accuracy = 0.0;
};
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
// The same over texts already encoded (batch >= 1, labels in range: trusted).
ClassifierEval evaluate_encoded(models::TextClassifier& model, const std::vector<EncodedText>& data, int batch);
// {"accuracy": .., "examples": .., "loss": ..}
std::string classifier_eval_json(const ClassifierEval& eval);

struct Classification {
  int32_t label = 0;
  float probability = 0.0f;          // of `label`
  std::vector<float> probabilities;  // per class
  std::vector<std::string> tokens;   // the text's whitespace tokens
  std::vector<int32_t> ids;          // their ids (<unk> = data::Vocab::kUnk)
  std::vector<float> attention;      // per token (empty when the model has none)
};
// Classifies one text (eval mode, no recording). ValueError for a text without tokens.
Classification classify_text(models::TextClassifier& model, const data::Vocab& vocab, const std::string& text);

}  // namespace attn::decode
