#include "attn/decode/classify.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "attn/autodiff/tape.h"
#include "attn/error.h"
#include "attn/io/checkpoint_read.h"
#include "attn/json.h"
#include "attn/ops/loss.h"
#include "attn/ops/reduce.h"

namespace attn::decode {
using nlohmann::json;

const std::vector<std::string>& sst2_labels() {
  static const std::vector<std::string> labels = {"negative", "positive"};
  return labels;
}

std::vector<EncodedText> encode_texts(const data::Vocab& vocab, const std::vector<data::LabeledText>& examples,
                                      int64_t max_tokens) {
  std::vector<EncodedText> out;
  out.reserve(examples.size());
  for (const auto& e : examples) {
    EncodedText x{vocab.encode(e.text), e.label};
    if (x.ids.empty()) x.ids.push_back(data::Vocab::kUnk);
    models::keep_first_tokens(x.ids, max_tokens, "the classifier");
    out.push_back(std::move(x));
  }
  return out;
}

ClassifierBatch make_classifier_batch(const std::vector<EncodedText>& data, const std::vector<size_t>& rows) {
  models::IdRows ids;
  Tensor labels = Tensor::empty({static_cast<int64_t>(rows.size())}, DType::i32);  // (B)
  for (size_t b = 0; b < rows.size(); ++b) {
    ids.emplace_back(data[rows[b]].ids);
    labels.i32()[b] = data[rows[b]].label;
  }
  return {models::pad_rows(ids), models::row_lengths(ids), labels};
}

ClassifierEval evaluate_encoded(models::TextClassifier& model, const std::vector<EncodedText>& data, int batch) {
  ClassifierEval result;
  result.examples = static_cast<int64_t>(data.size());
  if (data.empty()) return result;
  nn::Module& module = model.module();
  const bool was_training = module.is_training();
  module.eval();
  autodiff::NoGradGuard no_grad;
  std::vector<size_t> order(data.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return data[a].ids.size() < data[b].ids.size(); });
  int64_t right = 0;
  double loss_sum = 0.0;
  for (size_t begin = 0; begin < order.size(); begin += static_cast<size_t>(batch)) {
    std::vector<size_t> rows(order.begin() + static_cast<std::ptrdiff_t>(begin),
                             order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), begin + batch)));
    const ClassifierBatch t = make_classifier_batch(data, rows);
    const Tensor logits = model.logits(t.ids, t.lengths);  // (B, C)
    loss_sum += cross_entropy_sum(logits, t.labels).item();
    const std::vector<int32_t> predicted = argmax_last(logits);
    for (size_t b = 0; b < rows.size(); ++b) right += predicted[b] == t.labels.i32()[b];
  }
  module.train(was_training);
  result.accuracy = static_cast<double>(right) / static_cast<double>(data.size());
  result.loss = loss_sum / static_cast<double>(data.size());
  return result;
}

json classifier_metadata(models::TextClassifier& model, const data::Vocab& vocab, int64_t step, double dev_accuracy) {
  json j = io::run_metadata(kClassifierFormat, model.config_json());
  j.update({{"kind", model.kind()},
            {"vocabulary", vocab.to_json()},
            {"labels", sst2_labels()},
            {"step", step},
            {"dev_accuracy", dev_accuracy}});
  return j;
}

LoadedClassifier load_classifier(const std::string& path) {
  const io::SafetensorsFile file = io::load_safetensors(path);
  const json j = io::read_run_metadata(file, path, kClassifierFormat, "an attn classifier checkpoint");
  LoadedClassifier loaded;
  io::read_metadata_fields(path, "bad classifier metadata", [&] {
    const std::string kind = j.at("kind").get<std::string>();
    loaded.model = models::make_classifier(kind, j.at("config"));
    loaded.vocab = data::Vocab::from_json(j.at("vocabulary"));
    if (j.contains("labels")) loaded.labels = j.at("labels").get<std::vector<std::string>>();
    loaded.step = j.value("step", int64_t{0});
    loaded.dev_accuracy = j.value("dev_accuracy", 0.0);
  });
  if (loaded.vocab.size() != loaded.model->vocab_size())
    throw IoError(path + ": the vocabulary has " + std::to_string(loaded.vocab.size()) +
                  " entries, the model configuration says " + std::to_string(loaded.model->vocab_size()));
  if (loaded.labels.empty())
    for (int64_t k = 0; k < loaded.model->classes(); ++k) loaded.labels.push_back(std::to_string(k));
  if (static_cast<int64_t>(loaded.labels.size()) != loaded.model->classes())
    throw IoError(path + ": " + std::to_string(loaded.labels.size()) + " labels for " +
                  std::to_string(loaded.model->classes()) + " classes");
  io::load_model_parameters(file, loaded.model->module().named_parameters(), path);
  loaded.model->module().eval();
  return loaded;
}

ClassifierEval evaluate_classifier(models::TextClassifier& model, const data::Vocab& vocab,
                                   const std::vector<data::LabeledText>& examples, int batch) {
  if (batch < 1) throw ValueError("evaluation batch must be >= 1, got " + std::to_string(batch));
  for (const auto& e : examples)
    if (e.label < 0 || e.label >= model.classes())
      throw ValueError("label " + std::to_string(e.label) + " is outside the model's " +
                       std::to_string(model.classes()) + " classes");
  return evaluate_encoded(model, encode_texts(vocab, examples, model.max_tokens()), batch);
}

std::string classifier_eval_json(const ClassifierEval& eval) {
  return json_text(json{{"accuracy", eval.accuracy}, {"examples", eval.examples}, {"loss", eval.loss}});
}

Classification classify_text(models::TextClassifier& model, const data::Vocab& vocab, const std::string& text) {
  Classification c;
  c.tokens = data::sst2_tokens(text);  // raw text normalised as the training data is
  if (c.tokens.empty()) throw ValueError("classify: the text has no tokens");
  models::keep_first_tokens(c.tokens, model.max_tokens(), model.kind());  // the model reads this many
  for (const auto& t : c.tokens) c.ids.push_back(vocab.id(t));
  const int64_t n = static_cast<int64_t>(c.ids.size());
  nn::Module& module = model.module();
  const bool was_training = module.is_training();
  module.eval();
  autodiff::NoGradGuard no_grad;
  Tensor attention;
  const Tensor logits =
      model.logits(Tensor::from_vector(c.ids, {1, n}),
                   Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(n)}, {1}), &attention);
  module.train(was_training);
  const std::vector<float> l = logits.to_vector();
  const double top = *std::max_element(l.begin(), l.end());
  double z = 0.0;
  for (float v : l) z += std::exp(static_cast<double>(v) - top);
  for (float v : l) c.probabilities.push_back(static_cast<float>(std::exp(static_cast<double>(v) - top) / z));
  c.label = argmax(l.data(), static_cast<int64_t>(l.size()));
  c.probability = c.probabilities[static_cast<size_t>(c.label)];
  if (attention.defined()) c.attention = attention.to_vector();
  return c;
}

}  // namespace attn::decode
