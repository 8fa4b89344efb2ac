#include "attn/explain/classifier_checkpoint.h"

#include <utility>

#include "attn/error.h"
#include "attn/explain/erasure.h"

namespace attn::explain {

std::optional<ExplainableClassifier> explainable_classifier(models::TextClassifier& classifier) {
  ExplainableClassifier e;
  e.attention_pooling = dynamic_cast<models::AttnClassifier*>(&classifier);
  if (e.attention_pooling == nullptr)
    e.transformer = dynamic_cast<models::TransformerClassifier*>(&classifier.module());
  if (e.attention_pooling == nullptr && e.transformer == nullptr) return std::nullopt;
  e.max_tokens = classifier.max_tokens();
  return e;
}

ExplainableClassifier explainable_classifier(decode::LoadedClassifier& loaded, const std::string& path) {
  const std::optional<ExplainableClassifier> e = explainable_classifier(*loaded.model);
  if (!e)
    throw ValueError(path + " is a '" + loaded.model->kind() +
                     "' classifier; attn explain supports 'bilstm-attn' and 'transformer-cls' checkpoints (models with "
                     "attention: train one with attn train --task sst2 --model bilstm-attn)");
  return *e;
}

SentenceImportance sentence_importance(const ExplainableClassifier& model, const std::vector<int32_t>& ids,
                                       const std::vector<std::string>& tokens, const ImportanceOptions& options) {
  return model.attention_pooling ? explain_sentence(*model.attention_pooling, ids, options)
                                 : explain_sentence(*model.transformer, ids, tokens, options);
}

ExplainedSentence explain_classifier_text(const ExplainableClassifier& model, const data::Vocab& vocab,
                                          const std::string& text, int32_t gold, const ImportanceOptions& options) {
  ExplainedSentence s;
  s.text = text;
  s.tokens = data::sst2_tokens(text);
  if (model.max_tokens > 0 && static_cast<int64_t>(s.tokens.size()) > model.max_tokens)
    s.tokens.resize(static_cast<size_t>(model.max_tokens));  // as attn classify keeps the first ones
  s.gold = gold;
  std::vector<int32_t> ids;
  for (const auto& t : s.tokens) ids.push_back(vocab.id(t));
  s.importance = sentence_importance(model, ids, s.tokens, options);
  const EmbeddingClassifier differentiable = model.attention_pooling ? embedding_classifier(*model.attention_pooling)
                                                                     : embedding_classifier(*model.transformer);
  s.erasure =
      erasure(differentiable, ids, s.importance.label, s.importance.attention, s.importance.gradient, options.seed);
  return s;
}

std::vector<data::LabeledText> select_examples(std::vector<data::LabeledText> examples, int64_t min_length,
                                               int64_t limit, int64_t* shorter) {
  const size_t before = examples.size();
  std::erase_if(examples, [&](const data::LabeledText& e) {
    return static_cast<int64_t>(data::sst2_tokens(e.text).size()) < min_length;
  });
  if (shorter) *shorter = static_cast<int64_t>(before - examples.size());
  if (limit > 0 && static_cast<int64_t>(examples.size()) > limit) examples.resize(static_cast<size_t>(limit));
  return examples;
}

ExplainedExamples explain_classifier_examples(const ExplainableClassifier& model, const data::Vocab& vocab,
                                              const std::vector<data::LabeledText>& examples,
                                              const ImportanceOptions& options,
                                              const std::function<void(int64_t, int64_t)>& progress) {
  const int64_t n = static_cast<int64_t>(examples.size());
  if (progress) progress(0, n);
  ExplainedExamples out;
  for (size_t i = 0; i < examples.size(); ++i) {
    if (data::sst2_tokens(examples[i].text).empty()) {
      ++out.skipped_empty;
    } else {
      out.sentences.push_back(explain_classifier_text(model, vocab, examples[i].text, examples[i].label, options));
    }
    if (progress) progress(static_cast<int64_t>(i + 1), n);
  }
  return out;
}

}  // namespace attn::explain
