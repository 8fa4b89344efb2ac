// BeamSearch under CTranslate2 4.8.5's rules (models::BeamRules::ctranslate2,
// src/models/beam_search.h) on hand-made probabilities, K = 2 hypotheses over V = 5 tokens
// (PAD, BOS, EOS, 3, 4): no EOS at the first step, raw / len^α, only an EOS among the K best
// candidates finishes, a row stops once K have finished (α = 0: once the best candidate was
// EOS), and at the last step the K best all finish.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "attn/error.h"
#include "attn/models/batch.h"
#include "attn/models/seq2seq.h"
#include "models/beam_search.h"
#include "test_support.h"

namespace attn::models {
namespace {

constexpr int K = 2, V = 5;
constexpr float kTiny = 1e-9f;  // the probability of every token not named

// (K, V) log-probabilities from {token: p} per hypothesis.
Tensor log_probs(const std::vector<std::vector<std::pair<int, float>>>& per_beam) {
  std::vector<float> v(static_cast<size_t>(K * V), std::log(kTiny));
  for (size_t k = 0; k < per_beam.size(); ++k)
    for (const auto& [token, p] : per_beam[k]) v[k * V + static_cast<size_t>(token)] = std::log(p);
  return Tensor::from_vector(v, {K, V});
}

detail::BeamSearch ct2_search(float alpha, int max_len = 10) {
  return detail::BeamSearch(
      "test", 1, {.width = K, .length_penalty = alpha, .max_len = max_len, .rules = BeamRules::ctranslate2}, 0);
}

// Step 0 from BOS: EOS 0.5 (not allowed), token 3 0.3, token 4 0.2 -> beams 3 (0.6), 4 (0.4).
const std::vector<std::vector<std::pair<int, float>>> kFirst = {{{kEos, 0.5f}, {3, 0.3f}, {4, 0.2f}}};

TEST(BeamRules, Ctranslate2HasNoEosAtTheFirstStepAndNormalisesByLength) {
  detail::BeamSearch search = ct2_search(1.0f);
  EXPECT_TRUE(search.advance(log_probs(kFirst), nullptr));  // EOS was the best, yet nothing finished
  const Tensor next_tokens = search.next_tokens();
  const std::vector<int32_t> next(next_tokens.i32(), next_tokens.i32() + K);
  EXPECT_EQ(next, (std::vector<int32_t>{3, 4}));
  EXPECT_FALSE(search.advance(log_probs({{{kEos, 1.0f}}, {{kEos, 1.0f}}}), nullptr));  // K finished
  const DecodeResult r = search.result();
  ASSERT_EQ(r.hypotheses[0].size(), 2u);
  EXPECT_EQ(r.tokens[0], (std::vector<int32_t>{3, kEos}));
  // raw / len^α, the first step renormalised without EOS: log(0.3 / 0.5) / 2.
  EXPECT_NEAR(r.hypotheses[0][0].score, std::log(0.6f) / 2.0f, 1e-5f);
  EXPECT_NEAR(r.hypotheses[0][1].score, std::log(0.4f) / 2.0f, 1e-5f);
  // attn's rules finish EOS at the first step, scored by GNMT's ((5 + 1) / 6)^α = 1.
  detail::BeamSearch attn_rules("test", 1, {.width = K, .length_penalty = 1.0f, .max_len = 10}, 0);
  attn_rules.advance(log_probs(kFirst), nullptr);
  attn_rules.advance(log_probs({{{kEos, 1.0f}}, {{kEos, 1.0f}}}), nullptr);
  EXPECT_EQ(attn_rules.result().hypotheses[0][0].tokens, std::vector<int32_t>{kEos});
}

// Step 1's best four: 3→3 (log 0.36), 4→EOS (log 0.2), 3→EOS (log 0.18), 4→3 (log 0.1).
// CTranslate2 finishes only 4→EOS (position 1 of K = 2); 3→EOS (position 2) is passed over
// for 4→3, so one hypothesis has finished and the row goes on. attn's rules finish both.
const std::vector<std::vector<std::pair<int, float>>> kSecond = {{{3, 0.6f}, {kEos, 0.3f}, {4, 0.1f}},
                                                                 {{kEos, 0.5f}, {3, 0.25f}, {4, 0.25f}}};

TEST(BeamRules, Ctranslate2FinishesOnlyAnEosAmongTheKBestAndStopsAtKFinished) {
  detail::BeamSearch search = ct2_search(1.0f);
  ASSERT_TRUE(search.advance(log_probs(kFirst), nullptr));
  EXPECT_TRUE(search.advance(log_probs(kSecond), nullptr)) << "3→EOS at position 2 must not finish";
  const Tensor next_tokens = search.next_tokens();
  const std::vector<int32_t> next(next_tokens.i32(), next_tokens.i32() + K);
  EXPECT_EQ(next, (std::vector<int32_t>{3, 3}));  // slot 1 (4→EOS) taken by 4→3
  EXPECT_FALSE(search.advance(log_probs({{{kEos, 1.0f}}, {{kEos, 1.0f}}}), nullptr));
  const DecodeResult r = search.result();
  ASSERT_EQ(r.hypotheses[0].size(), 2u);
  EXPECT_EQ(r.hypotheses[0][0].tokens, (std::vector<int32_t>{3, 3, kEos}));
  EXPECT_NEAR(r.hypotheses[0][0].score, std::log(0.36f) / 3.0f, 1e-5f);
  EXPECT_EQ(r.hypotheses[0][1].tokens, (std::vector<int32_t>{4, 3, kEos}));
  EXPECT_NEAR(r.hypotheses[0][1].score, std::log(0.1f) / 3.0f, 1e-5f);
}

TEST(BeamRules, Ctranslate2WithoutLengthPenaltyStopsWhenTheBestCandidateIsEos) {
  // Step 1 finished 4→EOS, but its best candidate was 3→3: no stop at α = 0 either.
  detail::BeamSearch search = ct2_search(0.0f);
  ASSERT_TRUE(search.advance(log_probs(kFirst), nullptr));
  EXPECT_TRUE(search.advance(log_probs(kSecond), nullptr));
  // Step 2: 3→3→EOS is the best candidate: one finished hypothesis ends the row at α = 0 ...
  const Tensor eos_first = log_probs({{{kEos, 0.9f}, {4, 0.1f}}, {{4, 0.9f}, {kEos, 0.1f}}});
  EXPECT_FALSE(search.advance(eos_first, nullptr));
  EXPECT_EQ(search.result().tokens[0], (std::vector<int32_t>{3, 3, kEos}));
  // ... at α = 1 it stops there only because 4→EOS (step 1) makes K = 2 finished, and a row
  // without that one goes on.
  detail::BeamSearch waits = ct2_search(1.0f);
  waits.advance(log_probs(kFirst), nullptr);
  waits.advance(log_probs(kSecond), nullptr);
  EXPECT_FALSE(waits.advance(eos_first, nullptr)) << "4→EOS and 3→3→EOS make K = 2";
  detail::BeamSearch two = ct2_search(1.0f);
  two.advance(log_probs(kFirst), nullptr);
  EXPECT_TRUE(two.advance(log_probs({{{3, 0.6f}, {4, 0.4f}}, {{3, 0.6f}, {4, 0.4f}}}), nullptr));
  EXPECT_TRUE(two.advance(eos_first, nullptr)) << "one finished of K = 2: goes on";
}

TEST(BeamRules, Ctranslate2FinishesTheKBestAtTheLastStep) {
  detail::BeamSearch search = ct2_search(1.0f, 2);
  ASSERT_TRUE(search.advance(log_probs(kFirst), nullptr));
  EXPECT_FALSE(search.advance(log_probs({{{3, 0.9f}, {4, 0.1f}}, {{4, 0.9f}, {3, 0.1f}}}), nullptr));
  const DecodeResult r = search.result();
  ASSERT_EQ(r.hypotheses[0].size(), 2u);
  EXPECT_EQ(r.tokens[0], (std::vector<int32_t>{3, 3}));  // no EOS: cut at max_len
  EXPECT_NEAR(r.hypotheses[0][0].score, std::log(0.54f) / 2.0f, 1e-5f);
  EXPECT_EQ(r.hypotheses[0][1].tokens, (std::vector<int32_t>{4, 4}));
  EXPECT_NEAR(r.hypotheses[0][1].score, std::log(0.36f) / 2.0f, 1e-5f);
}

TEST(BeamRules, NamesParseAndWhatCtranslate2LacksIsRefused) {
  EXPECT_EQ(parse_beam_rules("attn"), BeamRules::attn);
  EXPECT_EQ(parse_beam_rules("ctranslate2"), BeamRules::ctranslate2);
  EXPECT_STREQ(to_string(BeamRules::ctranslate2), "ctranslate2");
  EXPECT_THROW_MSG(parse_beam_rules("ct2"), ValueError, "unknown beam rules 'ct2' (valid: attn, ctranslate2)");
  EXPECT_THROW_MSG(
      detail::BeamSearch("test", 1, {.width = K, .stop = BeamStop::top, .rules = BeamRules::ctranslate2}, 0),
      ValueError,
      "test: the ctranslate2 beam rules have their own stopping rule and no coverage penalty (stop top given)");
  EXPECT_THROW_MSG(
      detail::BeamSearch("test", 1, {.width = K, .coverage_penalty = 0.2f, .rules = BeamRules::ctranslate2}, 3,
                         {.S = 3, .lengths = {3}}),
      ValueError,
      "test: the ctranslate2 beam rules have their own stopping rule and no coverage penalty "
      "(coverage_penalty 0.200000 given)");
}

}  // namespace
}  // namespace attn::models
