#pragma once
// CMUdict (the CMU Pronouncing Dictionary) for grapheme-to-phoneme conversion: the reader, the
// deterministic train / dev / test split, and the two symbol sets (letters in, ARPAbet
// phonemes with stress out).
//
//   std::vector<CmudictEntry> dict = read_cmudict("../shared/data/cmudict/cmudict.dict.gz");
//   for (const CmudictEntry& e : dict)
//     if (cmudict_split(e.word) == CmudictSplit::test) ...   // e.pronunciations: every variant
//
// Format, one entry a line (plain or gzip, data::read_lines):
//   <word><whitespace><PH ON EMES>[ # comment]
// e.g. "aalborg(2)  AA1 L B AO0 R G". A word's alternative pronunciations are numbered
// "word(2)", "word(3)", ...; they are gathered into one entry, in the file's order, whatever
// lines separate them. Empty lines and lines starting with ";;;" (the old distribution's
// comments) are skipped.
//
// Letters: a-z, the apostrophe, the full stop and the hyphen (29 symbols, every character of
// the words in ../shared/data/cmudict). A-Z are lower-cased (older CMUdict releases are upper
// case); any other character is an error naming it.
// Phonemes: the 84 symbols of cmudict.symbols: 39 phonemes, of which the 15 vowels come
// bare and with stress 0, 1, 2 (39 + 15 · 3). ../shared/data/cmudict uses 69 of them (every
// vowel carries its stress).
//
// A bad line is a ValueError naming the file and line:
//   cmudict.dict.gz:17: unknown phoneme 'QX' (valid: the 84 ARPAbet symbols of cmudict.symbols)
#include <cstdint>
#include <string>
#include <vector>

namespace attn::data {

struct CmudictEntry {
  std::string word;                                      // lower case, without "(N)"
  std::vector<std::vector<std::string>> pronunciations;  // each non-empty, ARPAbet symbols
};

// Every entry of `path`, in the order of each word's first line. IoError when it cannot be
// read; ValueError "<path>:<line>: ..." for a bad line (a word with no phonemes, an unknown
// phoneme or character, a bad "(N)").
std::vector<CmudictEntry> read_cmudict(const std::string& path);
// The same from lines already read; `source` names them in errors.
std::vector<CmudictEntry> parse_cmudict(const std::vector<std::string>& lines, const std::string& source);

// The split of a word: FNV-1a (64-bit) of its UTF-8 bytes, modulo 100: 0-4 dev (5 %), 5-14
// test (10 %), the rest train. It depends only on the word, so every pronunciation of a word
// falls in the same split on every platform.
enum class CmudictSplit { train, dev, test };
uint64_t fnv1a64(const std::string& bytes);
CmudictSplit cmudict_split(const std::string& word);
const char* split_name(CmudictSplit split);  // "train" | "dev" | "test"
// The entries of one split, in their order.
std::vector<CmudictEntry> cmudict_subset(const std::vector<CmudictEntry>& entries, CmudictSplit split);

// The 29 letters, in a fixed order (a-z ' . -), and the 84 phoneme symbols, in the order of
// cmudict.symbols (AA AA0 AA1 AA2 AE ... ZH).
const std::vector<std::string>& cmudict_letters();
const std::vector<std::string>& cmudict_phonemes();

// `word` lower-cased and split into letters; ValueError naming the first character outside
// the letters (`where` prefixes the message, e.g. "cmudict.dict.gz:12: ").
std::vector<std::string> cmudict_spell(const std::string& word, const std::string& where = "");

// The one vocabulary of the G2P models (source and target share it, as models::Translator
// wants): PAD 0, BOS 1, EOS 2, UNK 3 (models/batch.h), the 29 letters (ids 4..32), then the
// 84 phonemes (33..116), in the orders above. Entries are the symbols' names ("<pad>", "a",
// "AA0", ...).
const std::vector<std::string>& g2p_symbols();
// A word's letter ids (cmudict_spell: ValueError for a character outside the letters).
std::vector<int32_t> g2p_encode_word(const std::string& word);
// Phoneme ids; ValueError for a symbol that is not one of the 84.
std::vector<int32_t> g2p_encode_phonemes(const std::vector<std::string>& phonemes);
// The phonemes of decoded ids, up to the first EOS; ids that are not phonemes (a letter,
// a special) are left out.
std::vector<std::string> g2p_decode_phonemes(const std::vector<int32_t>& ids);

}  // namespace attn::data
