// BLEU as sacreBLEU 2.x computes it by default (13a, exp smoothing, no effective order).
// The expected values are worked out by hand from the n-gram counts written next to them.
// (No sacrebleu / nltk on the build machines: there is no Python parity test.)
#include "attn/data/bleu.h"

#include <gtest/gtest.h>

#include <cmath>

#include "attn/error.h"
#include "test_support.h"

namespace attn::data {
namespace {

constexpr double kTol = 1e-9;

// ---- 13a tokenisation -------------------------------------------------------------------

TEST(Tokenize13a, Punctuation) {
  EXPECT_EQ(tokenize_13a("Hello, world!"), "Hello , world !");
  EXPECT_EQ(tokenize_13a("(a) [b] {c} x/y a+b=c? @me #1 50% ~ | ^ _ ` \\"),
            "( a ) [ b ] { c } x / y a + b = c ? @ me # 1 50 % ~ | ^ _ ` \\");
  EXPECT_EQ(tokenize_13a("Two dogs; one cat: fine."), "Two dogs ; one cat : fine .");
  // The apostrophe and a dash between letters are not split.
  EXPECT_EQ(tokenize_13a("don't stop well-known"), "don't stop well-known");
  EXPECT_EQ(tokenize_13a("  many   spaces\there  "), "many spaces here");
  EXPECT_EQ(tokenize_13a(""), "");
  EXPECT_EQ(tokenize_13a("   "), "");
}

TEST(Tokenize13a, NumbersKeepInnerCommasAndPeriods) {
  // '.' and ',' split unless between digits; '-' splits after a digit.
  EXPECT_EQ(tokenize_13a("It costs $1,000.50."), "It costs $ 1,000.50 .");
  EXPECT_EQ(tokenize_13a("3.5, 7"), "3.5 , 7");
  EXPECT_EQ(tokenize_13a("pages 10-20"), "pages 10 - 20");
  EXPECT_EQ(tokenize_13a("costs .5 or 5."), "costs . 5 or 5 .");
  EXPECT_EQ(tokenize_13a("e.g. U.S.A."), "e . g . U . S . A .");
  EXPECT_EQ(tokenize_13a("1,000,000"), "1,000,000");
  EXPECT_EQ(tokenize_13a("a,b"), "a , b");
}

TEST(Tokenize13a, EntitiesAndLineJoins) {
  EXPECT_EQ(tokenize_13a("&quot;Hi&quot; &amp; &lt;b&gt;"), "\" Hi \" & < b >");
  // Sequential replacement as in sacreBLEU: &amp;quot; -> &quot; (not unescaped twice).
  EXPECT_EQ(tokenize_13a("&amp;quot;"), "& quot ;");
  EXPECT_EQ(tokenize_13a("hyphen-\nated line\nbreak"), "hyphenated line break");
  EXPECT_EQ(tokenize_13a("a <skipped> b"), "a b");
}

TEST(Tokenize13a, Utf8) {
  EXPECT_EQ(tokenize_13a("Grüße, Welt."), "Grüße , Welt .");
  EXPECT_EQ(tokenize_13a("Männer.Frauen"), "Männer . Frauen");
  // Python's str.split() also splits at Unicode whitespace: NBSP U+00A0, ideographic U+3000.
  EXPECT_EQ(tokenize_13a("a\u00a0b\u3000c"), "a b c");
  // ... but not at other non-ASCII characters (the 'é' before '.' is not a digit).
  EXPECT_EQ(tokenize_13a("café."), "café .");
}

// ---- corpus BLEU ------------------------------------------------------------------------

TEST(Bleu, PerfectMatchIs100) {
  // 6 tokens: 1-4-gram precisions 6/6 5/5 4/4 3/3, BP = 1.
  const auto r = corpus_bleu({"the cat sat on the mat"}, {"the cat sat on the mat"});
  EXPECT_NEAR(r.score, 100.0, kTol);
  EXPECT_EQ(r.correct, (std::array<int64_t, 4>{6, 5, 4, 3}));
  EXPECT_EQ(r.total, (std::array<int64_t, 4>{6, 5, 4, 3}));
  EXPECT_DOUBLE_EQ(r.brevity_penalty, 1.0);
  EXPECT_EQ(r.to_string(), "BLEU = 100.00 100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.000 hyp_len = 6 ref_len = 6)");
}

TEST(Bleu, NoMatchIsZeroWithZeroPrecisions) {
  // Not one matching unigram: sacreBLEU stops early, score 0 and all precisions 0 (no
  // smoothing applies), BP still computed.
  const auto r = corpus_bleu({"a b c"}, {"x y z"});
  EXPECT_EQ(r.score, 0.0);
  EXPECT_EQ(r.precisions, (std::array<double, 4>{0, 0, 0, 0}));
  EXPECT_EQ(r.correct, (std::array<int64_t, 4>{0, 0, 0, 0}));
  EXPECT_EQ(r.total, (std::array<int64_t, 4>{3, 2, 1, 0}));
  EXPECT_EQ(r.to_string(), "BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 1.000 ratio = 1.000 hyp_len = 3 ref_len = 3)");
  // An empty hypothesis: c = 0 < r, BP = 0.
  const auto e = corpus_bleu({""}, {"x y"});
  EXPECT_EQ(e.score, 0.0);
  EXPECT_EQ(e.brevity_penalty, 0.0);
  EXPECT_EQ(e.hyp_len, 0);
}

TEST(Bleu, HandComputedWithExpSmoothing) {
  // hyp: the cat sat on the mat | ref: the cat is on the mat
  //  1-grams: the x2 (ref 2) cat on mat match, sat not      -> 5/6
  //  2-grams: [the cat] [on the] [the mat] of 5              -> 3/5
  //  3-grams: [on the mat] of 4                              -> 1/4
  //  4-grams: none of 3 -> exp smoothing: 1 / (2 * 3)        -> 100/6
  //  BP = 1 (6 = 6). BLEU = (500/6 * 60 * 25 * 100/6)^(1/4)
  const auto r = corpus_bleu({"the cat sat on the mat"}, {"the cat is on the mat"});
  EXPECT_EQ(r.correct, (std::array<int64_t, 4>{5, 3, 1, 0}));
  EXPECT_EQ(r.total, (std::array<int64_t, 4>{6, 5, 4, 3}));
  EXPECT_NEAR(r.precisions[0], 500.0 / 6, kTol);
  EXPECT_NEAR(r.precisions[1], 60.0, kTol);
  EXPECT_NEAR(r.precisions[2], 25.0, kTol);
  EXPECT_NEAR(r.precisions[3], 100.0 / 6, kTol);
  const double expected = std::pow(500.0 / 6 * 60.0 * 25.0 * 100.0 / 6, 0.25);  // 37.9918...
  EXPECT_NEAR(r.score, expected, kTol);
  EXPECT_NEAR(r.score, 37.9918, 1e-4);
  EXPECT_EQ(r.to_string(), "BLEU = 37.99 83.3/60.0/25.0/16.7 (BP = 1.000 ratio = 1.000 hyp_len = 6 ref_len = 6)");
}

TEST(Bleu, ExpSmoothingDoublesPerMissingOrder) {
  // hyp: a b c d e | ref: a x c y e
  //  1-grams: a c e -> 3/5 = 60
  //  2-grams: 0/4 -> 100 / (2 * 4) = 12.5
  //  3-grams: 0/3 -> 100 / (4 * 3)
  //  4-grams: 0/2 -> 100 / (8 * 2) = 6.25
  const auto r = corpus_bleu({"a b c d e"}, {"a x c y e"});
  EXPECT_NEAR(r.precisions[1], 12.5, kTol);
  EXPECT_NEAR(r.precisions[2], 100.0 / 12, kTol);
  EXPECT_NEAR(r.precisions[3], 6.25, kTol);
  EXPECT_NEAR(r.score, std::pow(60.0 * 12.5 * (100.0 / 12) * 6.25, 0.25), kTol);  // 14.0585...
}

TEST(Bleu, ClippedCounts) {
  // hyp: the the the the | ref: the cat
  //  1-grams: 'the' x4 clipped to the reference's 1 -> 1/4; 2-4-grams 0/3 0/2 0/1 (smoothed
  //  100/6, 100/8, 100/8). BP = 1 (4 > 2), ratio 2.
  const auto r = corpus_bleu({"the the the the"}, {"the cat"});
  EXPECT_EQ(r.correct, (std::array<int64_t, 4>{1, 0, 0, 0}));
  EXPECT_EQ(r.total, (std::array<int64_t, 4>{4, 3, 2, 1}));
  EXPECT_DOUBLE_EQ(r.ratio, 2.0);
  EXPECT_NEAR(r.score, std::pow(25.0 * (100.0 / 6) * 12.5 * 12.5, 0.25), kTol);
}

TEST(Bleu, BrevityPenalty) {
  // hyp: the cat sat on the (5) | ref: the cat sat on the mat (6)
  //  all precisions 100 (5/5 4/4 3/3 2/2), BP = exp(1 - 6/5)
  const auto r = corpus_bleu({"the cat sat on the"}, {"the cat sat on the mat"});
  EXPECT_NEAR(r.brevity_penalty, std::exp(1.0 - 6.0 / 5.0), kTol);
  EXPECT_NEAR(r.score, 100.0 * std::exp(-0.2), 1e-9);  // 81.873...
  EXPECT_NEAR(r.ratio, 5.0 / 6.0, kTol);
  EXPECT_EQ(r.to_string(), "BLEU = 81.87 100.0/100.0/100.0/100.0 (BP = 0.819 ratio = 0.833 hyp_len = 5 ref_len = 6)");
  // A longer hypothesis has no penalty.
  const auto longer = corpus_bleu({"the cat sat on the mat today"}, {"the cat sat on the mat"});
  EXPECT_DOUBLE_EQ(longer.brevity_penalty, 1.0);
}

TEST(Bleu, OrderWithNoNgramsGivesZeroWithoutEffectiveOrder) {
  // hyp: the cat (2 tokens) | ref: the cat sat on the mat
  //  1-grams 2/2, 2-grams 1/1, no 3- or 4-grams at all: sacreBLEU (effective_order off)
  //  leaves those precisions at 0, log floored at -9999999999 -> BLEU 0.
  //  BP = exp(1 - 6/2) = e^-2.
  const auto r = corpus_bleu({"the cat"}, {"the cat sat on the mat"});
  EXPECT_EQ(r.score, 0.0);
  EXPECT_EQ(r.precisions, (std::array<double, 4>{100.0, 100.0, 0.0, 0.0}));
  EXPECT_EQ(r.total, (std::array<int64_t, 4>{2, 1, 0, 0}));
  EXPECT_NEAR(r.brevity_penalty, std::exp(-2.0), kTol);
  EXPECT_EQ(r.to_string(), "BLEU = 0.00 100.0/100.0/0.0/0.0 (BP = 0.135 ratio = 0.333 hyp_len = 2 ref_len = 6)");
}

TEST(Bleu, MultiSentenceCorpusSumsStatistics) {
  // Corpus BLEU sums the counts over sentences before taking precisions:
  //  s1 the cat sat on the mat | the cat is on the mat:   correct 5 3 1 0, total 6 5 4 3, len 6/6
  //  s2 "It is raining." | "It is raining today."  (13a: It is raining .  |  It is raining today .)
  //     1: 4/4  2: [It is] [is raining] of 3 -> 2/3  3: [It is raining] of 2 -> 1/2  4: 0/1, len 4/5
  //  s3 "Zwei Hunde, 1,000.5 Meter" | "Zwei Hunde , 1,000.5 Meter" (same 5 tokens after 13a):
  //     5/5 4/4 3/3 2/2, len 5/5
  //  sum: correct 14 9 5 2, total 15 12 9 6, hyp_len 15, ref_len 16 -> BP = exp(1 - 16/15)
  const auto r = corpus_bleu({"the cat sat on the mat", "It is raining.", "Zwei Hunde, 1,000.5 Meter"},
                             {"the cat is on the mat", "It is raining today.", "Zwei Hunde , 1,000.5 Meter"});
  EXPECT_EQ(r.correct, (std::array<int64_t, 4>{14, 9, 5, 2}));
  EXPECT_EQ(r.total, (std::array<int64_t, 4>{15, 12, 9, 6}));
  EXPECT_EQ(r.hyp_len, 15);
  EXPECT_EQ(r.ref_len, 16);
  const double bp = std::exp(1.0 - 16.0 / 15.0);
  const double expected = bp * std::pow((1400.0 / 15) * (900.0 / 12) * (500.0 / 9) * (200.0 / 6), 0.25);
  EXPECT_NEAR(r.score, expected, 1e-9);  // 56.13...
  EXPECT_NEAR(r.score, 56.1336, 1e-3);
  // Not the mean of the sentence scores.
  const double s1 = corpus_bleu({"the cat sat on the mat"}, {"the cat is on the mat"}).score;
  EXPECT_GT(std::abs(r.score - s1), 1.0);
}

TEST(Bleu, CaseSensitiveAndTrailingWhitespace) {
  // "The" != "the": 1-grams 5/6, ... exactly the hand case above with one more miss.
  const auto r = corpus_bleu({"The cat sat on the mat"}, {"the cat sat on the mat"});
  EXPECT_EQ(r.correct, (std::array<int64_t, 4>{5, 4, 3, 2}));
  // Trailing whitespace and '\r' do not count.
  const auto w = corpus_bleu({"the cat sat on the mat \r"}, {"the cat sat on the mat\r"});
  EXPECT_NEAR(w.score, 100.0, kTol);
}

TEST(Bleu, JsonCarriesSacrebleuKeys) {
  const auto r = corpus_bleu({"the cat sat on the mat"}, {"the cat is on the mat"});
  const std::string json = r.to_json();
  EXPECT_NE(json.find("\"name\": \"BLEU\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"score\": 37.99"), std::string::npos) << json;
  EXPECT_NE(json.find("\"tok\": \"13a\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"verbose_score\": \"83.3/60.0/25.0/16.7 (BP = 1.000 ratio = 1.000 hyp_len = 6 ref_len = 6)\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"hyp_len\": 6"), std::string::npos) << json;
}

TEST(Bleu, Errors) {
  EXPECT_THROW_MSG(corpus_bleu({"a", "b"}, {"a"}), ValueError, "2 hypotheses but 1 references");
  EXPECT_THROW_MSG(corpus_bleu({}, {}), ValueError, "no sentences");
}

// sacreBLEU 2.6.0 scores an empty reference line (it adds no reference length and matches
// nothing): BLEU(["a b c", "d"], [["a b c", ""]]) has hyp_len 4, ref_len 3, 3/4 unigrams.
TEST(Bleu, EmptyReferenceLineCountsAsSacrebleuDoes) {
  const auto r = corpus_bleu({"a b c", "d"}, {"a b c", ""});
  EXPECT_EQ(r.hyp_len, 4);
  EXPECT_EQ(r.ref_len, 3);
  EXPECT_EQ(r.correct[0], 3);
  EXPECT_EQ(r.total[0], 4);
}

TEST(Bleu, LowercaseIsPythonsStrLower) {
  EXPECT_EQ(lowercase_unicode("ΣΑΣ Straße İ ÄÖÜ"), "σας straße i\u0307 äöü");
  const auto cased = corpus_bleu({"The Cat sat on the mat"}, {"the cat sat on the mat"});
  const auto lower = corpus_bleu({"The Cat sat on the mat"}, {"the cat sat on the mat"}, {.lowercase = true});
  EXPECT_LT(cased.score, 100.0);
  EXPECT_DOUBLE_EQ(lower.score, 100.0);
  EXPECT_NE(lower.to_json().find("case:lc"), std::string::npos);
}

}  // namespace
}  // namespace attn::data
