// Wiegreffe & Pinter's diagnostic (see attn/explain/diagnostic.h).
#include "attn/explain/diagnostic.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "attn/autodiff/tape.h"
#include "attn/data/sst2.h"
#include "attn/data/text.h"
#include "attn/decode/classify.h"
#include "attn/error.h"
#include "attn/ops/softmax.h"

namespace attn::explain {
namespace {

// Eval mode and no tape for the guard's lifetime; the training flag restored on leaving.
class EvalGuard {
 public:
  explicit EvalGuard(nn::Module& m) : m_(m), training_(m.is_training()) { m.eval(); }
  ~EvalGuard() { m_.train(training_); }
  EvalGuard(const EvalGuard&) = delete;
  EvalGuard& operator=(const EvalGuard&) = delete;

 private:
  nn::Module& m_;
  bool training_;
  autodiff::NoGradGuard no_grad_;
};

void sentence(const std::vector<int32_t>& ids, Tensor* ids_t, Tensor* lengths) {
  if (ids.empty()) throw ValueError("diagnostic: the sentence has no tokens");
  const int32_t n = static_cast<int32_t>(ids.size());
  *ids_t = Tensor::from_vector(ids, {1, n});
  *lengths = Tensor::from_vector(std::vector<int32_t>{n}, {1});
}

}  // namespace

std::vector<float> probabilities_with_weights(models::AttnClassifier& model, const std::vector<int32_t>& ids,
                                              const std::vector<float>& weights) {
  if (weights.size() != ids.size())
    throw ShapeError("probabilities_with_weights: " + std::to_string(weights.size()) + " weights for " +
                     std::to_string(ids.size()) + " tokens");
  EvalGuard guard(model);
  Tensor ids_t, lengths;
  sentence(ids, &ids_t, &lengths);
  const Tensor w = Tensor::from_vector(weights, {1, static_cast<int64_t>(weights.size())});
  return softmax(model.output(model.pool_with(w, model.encode(model.embed(ids_t), lengths)))).to_vector();
}

std::vector<float> own_attention(models::AttnClassifier& model, const std::vector<int32_t>& ids) {
  EvalGuard guard(model);
  Tensor ids_t, lengths, attention;
  sentence(ids, &ids_t, &lengths);
  model.logits(ids_t, lengths, &attention);
  return attention.to_vector();
}

namespace {

// A checkpoint loaded as the bilstm-attn it must be.
struct Pooling {
  decode::LoadedClassifier loaded;
  models::AttnClassifier* model = nullptr;
  int64_t right = 0;
};
std::unique_ptr<Pooling> load_pooling(const std::string& path) {
  auto p = std::make_unique<Pooling>();
  p->loaded = decode::load_classifier(path);
  p->model = dynamic_cast<models::AttnClassifier*>(p->loaded.model.get());
  return p;
}

// A trained variant: an average-encoder bilstm-attn with uniform pooling (no pooling
// parameters), else ValueError naming the path; null when `path` is empty.
std::unique_ptr<Pooling> trained_variant(const std::string& path, const char* flag, const char* trained_with) {
  if (path.empty()) return nullptr;
  std::unique_ptr<Pooling> v = load_pooling(path);
  if (v->model == nullptr || v->model->config().encoder != models::PoolingEncoder::average ||
      v->model->config().pooling != models::PoolingScore::uniform)
    throw ValueError(std::string(flag) + " " + path +
                     " is not an average-encoder bilstm-attn model with no pooling "
                     "parameters; train it with attn train --model bilstm-attn --encoder average " +
                     trained_with);
  return v;
}

int32_t argmax(const std::vector<float>& p) {
  return static_cast<int32_t>(std::max_element(p.begin(), p.end()) - p.begin());
}

}  // namespace

DiagnosticResult run_diagnostic(const DiagnosticRun& run, const std::function<void(int64_t, int64_t)>& progress) {
  const std::unique_ptr<Pooling> student = load_pooling(run.model), teacher = load_pooling(run.attention_from);
  models::AttnClassifier* average = student->model;
  models::AttnClassifier* source = teacher->model;
  if (average == nullptr || average->config().encoder != models::PoolingEncoder::average)
    throw ValueError(run.model +
                     " is not a bilstm-attn checkpoint with --encoder average; --diagnostic imposes weights "
                     "on the non-contextual average model");
  if (source == nullptr)
    throw ValueError(run.attention_from + " is a '" + teacher->loaded.model->kind() +
                     "' classifier; --attention-from needs a bilstm-attn checkpoint (its pooling weights)");
  const std::unique_ptr<Pooling> trained_uniform =
      trained_variant(run.trained_uniform, "--trained-uniform", "--pooling uniform");
  const std::unique_ptr<Pooling> trained_imposed =
      trained_variant(run.trained_imposed, "--trained-imposed", "--attention-from M");
  if (trained_imposed && trained_imposed->loaded.vocab.tokens() != teacher->loaded.vocab.tokens())
    throw ValueError("--trained-imposed " + run.trained_imposed + " has another vocabulary than " + run.attention_from +
                     "; was it trained with --attention-from " + run.attention_from + "?");
  std::vector<data::LabeledText> examples = data::read_sst2(data::sst2_split_path(run.data, run.split));
  if (run.limit > 0 && static_cast<int64_t>(examples.size()) > run.limit)
    examples.resize(static_cast<size_t>(run.limit));
  const int64_t n = static_cast<int64_t>(examples.size());
  if (progress) progress(0, n);
  DiagnosticResult r;
  int64_t own = 0, uniform = 0, imposed = 0, source_right = 0;
  for (size_t i = 0; i < examples.size(); ++i) {
    std::vector<std::string> tokens = data::sst2_tokens(data::valid_utf8(examples[i].text));
    for (int64_t limit : {student->loaded.model->max_tokens(), teacher->loaded.model->max_tokens()})
      if (limit > 0 && static_cast<int64_t>(tokens.size()) > limit) tokens.resize(static_cast<size_t>(limit));
    if (progress) progress(static_cast<int64_t>(i + 1), n);
    if (tokens.empty()) {
      ++r.skipped_empty;
      continue;
    }
    std::vector<int32_t> ids, source_ids;
    for (const auto& t : tokens) {
      ids.push_back(student->loaded.vocab.id(t));
      source_ids.push_back(teacher->loaded.vocab.id(t));
    }
    const int32_t gold = examples[i].label;
    const std::vector<float> source_attention = own_attention(*source, source_ids);
    const std::vector<float> uniform_weights(tokens.size(), 1.0f / static_cast<float>(tokens.size()));
    ++r.sentences;
    own += argmax(probabilities_with_weights(*average, ids, own_attention(*average, ids))) == gold;
    uniform += argmax(probabilities_with_weights(*average, ids, uniform_weights)) == gold;
    imposed += argmax(probabilities_with_weights(*average, ids, source_attention)) == gold;
    source_right += argmax(probabilities_with_weights(*source, source_ids, source_attention)) == gold;
    if (trained_uniform) {
      std::vector<int32_t> u_ids;
      for (const auto& t : tokens) u_ids.push_back(trained_uniform->loaded.vocab.id(t));
      trained_uniform->right +=
          argmax(probabilities_with_weights(*trained_uniform->model, u_ids, uniform_weights)) == gold;
    }
    if (trained_imposed)
      trained_imposed->right +=
          argmax(probabilities_with_weights(*trained_imposed->model, source_ids, source_attention)) == gold;
  }
  if (r.sentences == 0) throw ValueError("--diagnostic: the split has no sentence with tokens");
  const auto share = [&](int64_t right) { return static_cast<double>(right) / static_cast<double>(r.sentences); };
  r.own = share(own);
  r.uniform = share(uniform);
  r.imposed = share(imposed);
  r.source = share(source_right);
  if (trained_uniform) r.trained_uniform = share(trained_uniform->right);
  if (trained_imposed) r.trained_imposed = share(trained_imposed->right);
  r.source_encoder = source->config().encoder;
  r.source_pooling = source->config().pooling;
  return r;
}

nlohmann::json diagnostic_json(const DiagnosticRun& run, const DiagnosticResult& r) {
  nlohmann::json j = {{"model", run.model},
                      {"attention_from", run.attention_from},
                      {"attention_from_pooling", models::to_string(r.source_pooling)},
                      {"attention_from_encoder", models::to_string(r.source_encoder)},
                      {"data", run.data},
                      {"split", run.split},
                      {"sentences", r.sentences},
                      {"skipped_empty", r.skipped_empty},
                      {"accuracy",
                       {{"average_own_attention", r.own},
                        {"average_uniform", r.uniform},
                        {"average_imposed_attention", r.imposed},
                        {"attention_from_model", r.source}}}};
  if (r.trained_uniform || r.trained_imposed) {
    nlohmann::json trained = {{"average_own_attention", r.own}};
    if (r.trained_uniform) trained["uniform"] = {{"model", run.trained_uniform}, {"accuracy", *r.trained_uniform}};
    if (r.trained_imposed) trained["imposed"] = {{"model", run.trained_imposed}, {"accuracy", *r.trained_imposed}};
    j["trained"] = trained;
  }
  return j;
}

std::string diagnostic_markdown(const DiagnosticRun& run, const DiagnosticResult& r) {
  char md[2048];
  std::snprintf(md, sizeof md,
                "# Wiegreffe & Pinter's diagnostic (test-time form)\n\n"
                "The non-contextual `average` model `%s` pools its own states with each set of weights; %lld "
                "sentences of the %s split.\n\n"
                "| weights imposed on the average model | accuracy |\n|---|---|\n"
                "| uniform (1/n) | %.4f |\n| its own learned attention | %.4f |\n"
                "| the attention of `%s` (%s encoder, %s pooling) | %.4f |\n\n"
                "(`%s` itself, with its own states: %.4f.)\n",
                run.model.c_str(), static_cast<long long>(r.sentences), run.split.c_str(), r.uniform, r.own,
                run.attention_from.c_str(), models::to_string(r.source_encoder), models::to_string(r.source_pooling),
                r.imposed, run.attention_from.c_str(), r.source);
  std::string text = md;
  if (!r.trained_uniform && !r.trained_imposed) return text;
  text +=
      "\n## Trained with the weights frozen (Wiegreffe & Pinter's diagnostic)\n\n"
      "| average model trained with | accuracy |\n|---|---|\n";
  char row[1024];
  if (r.trained_uniform) {
    std::snprintf(row, sizeof row, "| uniform weights (`%s`) | %.4f |\n", run.trained_uniform.c_str(),
                  *r.trained_uniform);
    text += row;
  }
  if (r.trained_imposed) {
    std::snprintf(row, sizeof row, "| the attention of `%s`, frozen (`%s`) | %.4f |\n", run.attention_from.c_str(),
                  run.trained_imposed.c_str(), *r.trained_imposed);
    text += row;
  }
  std::snprintf(row, sizeof row, "| its own learned attention (`%s`) | %.4f |\n", run.model.c_str(), r.own);
  return text + row;
}

}  // namespace attn::explain
