#include "attn/train/lm_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <unordered_map>
#include <map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "attn/autodiff/tape.h"
#include "attn/data/tasks.h"
#include "attn/data/text.h"
#include "attn/error.h"
#include "attn/io/safetensors.h"
#include "attn/random.h"
#include "attn/train/checkpoint.h"
#include "attn/train/optimizer.h"
#include "attn/train/progress.h"
#include "attn/train/run_log.h"
#include "attn/train/schedule.h"

namespace attn::train {
namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> utf8_characters(const std::string& text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    const size_t len = data::utf8_length_at(text, i);
    out.emplace_back(len ? text.substr(i, len) : std::string("\xEF\xBF\xBD"));  // U+FFFD for a bad byte
    i += len ? len : 1;
  }
  return out;
}

CharVocab::CharVocab(std::vector<std::string> characters) : characters_(std::move(characters)) {
  for (size_t i = 0; i < characters_.size(); ++i) index_.emplace(characters_[i], static_cast<int32_t>(i) + 4);
}

CharVocab CharVocab::build(const std::vector<std::string>& lines) {
  std::map<std::string, int64_t> counts;
  for (const auto& line : lines)
    for (auto& c : utf8_characters(line)) ++counts[c];
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> characters;
  for (auto& [c, n] : sorted) characters.push_back(c);
  return CharVocab(std::move(characters));
}

std::vector<int32_t> CharVocab::encode(const std::string& text) const {
  std::vector<int32_t> ids;
  for (const auto& c : utf8_characters(text)) {
    auto it = index_.find(c);
    ids.push_back(it == index_.end() ? kUnk : it->second);
  }
  return ids;
}

std::string CharVocab::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  for (int32_t id : ids) {
    if (id == data::kEos) break;
    if (id < 4 || id >= size()) continue;
    text += characters_[static_cast<size_t>(id - 4)];
  }
  return text;
}

void LmOptions::validate() const {
  if (data_dir.empty()) throw ValueError("a data directory (--data) is required for --task charlm");
  if (max_chars < 2) throw ValueError("--max-len must be >= 2, got " + std::to_string(max_chars));
  if (train_limit < 0) throw ValueError("--train-limit must be >= 0");
  if (batch < 1) throw ValueError("--batch must be >= 1, got " + std::to_string(batch));
  if (steps < 1) throw ValueError("--steps must be >= 1, got " + std::to_string(steps));
  if (!(max_minutes >= 0.0)) throw ValueError("--max-minutes must be >= 0");
  if (!(lr > 0.0f) || !std::isfinite(lr)) throw ValueError("--lr must be a positive number, got " + std::to_string(lr));
  if (!(clip >= 0.0f)) throw ValueError("--clip must be >= 0");
  if (warmup < 0) throw ValueError("--warmup must be >= 0");
  if (log_every < 1 || eval_every < 1) throw ValueError("--log-every and --eval-every must be >= 1");
  if (eval_sentences < 0) throw ValueError("--eval-sentences must be >= 0");
  if (out_dir.empty()) throw ValueError("an output directory (--out) is required");
}

namespace {

constexpr const char* kFormat = "attn-lm";

struct Split {
  std::vector<std::vector<int32_t>> train, val;  // BOS chars EOS
};

// The distinct English sentences of fra.txt.gz, in file order.
std::vector<std::string> english_sentences(const std::string& data_dir, int64_t limit) {
  const std::string path = (fs::path(data_dir) / "fra.txt.gz").string();
  if (!data::file_exists(path))
    throw IoError(path + ": no such file (--data must be the tatoeba-fra-eng directory holding fra.txt.gz)");
  std::vector<std::string> sentences;
  std::unordered_set<std::string> seen;
  for (auto& line : data::read_lines(path)) {
    const size_t tab = line.find('\t');
    std::string english = tab == std::string::npos ? line : line.substr(0, tab);
    if (english.empty() || !seen.insert(english).second) continue;
    sentences.push_back(std::move(english));
    if (limit > 0 && static_cast<int64_t>(sentences.size()) >= limit) break;
  }
  if (sentences.size() < 50) throw IoError(path + ": too few sentences (" + std::to_string(sentences.size()) + ")");
  return sentences;
}

std::vector<int32_t> sequence(const CharVocab& vocab, const std::string& text, int max_chars) {
  std::vector<int32_t> ids{data::kBos};
  std::vector<int32_t> chars = vocab.encode(text);
  if (static_cast<int>(chars.size()) > max_chars) chars.resize(static_cast<size_t>(max_chars));
  ids.insert(ids.end(), chars.begin(), chars.end());
  ids.push_back(data::kEos);
  return ids;
}

// (B, T) int32, PAD after each sequence.
Tensor pad_batch(const std::vector<const std::vector<int32_t>*>& rows) {
  size_t longest = 0;
  for (auto* r : rows) longest = std::max(longest, r->size());
  Tensor ids = Tensor::zeros({static_cast<int64_t>(rows.size()), static_cast<int64_t>(longest)}, DType::i32);
  for (size_t b = 0; b < rows.size(); ++b) std::copy(rows[b]->begin(), rows[b]->end(), ids.i32() + b * longest);
  return ids;
}

int64_t target_count(const Tensor& ids) {
  int64_t n = 0;
  const int64_t B = ids.dim(0), T = ids.dim(1);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 1; t < T; ++t) n += ids.i32()[b * T + t] != data::kPad;
  return n;
}

json info_json(const models::TransformerConfig& config, const CharVocab& vocab, int max_chars, int64_t step,
               double best) {
  return {{"format", kFormat},       {"version", kCheckpointVersion},   {"config", config.to_json()}, {"characters", vocab.characters()},
          {"max_chars", max_chars},  {"step", step},   {"best_val_loss", best}};
}

void save(const std::string& path, models::TransformerLM& model, const json& info, const Optimizer* optimizer) {
  save_run_checkpoint(path, model.named_parameters(), info, optimizer);
}

LoadedLm load_from(const io::SafetensorsFile& file, const std::string& path) {
  const json j = read_run_metadata(file, path, kFormat, "a language model checkpoint");
  LoadedLm loaded;
  try {
    loaded.vocab = CharVocab(j.at("characters").get<std::vector<std::string>>());
    loaded.model = std::make_unique<models::TransformerLM>(models::TransformerConfig::from_json(j.at("config")));
    loaded.step = j.at("step").get<int64_t>();
    loaded.best_val_loss = j.at("best_val_loss").get<double>();
  } catch (const json::exception& e) {
    throw IoError(path + ": bad 'attn' metadata: " + e.what());
  } catch (const ValueError& e) {
    throw IoError(path + ": bad model configuration: " + e.what());
  }
  if (loaded.model->config().tgt_vocab != loaded.vocab.size())
    throw IoError(path + ": the model's vocabulary (" + std::to_string(loaded.model->config().tgt_vocab) +
                  ") differs from its character list (" + std::to_string(loaded.vocab.size()) + ")");
  load_model_parameters(file, loaded.model->named_parameters(), path);
  return loaded;
}

// Mean validation loss per predicted character (EOS included).
double validation_loss(models::TransformerLM& model, const std::vector<std::vector<int32_t>>& val) {
  autodiff::NoGradGuard no_grad;
  model.eval();
  double total = 0.0;
  int64_t count = 0;
  for (size_t start = 0; start < val.size(); start += 128) {
    std::vector<const std::vector<int32_t>*> rows;
    for (size_t i = start; i < std::min(val.size(), start + 128); ++i) rows.push_back(&val[i]);
    const Tensor ids = pad_batch(rows);
    const int64_t n = target_count(ids);
    total += model.loss(ids).item() * static_cast<double>(n);
    count += n;
  }
  model.train();
  return count ? total / static_cast<double>(count) : 0.0;
}

}  // namespace

LoadedLm load_char_lm(const std::string& path) { return load_from(io::load_safetensors(path), path); }

std::string sample_text(LoadedLm& lm, const std::string& prompt, const models::SampleOptions& options) {
  lm.model->eval();
  std::vector<int32_t> prefix{data::kBos};
  for (int32_t id : lm.vocab.encode(prompt)) prefix.push_back(id);
  const int64_t room = lm.model->config().max_len - static_cast<int64_t>(prefix.size());
  if (room < 1)
    throw ValueError("the prompt has " + std::to_string(prefix.size() - 1) + " characters; the model's positions end at " +
                     std::to_string(lm.model->config().max_len - 1));
  models::SampleOptions o = options;
  o.max_len = static_cast<int>(std::min<int64_t>(o.max_len, room));
  o.stop_id = data::kEos;
  return prompt + lm.vocab.decode(lm.model->sample(prefix, o));
}

LmResult train_char_lm(models::TransformerConfig config, const LmOptions& o) {
  o.validate();
  fs::create_directories(o.out_dir);
  const fs::path dir(o.out_dir);
  const std::string model_path = (dir / "model.safetensors").string();
  const std::string last_path = (dir / "last.safetensors").string();

  const std::vector<std::string> sentences = english_sentences(o.data_dir, o.train_limit);
  std::vector<std::string> train_text;
  for (size_t i = 0; i < sentences.size(); ++i)
    if (i % 50 != 49) train_text.push_back(sentences[i]);

  std::unique_ptr<models::TransformerLM> model;
  std::unique_ptr<Adam> adam;
  CharVocab vocab;
  int64_t start_step = 0;
  double best = std::numeric_limits<double>::infinity();
  if (o.resume) {
    if (!fs::exists(last_path)) throw IoError(last_path + ": nothing to resume (no such file)");
    io::SafetensorsFile file = io::load_safetensors(last_path);
    LoadedLm loaded = load_from(file, last_path);
    vocab = loaded.vocab;
    config.tgt_vocab = vocab.size();
    config.src_vocab = 0;
    if (loaded.model->config().to_json() != config.to_json())
      throw ValueError("--resume: the options describe a different model than " + last_path);
    model = std::move(loaded.model);
    start_step = loaded.step;
    check_steps_left(start_step, o.steps, o.out_dir);
    best = loaded.best_val_loss;
    adam = std::make_unique<Adam>(model->parameters(), AdamOptions{.lr = o.lr});
    load_optimizer_state(file, *adam, last_path);
  } else {
    vocab = CharVocab::build(train_text);
    config.tgt_vocab = vocab.size();
    config.src_vocab = 0;
    if (config.max_len < o.max_chars + 2) config.max_len = o.max_chars + 2;
    model = std::make_unique<models::TransformerLM>(config);
    adam = std::make_unique<Adam>(model->parameters(), AdamOptions{.lr = o.lr});
  }
  std::vector<std::vector<int32_t>> train, val;
  for (size_t i = 0; i < sentences.size(); ++i) {
    if (i % 50 == 49) {
      if (o.eval_sentences == 0 || static_cast<int64_t>(val.size()) < o.eval_sentences)
        val.push_back(sequence(vocab, sentences[i], o.max_chars));
    } else {
      train.push_back(sequence(vocab, sentences[i], o.max_chars));
    }
  }
  if (o.progress)
    std::fprintf(o.progress, "%zu training sentences, %zu validation sentences, %d characters, %lld parameters\n",
                 train.size(), val.size(), vocab.size() - 4, static_cast<long long>(model->num_parameters()));
  JsonlLog log((dir / "log.jsonl").string(), o.resume);

  LmResult result;
  result.model_path = model_path;
  const LrSchedule schedule(LrScheduleOptions{.kind = parse_lr_schedule_kind(o.lr_schedule),
                                              .base_lr = o.lr,
                                              .warmup_steps = o.warmup,
                                              .total_steps = o.steps,
                                              .min_lr = 0.0f});
  const auto run_start = std::chrono::steady_clock::now();
  auto seconds_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  double eval_seconds = 0.0;
  auto validate_and_keep_best = [&](int64_t step) {
    const auto start = std::chrono::steady_clock::now();
    const double loss = validation_loss(*model, val);
    eval_seconds += seconds_since(start);
    log.write({{"step", step}, {"val_loss", loss}, {"val_bits_per_char", loss / std::log(2.0)}});
    if (o.progress)
      std::fprintf(o.progress, "step %lld: validation %.4f nats/char (%.3f bits/char)\n", static_cast<long long>(step),
                   loss, loss / std::log(2.0));
    if (loss <= best || !fs::exists(model_path)) {
      best = loss;
      save(model_path, *model, info_json(model->config(), vocab, o.max_chars, step, best), nullptr);
    }
  };

  Progress progress("train charlm", o.steps, o.progress);
  int64_t step = start_step;
  double loss_value = 0.0;
  model->train();
  while (step < o.steps) {
    if (o.stop && o.stop->load()) {
      result.interrupted = true;
      break;
    }
    if (o.max_minutes > 0 && seconds_since(run_start) - eval_seconds > 60.0 * o.max_minutes) break;
    // The batch depends only on (seed, step): a resumed run sees the same data.
    Rng rng(splitmix64(o.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(step)));
    std::vector<const std::vector<int32_t>*> rows;
    for (int b = 0; b < o.batch; ++b) rows.push_back(&train[rng.below(train.size())]);
    const Tensor loss = model->loss(pad_batch(rows));
    loss_value = loss.item();
    if (!std::isfinite(loss_value))
      throw ValueError("training diverged at step " + std::to_string(step + 1) + "; try a smaller --lr");
    adam->set_lr(schedule.lr_at(step));
    backward(loss);
    if (o.clip > 0.0f) clip_grad_norm(model->parameters(), o.clip);
    adam->step();
    adam->zero_grad();
    ++step;
    if (step % o.log_every == 0 || step == o.steps) {
      log.write({{"step", step}, {"loss", loss_value}, {"lr", adam->lr()}, {"elapsed_s", seconds_since(run_start)}});
      progress.update(step, {{"loss", loss_value}});
    }
    if (step % o.eval_every == 0) validate_and_keep_best(step);
  }
  progress.finish();
  if (step % o.eval_every != 0 || !fs::exists(model_path)) validate_and_keep_best(step);
  save(last_path, *model, info_json(model->config(), vocab, o.max_chars, step, best), adam.get());
  result.steps_done = step;
  result.best_val_loss = best;
  result.best_val_bits_per_char = best / std::log(2.0);
  result.final_loss = loss_value;
  result.train_seconds = seconds_since(run_start) - eval_seconds;
  return result;
}

}  // namespace attn::train
