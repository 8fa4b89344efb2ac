#include "attn/train/classifier_trainer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <unordered_set>

#include "attn/autodiff/tape.h"
#include "attn/data/embeddings.h"
#include "attn/io/safetensors.h"
#include "attn/io/sha256.h"
#include "attn/ops/loss.h"
#include "attn/ops/reduce.h"
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
  if (max_size < 0 || max_size == 1)
    throw ValueError("--max-vocab must be 0 (all) or >= 2, got " + std::to_string(max_size));
  if (batch < 1) throw ValueError("--batch must be >= 1, got " + std::to_string(batch));
  if (bucket < 1) throw ValueError("--bucket must be >= 1, got " + std::to_string(bucket));
  if (sst2_train != "phrases" && sst2_train != "sentences")
    throw ValueError("--sst2-train must be sentences or phrases, got '" + sst2_train + "'");
  if (freeze_embeddings && embeddings.empty()) throw ValueError("--freeze-embeddings needs --embeddings FILE");
  if (train_limit < 0 || dev_limit < 0) throw ValueError("--train-limit and --dev-limit must be >= 0");
  RunOptions::validate();
}

namespace {

void shuffle(std::vector<size_t>& v, Rng& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

// The batches of one epoch: a seeded shuffle, pools of bucket·batch sorted by length, cut
// into batches, batch order shuffled. Depends only on (seed, epoch).
std::vector<std::vector<size_t>> epoch_batches(const std::vector<decode::EncodedText>& data,
                                               const ClassifierTrainOptions& o, int64_t epoch) {
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
      std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(begin),
                       order.begin() + static_cast<std::ptrdiff_t>(end),
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

}  // namespace

void save_classifier(const std::string& path, models::TextClassifier& model, const data::Vocab& vocab, int64_t step,
                     double dev_accuracy) {
  save_run_checkpoint(path, model.module().named_parameters(),
                      decode::classifier_metadata(model, vocab, step, dev_accuracy));
}

json EmbeddingsCoverage::to_json() const {
  return {{"words", words},
          {"found", found},
          {"type_coverage", words ? static_cast<double>(found) / static_cast<double>(words) : 0.0},
          {"tokens", tokens},
          {"found_tokens", found_tokens},
          {"token_coverage", tokens ? static_cast<double>(found_tokens) / static_cast<double>(tokens) : 0.0}};
}

json apply_embeddings(const ClassifierTrainOptions& o, const data::Vocab& vocab,
                      const std::vector<std::string>& training_texts, models::TextClassifier& model, std::FILE* log) {
  Tensor weight;
  for (auto& [name, t] : model.module().named_parameters())
    if (name == "embedding.weight") weight = t;
  if (!weight.defined() || weight.rank() != 2 || weight.dim(0) != vocab.size())
    throw ValueError("--embeddings: the " + model.kind() + " model has no (V, emb) embedding.weight");
  const int64_t E = weight.dim(1);
  std::unordered_set<std::string> wanted;
  for (int32_t id = 0; id < vocab.size(); ++id)
    if (id != data::Vocab::kPad && id != data::Vocab::kUnk) wanted.insert(vocab.token(id));
  const data::WordVectors vectors = data::read_word_vectors(o.embeddings, &wanted);
  const char* size_option = model.kind() == "transformer-cls" ? "--d-model" : "--emb";
  if (vectors.dim != E)
    throw ValueError("--embeddings " + o.embeddings + " has " + std::to_string(vectors.dim) +
                     "-dimensional vectors, but " + size_option + " is " + std::to_string(E) + "; give " + size_option +
                     " " + std::to_string(vectors.dim));
  EmbeddingsCoverage c;
  std::vector<bool> has(static_cast<size_t>(vocab.size()), false);
  float* w = weight.f32();  // (V, E)
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if (id == data::Vocab::kPad || id == data::Vocab::kUnk) continue;
    ++c.words;
    const auto it = vectors.vectors.find(vocab.token(id));
    if (it == vectors.vectors.end()) continue;
    ++c.found;
    has[static_cast<size_t>(id)] = true;
    std::copy(it->second.begin(), it->second.end(), w + static_cast<int64_t>(id) * E);
  }
  if (c.found == 0)
    throw ValueError("--embeddings " + o.embeddings + ": none of the vocabulary's " + std::to_string(c.words) +
                     " words has a vector in it (" + std::to_string(vectors.file_words) +
                     " words; is it another language, or cased?)");
  for (const std::string& text : training_texts)
    for (const int32_t id : vocab.encode(text)) {
      ++c.tokens;
      c.found_tokens += has[static_cast<size_t>(id)];
    }
  const json j = c.to_json();
  const std::string sha256 = io::file_sha256(o.embeddings);
  if (log) {
    std::fprintf(log,
                 "embeddings: %s (%s, %lld words of %lld dimensions, sha256 %.12s...): %lld of %lld vocabulary words "
                 "(%.1f %%), %.1f %% of the training tokens; the other rows start as without --embeddings%s\n",
                 o.embeddings.c_str(), vectors.format.c_str(), static_cast<long long>(vectors.file_words),
                 static_cast<long long>(vectors.dim), sha256.c_str(), static_cast<long long>(c.found),
                 static_cast<long long>(c.words), 100.0 * j["type_coverage"].get<double>(),
                 100.0 * j["token_coverage"].get<double>(), o.freeze_embeddings ? "; frozen" : "");
    if (j["type_coverage"].get<double>() < 0.5)
      std::fprintf(log, "warning: --embeddings covers only %.1f %% of the vocabulary's words\n",
                   100.0 * j["type_coverage"].get<double>());
  }
  if (o.freeze_embeddings) weight.set_requires_grad(false);
  json provenance = {{"file", std::filesystem::path(o.embeddings).filename().string()},
                     {"sha256", sha256},
                     {"format", vectors.format},
                     {"dim", vectors.dim},
                     {"file_words", vectors.file_words},
                     {"frozen", o.freeze_embeddings}};
  provenance.update(j);
  return provenance;
}

namespace {

std::vector<data::LabeledText> training_examples(const ClassifierTrainOptions& o) {
  std::vector<data::LabeledText> train_examples = data::read_sst2(data::sst2_split_path(o.data_dir, "train"));
  if (o.sst2_train == "sentences") train_examples = data::sst2_sentences(train_examples);
  if (o.train_limit > 0 && static_cast<size_t>(o.train_limit) < train_examples.size())
    train_examples.resize(static_cast<size_t>(o.train_limit));
  return train_examples;
}

data::Vocab training_vocab(const ClassifierTrainOptions& o, const std::vector<data::LabeledText>& train_examples) {
  std::vector<std::string> texts;
  texts.reserve(train_examples.size());
  for (const auto& e : train_examples) texts.push_back(e.text);
  return data::Vocab::build(texts, {.min_freq = o.min_freq, .max_size = o.max_size});
}

models::AttnClassifier::AttentionSource attention_source(const ClassifierTrainOptions& o, const data::Vocab& vocab) {
  const std::string& path = o.attention_from;
  const json config = models::classifier_config_with_vocab(o.model, o.model_config, vocab.size(), 2);
  if (o.model != "bilstm-attn" || config.value("encoder", std::string("lstm")) != "average" ||
      config.value("pooling", std::string("additive")) != "uniform")
    throw ValueError("--attention-from needs --model bilstm-attn --encoder average (its pooling weights are M's)");
  std::shared_ptr<decode::LoadedClassifier> m;
  try {
    m = std::make_shared<decode::LoadedClassifier>(decode::load_classifier(path));
  } catch (const IoError& e) {
    throw ValueError(std::string("--attention-from: ") + e.what());
  }
  auto* source = dynamic_cast<models::AttnClassifier*>(m->model.get());
  if (source == nullptr)
    throw ValueError("--attention-from " + path + " is a '" + m->model->kind() +
                     "' classifier; it needs a bilstm-attn checkpoint (its attention pooling weights)");
  if (m->vocab.tokens() != vocab.tokens())
    throw ValueError("--attention-from " + path + " has another vocabulary (" + std::to_string(m->vocab.size()) +
                     " entries, this run " + std::to_string(vocab.size()) +
                     "): train both with the same --data, --min-freq, --max-vocab and --train-limit");
  source->eval();
  return [m, source](const Tensor& ids, const Tensor& lengths) {
    autodiff::NoGradGuard no_grad;
    Tensor weights;
    source->logits(ids, lengths, &weights);  // (B, S), detached
    return weights;
  };
}

// The SST-2 classifier for run(): epochs of length-bucketed batches, mean loss and
// accuracy over each logging window, dev accuracy as the score.
class ClassifierTask final : public Task {
 public:
  explicit ClassifierTask(const ClassifierTrainOptions& o) : o_(o) {
    std::vector<data::LabeledText> train_examples = training_examples(o);
    std::vector<data::LabeledText> dev = data::read_sst2(data::sst2_split_path(o.data_dir, "dev"));
    if (o.dev_limit > 0 && static_cast<size_t>(o.dev_limit) < dev.size()) dev.resize(static_cast<size_t>(o.dev_limit));
    vocab_ = training_vocab(o, train_examples);
    json config = models::classifier_config_with_vocab(o.model, o.model_config, vocab_.size(),
                                                       static_cast<int64_t>(decode::sst2_labels().size()));
    if (!config.contains("seed")) config["seed"] = o.seed;
    model_ = models::make_classifier(o.model, config);
    if (!o.attention_from.empty())
      dynamic_cast<models::AttnClassifier&>(*model_).set_attention_source(attention_source(o, vocab_));
    if (!o.embeddings.empty()) {
      std::vector<std::string> texts;
      for (const auto& e : train_examples) texts.push_back(e.text);
      embeddings_ = apply_embeddings(o, vocab_, texts, *model_);
    }
    train_ = decode::encode_texts(vocab_, train_examples, model_->max_tokens());
    dev_ = decode::encode_texts(vocab_, dev, model_->max_tokens());
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
    const decode::ClassifierBatch t = decode::make_classifier_batch(train_, rows);
    const Tensor logits = model_->logits(t.ids, t.lengths);  // (B, C)
    const Tensor loss = cross_entropy(logits, t.labels);
    const double loss_value = loss.item();
    const int64_t B = static_cast<int64_t>(rows.size());
    const std::vector<int32_t> predicted = argmax_last(logits);
    for (int64_t b = 0; b < B; ++b) window_right_ += predicted[static_cast<size_t>(b)] == t.labels.i32()[b];
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
    const decode::ClassifierEval e = decode::evaluate_encoded(*model_, dev_, 256);
    return {e.accuracy, {{"dev_accuracy", e.accuracy}, {"dev_loss", e.loss}}, ""};
  }
  bool higher_is_better() const override { return true; }
  json checkpoint_metadata(const RunState& s, bool best) const override {
    json j = decode::classifier_metadata(*model_, vocab_, best ? s.best_step : s.step, s.best_score);
    if (!embeddings_.is_null()) j["embeddings"] = embeddings_;
    return j;
  }
  RunState restore(const io::SafetensorsFile& file, const std::string& path) override {
    const json j = read_run_metadata(file, path, decode::kClassifierFormat, "an attn classifier checkpoint");
    const json ours = decode::classifier_metadata(*model_, vocab_, 0, 0.0);
    for (const char* key : {"kind", "config", "vocabulary"})
      if (j.value(key, json()) != ours[key])
        throw ValueError(std::string("--resume: the options describe a different ") +
                         (std::string(key) == "vocabulary" ? "vocabulary" : "model") + " than " + path);
    load_model_parameters(file, model_->module().named_parameters(), path);
    const int64_t step = j.value("step", int64_t{0});
    return {.step = step, .has_best = true, .best_score = j.value("dev_accuracy", 0.0), .best_step = step};
  }

  json resume_checked_options() const override {
    return {{"--batch", o_.batch},
            {"--bucket", o_.bucket},
            {"--train-limit", o_.train_limit},
            {"--sst2-train", o_.sst2_train},
            {"--freeze-embeddings", o_.freeze_embeddings}};
  }

  double first_loss() const { return first_loss_; }
  double final_loss() const { return final_loss_; }
  int64_t examples_done() const { return examples_done_; }
  int64_t vocab_size() const { return vocab_.size(); }

 private:
  const ClassifierTrainOptions& o_;
  data::Vocab vocab_;
  std::unique_ptr<models::TextClassifier> model_;
  json embeddings_;  // --embeddings: the provenance, else null
  std::vector<decode::EncodedText> train_, dev_;
  int64_t per_epoch_ = 0;
  std::vector<std::vector<size_t>> batches_;
  int64_t batches_epoch_ = -1;
  int64_t window_examples_ = 0, window_right_ = 0, window_batches_ = 0, examples_done_ = 0, last_step_ = 0;
  double window_loss_ = 0.0, first_loss_ = 0.0, final_loss_ = 0.0;
  bool logged_ = false;
};

}  // namespace

models::AttnClassifier::AttentionSource attention_source(const ClassifierTrainOptions& o) {
  return attention_source(o, training_vocab(o, training_examples(o)));
}

ClassifierTrainResult train_classifier(const ClassifierTrainOptions& o) {
  o.validate();
  ClassifierTask task(o);
  const RunResult r = run(task, o);
  ClassifierTrainResult result(r);
  result.best_dev_accuracy = r.state.best_score;
  result.best_step = r.state.best_step;
  result.first_loss = task.first_loss();
  result.final_loss = task.final_loss();
  result.examples_per_second = r.seconds > 0 ? task.examples_done() / r.seconds : 0.0;
  result.vocab_size = task.vocab_size();
  return result;
}

}  // namespace attn::train
