#include "attn/explain/report.h"

#include <cmath>

#include "test_support.h"

namespace attn::explain {
namespace {

ExplainedSentence sentence(std::vector<float> attention, std::vector<float> gradient, std::vector<float> loo,
                           int32_t gold, int32_t label) {
  ExplainedSentence s;
  for (size_t i = 0; i < attention.size(); ++i) s.tokens.push_back("t" + std::to_string(i));
  s.gold = gold;
  s.importance.label = label;
  s.importance.attention = attention;
  s.importance.gradient = gradient;
  s.importance.integrated_gradients = gradient;
  s.importance.has_leave_one_out = !loo.empty();
  s.importance.leave_one_out = loo;
  s.importance.permutation_median = 0.02f * static_cast<float>(attention.size());
  s.importance.permutation_deltas = {s.importance.permutation_median};
  return s;
}

TEST(Report, SummaryFiguresAndOneTokenSentences) {
  // Sentence 1: attention and |gradient| agree (τ 1); sentence 2: reversed (τ −1);
  // the gradient sign is ignored (|g|); sentence 3 has one token (τ undefined).
  std::vector<ExplainedSentence> s = {sentence({0.1f, 0.2f, 0.7f}, {-0.1f, 0.2f, -0.9f}, {0.01f, 0.02f, 0.3f}, 1, 1),
                                      sentence({0.1f, 0.2f, 0.7f}, {0.9f, 0.5f, 0.1f}, {0.3f, 0.2f, 0.1f}, 0, 1),
                                      sentence({1.0f}, {0.4f}, {}, 1, 1)};
  ExplainReport r = summarise(s, 2);
  const TauSummary& ag = r.taus[0];
  ASSERT_EQ(ag.pair.first, "attention");
  ASSERT_EQ(ag.pair.second, "gradient");
  EXPECT_EQ(ag.defined, 2);
  EXPECT_NEAR(ag.mean, 0.0, 1e-12);
  EXPECT_NEAR(ag.sd, 1.0, 1e-12);
  EXPECT_NEAR(ag.share_significant, 0.0, 1e-12);  // n = 3: the exact p of τ = ±1 is 1/3
  EXPECT_FALSE(ag.per_sentence[2].defined);
  const TauSummary& gl = r.taus[2];
  EXPECT_EQ(gl.pair.first + gl.pair.second, "gradientloo");
  EXPECT_NEAR(gl.mean, 1.0, 1e-12);
  EXPECT_EQ(r.one_token_sentences, 1);
  EXPECT_EQ(r.skipped_empty, 2);
  EXPECT_NEAR(r.accuracy, 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(r.permutation_median_of_medians, 0.06, 1e-6);
  EXPECT_NEAR(r.share_permutation_median_below_001, 0.0, 1e-12);

  const nlohmann::json j = report_json(r, {{"model", "m.safetensors"}, {"split", "test"}});
  EXPECT_EQ(j.at("sentences").size(), 3u);
  EXPECT_TRUE(j.at("sentences").at(2).at("leave_one_out").is_null());
  EXPECT_EQ(j.at("sentences").at(2).at("tau").at("attention-loo").at("undefined"), "fewer than 2 tokens");
  EXPECT_EQ(j.at("tau").at("gradient-loo").at("defined"), 2);
  const std::string md = report_markdown(r, {{"model", "m.safetensors"}, {"split", "test"}});
  EXPECT_NE(md.find("| attn (this model) | 0.00 ± 1.00, 0 % sig. | "), std::string::npos) << md;
  EXPECT_NE(md.find("| Jain & Wallace, SST BiLSTM+tanh | 0.35 ± 0.21, 49 % sig. | 0.29 ± 0.19, 36 % sig. | "
                    "0.66 ± 0.16, 91 % sig. | 0.808 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("much more than attention agrees"), std::string::npos) << md;
}

TEST(Report, AttentionZeroShareCountsExactZeros) {
  // 2 of 6 weights are exactly 0 (a sparse normaliser's), 1e-30 is not.
  const ExplainReport r = summarise({sentence({0.0f, 0.4f, 0.6f}, {0.1f, 0.2f, 0.3f}, {0.1f, 0.2f, 0.3f}, 1, 1),
                                     sentence({1.0f, 0.0f, 1e-30f}, {0.1f, 0.2f, 0.3f}, {0.1f, 0.2f, 0.3f}, 1, 1)});
  EXPECT_NEAR(r.attention_zero_share, 2.0 / 6.0, 1e-12);
  const nlohmann::json context = {{"model", "m.safetensors"}};
  EXPECT_NEAR(report_json(r, context).at("attention_zero_share").get<double>(), 2.0 / 6.0, 1e-12);
  EXPECT_NE(report_markdown(r, context).find("33.3 % of the attention weights are exactly 0"), std::string::npos);
}

TEST(Report, NoSentenceOfTwoTokens) {
  ExplainReport r = summarise({sentence({1.0f}, {0.4f}, {}, -1, 0)});
  EXPECT_EQ(r.labelled, 0);
  const std::string md = report_markdown(r, {{"model", "m"}});
  EXPECT_NE(md.find("n/a (no sentence of 2+ tokens)"), std::string::npos) << md;
  EXPECT_NE(md.find("nothing to rank"), std::string::npos) << md;
  EXPECT_TRUE(report_json(r, {}).at("accuracy").is_null());
}

}  // namespace
}  // namespace attn::explain
