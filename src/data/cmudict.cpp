// CMUdict: the reader, the split and the symbol sets (attn/data/cmudict.h).
#include "attn/data/cmudict.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "attn/data/text.h"
#include "attn/enum_names.h"
#include "attn/error.h"
#include "attn/models/batch.h"
#include "attn/printable.h"

namespace attn::data {
namespace {

const std::vector<std::string> kVowels = {"AA", "AE", "AH", "AO", "AW", "AY", "EH", "ER",
                                          "EY", "IH", "IY", "OW", "OY", "UH", "UW"};
const std::vector<std::string> kConsonants = {"B",  "CH", "D", "DH", "F",  "G", "HH", "JH", "K", "L", "M", "N",
                                              "NG", "P",  "R", "S",  "SH", "T", "TH", "V",  "W", "Y", "Z", "ZH"};

std::vector<std::string> make_phonemes() {
  std::vector<std::string> all;
  for (const std::string& v : kVowels)
    for (const char* stress : {"", "0", "1", "2"}) all.push_back(v + stress);
  all.insert(all.end(), kConsonants.begin(), kConsonants.end());
  std::sort(all.begin(), all.end());  // cmudict.symbols' order
  return all;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// The whitespace-separated fields of `text`.
std::vector<std::string_view> fields(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    size_t j = i;
    while (j < text.size() && !is_space(text[j])) ++j;
    if (j > i) out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

// "word(3)" -> "word"; ValueError for a malformed "(N)" (N must be a number >= 2).
std::string strip_variant(std::string_view key, const std::string& where) {
  const size_t open = key.find('(');
  if (open == std::string_view::npos) return std::string(key);
  const std::string_view number = key.substr(open + 1, key.size() - open - 2);
  const bool digits = !number.empty() && number.size() <= 4 &&
                      std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (open == 0 || key.back() != ')' || !digits || std::stoi(std::string(number)) < 2)
    throw ValueError(fmt::format("{}alternative '{}' is not word(N) with N >= 2", where, printable(key)));
  return std::string(key.substr(0, open));
}

}  // namespace

const std::vector<std::string>& cmudict_letters() {
  static const std::vector<std::string> letters = [] {
    std::vector<std::string> l;
    for (char c = 'a'; c <= 'z'; ++c) l.emplace_back(1, c);
    for (const char* c : {"'", ".", "-"}) l.emplace_back(c);
    return l;
  }();
  return letters;
}

const std::vector<std::string>& cmudict_phonemes() {
  static const std::vector<std::string> phonemes = make_phonemes();
  return phonemes;
}

std::vector<std::string> cmudict_spell(const std::string& word, const std::string& where) {
  std::vector<std::string> out;
  out.reserve(word.size());
  for (char c : word) {
    const char lower = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    if (!((lower >= 'a' && lower <= 'z') || lower == '\'' || lower == '.' || lower == '-'))
      throw ValueError(
          fmt::format("{}character '{}' in '{}' is not a letter (valid: a-z, ', ., -; A-Z are lower-cased)", where,
                      printable(std::string(1, c), true), printable(word, false, 80)));
    out.emplace_back(1, lower);
  }
  if (out.empty()) throw ValueError(where + "empty word");
  return out;
}

std::vector<CmudictEntry> parse_cmudict(const std::vector<std::string>& lines, const std::string& source) {
  static const std::unordered_set<std::string> known(cmudict_phonemes().begin(), cmudict_phonemes().end());
  std::vector<CmudictEntry> entries;
  std::unordered_map<std::string, size_t> index;  // word -> entries[i]
  for (size_t n = 0; n < lines.size(); ++n) {
    std::string_view line = lines[n];
    if (line.substr(0, 3) == ";;;") continue;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    const std::vector<std::string_view> f = fields(line);
    if (f.empty()) continue;
    const std::string where = fmt::format("{}:{}: ", source, n + 1);
    if (f.size() == 1)
      throw ValueError(
          fmt::format("{}'{}' has no phonemes (expected: word  PH ON EMES)", where, printable(f[0], false, 80)));
    std::string word;
    for (const std::string& letter : cmudict_spell(strip_variant(f[0], where), where)) word += letter;
    std::vector<std::string> phonemes;
    for (size_t i = 1; i < f.size(); ++i) {
      std::string p(f[i]);
      if (!known.count(p))
        throw ValueError(fmt::format("{}unknown phoneme '{}' (valid: the 84 ARPAbet symbols of cmudict.symbols)", where,
                                     printable(p, true, 20)));
      phonemes.push_back(std::move(p));
    }
    auto [it, added] = index.emplace(word, entries.size());
    if (added) entries.push_back({word, {}});
    entries[it->second].pronunciations.push_back(std::move(phonemes));
  }
  return entries;
}

std::vector<CmudictEntry> read_cmudict(const std::string& path) { return parse_cmudict(read_lines(path), path); }

uint64_t fnv1a64(const std::string& bytes) {
  uint64_t h = 14695981039346656037ull;  // the offset basis
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;  // the FNV prime
  }
  return h;
}

CmudictSplit cmudict_split(const std::string& word) {
  const uint64_t bucket = fnv1a64(word) % 100;
  return bucket < 5 ? CmudictSplit::dev : bucket < 15 ? CmudictSplit::test : CmudictSplit::train;
}

const char* split_name(CmudictSplit split) {
  static constexpr EnumName<CmudictSplit> kNames[] = {
      {CmudictSplit::train, "train"}, {CmudictSplit::dev, "dev"}, {CmudictSplit::test, "test"}};
  return enum_name(kNames, split, "?");
}

std::vector<CmudictEntry> cmudict_subset(const std::vector<CmudictEntry>& entries, CmudictSplit split) {
  std::vector<CmudictEntry> out;
  for (const CmudictEntry& e : entries)
    if (cmudict_split(e.word) == split) out.push_back(e);
  return out;
}

const std::vector<std::string>& g2p_symbols() {
  static const std::vector<std::string> symbols = [] {
    std::vector<std::string> all = {"<pad>", "<bos>", "<eos>", "<unk>"};
    all.insert(all.end(), cmudict_letters().begin(), cmudict_letters().end());
    all.insert(all.end(), cmudict_phonemes().begin(), cmudict_phonemes().end());
    return all;
  }();
  return symbols;
}

namespace {

constexpr int32_t kFirstLetter = models::kUnk + 1;
const int32_t kFirstPhoneme = kFirstLetter + static_cast<int32_t>(cmudict_letters().size());

}  // namespace

std::vector<int32_t> g2p_encode_word(const std::string& word) {
  std::vector<int32_t> ids;
  for (const std::string& letter : cmudict_spell(word)) {
    const auto& l = cmudict_letters();
    ids.push_back(kFirstLetter + static_cast<int32_t>(std::find(l.begin(), l.end(), letter) - l.begin()));
  }
  return ids;
}

std::vector<int32_t> g2p_encode_phonemes(const std::vector<std::string>& phonemes) {
  const auto& p = cmudict_phonemes();
  std::vector<int32_t> ids;
  for (const std::string& symbol : phonemes) {
    const auto it = std::lower_bound(p.begin(), p.end(), symbol);  // sorted (cmudict.symbols' order)
    if (it == p.end() || *it != symbol)
      throw ValueError("unknown phoneme '" + printable(symbol, true, 20) +
                       "' (valid: the 84 ARPAbet symbols of cmudict.symbols)");
    ids.push_back(kFirstPhoneme + static_cast<int32_t>(it - p.begin()));
  }
  return ids;
}

std::vector<std::string> g2p_decode_phonemes(const std::vector<int32_t>& ids) {
  const auto& symbols = g2p_symbols();
  std::vector<std::string> out;
  for (int32_t id : ids) {
    if (id == models::kEos) break;
    if (id >= kFirstPhoneme && id < static_cast<int32_t>(symbols.size()))
      out.push_back(symbols[static_cast<size_t>(id)]);
  }
  return out;
}

}  // namespace attn::data
