#include "attn/train/seq2seq_trainer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "attn/checked_size.h"
#include "attn/decode/seq2seq.h"
#include "attn/io/safetensors.h"
#include "attn/models/memory_estimate.h"
#include "attn/ops/reduce.h"
#include "attn/random.h"
#include "attn/train/checkpoint.h"
#include "attn/train/schedule.h"

namespace attn::train {
namespace fs = std::filesystem;
using nlohmann::json;

void TrainOptions::validate() const {
  data::parse_task(task);
  if (min_len < 1) throw ValueError("--min-len must be >= 1, got " + std::to_string(min_len));
  if (min_len > max_len)
    throw ValueError("--min-len " + std::to_string(min_len) + " is larger than --max-len " + std::to_string(max_len));
  if (batch < 1) throw ValueError("--batch must be >= 1, got " + std::to_string(batch));
  if (eval_samples < 1) throw ValueError("--eval-samples must be >= 1");
  if (bucket < 1) throw ValueError("--bucket must be >= 1, got " + std::to_string(bucket));
  if (eval_every < 1) throw ValueError("--eval-every must be >= 1, got " + std::to_string(eval_every));
  // The pool of bucket x batch sources, formed in 64 bits: in int it wrapped (4096 x 1048577
  // gave 4096, and batches were cut past the pool's end).
  if (checked_size_product(bucket, batch, "--bucket x --batch") > std::numeric_limits<int>::max())
    throw ValueError("--bucket " + std::to_string(bucket) + " x --batch " + std::to_string(batch) +
                     ": more than 2147483647 sources in one pool");
  RunOptions::validate();
}

void check_run_memory(const models::Seq2SeqConfig& config, const TrainOptions& o) {
  // The generated sources held at once (a std::vector each and its symbols): a bucketing
  // pool of bucket x batch, and the validation set, decoded at once for up to max_len + 5 steps.
  const double source_bytes = 32.0 + 4.0 * o.max_len;
  const int64_t pool = checked_size_product(o.bucket, o.batch, "--bucket x --batch");
  models::check_memory(static_cast<double>(pool) * source_bytes,
                       "--bucket " + std::to_string(o.bucket) + " x --batch " + std::to_string(o.batch) +
                           ": a pool of " + std::to_string(pool) + " sources of up to " + std::to_string(o.max_len) +
                           " symbols",
                       "lower --bucket or --batch");
  models::check_memory(static_cast<double>(o.eval_samples) * source_bytes,
                       "--eval-samples " + std::to_string(o.eval_samples) + " sources of up to " +
                           std::to_string(o.max_len) + " symbols",
                       "lower --eval-samples");
  models::check_parameter_memory(config);
  models::check_training_memory(config, o.batch, o.max_len, static_cast<int64_t>(o.max_len) + 1);
  models::check_decoding_memory(config, o.eval_samples, o.max_len, static_cast<int64_t>(o.max_len) + 6);
}

namespace {

// The batch for a step depends only on (seed, step), so a resumed run sees the same data.
// With bucketing, steps [k·bucket, (k+1)·bucket) share one sorted pool drawn from (seed, k).
// A data-parallel rank takes its shard's rows of that batch.
data::Batch batch_for_step(data::TaskKind kind, const TrainOptions& o, int64_t step, const distributed::Shard& shard) {
  if (o.bucket <= 1) {
    data::TaskGenerator generator(kind, o.min_len, o.max_len, splitmix64(o.seed * 0x9E3779B97F4A7C15ull + step));
    return data::make_batch(kind, distributed::shard_of(generator.random_sources(o.batch), shard));
  }
  const int64_t pool = step / o.bucket;
  data::TaskGenerator generator(kind, o.min_len, o.max_len,
                                splitmix64(o.seed * 0xD1B54A32D192ED03ull + static_cast<uint64_t>(pool)));
  // bucket x batch fits in int: checked by validate(), and against memory by check_run_memory.
  std::vector<std::vector<int32_t>> sources = generator.random_sources(o.bucket * o.batch);
  std::stable_sort(sources.begin(), sources.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
  // A seeded permutation of the pool's batches (Fisher-Yates), so lengths do not rise by step.
  std::vector<int> order(static_cast<size_t>(o.bucket));
  for (int i = 0; i < o.bucket; ++i) order[static_cast<size_t>(i)] = i;
  Rng rng(splitmix64(o.seed ^ (static_cast<uint64_t>(pool) * 0x9E3779B97F4A7C15ull)));
  for (int i = o.bucket - 1; i > 0; --i)
    std::swap(order[static_cast<size_t>(i)], order[rng.below(static_cast<uint64_t>(i) + 1)]);
  const auto first =
      sources.begin() + static_cast<std::ptrdiff_t>(order[static_cast<size_t>(step % o.bucket)]) * o.batch;
  return data::make_batch(kind,
                          distributed::shard_of(std::vector<std::vector<int32_t>>(first, first + o.batch), shard));
}

// Fraction of non-PAD target tokens whose argmax logit is right (teacher forcing).
double teacher_forced_accuracy(const Tensor& logits /*(T, B, V)*/, const Tensor& targets /*(T, B)*/) {
  const int64_t rows = targets.numel(), vocab = logits.dim(-1);
  const float* l = logits.f32();
  const int32_t* y = targets.i32();
  int64_t right = 0, total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (y[r] == data::kPad) continue;
    right += argmax(l + r * vocab, vocab) == y[r];
    ++total;
  }
  return total ? static_cast<double>(right) / total : 0.0;
}

}  // namespace

void save_checkpoint(const std::string& path, models::Seq2Seq& model, const decode::Seq2SeqInfo& info,
                     const Optimizer* optimizer) {
  save_run_checkpoint(path, model.named_parameters(), decode::seq2seq_metadata(info), optimizer);
}

namespace {

// A synthetic task (copy / reverse / sort) for run(): generated batches, teacher-forced
// accuracy in the log, greedy token accuracy on a fixed validation set as the score.
class Seq2SeqTask final : public Task {
 public:
  Seq2SeqTask(const models::Seq2SeqConfig& config, const TrainOptions& o)
      : o_(o), kind_(data::parse_task(o.task)), model_(config) {
    // A fixed validation set drawn like the training data.
    data::TaskGenerator generator(kind_, o.min_len, o.max_len, splitmix64(o.seed ^ 0x5EEDull));
    validation_ = generator.next(o.eval_samples);
  }
  nn::Module& module() override { return model_; }
  std::string label() const override { return std::string("train ") + models::to_string(model_.config().attention); }

  StepLoss forward(int64_t step) override {
    const data::Batch batch = batch_for_step(kind_, o_, step, shard());
    targets_ = models::time_major_ids(batch.tgt_out);
    int64_t tokens = 0;  // non-PAD targets: what the cross-entropy is the mean over
    for (int32_t len : batch.tgt_lengths.to_vector_i32()) tokens += len;
    window_tokens_ += tokens;
    // One block of rows per thread where that is exact (backward included), else whole.
    if (const auto in_blocks = model_.loss_backward_in_row_blocks(batch, 0.0f, /*with_logits=*/true)) {
      logits_ = in_blocks->logits;  // (T, B, V)
      last_loss_ = in_blocks->cross_entropy;
      return {Tensor(), last_loss_, static_cast<double>(tokens), /*backward_done=*/true};
    }
    const models::Seq2Seq::Loss terms = model_.loss_terms(batch);  // CE (+ hard attention's REINFORCE term)
    logits_ = terms.logits;                                        // (T, B, V)
    last_loss_ = terms.cross_entropy.item();
    return {terms.loss, last_loss_, static_cast<double>(tokens)};
  }
  std::vector<LogField> log_fields(double seconds) override {
    const double tokens_per_s = seconds > 0 ? window_tokens_ / seconds : 0.0;
    const double accuracy = teacher_forced_accuracy(logits_, targets_);
    total_tokens_ += window_tokens_;
    window_tokens_ = 0;
    return {{"loss", last_loss_, "loss"}, {"token_accuracy", accuracy, "acc"}, {"tokens_per_s", tokens_per_s, "tok/s"}};
  }
  Validation validate(int64_t) override {
    model_.eval();
    const data::AccuracyCounts counts = decode::decode_and_score(model_, validation_, 0);
    model_.train();
    return {counts.token_accuracy(),
            {{"val_token_accuracy", counts.token_accuracy()}, {"val_sequence_accuracy", counts.sequence_accuracy()}},
            ""};
  }
  bool higher_is_better() const override { return true; }
  json checkpoint_metadata(const RunState& s, bool best) const override {
    json j = decode::seq2seq_metadata(
        {model_.config(), o_.task, o_.min_len, o_.max_len, best ? s.best_step : s.step, s.best_score});
    // Hard attention's REINFORCE baseline is run state too: a moving average, not a parameter.
    const ReinforceBaseline& b = model_.decoder.hard_baseline;
    j["hard_baseline"] = {{"value", b.value}, {"updates", b.updates}};
    return j;
  }
  RunState restore(const io::SafetensorsFile& file, const std::string& path) override {
    const decode::Seq2SeqInfo info = decode::read_seq2seq_info(file, path);
    if (info.config.to_json() != model_.config().to_json())
      throw ValueError("--resume: the options describe a different model than " + path + " (" +
                       info.config.to_json_string() + ")");
    if (info.task != o_.task)
      throw ValueError("--resume: the run in " + o_.out_dir + " trains task '" + info.task + "'");
    load_model_parameters(file, model_.named_parameters(), path);
    const json j = read_run_metadata(file, path, decode::kSeq2SeqFormat, "an attn seq2seq checkpoint");
    if (j.contains("hard_baseline")) {
      model_.decoder.hard_baseline.value = j["hard_baseline"].value("value", 0.0f);
      model_.decoder.hard_baseline.updates = j["hard_baseline"].value("updates", int64_t{0});
    }
    return {.step = info.step, .has_best = true, .best_score = info.best_token_accuracy, .best_step = info.step};
  }
  json resume_checked_options() const override {
    return {{"--task", o_.task},
            {"--min-len", o_.min_len},
            {"--max-len", o_.max_len},
            {"--batch", o_.batch},
            {"--bucket", o_.bucket}};
  }
  int64_t tokens_seen() const { return total_tokens_ + window_tokens_; }

 private:
  const TrainOptions& o_;
  data::TaskKind kind_;
  models::Seq2Seq model_;
  data::Batch validation_;
  Tensor logits_, targets_;  // of the latest step, for the log's accuracy
  double last_loss_ = 0.0;
  int64_t window_tokens_ = 0, total_tokens_ = 0;
};

}  // namespace

TrainResult train_seq2seq(const models::Seq2SeqConfig& config, const TrainOptions& o) {
  o.validate();
  config.validate();
  check_run_memory(config, o);
  Seq2SeqTask task(config, o);
  TrainResult result(run(task, o));
  result.tokens_per_second = per_second(static_cast<double>(task.tokens_seen()), result.seconds);
  return result;
}

}  // namespace attn::train
