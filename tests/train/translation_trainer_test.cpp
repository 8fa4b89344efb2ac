#include "attn/train/translation_trainer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "attn/data/bleu.h"
#include "attn/data/parallel.h"
#include "attn/data/text.h"
#include "attn/io/safetensors.h"
#include "attn/train/checkpoint.h"
#include "short_run.h"
#include "test_support.h"

namespace attn::train {
namespace {
using models::TranslatorKind;
using namespace attn::decode;  // load_translator, translate, evaluate_translation
namespace fs = std::filesystem;

std::string multi30k() { return attn::testing::data_dir() + "/multi30k"; }
constexpr const char* kMulti30kTrain = "multi30k/raw/train.de.gz";

std::string temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("attn_translation_test_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// A run on the first `pairs` training pairs that must fit them: small enough to run
// under the sanitizers, large enough that memorising 24 short sentences shows in BLEU.
TranslationOptions tiny_options(const std::string& out, int64_t pairs, int64_t steps) {
  TranslationOptions o;
  o.data_dir = multi30k();
  o.train_limit = pairs;
  o.vocab_size = 120;
  o.max_len = 40;
  o.max_tokens = 2000;
  o.max_sentences = 32;
  testing::short_run(o, out, steps, 5e-3f);
  o.label_smoothing = 0.0f;
  o.log_every = 10;
  o.eval_sentences = 8;
  return o;
}

// The loss falls, and the model memorises its few training sentences: translating them
// back scores far above the untrained model (BLEU near 0).
void expect_learns(models::TranslatorKind kind, const nlohmann::json& config, int64_t steps) {
  ATTN_SKIP_WITHOUT_DATA(kMulti30kTrain);
  const std::string out = temp_dir(models::to_string(kind));
  const TranslationResult r = train_translation(kind, config, tiny_options(out, 24, steps));
  EXPECT_EQ(r.steps_done, steps);
  EXPECT_TRUE(fs::exists(out + "/model.safetensors"));
  EXPECT_TRUE(fs::exists(out + "/last.safetensors"));
  EXPECT_TRUE(fs::exists(out + "/spm.model"));

  // log.jsonl: the loss of the last logged step is well below the first.
  std::vector<double> losses;
  for (const auto& line : data::read_lines(out + "/log.jsonl")) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("loss")) losses.push_back(j["loss"].get<double>());
  }
  ASSERT_GE(losses.size(), 2u);
  EXPECT_LT(losses.back(), 0.5 * losses.front()) << "first " << losses.front() << ", last " << losses.back();

  LoadedTranslator model = load_translator(out + "/last.safetensors");
  EXPECT_EQ(model.info.kind, kind);
  const data::ParallelCorpus corpus = data::load_parallel(multi30k(), "train", "de", "en", 24);
  const std::vector<Translation> greedy = translate(model, corpus.src, {.beam = 1});
  ASSERT_EQ(greedy.size(), corpus.src.size());
  std::vector<std::string> hyps;
  for (const auto& t : greedy) hyps.push_back(t.text);
  const double bleu = data::corpus_bleu(hyps, corpus.tgt).score;
  EXPECT_GT(bleu, 40.0) << "training-set BLEU after memorising; first output: " << hyps[0];

  // Beam search gives one line per input too, and empty input lines stay empty.
  const std::vector<Translation> beam = translate(model, {corpus.src[0], "", corpus.src[1]}, {.beam = 3});
  ASSERT_EQ(beam.size(), 3u);
  EXPECT_TRUE(beam[1].text.empty());
  EXPECT_FALSE(beam[0].text.empty());

  // Alignment data: one weight row per output piece over the source pieces, rows sum to 1.
  const Translation aligned = translate(model, {corpus.src[0]}, {.beam = 1, .attention = true}).at(0);
  ASSERT_FALSE(aligned.weights.empty());
  EXPECT_EQ(aligned.weights.size(), aligned.out_pieces.size());
  for (const auto& row : aligned.weights) {
    ASSERT_EQ(row.size(), aligned.src_pieces.size());
    double sum = 0;
    for (float w : row) sum += w;
    EXPECT_NEAR(sum, 1.0, 1e-4);
  }

  // eval on a real split returns a finite BLEU for the requested number of sentences.
  const TranslationEval eval = evaluate_translation(model, multi30k(), "test2016", {.beam = 1}, 5);
  EXPECT_EQ(eval.sentences, 5);
  EXPECT_EQ(eval.hypotheses.size(), 5u);
  EXPECT_GE(eval.bleu, 0.0);
  EXPECT_NE(eval.bleu_line.find("BLEU = "), std::string::npos);
}

TEST(TranslationTrainer, RnnBahdanauLearns) {
  expect_learns(TranslatorKind::rnn, {{"encoder", "gru"}, {"emb", 32}, {"hidden", 64}, {"attention", "bahdanau"}}, 150);
}

TEST(TranslationTrainer, TransformerLearns) {
  expect_learns(TranslatorKind::transformer,
                {{"d_model", 32},
                 {"heads", 2},
                 {"ffn", 64},
                 {"encoder_layers", 1},
                 {"decoder_layers", 1},
                 {"dropout", 0.0},
                 {"share_embeddings", true}},
                150);
}

TEST(TranslationTrainer, ResumeContinuesToTheRequestedSteps) {
  ATTN_SKIP_WITHOUT_DATA(kMulti30kTrain);
  const std::string out = temp_dir("resume");
  const nlohmann::json config = {{"emb", 16}, {"hidden", 16}};
  train_translation(TranslatorKind::rnn, config, tiny_options(out, 16, 4));
  TranslationOptions o = tiny_options(out, 16, 8);
  o.resume = true;
  const TranslationResult r = train_translation(TranslatorKind::rnn, config, o);
  EXPECT_EQ(r.steps_done, 8);
  EXPECT_EQ(load_translator(out + "/last.safetensors").info.step, 8);
  // A different model cannot resume this run.
  EXPECT_THROW_MSG(train_translation(TranslatorKind::rnn, {{"emb", 16}, {"hidden", 32}}, o), ValueError,
                   "different model");
}

TEST(TranslationTrainer, OptionErrors) {
  TranslationOptions o = tiny_options("/tmp/unused", 8, 4);
  o.data_dir = "";
  EXPECT_THROW_MSG(o.validate(), ValueError, "--data");
  o = tiny_options("/tmp/unused", 8, 4);
  o.src_lang = "en";
  o.tgt_lang = "en";
  EXPECT_THROW_MSG(o.validate(), ValueError, "two different languages");
  o = tiny_options("/tmp/unused", 8, 4);
  o.label_smoothing = 1.0f;
  EXPECT_THROW_MSG(o.validate(), ValueError, "--label-smoothing");
  o = tiny_options("/tmp/unused", 8, 4);
  o.max_tokens = 10;
  EXPECT_THROW_MSG(o.validate(), ValueError, "cannot hold one pair");
  o = tiny_options("/tmp/unused", 8, 4);
  o.lr_schedule = "sometimes";
  EXPECT_THROW(o.validate(), ValueError);
  EXPECT_THROW_MSG(models::parse_translator_kind("lstm-ish"), ValueError,
                   "unknown translation model 'lstm-ish' (valid: rnn, transformer)");
}

TEST(TranslationTrainer, LoadErrors) {
  EXPECT_THROW_MSG(load_translator("/nonexistent/model.safetensors"), IoError, "/nonexistent/model.safetensors");
  ATTN_SKIP_WITHOUT_DATA(kMulti30kTrain);
  // A checkpoint whose tokenizer went missing names the missing file.
  const std::string out = temp_dir("missing_tokenizer");
  train_translation(TranslatorKind::rnn, {{"emb", 16}, {"hidden", 16}}, tiny_options(out, 8, 2));
  EXPECT_EQ(checkpoint_format(out + "/model.safetensors"), "attn-translation");
  // Issue 18 item 9: a swapped or changed tokenizer loaded and translated garbage.
  { std::ofstream(out + "/spm.model", std::ios::binary | std::ios::app) << 'x'; }
  EXPECT_THROW_MSG(load_translator(out + "/model.safetensors"), IoError,
                   "spm.model is not the one it was trained with (CRC-32 differs)");
  fs::remove(out + "/spm.model");
  EXPECT_THROW_MSG(load_translator(out + "/model.safetensors"), IoError, "spm.model is missing");
  // Issue 18 item 13: the metadata's tokenizer field opened any path (/etc/passwd, ../x).
  io::SafetensorsFile file = io::load_safetensors(out + "/model.safetensors");
  for (const std::string bad : {"/etc/passwd", "../spm.model", ""}) {
    nlohmann::json meta = nlohmann::json::parse(file.metadata.at(io::kAttnMetadataKey));
    meta["tokenizer"] = bad;
    std::map<std::string, std::string> metadata = file.metadata;
    metadata[io::kAttnMetadataKey] = meta.dump();
    const std::string path = out + "/bad_tokenizer.safetensors";
    io::save_safetensors(path, file.tensors, metadata);
    EXPECT_THROW_MSG(load_translator(path), IoError,
                     "tokenizer '" + bad + "' is not a file name beside the checkpoint");
  }
}

}  // namespace
}  // namespace attn::train
