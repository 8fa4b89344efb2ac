#include "attn/data/cmudict.h"

#include <gtest/gtest.h>

#include <set>

#include "attn/error.h"
#include "test_support.h"

namespace attn::data {
namespace {

using Pron = std::vector<std::string>;

// The message of the ValueError that `lines` raise, or "" when none.
std::string parse_error(const std::vector<std::string>& lines) {
  try {
    parse_cmudict(lines, "dict");
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

TEST(Cmudict, ReadsEntriesAlternativesAndComments) {
  const std::vector<CmudictEntry> d = parse_cmudict(
      {";;; a comment line of the old format", "a  AH0", "a(2)  EY1", "", "aalborg  AO1 L B AO0 R G # place, danish",
       "D'Artagnan D AH0 R T AE1 NG Y AH0 N",  // one space, upper case
       "aalborg(2)\tAA1 L B AO0 R G"},
      "dict");
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].word, "a");
  EXPECT_EQ(d[0].pronunciations, (std::vector<Pron>{{"AH0"}, {"EY1"}}));
  EXPECT_EQ(d[1].word, "aalborg");  // both lines, though another word comes between them
  EXPECT_EQ(d[1].pronunciations,
            (std::vector<Pron>{{"AO1", "L", "B", "AO0", "R", "G"}, {"AA1", "L", "B", "AO0", "R", "G"}}));
  EXPECT_EQ(d[2].word, "d'artagnan");
  EXPECT_EQ(d[2].pronunciations.size(), 1u);
}

TEST(Cmudict, BadLinesNameTheirLineNumber) {
  EXPECT_EQ(parse_error({"a  AH0", "b"}), "dict:2: 'b' has no phonemes (expected: word  PH ON EMES)");
  EXPECT_EQ(parse_error({"a  AH0", "", "b  B QX1"}),
            "dict:3: unknown phoneme 'QX1' (valid: the 84 ARPAbet symbols of cmudict.symbols)");
  EXPECT_EQ(parse_error({"b  b iy1"}),
            "dict:1: unknown phoneme 'b' (valid: the 84 ARPAbet symbols of cmudict.symbols)");
  EXPECT_EQ(parse_error({"b(1)  B IY1"}), "dict:1: alternative 'b(1)' is not word(N) with N >= 2");
  EXPECT_EQ(parse_error({"b(x)  B IY1"}), "dict:1: alternative 'b(x)' is not word(N) with N >= 2");
  EXPECT_EQ(parse_error({"(2)  B IY1"}), "dict:1: alternative '(2)' is not word(N) with N >= 2");
  EXPECT_EQ(parse_error({"b(2  B IY1"}), "dict:1: alternative 'b(2' is not word(N) with N >= 2");
  EXPECT_EQ(parse_error({"x", "caf\xc3\xa9  K AE0 F EY1"}), "dict:1: 'x' has no phonemes (expected: word  PH ON EMES)");
  EXPECT_EQ(parse_error({"caf\xc3\xa9  K AE0 F EY1"}),
            "dict:1: character '\\xc3' in 'caf\xc3\xa9' is not a letter (valid: a-z, ', ., -; A-Z are lower-cased)");
  EXPECT_EQ(parse_error({"a_b  EY1 B IY1"}),
            "dict:1: character '_' in 'a_b' is not a letter (valid: a-z, ', ., -; A-Z are lower-cased)");
  EXPECT_EQ(parse_error({"a  AH0", "  # only a comment", "\r"}), "");  // blank after the comment is stripped
}

TEST(Cmudict, SymbolSets) {
  const std::vector<std::string>& p = cmudict_phonemes();
  EXPECT_EQ(p.size(), 84u);  // 39 phonemes + 15 vowels × 3 stresses, as cmudict.symbols
  EXPECT_EQ(std::set<std::string>(p.begin(), p.end()).size(), 84u);
  EXPECT_EQ(p.front(), "AA");
  EXPECT_EQ(p[1], "AA0");
  EXPECT_EQ(p.back(), "ZH");
  EXPECT_EQ(cmudict_letters().size(), 29u);
  EXPECT_EQ(cmudict_spell("O'Neil-Smith."),
            (std::vector<std::string>{"o", "'", "n", "e", "i", "l", "-", "s", "m", "i", "t", "h", "."}));
  EXPECT_THROW(cmudict_spell(""), ValueError);
  EXPECT_THROW(cmudict_spell("a b"), ValueError);
}

TEST(Cmudict, SplitIsAHashOfTheWord) {
  // FNV-1a 64 test vectors (Fowler, Noll, Vo).
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
  // The bucket is the hash modulo 100: dev [0, 5), test [5, 15), train otherwise.
  for (const std::string w : {"a", "either", "aalborg", "zywicki", "d'artagnan"}) {
    const uint64_t bucket = fnv1a64(w) % 100;
    const CmudictSplit want = bucket < 5 ? CmudictSplit::dev : bucket < 15 ? CmudictSplit::test : CmudictSplit::train;
    EXPECT_EQ(cmudict_split(w), want) << w;
  }
  // Alternatives are one entry, so one split.
  const auto d = parse_cmudict({"a  AH0", "b  B IY1", "a(2)  EY1"}, "dict");
  EXPECT_EQ(cmudict_subset(d, cmudict_split("a")).front().pronunciations.size(), 2u);
}

// The G2P models' one vocabulary: specials, letters, phonemes.
TEST(Cmudict, G2pSymbols) {
  const std::vector<std::string>& s = g2p_symbols();
  ASSERT_EQ(s.size(), 4u + 29u + 84u);
  EXPECT_EQ(s[2], "<eos>");
  EXPECT_EQ(g2p_encode_word("Ab-"), (std::vector<int32_t>{4, 5, 4 + 28}));
  EXPECT_EQ(s[4 + 28], "-");
  EXPECT_EQ(g2p_encode_phonemes({"AA", "ZH", "AH0"}), (std::vector<int32_t>{33, 116, 33 + 9}));
  EXPECT_EQ(s[33 + 9], "AH0");
  // Decoding stops at EOS and leaves out what is not a phoneme.
  EXPECT_EQ(g2p_decode_phonemes({33, 4, 116, 3, 2, 34}), (std::vector<std::string>{"AA", "ZH"}));
  EXPECT_THROW_MSG(g2p_encode_phonemes({"AA", "XX"}), ValueError, "unknown phoneme 'XX'");
  EXPECT_THROW_MSG(g2p_encode_word("x y"), ValueError, "character ' ' in 'x y' is not a letter");
}

// The counts docs/data.md states, on the real data.
TEST(Cmudict, SharedDataCounts) {
  ATTN_SKIP_WITHOUT_DATA("cmudict/cmudict.dict.gz");
  const std::vector<CmudictEntry> d = read_cmudict(testing::data_dir() + "/cmudict/cmudict.dict.gz");
  std::set<std::string> used;
  int64_t lines = 0;
  for (const CmudictEntry& e : d)
    for (const Pron& p : e.pronunciations) {
      ++lines;
      used.insert(p.begin(), p.end());
    }
  EXPECT_EQ(lines, 135155);
  EXPECT_EQ(used.size(), 69u);  // every vowel with its stress
  int64_t words[3] = {0, 0, 0}, prons[3] = {0, 0, 0};
  for (const CmudictEntry& e : d) {
    const auto s = static_cast<size_t>(cmudict_split(e.word));
    words[s] += 1;
    prons[s] += static_cast<int64_t>(e.pronunciations.size());
  }
  EXPECT_EQ(d.size(), 126046u);
  EXPECT_EQ(words[0], 107148);  // train
  EXPECT_EQ(prons[0], 114887);
  EXPECT_EQ(words[1], 6350);  // dev
  EXPECT_EQ(prons[1], 6802);
  EXPECT_EQ(words[2], 12548);  // test
  EXPECT_EQ(prons[2], 13466);
}

}  // namespace
}  // namespace attn::data
