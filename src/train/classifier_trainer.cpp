#include "attn/train/classifier_trainer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "attn/autodiff/tape.h"
#include "attn/io/safetensors.h"
#include "attn/ops/loss.h"
#include "attn/random.h"
#include "attn/train/checkpoint.h"

namespace attn::train {
namespace fs = std::filesystem;
using nlohmann::json;

void ClassifierTrainOptions::validate() const {
  if (data_dir.empty()) throw ValueError("a data directory (--data) is required");
  if (model != "bilstm" && model != "bilstm-attn" && model != "transformer-cls")
    throw ValueError("unknown --model '" + model + "' (valid: " + models::classifier_kinds() + ")");
  if (!model_config.is_object()) throw ValueError("the model configuration must be a JSON object");
  if (min_freq < 1) throw ValueError("--min-freq must be >= 1, got " + std::to_string(min_freq));
  if (max_size < 0 || max_size == 1) throw ValueError("--max-vocab must be 0 (all) or >= 2, got " + std::to_string(max_size));
  if (batch < 1) throw ValueError("--batch must be >= 1, got " + std::to_string(batch));
  if (bucket < 1) throw ValueError("--bucket must be >= 1, got " + std::to_string(bucket));
  if (train_limit < 0 || dev_limit < 0) throw ValueError("--train-limit and --dev-limit must be >= 0");
  RunOptions::validate();
}

const std::vector<std::string>& sst2_labels() {
  static const std::vector<std::string> labels = {"negative", "positive"};
  return labels;
}

namespace {

struct Encoded {
  std::vector<int32_t> ids;  // never empty (an empty text becomes one <unk>)
  int32_t label = 0;
};

// Each text's ids, cut to the model's max_tokens (0: no limit).
std::vector<Encoded> encode_all(const data::Vocab& vocab, const std::vector<data::LabeledText>& examples,
                                int64_t max_tokens) {
  std::vector<Encoded> out;
  out.reserve(examples.size());
  for (const auto& e : examples) {
    Encoded x{vocab.encode(e.text), e.label};
    if (x.ids.empty()) x.ids.push_back(data::Vocab::kUnk);
    models::keep_first_tokens(x.ids, max_tokens, "the classifier");
    out.push_back(std::move(x));
  }
  return out;
}

struct BatchTensors {
  Tensor ids, lengths, labels;  // (B, S), (B), (B)
};

BatchTensors make_batch(const std::vector<Encoded>& data, const std::vector<size_t>& rows) {
  const int64_t B = static_cast<int64_t>(rows.size());
  size_t longest = 1;
  for (size_t r : rows) longest = std::max(longest, data[r].ids.size());
  const int64_t S = static_cast<int64_t>(longest);
  BatchTensors t{Tensor::zeros({B, S}, DType::i32), Tensor::empty({B}, DType::i32), Tensor::empty({B}, DType::i32)};
  for (int64_t b = 0; b < B; ++b) {
    const Encoded& e = data[rows[static_cast<size_t>(b)]];
    std::copy(e.ids.begin(), e.ids.end(), t.ids.i32() + b * S);
    t.lengths.i32()[b] = static_cast<int32_t>(e.ids.size());
    t.labels.i32()[b] = e.label;
  }
  return t;
}

void shuffle(std::vector<size_t>& v, Rng& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

// The batches of one epoch: a seeded shuffle, pools of bucket·batch sorted by length, cut
// into batches, batch order shuffled. Depends only on (seed, epoch).
std::vector<std::vector<size_t>> epoch_batches(const std::vector<Encoded>& data, const ClassifierTrainOptions& o,
                                               int64_t epoch) {
  std::vector<size_t> order(data.size());
  std::iota(order.begin(), order.end(), size_t{0});
  Rng rng(splitmix64(o.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(epoch)));
  shuffle(order, rng);
  const size_t batch = static_cast<size_t>(o.batch);
  const size_t pool = batch * static_cast<size_t>(o.bucket);
  std::vector<std::vector<size_t>> batches;
  for (size_t begin = 0; begin < order.size(); begin += pool) {
    const size_t end = std::min(order.size(), begin + pool);
    if (o.bucket > 1)
      std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(begin), order.begin() + static_cast<std::ptrdiff_t>(end),
                       [&](size_t a, size_t b) { return data[a].ids.size() < data[b].ids.size(); });
    for (size_t b = begin; b < end; b += batch)
      batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(b),
                           order.begin() + static_cast<std::ptrdiff_t>(std::min(end, b + batch)));
  }
  std::vector<size_t> perm(batches.size());
  std::iota(perm.begin(), perm.end(), size_t{0});
  shuffle(perm, rng);
  std::vector<std::vector<size_t>> out;
  out.reserve(batches.size());
  for (size_t i : perm) out.push_back(std::move(batches[i]));
  return out;
}

ClassifierEval evaluate_encoded(models::TextClassifier& model, const std::vector<Encoded>& data, int batch) {
  ClassifierEval result;
  result.examples = static_cast<int64_t>(data.size());
  if (data.empty()) return result;
  nn::Module& module = model.module();
  const bool was_training = module.is_training();
  module.eval();
  autodiff::NoGradGuard no_grad;
  std::vector<size_t> order(data.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return data[a].ids.size() < data[b].ids.size(); });
  int64_t right = 0;
  double loss_sum = 0.0;
  const int64_t C = model.classes();
  for (size_t begin = 0; begin < order.size(); begin += static_cast<size_t>(batch)) {
    std::vector<size_t> rows(order.begin() + static_cast<std::ptrdiff_t>(begin),
                             order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), begin + batch)));
    BatchTensors t = make_batch(data, rows);
    const Tensor logits = model.logits(t.ids, t.lengths);  // (B, C)
    loss_sum += cross_entropy_sum(logits, t.labels).item();
    const float* l = logits.f32();
    for (size_t b = 0; b < rows.size(); ++b) {
      int64_t best = 0;
      for (int64_t k = 1; k < C; ++k)
        if (l[b * C + k] > l[b * C + best]) best = k;
      right += best == t.labels.i32()[b];
    }
  }
  module.train(was_training);
  result.accuracy = static_cast<double>(right) / static_cast<double>(data.size());
  result.loss = loss_sum / static_cast<double>(data.size());
  return result;
}

json metadata_json(models::TextClassifier& model, const data::Vocab& vocab, int64_t step, double dev_accuracy) {
  return {{"format", "attn-classifier"}, {"version", kCheckpointVersion},          {"kind", model.kind()},
          {"config", model.config_json()}, {"vocabulary", vocab.to_json()}, {"labels", sst2_labels()},
          {"step", step},                  {"dev_accuracy", dev_accuracy}};
}

}  // namespace

void save_classifier(const std::string& path, models::TextClassifier& model, const data::Vocab& vocab, int64_t step,
                     double dev_accuracy) {
  save_run_checkpoint(path, model.module().named_parameters(), metadata_json(model, vocab, step, dev_accuracy));
}

LoadedClassifier load_classifier(const std::string& path) {
  const io::SafetensorsFile file = io::load_safetensors(path);
  const json j = read_run_metadata(file, path, "attn-classifier", "an attn classifier checkpoint");
  LoadedClassifier loaded;
  try {
    const std::string kind = j.at("kind").get<std::string>();
    loaded.model = models::make_classifier(kind, j.at("config"));
    loaded.vocab = data::Vocab::from_json(j.at("vocabulary"));
    if (j.contains("labels")) loaded.labels = j.at("labels").get<std::vector<std::string>>();
    loaded.step = j.value("step", int64_t{0});
    loaded.dev_accuracy = j.value("dev_accuracy", 0.0);
  } catch (const json::exception& e) {
    throw IoError(path + ": bad 'attn' metadata: " + e.what());
  } catch (const ValueError& e) {
    throw IoError(path + ": bad classifier metadata: " + e.what());
  }
  if (loaded.vocab.size() != loaded.model->vocab_size())
    throw IoError(path + ": the vocabulary has " + std::to_string(loaded.vocab.size()) +
                  " entries, the model configuration says " + std::to_string(loaded.model->vocab_size()));
  if (loaded.labels.empty())
    for (int64_t k = 0; k < loaded.model->classes(); ++k) loaded.labels.push_back(std::to_string(k));
  if (static_cast<int64_t>(loaded.labels.size()) != loaded.model->classes())
    throw IoError(path + ": " + std::to_string(loaded.labels.size()) + " labels for " +
                  std::to_string(loaded.model->classes()) + " classes");
  load_model_parameters(file, loaded.model->module().named_parameters(), path);
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
  return evaluate_encoded(model, encode_all(vocab, examples, model.max_tokens()), batch);
}

std::string classifier_eval_json(const ClassifierEval& eval) {
  return json{{"accuracy", eval.accuracy}, {"examples", eval.examples}, {"loss", eval.loss}}.dump();
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
  const Tensor logits = model.logits(Tensor::from_vector(c.ids, {1, n}),
                                     Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(n)}, {1}), &attention);
  module.train(was_training);
  const std::vector<float> l = logits.to_vector();
  const double top = *std::max_element(l.begin(), l.end());
  double z = 0.0;
  for (float v : l) z += std::exp(static_cast<double>(v) - top);
  for (float v : l) c.probabilities.push_back(static_cast<float>(std::exp(static_cast<double>(v) - top) / z));
  c.label = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
  c.probability = c.probabilities[static_cast<size_t>(c.label)];
  if (attention.defined()) c.attention = attention.to_vector();
  return c;
}

namespace {

// The SST-2 classifier for run(): epochs of length-bucketed batches, mean loss and
// accuracy over each logging window, dev accuracy as the score.
class ClassifierTask final : public Task {
 public:
  explicit ClassifierTask(const ClassifierTrainOptions& o) : o_(o) {
    std::vector<data::LabeledText> train_examples = data::read_sst2(data::sst2_split_path(o.data_dir, "train"));
    std::vector<data::LabeledText> dev = data::read_sst2(data::sst2_split_path(o.data_dir, "dev"));
    if (o.train_limit > 0 && static_cast<size_t>(o.train_limit) < train_examples.size())
      train_examples.resize(static_cast<size_t>(o.train_limit));
    if (o.dev_limit > 0 && static_cast<size_t>(o.dev_limit) < dev.size()) dev.resize(static_cast<size_t>(o.dev_limit));
    std::vector<std::string> texts;
    texts.reserve(train_examples.size());
    for (const auto& e : train_examples) texts.push_back(e.text);
    vocab_ = data::Vocab::build(texts, {.min_freq = o.min_freq, .max_size = o.max_size});
    json config = models::classifier_config_with_vocab(o.model, o.model_config, vocab_.size(),
                                                       static_cast<int64_t>(sst2_labels().size()));
    if (!config.contains("seed")) config["seed"] = o.seed;
    model_ = models::make_classifier(o.model, config);
    train_ = encode_all(vocab_, train_examples, model_->max_tokens());
    dev_ = encode_all(vocab_, dev, model_->max_tokens());
    per_epoch_ = static_cast<int64_t>(epoch_batches(train_, o, 0).size());
  }
  nn::Module& module() override { return model_->module(); }
  std::string label() const override { return "train " + o_.model; }
  int64_t steps_per_epoch() const override { return per_epoch_; }

  StepLoss forward(int64_t step) override {
    // Step s is batch s % per_epoch of epoch s / per_epoch (the same count every epoch).
    const int64_t epoch = step / per_epoch_;
    if (epoch != batches_epoch_) {
      batches_ = epoch_batches(train_, o_, epoch);
      batches_epoch_ = epoch;
    }
    const std::vector<size_t> rows = distributed::shard_of(batches_[static_cast<size_t>(step % per_epoch_)], shard());
    const BatchTensors t = make_batch(train_, rows);
    const Tensor logits = model_->logits(t.ids, t.lengths);  // (B, C)
    const Tensor loss = cross_entropy(logits, t.labels);
    const double loss_value = loss.item();
    const int64_t B = static_cast<int64_t>(rows.size()), C = model_->classes();
    const float* l = logits.f32();
    for (int64_t b = 0; b < B; ++b) {
      int64_t best = 0;
      for (int64_t k = 1; k < C; ++k)
        if (l[b * C + k] > l[b * C + best]) best = k;
      window_right_ += best == t.labels.i32()[b];
    }
    window_examples_ += B;
    examples_done_ += B;
    window_loss_ += loss_value;
    ++window_batches_;
    last_step_ = step + 1;
    return {loss, loss_value, static_cast<double>(B)};  // the mean over the examples
  }
  std::vector<LogField> log_fields(double seconds) override {
    const double mean_loss = window_loss_ / static_cast<double>(window_batches_);
    const double accuracy = static_cast<double>(window_right_) / static_cast<double>(window_examples_);
    const double rate = seconds > 0 ? window_examples_ / seconds : 0.0;
    if (!logged_) first_loss_ = mean_loss;
    logged_ = true;
    final_loss_ = mean_loss;
    window_examples_ = window_right_ = window_batches_ = 0;
    window_loss_ = 0.0;
    return {{"epoch", static_cast<double>(last_step_) / static_cast<double>(per_epoch_), ""},
            {"loss", mean_loss, "loss"},
            {"accuracy", accuracy, "acc"},
            {"examples_per_s", rate, "ex/s"}};
  }
  Validation validate(int64_t) override {
    const ClassifierEval e = evaluate_encoded(*model_, dev_, 256);
    return {e.accuracy, {{"dev_accuracy", e.accuracy}, {"dev_loss", e.loss}}, ""};
  }
  bool higher_is_better() const override { return true; }
  json checkpoint_metadata(const RunState& s, bool best) const override {
    return metadata_json(*model_, vocab_, best ? s.best_step : s.step, s.best_score);
  }
  RunState restore(const io::SafetensorsFile& file, const std::string& path) override {
    const json j = read_run_metadata(file, path, "attn-classifier", "an attn classifier checkpoint");
    const json ours = metadata_json(*model_, vocab_, 0, 0.0);
    for (const char* key : {"kind", "config", "vocabulary"})
      if (j.value(key, json()) != ours[key])
        throw ValueError(std::string("--resume: the options describe a different ") +
                         (std::string(key) == "vocabulary" ? "vocabulary" : "model") + " than " + path);
    load_model_parameters(file, model_->module().named_parameters(), path);
    const int64_t step = j.value("step", int64_t{0});
    return {.step = step, .has_best = true, .best_score = j.value("dev_accuracy", 0.0), .best_step = step};
  }

  json resume_checked_options() const override {
    return {{"--batch", o_.batch}, {"--bucket", o_.bucket}, {"--train-limit", o_.train_limit}};
  }

  double first_loss() const { return first_loss_; }
  double final_loss() const { return final_loss_; }
  int64_t examples_done() const { return examples_done_; }
  int64_t vocab_size() const { return vocab_.size(); }

 private:
  const ClassifierTrainOptions& o_;
  data::Vocab vocab_;
  std::unique_ptr<models::TextClassifier> model_;
  std::vector<Encoded> train_, dev_;
  int64_t per_epoch_ = 0;
  std::vector<std::vector<size_t>> batches_;
  int64_t batches_epoch_ = -1;
  int64_t window_examples_ = 0, window_right_ = 0, window_batches_ = 0, examples_done_ = 0, last_step_ = 0;
  double window_loss_ = 0.0, first_loss_ = 0.0, final_loss_ = 0.0;
  bool logged_ = false;
};

}  // namespace

ClassifierTrainResult train_classifier(const ClassifierTrainOptions& o) {
  o.validate();
  ClassifierTask task(o);
  const RunResult r = run(task, o);
  ClassifierTrainResult result;
  result.steps_done = r.state.step;
  result.interrupted = r.interrupted;
  result.best_dev_accuracy = r.state.best_score;
  result.best_step = r.state.best_step;
  result.first_loss = task.first_loss();
  result.final_loss = task.final_loss();
  result.seconds = r.seconds;
  result.examples_per_second = r.seconds > 0 ? task.examples_done() / r.seconds : 0.0;
  result.vocab_size = task.vocab_size();
  result.model_path = r.model_path;
  return result;
}

}  // namespace attn::train
