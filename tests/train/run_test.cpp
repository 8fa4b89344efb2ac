// The run loop (train/run.h): --resume continues every task bit-identically, dropout
// included (the random streams are saved), and the loop's shared rules.
#include "attn/train/run.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

#include "attn/io/safetensors.h"
#include "attn/nn/layers.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/reduce.h"
#include "attn/parallel.h"
#include "attn/train/classifier_trainer.h"
#include "attn/train/lm_trainer.h"
#include "attn/train/seq2seq_trainer.h"
#include "attn/train/translation_trainer.h"
#include "test_support.h"

namespace attn::train {
namespace {
using models::TranslatorKind;
namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("attn_run_test_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  return dir.string();
}

// Every tensor of the two checkpoints (model, optimizer state, random streams) has the same
// name, dtype, shape and bytes. Names the first tensor that differs, with its largest |Δ|.
void expect_identical_checkpoints(const std::string& a_path, const std::string& b_path) {
  const io::SafetensorsFile a = io::load_safetensors(a_path), b = io::load_safetensors(b_path);
  ASSERT_EQ(a.tensors.size(), b.tensors.size()) << a_path << " vs " << b_path;
  int differing = 0;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const auto& [name, x] = a.tensors[i];
    const Tensor* y = b.find(name);
    ASSERT_NE(y, nullptr) << name << " missing from " << b_path;
    ASSERT_EQ(x.dtype(), y->dtype()) << name;
    ASSERT_EQ(x.shape(), y->shape()) << name;
    const size_t bytes = static_cast<size_t>(x.numel()) * 4;  // f32 and i32
    const void* px = x.dtype() == DType::f32 ? static_cast<const void*>(x.f32()) : x.i32();
    const void* py = y->dtype() == DType::f32 ? static_cast<const void*>(y->f32()) : y->i32();
    if (std::memcmp(px, py, bytes) == 0) continue;
    double worst = 0.0;
    if (x.dtype() == DType::f32)
      for (int64_t k = 0; k < x.numel(); ++k)
        worst = std::max(worst, static_cast<double>(std::fabs(x.f32()[k] - y->f32()[k])));
    if (++differing <= 3) ADD_FAILURE() << "tensor '" << name << "' differs (max |d| " << worst << ")";
  }
  EXPECT_EQ(differing, 0) << "tensors differ between " << a_path << " and " << b_path;
}

// The random streams a run saves have moved from where a fresh model starts them, so the
// comparison above would catch a resume that restarted them.
void expect_streams_saved(const std::string& path) {
  const io::SafetensorsFile f = io::load_safetensors(path);
  int streams = 0;
  for (const auto& [name, t] : f.tensors) streams += name.rfind("rng.", 0) == 0;
  EXPECT_GT(streams, 0) << path << " holds no random stream";
}

// Trains `steps` at once into one folder; `stop` steps, then --resume to `steps`, into
// another; the two last.safetensors must match bit for bit.
template <class Options, class Train>
void expect_resume_is_bit_identical(Options o, const std::string& name, int64_t stop, Train train) {
  const std::string whole = fresh_dir(name + "_whole"), parts = fresh_dir(name + "_parts");
  o.progress = nullptr;
  o.out_dir = whole;
  EXPECT_FALSE(train(o).interrupted);
  o.out_dir = parts;
  o.stop_at_step = stop;
  const auto first = train(o);
  EXPECT_TRUE(first.interrupted);
  EXPECT_EQ(first.steps_done, stop);
  o.stop_at_step = 0;
  o.resume = true;
  const auto second = train(o);
  EXPECT_FALSE(second.interrupted);
  EXPECT_EQ(second.steps_done, o.steps > 0 ? o.steps : second.steps_done);
  expect_identical_checkpoints(whole + "/last.safetensors", parts + "/last.safetensors");
  expect_streams_saved(parts + "/last.safetensors");
  if (!std::getenv("KEEP_RUN")) {
    fs::remove_all(whole);
    fs::remove_all(parts);
  }
}

TEST(RunResume, Seq2SeqWithDropoutIsBitIdentical) {
  models::Seq2SeqConfig config;
  config.emb = 16;
  config.hidden = 16;
  config.layers = 2;
  config.dropout = 0.3f;
  TrainOptions o;
  o.min_len = 3;
  o.max_len = 8;
  o.steps = 14;
  o.batch = 8;
  o.lr_schedule = "cosine";
  o.warmup = 2;
  o.log_every = 4;
  o.eval_every = 5;
  o.eval_samples = 16;
  expect_resume_is_bit_identical(o, "seq2seq", 6, [&](const TrainOptions& x) { return train_seq2seq(config, x); });
}

TEST(RunResume, Seq2SeqHardAttentionIsBitIdentical) {
  models::Seq2SeqConfig config;
  config.emb = 16;
  config.hidden = 16;
  config.attention = models::AttentionKind::luong;
  config.score = nn::StepScore::hard;
  TrainOptions o;
  o.min_len = 3;
  o.max_len = 8;
  o.steps = 10;
  o.batch = 8;
  o.eval_every = 4;
  o.eval_samples = 16;
  expect_resume_is_bit_identical(o, "hard", 3, [&](const TrainOptions& x) { return train_seq2seq(config, x); });
}

TEST(RunResume, ClassifierWithDropoutIsBitIdentical) {
  if (!testing::data_file_exists("sst2/sentiment-dev")) GTEST_SKIP() << "no SST-2 data under " << testing::data_dir();
  ClassifierTrainOptions o;
  o.data_dir = testing::data_dir();
  o.model_config = {{"emb", 16}, {"hidden", 8}, {"dropout", 0.5}};
  o.train_limit = 160;
  o.dev_limit = 40;
  o.batch = 16;
  o.bucket = 2;
  o.epochs = 2;  // 10 steps an epoch
  o.lr_schedule = "cosine";
  o.warmup = 3;
  o.log_every = 3;
  // Stopped inside the first epoch: the resumed run must find its place in that epoch's batches.
  expect_resume_is_bit_identical(o, "classifier", 7,
                                 [](const ClassifierTrainOptions& x) { return train_classifier(x); });
}

TEST(RunResume, CharLmWithDropoutIsBitIdentical) {
  if (!testing::data_file_exists("tatoeba-fra-eng/fra.txt.gz"))
    GTEST_SKIP() << "no Tatoeba data under " << testing::data_dir();
  models::TransformerConfig config;
  config.d_model = 16;
  config.heads = 2;
  config.ffn = 32;
  config.decoder_layers = 1;
  config.dropout = 0.3f;
  LmOptions o;
  o.data_dir = testing::data_dir() + "/tatoeba-fra-eng";
  o.train_limit = 300;
  o.max_chars = 30;
  o.batch = 8;
  o.steps = 10;
  o.warmup = 2;
  o.log_every = 3;
  o.eval_every = 4;
  o.eval_sentences = 0;
  expect_resume_is_bit_identical(o, "charlm", 5, [&](const LmOptions& x) { return train_char_lm(config, x); });
}

// 9 steps on 40 Multi30k pairs with its own 100-piece tokenizer, validating every 4.
TranslationOptions tiny_translation_options() {
  TranslationOptions o;
  o.data_dir = testing::data_dir() + "/multi30k";
  o.train_limit = 40;
  o.vocab_size = 100;
  o.max_len = 30;
  o.max_tokens = 300;  // several batches an epoch, so the run crosses an epoch
  o.max_sentences = 8;
  o.steps = 9;
  o.warmup = 2;
  o.log_every = 3;
  o.eval_every = 4;
  o.eval_sentences = 4;
  return o;
}

TEST(RunResume, TranslationTransformerWithDropoutIsBitIdentical) {
  if (!testing::data_file_exists("multi30k/raw/train.de.gz"))
    GTEST_SKIP() << "no Multi30k data under " << testing::data_dir();
  const nlohmann::json config = {{"d_model", 16},           {"heads", 2},          {"ffn", 32},
                                 {"encoder_layers", 1},     {"decoder_layers", 1}, {"dropout", 0.3},
                                 {"share_embeddings", true}};
  const TranslationOptions o = tiny_translation_options();
  expect_resume_is_bit_identical(o, "translation", 5, [&](const TranslationOptions& x) {
    return train_translation(TranslatorKind::transformer, config, x);
  });
}

TEST(RunResume, TranslationRnnWithDropoutIsBitIdentical) {
  if (!testing::data_file_exists("multi30k/raw/train.de.gz"))
    GTEST_SKIP() << "no Multi30k data under " << testing::data_dir();
  // Two layers, so that the dropout between them draws from its stream; Luong with input feeding.
  const nlohmann::json config = {{"emb", 8}, {"hidden", 8}, {"layers", 2}, {"dropout", 0.3}, {"attention", "luong"}};
  const TranslationOptions o = tiny_translation_options();
  expect_resume_is_bit_identical(o, "translation_rnn", 5, [&](const TranslationOptions& x) {
    return train_translation(TranslatorKind::rnn, config, x);
  });
}

// The run loop's own rules, on a task small enough to reason about.
class CountingTask final : public Task {
 public:
  explicit CountingTask(std::vector<double> scores) : scores_(std::move(scores)) {
    weight = module_.register_parameter("w", Tensor::from_vector(std::vector<float>{1.0f}, {1}));
  }
  nn::Module& module() override { return module_; }
  std::string label() const override { return "count"; }
  StepLoss forward(int64_t) override {
    Tensor loss = sum(mul(weight, weight));
    return {loss, loss_override_.value_or(loss.item())};
  }
  std::vector<LogField> log_fields(double) override { return {{"loss", 0.0, "loss"}}; }
  Validation validate(int64_t) override {
    const double s = scores_.at(std::min(next_++, scores_.size() - 1));
    return {s, {{"score", s}}, ""};
  }
  bool higher_is_better() const override { return true; }
  nlohmann::json checkpoint_metadata(const RunState& s, bool) const override {
    return {{"format", "test"}, {"step", s.step}};
  }
  RunState restore(const io::SafetensorsFile&, const std::string&) override { return {}; }
  std::optional<double> loss_override_;
  Tensor weight;

 private:
  nn::Module module_;
  std::vector<double> scores_;
  size_t next_ = 0;
};

RunOptions counting_run(const std::string& out) {
  RunOptions o;
  o.steps = 6;
  o.eval_every = 2;
  o.log_every = 2;
  o.out_dir = out;
  o.progress = nullptr;
  return o;
}

TEST(Run, KeepsTheLaterOfEqualScores) {
  const std::string out = fresh_dir("best");
  CountingTask task({0.5, 0.7, 0.7});
  const RunResult r = run(task, counting_run(out));
  EXPECT_EQ(r.state.best_score, 0.7);
  EXPECT_EQ(r.state.best_step, 6);  // the tie at step 6 wins over step 4
  fs::remove_all(out);
}

TEST(Run, DivergenceNamesTheStepAndTheLoss) {
  const std::string out = fresh_dir("diverged");
  CountingTask task({0.5});
  task.loss_override_ = std::numeric_limits<double>::infinity();
  try {
    run(task, counting_run(out));
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "training diverged at step 1 (loss inf); try a smaller --lr");
  }
  fs::remove_all(out);
}

TEST(Run, FirstLogRecordIsTheProvenance) {
  const std::string out = fresh_dir("provenance");
  CountingTask task({0.5});
  RunOptions o = counting_run(out);
  o.provenance = current_provenance("attn train --out x");
  run(task, o);
  std::ifstream log(out + "/log.jsonl");
  std::string first;
  std::getline(log, first);
  const nlohmann::json j = nlohmann::json::parse(first);
  EXPECT_EQ(j.at("run").at("command_line"), "attn train --out x");
  EXPECT_EQ(j.at("run").at("threads"), num_threads());
  EXPECT_FALSE(j.at("run").at("attn_version").get<std::string>().empty());
  EXPECT_TRUE(j.at("run").contains("machine"));
  fs::remove_all(out);
}

// The data-parallel path of run() with a one-rank communicator: the loss and gradient
// all-reduces run every step (with the gradients present), and the weights are those of a
// run without a communicator, bit for bit (each rank's scale w/W is exactly 1).
TEST(Run, OneRankCommunicatorReducesEveryStepAndChangesNothing) {
  struct Counting : distributed::Communicator {
    int gradient_reduces = 0, scalar_reduces = 0;
    std::vector<Tensor> parameters;
    int rank() const override { return 0; }
    int size() const override { return 1; }
    int local_size() const override { return 1; }
    void all_reduce_sum(std::span<float>) override {}
    void all_reduce_sum(std::span<double>) override { ++scalar_reduces; }
    std::unique_ptr<distributed::PendingReduce> start_all_reduce_sum(std::span<float> v) override {
      ++gradient_reduces;
      EXPECT_EQ(v.size(), 1u);  // CountingTask's one parameter, packed
      return single.start_all_reduce_sum(v);
    }
    void all_gather(std::span<const std::byte> mine, std::span<std::byte> all) override {
      single.all_gather(mine, all);
    }
    void broadcast(std::span<std::byte>, int) override {}
    void barrier() override {}
    distributed::SingleProcessCommunicator single;
  } communicator;
  const std::string with = fresh_dir("communicator"), without = fresh_dir("no_communicator");
  CountingTask task({0.5});
  RunOptions o = counting_run(with);
  o.communicator = &communicator;
  run(task, o);
  EXPECT_EQ(communicator.gradient_reduces, 6);
  EXPECT_GE(communicator.scalar_reduces, 6 * 3);  // stop, time, loss: agreed every step
  CountingTask alone({0.5});
  run(alone, counting_run(without));
  expect_identical_checkpoints(with + "/last.safetensors", without + "/last.safetensors");
  fs::remove_all(with);
  fs::remove_all(without);
}

// The streams a module registered survive a save and a load; a file that lacks one of
// them is refused by name, one with none (an older attn) leaves them alone.
TEST(RandomStreams, RoundTripAndMissingStream) {
  nn::Module parent;
  nn::Dropout dropout(0.5f, 7);
  parent.register_module("drop", dropout);
  ASSERT_EQ(parent.named_random_streams().size(), 1u);
  EXPECT_EQ(parent.named_random_streams()[0].first, "drop.rng");
  Rng* rng = parent.named_random_streams()[0].second;
  rng->next();
  const Rng::State saved = rng->state();
  const std::string path = fresh_dir("streams") + ".safetensors";
  io::save_safetensors(path, random_stream_tensors(parent), {});
  const uint64_t expected = rng->next();  // the draw after the saved state
  load_random_streams(io::load_safetensors(path), parent, path);
  EXPECT_EQ(rng->state(), saved);
  EXPECT_EQ(rng->next(), expected);

  nn::Dropout other(0.5f, 8);
  parent.register_module("other", other);
  try {
    load_random_streams(io::load_safetensors(path), parent, path);
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("random stream 'other.rng'"), std::string::npos) << e.what();
  }
  io::save_safetensors(path, {{"w", Tensor::zeros({1})}}, {});
  const Rng::State before = other.named_random_streams()[0].second->state();
  load_random_streams(io::load_safetensors(path), parent, path);
  EXPECT_EQ(other.named_random_streams()[0].second->state(), before);
  fs::remove(path);
}

TEST(RunOptions, ValidateNamesTheOption) {
  RunOptions o;
  o.out_dir = "x";
  o.lr = 0.0f;
  EXPECT_THROW(o.validate(), ValueError);
  o.lr = 1e-3f;
  o.save_every_minutes = -1;
  try {
    o.validate();
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("--save-every"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attn::train
