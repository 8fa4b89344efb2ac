#include "attn/train/classifier_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "attn/autodiff/tape.h"
#include "attn/io/safetensors.h"
#include "attn/ops/loss.h"
#include "attn/random.h"
#include "attn/train/checkpoint.h"
#include "attn/train/optimizer.h"
#include "attn/train/progress.h"
#include "attn/train/run_log.h"

namespace attn::train {
namespace fs = std::filesystem;
using nlohmann::json;

void ClassifierTrainOptions::validate() const {
  if (data_dir.empty()) throw ValueError("a data directory (--data) is required");
  if (out_dir.empty()) throw ValueError("an output directory (--out) is required");
  if (model != "bilstm" && model != "transformer-cls")
    throw ValueError("unknown --model '" + model + "' (valid: bilstm, transformer-cls)");
  if (!model_config.is_object()) throw ValueError("the model configuration must be a JSON object");
  if (min_freq < 1) throw ValueError("--min-freq must be >= 1, got " + std::to_string(min_freq));
  if (max_size < 0 || max_size == 1) throw ValueError("--max-vocab must be 0 (all) or >= 2, got " + std::to_string(max_size));
  if (steps < 0) throw ValueError("--steps must be >= 0, got " + std::to_string(steps));
  if (steps == 0 && epochs < 1) throw ValueError("--epochs must be >= 1 (or give --steps), got " + std::to_string(epochs));
  if (batch < 1) throw ValueError("--batch must be >= 1, got " + std::to_string(batch));
  if (!(lr > 0.0f) || !std::isfinite(lr)) throw ValueError("--lr must be a positive number, got " + std::to_string(lr));
  if (!(weight_decay >= 0.0f) || !std::isfinite(weight_decay))
    throw ValueError("--weight-decay must be >= 0, got " + std::to_string(weight_decay));
  if (!(clip >= 0.0f)) throw ValueError("--clip must be >= 0, got " + std::to_string(clip));
  if (warmup < 0) throw ValueError("--warmup must be >= 0, got " + std::to_string(warmup));
  parse_lr_schedule_kind(lr_schedule);
  if (log_every < 1) throw ValueError("--log-every must be >= 1, got " + std::to_string(log_every));
  if (eval_every < 0) throw ValueError("--eval-every must be >= 0, got " + std::to_string(eval_every));
  if (bucket < 1) throw ValueError("--bucket must be >= 1, got " + std::to_string(bucket));
  if (train_limit < 0 || dev_limit < 0) throw ValueError("--train-limit and --dev-limit must be >= 0");
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

ClassifierTrainResult train_classifier(const ClassifierTrainOptions& o) {
  o.validate();
  std::vector<data::LabeledText> train_examples = data::read_sst2(data::sst2_split_path(o.data_dir, "train"));
  std::vector<data::LabeledText> dev = data::read_sst2(data::sst2_split_path(o.data_dir, "dev"));
  if (o.train_limit > 0 && static_cast<size_t>(o.train_limit) < train_examples.size())
    train_examples.resize(static_cast<size_t>(o.train_limit));
  if (o.dev_limit > 0 && static_cast<size_t>(o.dev_limit) < dev.size()) dev.resize(static_cast<size_t>(o.dev_limit));

  std::vector<std::string> texts;
  texts.reserve(train_examples.size());
  for (const auto& e : train_examples) texts.push_back(e.text);
  const data::Vocab vocab = data::Vocab::build(texts, {.min_freq = o.min_freq, .max_size = o.max_size});

  json config = models::classifier_config_with_vocab(o.model, o.model_config, vocab.size(),
                                                     static_cast<int64_t>(sst2_labels().size()));
  if (!config.contains("seed")) config["seed"] = o.seed;
  std::unique_ptr<models::TextClassifier> model = models::make_classifier(o.model, config);
  const std::vector<Encoded> train_data = encode_all(vocab, train_examples, model->max_tokens());
  const std::vector<Encoded> dev_data = encode_all(vocab, dev, model->max_tokens());
  nn::Module& module = model->module();
  std::unique_ptr<Optimizer> optimizer;
  if (o.weight_decay > 0.0f)
    optimizer = std::make_unique<AdamW>(module.parameters(), AdamWOptions{.lr = o.lr, .weight_decay = o.weight_decay});
  else
    optimizer = std::make_unique<Adam>(module.parameters(), AdamOptions{.lr = o.lr});

  // The number of steps: fixed, or epochs × batches per epoch (the same every epoch).
  const int64_t per_epoch = static_cast<int64_t>(epoch_batches(train_data, o, 0).size());
  const int64_t total_steps = o.steps > 0 ? o.steps : per_epoch * o.epochs;
  const int64_t eval_every = o.eval_every > 0 ? o.eval_every : per_epoch;
  const int64_t warmup = o.warmup_is_default ? std::min(o.warmup, total_steps / 10) : o.warmup;
  LrScheduleOptions schedule_options{.kind = parse_lr_schedule_kind(o.lr_schedule),
                                     .base_lr = o.lr,
                                     .warmup_steps = warmup,
                                     .total_steps = total_steps,
                                     .min_lr = 0.0f};
  if (schedule_options.kind != LrScheduleKind::constant && schedule_options.kind != LrScheduleKind::inverse_sqrt &&
      total_steps <= warmup)
    throw ValueError("--lr-schedule " + o.lr_schedule + ": " + std::to_string(total_steps) +
                     " steps must be more than --warmup " + std::to_string(warmup));
  const LrSchedule schedule(schedule_options);

  fs::create_directories(o.out_dir);
  const std::string model_path = (fs::path(o.out_dir) / "model.safetensors").string();
  JsonlLog log((fs::path(o.out_dir) / "log.jsonl").string(), /*append=*/false);

  ClassifierTrainResult result;
  result.model_path = model_path;
  result.vocab_size = vocab.size();
  bool saved = false;
  const auto run_start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count(); };

  auto evaluate_and_keep_best = [&](int64_t step) {
    const ClassifierEval e = evaluate_encoded(*model, dev_data, 256);
    log.write({{"step", step}, {"dev_accuracy", e.accuracy}, {"dev_loss", e.loss}, {"elapsed_s", elapsed()}});
    if (!saved || e.accuracy > result.best_dev_accuracy) {
      result.best_dev_accuracy = e.accuracy;
      result.best_step = step;
      save_classifier(model_path, *model, vocab, step, e.accuracy);
      saved = true;
    }
  };

  Progress progress("train " + o.model, total_steps, o.progress);
  module.train();
  int64_t step = 0, epoch = 0, examples_done = 0;
  int64_t window_examples = 0, window_right = 0, window_batches = 0;
  double window_loss = 0.0;
  bool first_window = true;
  auto window_start = run_start;
  std::vector<std::vector<size_t>> batches;
  size_t next_batch = 0;
  while (step < total_steps) {
    if (o.stop && o.stop->load()) {
      result.interrupted = true;
      break;
    }
    if (next_batch == batches.size()) {
      batches = epoch_batches(train_data, o, epoch++);
      next_batch = 0;
    }
    const std::vector<size_t>& rows = batches[next_batch++];
    BatchTensors t = make_batch(train_data, rows);
    const Tensor logits = model->logits(t.ids, t.lengths);  // (B, C)
    const Tensor loss = cross_entropy(logits, t.labels);
    const double loss_value = loss.item();
    if (!std::isfinite(loss_value))
      throw ValueError("training diverged at step " + std::to_string(step + 1) + " (loss " + std::to_string(loss_value) +
                       "); try a smaller --lr");
    optimizer->set_lr(schedule.lr_at(step));
    backward(loss);
    if (o.clip > 0.0f) clip_grad_norm(module.parameters(), o.clip);
    optimizer->step();
    optimizer->zero_grad();
    ++step;

    const int64_t B = static_cast<int64_t>(rows.size()), C = model->classes();
    const float* l = logits.f32();
    for (int64_t b = 0; b < B; ++b) {
      int64_t best = 0;
      for (int64_t k = 1; k < C; ++k)
        if (l[b * C + k] > l[b * C + best]) best = k;
      window_right += best == t.labels.i32()[b];
    }
    window_examples += B;
    examples_done += B;
    window_loss += loss_value;
    ++window_batches;
    if (step % o.log_every == 0 || step == total_steps) {
      const auto now = std::chrono::steady_clock::now();
      const double seconds = std::chrono::duration<double>(now - window_start).count();
      const double mean_loss = window_loss / static_cast<double>(window_batches);
      const double accuracy = static_cast<double>(window_right) / static_cast<double>(window_examples);
      const double rate = seconds > 0 ? window_examples / seconds : 0.0;
      if (first_window) result.first_loss = mean_loss;
      first_window = false;
      result.final_loss = mean_loss;
      log.write({{"step", step},
                 {"epoch", static_cast<double>(step) / static_cast<double>(per_epoch)},
                 {"loss", mean_loss},
                 {"accuracy", accuracy},
                 {"examples_per_s", rate},
                 {"lr", optimizer->lr()},
                 {"elapsed_s", elapsed()}});
      progress.update(step, {{"loss", mean_loss}, {"acc", accuracy}, {"ex/s", rate}});
      window_start = now;
      window_examples = window_right = window_batches = 0;
      window_loss = 0.0;
    }
    if (step % eval_every == 0 || step == total_steps) evaluate_and_keep_best(step);
  }
  progress.finish();
  if (window_batches > 0 && first_window) result.first_loss = result.final_loss = window_loss / window_batches;
  if (result.interrupted || !saved) evaluate_and_keep_best(step);
  result.steps_done = step;
  result.seconds = elapsed();
  result.examples_per_second = result.seconds > 0 ? examples_done / result.seconds : 0.0;
  return result;
}

}  // namespace attn::train
