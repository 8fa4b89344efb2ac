// The G2P trainer (train/g2p_trainer.h) on a small dictionary the test writes: the run learns
// it (dev PER falls far below the untrained model's), its checkpoint loads with its metadata
// and pronounces words, a resumed run gives the parameters of an uninterrupted one bit for
// bit, and the errors.
#include "attn/train/g2p_trainer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "attn/decode/g2p.h"
#include "attn/io/safetensors.h"
#include "short_run.h"
#include "test_support.h"

namespace attn::train {
namespace {
using models::TranslatorKind;

class G2pTrainer : public testing::TempDirTest {
 protected:
  // 200 words of two syllables that always sound the same ("bako" -> B AA1 K OW1).
  void SetUp() override {
    TempDirTest::SetUp();
    const std::vector<std::pair<std::string, std::string>> syllables = {
        {"ba", "B AA1"}, {"ko", "K OW1"}, {"mi", "M IY1"}, {"tu", "T UW1"}, {"re", "R EH1"},
        {"sa", "S AA1"}, {"lo", "L OW1"}, {"ni", "N IY1"}, {"pe", "P EH1"}, {"du", "D UW1"},
        {"fa", "F AA1"}, {"go", "G OW1"}, {"vi", "V IY1"}, {"zu", "Z UW1"}};
    std::string dict;
    for (const auto& [a, pa] : syllables)
      for (const auto& [b, pb] : syllables) dict += a + b + "  " + pa + " " + pb + "\n";
    put(path("cmudict.dict"), dict);
  }

  G2pOptions options(int64_t steps) const {
    G2pOptions o;
    o.data_dir = dir_.string();
    testing::short_run(o, path("run"), steps, 1e-2f);
    o.max_tokens = 600;
    return o;
  }
};

const nlohmann::json kConfig = {{"emb", 16},
                                {"hidden", 32},
                                {"attention", "bahdanau"},
                                {"score", "location_aware"},
                                {"location_filters", 3},
                                {"location_width", 5}};

TEST_F(G2pTrainer, LearnsAndItsCheckpointPronounces) {
  const G2pResult r = train_g2p(TranslatorKind::rnn, kConfig, options(150));
  EXPECT_EQ(r.steps_done, 150);
  EXPECT_GT(r.train_pairs, 0);
  EXPECT_GT(r.dev_words, 0);
  EXPECT_LT(r.best_val_per, 0.2) << "dev PER after 150 steps";  // an untrained model: above 0.8
  decode::LoadedG2p m = decode::load_g2p(r.model_path);
  EXPECT_EQ(m.info.kind, TranslatorKind::rnn);
  EXPECT_EQ(m.info.config.at("score"), "location_aware");
  EXPECT_DOUBLE_EQ(m.info.best_val_per, r.best_val_per);
  // The dev words it validated on, scored again through the loaded checkpoint.
  std::vector<data::CmudictEntry> dev =
      data::cmudict_subset(data::read_cmudict(cmudict_path(dir_.string())), data::CmudictSplit::dev);
  ASSERT_FALSE(dev.empty());
  EXPECT_NEAR(decode::evaluate_g2p(m, dev, {}).score.per(), r.best_val_per, 1e-12);
  const auto said = decode::pronounce(m, {"bako", "KOBA"}, {.beam = 3, .attention = true});
  EXPECT_EQ(said[0].phonemes, (std::vector<std::string>{"B", "AA1", "K", "OW1"}));
  EXPECT_EQ(said[1].phonemes, (std::vector<std::string>{"K", "OW1", "B", "AA1"}));
  ASSERT_GE(said[0].weights.size(), 4u);
  EXPECT_EQ(said[0].weights[0].size(), 4u);  // one weight per letter
  EXPECT_THROW_MSG(decode::pronounce(m, {"ba_ko"}, {}), ValueError, "character '_' in 'ba_ko' is not a letter");
}

TEST_F(G2pTrainer, ResumeGivesTheUninterruptedRun) {
  G2pOptions full = options(12);
  full.out_dir = path("full");
  train_g2p(TranslatorKind::rnn, kConfig, full);
  G2pOptions half = options(6);
  half.eval_every = 6;
  train_g2p(TranslatorKind::rnn, kConfig, half);
  G2pOptions rest = options(12);
  rest.resume = true;
  EXPECT_EQ(train_g2p(TranslatorKind::rnn, kConfig, rest).steps_done, 12);
  const io::SafetensorsFile a = io::load_safetensors(path("full/last.safetensors"));
  const io::SafetensorsFile b = io::load_safetensors(path("run/last.safetensors"));
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    if (a.tensors[i].first.rfind("decoder.", 0) != 0 && a.tensors[i].first.rfind("encoder.", 0) != 0) continue;
    EXPECT_EQ(a.tensors[i].second.to_vector(), b.tensors[i].second.to_vector()) << a.tensors[i].first;
  }
  // A different model cannot resume this run.
  nlohmann::json other = kConfig;
  other["hidden"] = 16;
  EXPECT_THROW_MSG(train_g2p(TranslatorKind::rnn, other, rest), ValueError, "different model");
}

TEST_F(G2pTrainer, Errors) {
  G2pOptions o = options(2);
  o.data_dir = path("nowhere");
  EXPECT_THROW_MSG(train_g2p(TranslatorKind::rnn, kConfig, o), IoError, "no CMUdict under");
  std::filesystem::create_directories(path("bad"));
  put(path("bad/cmudict.dict"), "ba  B AA1\nko  K OW9\n");
  o.data_dir = path("bad");
  EXPECT_THROW_MSG(train_g2p(TranslatorKind::rnn, kConfig, o), ValueError, "cmudict.dict:2: unknown phoneme 'OW9'");
  o = options(2);
  o.label_smoothing = 1.0f;
  EXPECT_THROW_MSG(train_g2p(TranslatorKind::rnn, kConfig, o), ValueError, "--label-smoothing must be in [0, 1)");
}

}  // namespace
}  // namespace attn::train
