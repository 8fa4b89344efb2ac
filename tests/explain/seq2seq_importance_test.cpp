// Seq2seq and translation models: the measures of seq2seq_importance.h against a finite
// difference and against re-running the model (through its token-id path) on the shortened
// source, and the per-target-token τ and alignment agreement of seq2seq_report.h by hand.
#include "attn/explain/seq2seq_importance.h"

#include <algorithm>
#include <cmath>

#include "attn/autodiff/tape.h"
#include "attn/explain/seq2seq_report.h"
#include "attn/ops/select.h"
#include "attn/ops/softmax.h"
#include "scaled_row_derivative.h"
#include "test_support.h"

namespace attn::explain {
namespace {

const std::vector<int32_t> kSource = {4, 7, 11, 6, 19};
const std::vector<int32_t> kHypothesis = {5, 9, 13, 2};  // ... EOS

models::Seq2SeqConfig rnn_config(const std::string& attention, const std::string& score = "") {
  models::Seq2SeqConfig c;
  c.attention = models::parse_attention_kind(attention);
  c.score = models::parse_score(c.attention, score);
  c.emb = 8;
  c.hidden = 12;
  c.bidirectional = true;
  c.seed = 3;
  return c;
}

models::TransformerConfig transformer_config() {
  models::TransformerConfig c;
  c.src_vocab = c.tgt_vocab = 32;
  c.d_model = 8;
  c.heads = 2;
  c.ffn = 16;
  c.encoder_layers = 1;
  c.decoder_layers = 2;
  c.dropout = 0.2f;  // eval mode: must not matter
  c.max_len = 32;
  c.seed = 5;
  return c;
}

// The teacher-forced batch of one source and the hypothesis, built here independently.
models::Batch batch_of(const std::vector<int32_t>& source, const std::vector<int32_t>& hypothesis) {
  std::vector<int32_t> tgt_in = {models::kBos};
  tgt_in.insert(tgt_in.end(), hypothesis.begin(), hypothesis.end() - 1);
  models::Batch b;
  const int64_t S = static_cast<int64_t>(source.size()), T = static_cast<int64_t>(hypothesis.size());
  b.src = Tensor::from_vector(source, {1, S});
  b.src_lengths = Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(S)}, {1});
  b.tgt_in = Tensor::from_vector(tgt_in, {1, T});
  return b;
}

// log p(y_t) from logits (1, T, V).
std::vector<float> emitted(const Tensor& logits, const std::vector<int32_t>& hypothesis) {
  const Tensor lp = log_softmax(logits);
  const int64_t V = lp.dim(2);
  std::vector<float> out;
  for (size_t t = 0; t < hypothesis.size(); ++t) out.push_back(lp.f32()[static_cast<int64_t>(t) * V + hypothesis[t]]);
  return out;
}

// Through the models' own token-id forward passes (not the embedding path under test).
std::vector<float> rerun(nn::Module& module, const std::vector<int32_t>& source,
                         const std::vector<int32_t>& hypothesis) {
  autodiff::NoGradGuard no_grad;
  const models::Batch b = batch_of(source, hypothesis);
  if (auto* rnn = dynamic_cast<models::Seq2Seq*>(&module)) return emitted(transpose_01(rnn->logits(b)), hypothesis);
  return emitted(dynamic_cast<models::TransformerSeq2Seq&>(module).logits(b), hypothesis);
}

// LOO equals re-running the model on each shortened source; the log-probabilities equal the
// model's own forward pass; the training flag is restored.
void check_leave_one_out(const SourceEmbeddingSeq2Seq& m) {
  const std::vector<std::vector<float>> loo = leave_one_out(m, kSource, kHypothesis);
  EXPECT_TRUE(m.module->is_training()) << "the training flag is restored";
  m.module->eval();
  const std::vector<float> full = rerun(*m.module, kSource, kHypothesis);
  const std::vector<float> mine = target_log_probs(m, kSource, kHypothesis);
  for (size_t t = 0; t < full.size(); ++t) EXPECT_NEAR(mine[t], full[t], 1e-5 * (1 + std::fabs(full[t])));
  ASSERT_EQ(loo.size(), kHypothesis.size());
  for (size_t s = 0; s < kSource.size(); ++s) {
    std::vector<int32_t> shorter = kSource;
    shorter.erase(shorter.begin() + static_cast<std::ptrdiff_t>(s));
    const std::vector<float> without = rerun(*m.module, shorter, kHypothesis);
    for (size_t t = 0; t < kHypothesis.size(); ++t)
      EXPECT_NEAR(loo[t][s], std::fabs(full[t] - without[t]), 1e-5 * (1 + std::fabs(full[t])))
          << "t " << t << " s " << s;
  }
}

// g_{t,s} = d/dh log p(y_t | e with e_s scaled by 1 + h) at h = 0: central differences.
void check_gradient(const SourceEmbeddingSeq2Seq& m) {
  const std::vector<std::vector<float>> g = gradient_times_input(m, kSource, kHypothesis);
  m.module->eval();
  autodiff::NoGradGuard no_grad;
  const models::Batch b = batch_of(kSource, kHypothesis);
  const Tensor e = m.embed(b.src).clone();  // (1, S, E)
  ASSERT_EQ(g.size(), kHypothesis.size());
  for (size_t t = 0; t < kHypothesis.size(); ++t) {
    float scale = 0.0f;
    for (float v : g[t]) scale = std::max(scale, std::fabs(v));
    for (int64_t s = 0; s < static_cast<int64_t>(kSource.size()); ++s) {
      const double numeric = attn::testing::scaled_row_derivative(
          e, s, [&](const Tensor& x) { return emitted(m.logits(x, b), kHypothesis)[t]; });
      EXPECT_NEAR(g[t][static_cast<size_t>(s)], numeric, 2e-3 + 2e-2 * scale) << "t " << t << " s " << s;
    }
  }
}

// The hypothesis is the model's greedy output (each token the argmax of its step), and there
// is one attention row over the source per target token, summing to 1.
void check_pair(const SourceEmbeddingSeq2Seq& m) {
  const PairImportance p = explain_pair(m, kSource, 8);
  ASSERT_FALSE(p.hypothesis.empty());
  ASSERT_EQ(p.attention.size(), p.hypothesis.size());
  ASSERT_EQ(p.gradient.size(), p.hypothesis.size());
  ASSERT_EQ(p.leave_one_out.size(), p.hypothesis.size());
  m.module->eval();
  autodiff::NoGradGuard no_grad;
  const models::Batch b = batch_of(kSource, p.hypothesis);
  const Tensor lp = log_softmax(m.logits(m.embed(b.src), b));  // (1, T, V)
  const int64_t V = lp.dim(2);
  for (size_t t = 0; t < p.hypothesis.size(); ++t) {
    const float* row = lp.f32() + static_cast<int64_t>(t) * V;
    EXPECT_EQ(std::max_element(row, row + V) - row, p.hypothesis[t]) << "step " << t << " is greedy";
    EXPECT_NEAR(p.log_prob[t], row[p.hypothesis[t]], 1e-5);
    ASSERT_EQ(p.attention[t].size(), kSource.size());
    double total = 0.0;
    for (float w : p.attention[t]) total += w;
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
}

TEST(Seq2SeqImportance, RnnBahdanau) {
  models::Seq2Seq model(rnn_config("bahdanau"));
  const SourceEmbeddingSeq2Seq m = source_embedding_model(model);
  check_leave_one_out(m);
  check_gradient(m);
  check_pair(m);
}

TEST(Seq2SeqImportance, RnnLuongMultihead) {
  models::Seq2SeqConfig c = rnn_config("luong", "multihead");
  c.heads = 2;
  models::Seq2Seq model(c);
  const SourceEmbeddingSeq2Seq m = source_embedding_model(model);
  check_leave_one_out(m);
  check_gradient(m);
  check_pair(m);
}

TEST(Seq2SeqImportance, Transformer) {
  models::TransformerSeq2Seq model(transformer_config());
  const SourceEmbeddingSeq2Seq m = source_embedding_model(model);
  check_leave_one_out(m);
  check_gradient(m);
  check_pair(m);
}

TEST(Seq2SeqImportance, BadInput) {
  models::Seq2Seq none(rnn_config("none"));
  EXPECT_THROW_MSG(source_embedding_model(none), ValueError, "bahdanau or luong");
  models::Seq2Seq model(rnn_config("bahdanau"));
  const SourceEmbeddingSeq2Seq m = source_embedding_model(model);
  EXPECT_THROW_MSG(explain_pair(m, {}, 5), ValueError, "no tokens");
  EXPECT_THROW_MSG(explain_pair(m, kSource, 0), ValueError, "max_len");
  EXPECT_THROW_MSG(leave_one_out(m, {4}, kHypothesis), ValueError, "one-token source");
  const PairImportance one = explain_pair(m, {4}, 3);  // a one-token source: no LOO, no τ
  EXPECT_FALSE(one.has_leave_one_out());
  const Seq2SeqReport r = summarise_seq2seq({{"4", {"4"}, std::vector<std::string>(one.hypothesis.size(), "?"), one}});
  EXPECT_EQ(r.one_token_sources, 1);
  for (const auto& t : r.taus) {
    EXPECT_EQ(t.defined, 0);
    EXPECT_EQ(t.per_sentence.front().undefined_reason, "fewer than 2 tokens");
  }
}

// τ-b per target token and argmax agreement on rows worked by hand.
TEST(Seq2SeqReport, TauAndAgreementByHand) {
  PairImportance p;
  p.source = {3, 4, 5};
  p.hypothesis = {3, 2};
  p.log_prob = {-0.5f, -1.5f};
  p.attention = {{0.7f, 0.2f, 0.1f}, {0.1f, 0.3f, 0.6f}};
  p.gradient = {{-0.9f, 0.1f, 0.4f}, {0.2f, -0.1f, 0.3f}};  // |g|: (0.9, 0.1, 0.4), (0.2, 0.1, 0.3)
  p.leave_one_out = {{0.5f, 0.3f, 0.1f}, {0.3f, 0.2f, 0.1f}};
  const Seq2SeqReport r = summarise_seq2seq({{"3 4 5", {"3", "4", "5"}, {"3", "<eos>"}, p}});
  EXPECT_EQ(r.attention_zero_share, 0.0);  // softmax-like rows: no exact zeros
  PairImportance q = p;
  q.attention = {{0.7f, 0.3f, 0.0f}, {0.0f, 0.0f, 1.0f}};
  EXPECT_NEAR(summarise_seq2seq({{"3 4 5", {"3", "4", "5"}, {"3", "<eos>"}, q}}).attention_zero_share, 3.0 / 6.0,
              1e-12);
  // Target 1: attention (0.7, 0.2, 0.1) vs |g| (0.9, 0.1, 0.4): pairs (0,1) C, (0,2) C, (1,2) D → 1/3.
  // Target 2: attention (0.1, 0.3, 0.6) vs |g| (0.2, 0.1, 0.3): (0,1) D, (0,2) C, (1,2) C → 1/3.
  const TauSummary& ag = r.taus[0];
  ASSERT_EQ(ag.per_sentence.size(), 2u);
  EXPECT_NEAR(ag.per_sentence[0].tau, 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(ag.per_sentence[1].tau, 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(ag.mean, 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(ag.sd, 0.0, 1e-12);
  // attention vs LOO: target 1 concordant everywhere (τ 1), target 2 reversed (τ −1).
  EXPECT_NEAR(r.taus[1].per_sentence[0].tau, 1.0, 1e-12);
  EXPECT_NEAR(r.taus[1].per_sentence[1].tau, -1.0, 1e-12);
  EXPECT_NEAR(r.taus[1].mean, 0.0, 1e-12);
  EXPECT_NEAR(r.taus[1].sd, 1.0, 1e-12);
  // argmax: attention (0, 2), |g| (0, 2), LOO (0, 0).
  EXPECT_EQ(r.agreement[0].agreed, 2);
  EXPECT_EQ(r.agreement[1].agreed, 1);
  EXPECT_EQ(r.agreement[2].agreed, 1);
  EXPECT_EQ(r.agreement[0].tokens, 2);
  EXPECT_EQ(r.target_tokens, 2);
  EXPECT_NEAR(r.mean_target_log_prob, -1.0, 1e-12);
  // The JSON carries the vectors a τ is recomputed from.
  const nlohmann::json j = seq2seq_report_json(r, {{"model", "m"}});
  EXPECT_EQ(j.at("pairs").at(0).at("targets").at(1).at("attention").get<std::vector<float>>(), p.attention[1]);
  EXPECT_NEAR(j.at("tau").at("attention-loo").at("sd").get<double>(), 1.0, 1e-12);
  EXPECT_NE(seq2seq_report_markdown(r, {{"model", "m"}}).find("## Verdict"), std::string::npos);
}

}  // namespace
}  // namespace attn::explain
