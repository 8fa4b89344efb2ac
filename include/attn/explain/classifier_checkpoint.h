#pragma once
// Explaining a trained classifier checkpoint (decode/classify.h): what `attn explain` runs on
// one --text or over a split of SST-2, and what the Python module can call. The measures are
// importance.h's and erasure.h's; the report over many sentences is report.h's.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attn/data/sst2.h"
#include "attn/data/vocab.h"
#include "attn/decode/classify.h"
#include "attn/explain/importance.h"
#include "attn/explain/report.h"
#include "attn/models/attention_classifier.h"
#include "attn/models/transformer.h"

namespace attn::explain {

// A classifier of a kind explain supports: exactly one of the two models is set.
struct ExplainableClassifier {
  models::AttnClassifier* attention_pooling = nullptr;   // bilstm-attn
  models::TransformerClassifier* transformer = nullptr;  // transformer-cls
  int64_t max_tokens = 0;                                // 0: any
};
// The model of `classifier` when it is one of the two; nullopt for one without attention (bilstm).
std::optional<ExplainableClassifier> explainable_classifier(models::TextClassifier& classifier);
// The model of `loaded` (read from `path`); ValueError naming the path and the kind for a
// classifier without attention.
ExplainableClassifier explainable_classifier(decode::LoadedClassifier& loaded, const std::string& path);

// The importance measures of one sentence (ids, and tokens for transformer-cls' head
// statistics): importance.h's explain_sentence for the model's kind.
SentenceImportance sentence_importance(const ExplainableClassifier& model, const std::vector<int32_t>& ids,
                                       const std::vector<std::string>& tokens, const ImportanceOptions& options);

// One text's measures: its SST-2 tokens (the first max_tokens, as attn classify keeps them)
// with attention, gradient × input, leave-one-out, integrated gradients (and transformer-cls'
// rollout and flow), and Serrano & Smith's erasure. gold: its label, or -1 when unknown.
ExplainedSentence explain_classifier_text(const ExplainableClassifier& model, const data::Vocab& vocab,
                                          const std::string& text, int32_t gold, const ImportanceOptions& options);

// The examples a report reads from a split: those of at least `min_length` tokens (Jain &
// Wallace drop those under 5), then the first `limit` (0: all). *shorter counts those left out.
std::vector<data::LabeledText> select_examples(std::vector<data::LabeledText> examples, int64_t min_length,
                                               int64_t limit, int64_t* shorter);

// Every example with tokens explained, in order; skipped_empty counts those with none.
// progress(i, n): before the first of the n examples (i = 0) and after each.
struct ExplainedExamples {
  std::vector<ExplainedSentence> sentences;
  int64_t skipped_empty = 0;
};
ExplainedExamples explain_classifier_examples(const ExplainableClassifier& model, const data::Vocab& vocab,
                                              const std::vector<data::LabeledText>& examples,
                                              const ImportanceOptions& options,
                                              const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace attn::explain
