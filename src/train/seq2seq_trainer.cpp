#include "attn/train/seq2seq_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "attn/autodiff/tape.h"
#include "attn/io/safetensors.h"
#include "attn/ops/loss.h"
#include "attn/random.h"
#include "attn/train/checkpoint.h"
#include "attn/train/progress.h"
#include "attn/train/run_log.h"
#include "attn/train/schedule.h"

namespace attn::train {
namespace fs = std::filesystem;
using nlohmann::json;

void TrainOptions::validate() const {
  data::parse_task(task);
  if (min_len < 1) throw ValueError("--min-len must be >= 1, got " + std::to_string(min_len));
  if (min_len > max_len)
    throw ValueError("--min-len " + std::to_string(min_len) + " is larger than --max-len " + std::to_string(max_len));
  if (steps < 1) throw ValueError("--steps must be >= 1, got " + std::to_string(steps));
  if (batch < 1) throw ValueError("--batch must be >= 1, got " + std::to_string(batch));
  if (!(lr > 0.0f) || !std::isfinite(lr)) throw ValueError("--lr must be a positive number, got " + std::to_string(lr));
  if (!(clip >= 0.0f)) throw ValueError("--clip must be >= 0, got " + std::to_string(clip));
  if (warmup < 0) throw ValueError("--warmup must be >= 0, got " + std::to_string(warmup));
  schedule();  // validates --lr-schedule against --steps and --warmup
  if (log_every < 1) throw ValueError("--log-every must be >= 1");
  if (eval_every < 1) throw ValueError("--eval-every must be >= 1");
  if (eval_samples < 1) throw ValueError("--eval-samples must be >= 1");
  if (bucket < 1) throw ValueError("--bucket must be >= 1, got " + std::to_string(bucket));
  if (out_dir.empty()) throw ValueError("an output directory (--out) is required");
}

LrSchedule TrainOptions::schedule() const {
  LrScheduleOptions s{.kind = parse_lr_schedule_kind(lr_schedule),
                      .base_lr = lr,
                      .warmup_steps = warmup,
                      .total_steps = steps,
                      .min_lr = 0.0f};
  if (s.kind != LrScheduleKind::constant && s.kind != LrScheduleKind::inverse_sqrt && steps <= warmup)
    throw ValueError("--lr-schedule " + lr_schedule + ": --steps " + std::to_string(steps) +
                     " must be larger than --warmup " + std::to_string(warmup));
  return LrSchedule(s);
}

namespace {

json info_json(const CheckpointInfo& info) {
  json vocabulary = json::array();
  for (int32_t id = 0; id < info.config.vocab; ++id) vocabulary.push_back(data::symbol_name(id));
  return {{"format", "attn-seq2seq"},
          {"version", kCheckpointVersion},
          {"config", info.config.to_json()},
          {"task", info.task},
          {"min_len", info.min_len},
          {"max_len", info.max_len},
          {"step", info.step},
          {"best_token_accuracy", info.best_token_accuracy},
          {"vocabulary", vocabulary}};
}

CheckpointInfo parse_info(const json& j, const std::string& path) {
  CheckpointInfo info;
  try {
    info.config = models::Seq2SeqConfig::from_json(j.at("config"));
    info.task = j.at("task").get<std::string>();
    info.min_len = j.at("min_len").get<int>();
    info.max_len = j.at("max_len").get<int>();
    info.step = j.at("step").get<int64_t>();
    info.best_token_accuracy = j.at("best_token_accuracy").get<double>();
    const json& vocabulary = j.at("vocabulary");
    if (static_cast<int>(vocabulary.size()) != info.config.vocab)
      throw IoError(path + ": vocabulary has " + std::to_string(vocabulary.size()) + " symbols, the configuration says " +
                    std::to_string(info.config.vocab));
    for (int32_t id = 0; id < info.config.vocab; ++id)
      if (vocabulary[id].get<std::string>() != data::symbol_name(id))
        throw IoError(path + ": vocabulary differs at id " + std::to_string(id) + ": '" +
                      vocabulary[id].get<std::string>() + "' where attn uses '" + data::symbol_name(id) + "'");
  } catch (const json::exception& e) {
    throw IoError(path + ": bad 'attn' metadata: " + e.what());
  } catch (const ValueError& e) {
    throw IoError(path + ": bad model configuration: " + e.what());
  }
  return info;
}

// The batch for a step depends only on (seed, step), so a resumed run sees the same data.
// With bucketing, steps [k·bucket, (k+1)·bucket) share one sorted pool drawn from (seed, k).
data::Batch batch_for_step(data::TaskKind kind, const TrainOptions& o, int64_t step) {
  if (o.bucket <= 1) {
    data::TaskGenerator generator(kind, o.min_len, o.max_len, splitmix64(o.seed * 0x9E3779B97F4A7C15ull + step));
    return generator.next(o.batch);
  }
  const int64_t pool = step / o.bucket;
  data::TaskGenerator generator(kind, o.min_len, o.max_len,
                                splitmix64(o.seed * 0xD1B54A32D192ED03ull + static_cast<uint64_t>(pool)));
  std::vector<std::vector<int32_t>> sources = generator.random_sources(o.bucket * o.batch);
  std::stable_sort(sources.begin(), sources.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
  // A seeded permutation of the pool's batches (Fisher-Yates), so lengths do not rise by step.
  std::vector<int> order(static_cast<size_t>(o.bucket));
  for (int i = 0; i < o.bucket; ++i) order[static_cast<size_t>(i)] = i;
  Rng rng(splitmix64(o.seed ^ (static_cast<uint64_t>(pool) * 0x9E3779B97F4A7C15ull)));
  for (int i = o.bucket - 1; i > 0; --i) std::swap(order[static_cast<size_t>(i)], order[rng.below(static_cast<uint64_t>(i) + 1)]);
  const auto first = sources.begin() + static_cast<std::ptrdiff_t>(order[static_cast<size_t>(step % o.bucket)]) * o.batch;
  return data::make_batch(kind, std::vector<std::vector<int32_t>>(first, first + o.batch));
}

// Fraction of non-PAD target tokens whose argmax logit is right (teacher forcing).
double teacher_forced_accuracy(const Tensor& logits /*(T, B, V)*/, const Tensor& targets /*(T, B)*/) {
  const int64_t rows = targets.numel(), vocab = logits.dim(-1);
  const float* l = logits.f32();
  const int32_t* y = targets.i32();
  int64_t right = 0, total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (y[r] == data::kPad) continue;
    const float* row = l + r * vocab;
    int64_t best = 0;
    for (int64_t v = 1; v < vocab; ++v)
      if (row[v] > row[best]) best = v;
    right += best == y[r];
    ++total;
  }
  return total ? static_cast<double>(right) / total : 0.0;
}

data::AccuracyCounts score_decoded(const models::DecodeResult& decoded, const data::Batch& batch) {
  const int64_t rows = static_cast<int64_t>(decoded.tokens.size());
  size_t longest = 1;
  for (const auto& t : decoded.tokens) longest = std::max(longest, t.size());
  Tensor predicted = Tensor::zeros({rows, static_cast<int64_t>(longest)}, DType::i32);
  for (int64_t b = 0; b < rows; ++b)
    for (size_t t = 0; t < decoded.tokens[b].size(); ++t) predicted.i32()[b * longest + t] = decoded.tokens[b][t];
  return data::score_predictions(predicted, batch.tgt_out, batch.tgt_lengths);
}

data::AccuracyCounts decode_and_score(models::Seq2Seq& model, const data::Batch& batch, int beam) {
  const int max_len = static_cast<int>(batch.tgt_out.dim(1)) + 5;
  models::DecodeResult decoded =
      beam > 1 ? model.beam(batch.src, batch.src_lengths, {.width = beam, .length_penalty = 1.0f, .max_len = max_len})
               : model.greedy(batch.src, batch.src_lengths, max_len);
  return score_decoded(decoded, batch);
}

}  // namespace

void save_checkpoint(const std::string& path, models::Seq2Seq& model, const CheckpointInfo& info,
                     const Optimizer* optimizer) {
  save_run_checkpoint(path, model.named_parameters(), info_json(info), optimizer);
}

namespace {
LoadedModel load_model_from(const io::SafetensorsFile& file, const std::string& path) {
  LoadedModel loaded;
  loaded.info = parse_info(read_run_metadata(file, path, "attn-seq2seq", "an attn seq2seq checkpoint"), path);
  loaded.model = std::make_unique<models::Seq2Seq>(loaded.info.config);
  load_model_parameters(file, loaded.model->named_parameters(), path);
  return loaded;
}
}  // namespace

LoadedModel load_checkpoint(const std::string& path) { return load_model_from(io::load_safetensors(path), path); }

TrainResult train_seq2seq(const models::Seq2SeqConfig& config, const TrainOptions& o) {
  o.validate();
  config.validate();
  const data::TaskKind kind = data::parse_task(o.task);
  fs::create_directories(o.out_dir);
  const std::string model_path = (fs::path(o.out_dir) / "model.safetensors").string();
  const std::string last_path = (fs::path(o.out_dir) / "last.safetensors").string();
  const std::string log_path = (fs::path(o.out_dir) / "log.jsonl").string();

  CheckpointInfo info{config, o.task, o.min_len, o.max_len, 0, 0.0};
  std::unique_ptr<models::Seq2Seq> model;
  std::unique_ptr<Adam> adam;
  int64_t start_step = 0;
  if (o.resume) {
    if (!fs::exists(last_path)) throw IoError(last_path + ": nothing to resume (no such file)");
    io::SafetensorsFile file = io::load_safetensors(last_path);
    LoadedModel loaded = load_model_from(file, last_path);
    if (loaded.info.config.to_json() != config.to_json())
      throw ValueError("--resume: the options describe a different model than " + last_path + " (" +
                       loaded.info.config.to_json_string() + ")");
    if (loaded.info.task != o.task)
      throw ValueError("--resume: the run in " + o.out_dir + " trains task '" + loaded.info.task + "'");
    model = std::move(loaded.model);
    info = loaded.info;
    start_step = info.step;
    check_steps_left(start_step, o.steps, o.out_dir);
    adam = std::make_unique<Adam>(model->parameters(), AdamOptions{.lr = o.lr});
    load_optimizer_state(file, *adam, last_path);
  } else {
    model = std::make_unique<models::Seq2Seq>(config);
    adam = std::make_unique<Adam>(model->parameters(), AdamOptions{.lr = o.lr});
  }
  JsonlLog log(log_path, o.resume);

  // A fixed validation set drawn like the training data.
  data::TaskGenerator validation_generator(kind, o.min_len, o.max_len, splitmix64(o.seed ^ 0x5EEDull));
  const data::Batch validation = validation_generator.next(o.eval_samples);

  TrainResult result;
  result.model_path = model_path;
  Progress progress("train " + config.attention, o.steps, o.progress);
  const auto run_start = std::chrono::steady_clock::now();
  auto window_start = run_start;
  int64_t window_tokens = 0, total_tokens = 0;
  double loss_value = 0.0;

  auto validate_and_keep_best = [&](int64_t step) {
    model->eval();
    data::AccuracyCounts counts = decode_and_score(*model, validation, 0);
    model->train();
    const double accuracy = counts.token_accuracy();
    log.write({{"step", step},
               {"val_token_accuracy", accuracy},
               {"val_sequence_accuracy", counts.sequence_accuracy()}});
    if (accuracy >= info.best_token_accuracy || !fs::exists(model_path)) {
      info.best_token_accuracy = accuracy;
      info.step = step;
      save_checkpoint(model_path, *model, info);
    }
  };

  const LrSchedule schedule = o.schedule();
  int64_t step = start_step;
  model->train();
  while (step < o.steps) {
    if (o.stop && o.stop->load()) {
      result.interrupted = true;
      break;
    }
    data::Batch batch = batch_for_step(kind, o, step);
    const models::DecoderOutput out = model->forward(batch);
    const Tensor& logits = out.logits;  // (T, B, V)
    Tensor targets = models::time_major_ids(batch.tgt_out);
    const Tensor cross_entropy_loss = cross_entropy(logits, targets, {.ignore_index = data::kPad});
    loss_value = cross_entropy_loss.item();
    const Tensor loss = model->with_reinforce(cross_entropy_loss, out, batch);  // hard attention's term
    if (!std::isfinite(loss_value))
      throw ValueError("training diverged at step " + std::to_string(step + 1) + " (loss " + std::to_string(loss_value) +
                       "); try a smaller --lr");
    adam->set_lr(schedule.lr_at(step));
    backward(loss);
    if (o.clip > 0.0f) clip_grad_norm(model->parameters(), o.clip);
    adam->step();
    adam->zero_grad();
    ++step;

    int64_t tokens = 0;
    for (int32_t len : batch.tgt_lengths.to_vector_i32()) tokens += len;
    window_tokens += tokens;
    total_tokens += tokens;
    if (step % o.log_every == 0 || step == o.steps) {
      const auto now = std::chrono::steady_clock::now();
      const double seconds = std::chrono::duration<double>(now - window_start).count();
      const double tokens_per_s = seconds > 0 ? window_tokens / seconds : 0.0;
      const double accuracy = teacher_forced_accuracy(logits, targets);
      log.write({{"step", step},
                 {"loss", loss_value},
                 {"token_accuracy", accuracy},
                 {"tokens_per_s", tokens_per_s},
                 {"lr", adam->lr()},
                 {"elapsed_s", std::chrono::duration<double>(now - run_start).count()}});
      progress.update(step, {{"loss", loss_value}, {"acc", accuracy}, {"tok/s", tokens_per_s}});
      window_start = now;
      window_tokens = 0;
    }
    if (step % o.eval_every == 0 || step == o.steps) validate_and_keep_best(step);
  }
  progress.finish();
  if (!fs::exists(model_path)) validate_and_keep_best(step);
  CheckpointInfo last = info;
  last.step = step;
  save_checkpoint(last_path, *model, last, adam.get());

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  result.steps_done = step;
  result.best_token_accuracy = info.best_token_accuracy;
  result.final_loss = loss_value;
  result.tokens_per_second = seconds > 0 ? total_tokens / seconds : 0.0;
  return result;
}

void EvalOptions::validate() const {
  if (samples < 1) throw ValueError("--samples must be >= 1, got " + std::to_string(samples));
  if (beam < 1) throw ValueError("--beam must be >= 1, got " + std::to_string(beam));
  if (batch < 1) throw ValueError("evaluation batch must be >= 1, got " + std::to_string(batch));
  for (int length : lengths)
    if (length < 1) throw ValueError("evaluation length must be >= 1, got " + std::to_string(length));
}

std::vector<LengthAccuracy> evaluate(models::Seq2Seq& model, data::TaskKind task, const EvalOptions& options) {
  options.validate();
  model.eval();
  std::vector<LengthAccuracy> rows;
  for (int length : options.lengths) {
    data::TaskGenerator generator(task, length, length, splitmix64(options.seed + length));
    data::AccuracyCounts counts;
    for (int done = 0; done < options.samples; done += options.batch) {
      const int n = std::min(options.batch, options.samples - done);
      counts.add(decode_and_score(model, generator.fixed_length(n, length), options.beam));
    }
    rows.push_back({length, counts.token_accuracy(), counts.sequence_accuracy()});
  }
  return rows;
}

std::string accuracy_json(const std::vector<LengthAccuracy>& rows) {
  json lengths = json::array();
  for (const auto& r : rows)
    lengths.push_back({{"length", r.length}, {"token_accuracy", r.token_accuracy}, {"sequence_accuracy", r.sequence_accuracy}});
  return json{{"lengths", lengths}}.dump(2);
}

}  // namespace attn::train
