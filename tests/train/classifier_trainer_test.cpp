#include "attn/train/classifier_trainer.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "attn/io/safetensors.h"
#include "attn/train/checkpoint.h"
#include "test_support.h"

namespace attn::train {
namespace {
using namespace attn::decode;  // load_classifier, classify_text, evaluate_classifier
namespace fs = std::filesystem;

// A text longer than a transformer-cls model's positions is cut to what it reads, not refused.
TEST(ClassifyText, KeepsTheTokensATransformerReads) {
  const nlohmann::json cfg = models::classifier_config_with_vocab(
      "transformer-cls", {{"d_model", 8}, {"heads", 2}, {"ffn", 16}, {"encoder_layers", 1}, {"max_len", 6}}, 10, 2);
  std::unique_ptr<models::TextClassifier> model = models::make_classifier("transformer-cls", cfg);
  EXPECT_EQ(model->max_tokens(), 5);  // [CLS] takes the sixth position
  const data::Vocab vocab = data::Vocab::build({"a b c"});
  const Classification c = classify_text(*model, vocab, "a b c a b c a b");
  EXPECT_EQ(c.tokens, (std::vector<std::string>{"a", "b", "c", "a", "b"}));
  EXPECT_EQ(c.attention.size(), 5u);
}

class ClassifierTrainer : public ::testing::Test {
 protected:
  void SetUp() override {
    ATTN_SKIP_WITHOUT_DATA("sst2/sentiment-dev");
    out_ = (fs::temp_directory_path() / ("attn_classifier_trainer_" + std::to_string(::getpid()))).string();
    fs::remove_all(out_);
  }
  void TearDown() override {
    if (!out_.empty() && !std::getenv("KEEP_RUN")) fs::remove_all(out_);
  }
  ClassifierTrainOptions small_run() const {
    ClassifierTrainOptions o;
    o.data_dir = testing::data_dir();
    o.model_config = {{"emb", 32}, {"hidden", 24}, {"dropout", 0.2}};
    o.train_limit = 3000;  // the first 3000 training phrases
    o.dev_limit = 300;
    o.steps = 400;
    o.batch = 32;
    o.lr = 5e-3f;
    o.eval_every = 100;
    o.log_every = 40;
    o.out_dir = out_;
    o.progress = nullptr;
    return o;
  }
  std::string out_;
};

TEST_F(ClassifierTrainer, ShortRunLearnsAndCheckpointRoundTrips) {
  const ClassifierTrainOptions o = small_run();
  const ClassifierTrainResult r = train_classifier(o);
  EXPECT_EQ(r.steps_done, 400);
  EXPECT_FALSE(r.interrupted);
  EXPECT_LT(r.final_loss, r.first_loss - 0.15) << "training loss " << r.first_loss << " -> " << r.final_loss;
  EXPECT_GT(r.best_dev_accuracy, 0.62) << "dev accuracy on " << o.dev_limit << " sentences";
  ASSERT_TRUE(fs::exists(r.model_path));
  EXPECT_TRUE(fs::exists(fs::path(o.out_dir) / "log.jsonl"));
  EXPECT_EQ(checkpoint_format(r.model_path), "attn-classifier");

  // The checkpoint reproduces the recorded dev accuracy.
  LoadedClassifier loaded = load_classifier(r.model_path);
  EXPECT_EQ(loaded.model->kind(), "bilstm");
  EXPECT_EQ(loaded.vocab.size(), r.vocab_size);
  EXPECT_EQ(loaded.labels, sst2_labels());
  EXPECT_DOUBLE_EQ(loaded.dev_accuracy, r.best_dev_accuracy);
  auto dev = data::read_sst2(data::sst2_split_path(o.data_dir, "dev"));
  dev.resize(300);
  const ClassifierEval e = evaluate_classifier(*loaded.model, loaded.vocab, dev, 64);
  EXPECT_EQ(e.examples, 300);
  EXPECT_DOUBLE_EQ(e.accuracy, r.best_dev_accuracy);
  EXPECT_GT(e.loss, 0.0);
  const nlohmann::json j = nlohmann::json::parse(classifier_eval_json(e));
  EXPECT_DOUBLE_EQ(j.at("accuracy").get<double>(), e.accuracy);
  EXPECT_EQ(j.at("examples").get<int64_t>(), 300);
  EXPECT_DOUBLE_EQ(j.at("loss").get<double>(), e.loss);

  // One text: probabilities sum to 1, attention over its tokens.
  const Classification c = classify_text(*loaded.model, loaded.vocab, "a wonderful , moving film zzzunknownzzz");
  ASSERT_EQ(c.tokens.size(), 6u);
  EXPECT_EQ(c.ids.back(), data::Vocab::kUnk);
  EXPECT_NEAR(c.probabilities[0] + c.probabilities[1], 1.0f, 1e-6f);
  EXPECT_EQ(c.probability, c.probabilities[static_cast<size_t>(c.label)]);
  ASSERT_EQ(c.attention.size(), 6u);
  EXPECT_THROW_MSG(classify_text(*loaded.model, loaded.vocab, "   "), ValueError, "the text has no tokens");
}

TEST_F(ClassifierTrainer, RunsAreReproducible) {
  ClassifierTrainOptions o = small_run();
  o.steps = 20;
  o.eval_every = 20;
  const ClassifierTrainResult a = train_classifier(o);
  o.overwrite = true;  // the second run replaces the first in the same folder
  const ClassifierTrainResult b = train_classifier(o);
  EXPECT_EQ(a.final_loss, b.final_loss);
  EXPECT_EQ(a.best_dev_accuracy, b.best_dev_accuracy);
}

TEST_F(ClassifierTrainer, StopFlagSavesAndReturns) {
  ClassifierTrainOptions o = small_run();
  std::atomic<bool> stop{true};
  o.stop = &stop;
  const ClassifierTrainResult r = train_classifier(o);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.steps_done, 0);
  EXPECT_TRUE(fs::exists(r.model_path));
}

TEST_F(ClassifierTrainer, OptionAndFileErrors) {
  ClassifierTrainOptions o = small_run();
  o.model = "cnn";
  EXPECT_THROW_MSG(train_classifier(o), ValueError,
                   "unknown --model 'cnn' (valid: bilstm, bilstm-attn, transformer-cls)");
  o = small_run();
  o.batch = 0;
  EXPECT_THROW_MSG(train_classifier(o), ValueError, "--batch must be >= 1, got 0");
  o = small_run();
  o.model_config = {{"hiden", 3}};
  EXPECT_THROW_MSG(train_classifier(o), ValueError, "unknown key 'hiden'");
  o = small_run();
  o.data_dir = out_ + "/missing";
  EXPECT_THROW(train_classifier(o), IoError);
  EXPECT_THROW_MSG(load_classifier(out_ + "/none.safetensors"), IoError, "none.safetensors");
  // A checkpoint of another format is refused by name.
  fs::create_directories(out_);
  const std::string other = out_ + "/other.safetensors";
  io::save_safetensors(other, {{"w", Tensor::zeros({2})}}, {{io::kAttnMetadataKey, R"({"format": "attn-seq2seq"})"}});
  EXPECT_EQ(checkpoint_format(other), "attn-seq2seq");
  EXPECT_THROW_MSG(load_classifier(other), IoError,
                   "not an attn classifier checkpoint (metadata format 'attn-seq2seq')");
}

}  // namespace
}  // namespace attn::train
