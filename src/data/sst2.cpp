#include "attn/data/sst2.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "attn/data/text.h"
#include "attn/error.h"

namespace attn::data {
namespace {

std::string strip(const std::string& s) {
  const char* ws = " \t\r\n\f\v";
  const size_t begin = s.find_first_not_of(ws);
  if (begin == std::string::npos) return "";
  const size_t end = s.find_last_not_of(ws);
  return s.substr(begin, end - begin + 1);
}

}  // namespace

namespace {
constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// "doesn't" -> "does" "n't", "film's" -> "film" "'s": the PTB split of English clitics.
void push_word(std::string word, std::vector<std::string>& out) {
  for (std::string_view clitic : {"n't", "'s", "'re", "'ve", "'ll", "'d", "'m"}) {
    if (word.size() > clitic.size() && word.ends_with(clitic)) {
      out.push_back(word.substr(0, word.size() - clitic.size()));
      out.emplace_back(clitic);
      return;
    }
  }
  out.push_back(std::move(word));
}

// "mr.", "vs.", "r.": the treebank keeps the period of an abbreviation or an initial.
bool is_abbreviation(std::string_view word) {
  static constexpr std::string_view kKnown[] = {"mr.", "mrs.", "ms.",   "dr.",  "st.", "jr.",  "sr.",
                                                "vs.", "etc.", "bros.", "inc.", "co.", "ltd.", "no."};
  if (word.size() == 2) return true;  // an initial
  return std::find(std::begin(kKnown), std::end(kKnown), word) != std::end(kKnown);
}

// One whitespace token of raw text as PTB tokens: leading ( [ and quotes, trailing
// , ; : ! ? ) ] quotes, a final "." or "...", then clitics.
void push_ptb_tokens(std::string word, std::vector<std::string>& out) {
  std::vector<std::string> tail;
  while (!word.empty()) {
    if (word == "``" || word == "''" || word == "..." || word == "--") break;
    const char first = word.front();
    if (first == '(' || first == '[' || first == '"') {
      out.emplace_back(first == '"' ? "``" : std::string(1, first));
      word.erase(0, 1);
      continue;
    }
    if (word.starts_with("``")) {
      out.emplace_back("``");
      word.erase(0, 2);
      continue;
    }
    const char last = word.back();
    if (word.size() > 3 && word.ends_with("...")) {
      tail.emplace_back("...");
      word.resize(word.size() - 3);
    } else if (word.size() > 2 && word.ends_with("''")) {
      tail.emplace_back("''");
      word.resize(word.size() - 2);
    } else if (std::string_view(",;:!?)]\"").find(last) != std::string_view::npos && word.size() > 1) {
      tail.emplace_back(last == '"' ? "''" : std::string(1, last));
      word.pop_back();
    } else if (last == '.' && word.size() > 1 && word.find('.') == word.size() - 1 && !is_abbreviation(word)) {
      tail.emplace_back(".");  // "movie." but not "u.s.", "mr." or "r."
      word.pop_back();
    } else {
      break;
    }
  }
  if (!word.empty()) push_word(std::move(word), out);
  out.insert(out.end(), tail.rbegin(), tail.rend());
}
}  // namespace

std::vector<std::string> sst2_tokens(std::string_view raw) {
  if (raw.starts_with(kUtf8Bom)) raw.remove_prefix(kUtf8Bom.size());
  std::string text(raw);
  // Typographic quotes and apostrophes as the treebank writes them.
  static constexpr std::pair<std::string_view, std::string_view> kQuotes[] = {
      {"\xE2\x80\x9C", "\""}, {"\xE2\x80\x9D", "\""}, {"\xE2\x80\x99", "'"}, {"\xE2\x80\x98", "`"}};
  for (const auto& [from, to] : kQuotes)
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  for (char& c : text)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  std::vector<std::string> out;
  for (std::string& word : whitespace_tokens(text)) push_ptb_tokens(std::move(word), out);
  return out;
}

std::vector<LabeledText> read_sst2(const std::string& path) {
  const std::vector<std::string> lines = read_lines(path);
  std::vector<LabeledText> out;
  out.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    // A byte-order mark (an editor's) would otherwise become part of the first word.
    const std::string& line = i == 0 && lines[i].starts_with(kUtf8Bom) ? lines[i].substr(kUtf8Bom.size()) : lines[i];
    const std::string where = path + ":" + std::to_string(i + 1);
    if (strip(line).empty()) continue;
    const size_t tab = line.rfind('\t');
    if (tab == std::string::npos) throw ValueError(where + ": expected '<sentence><TAB><label>', found no tab");
    LabeledText example;
    example.text = strip(line.substr(0, tab));
    const std::string label = strip(line.substr(tab + 1));
    if (example.text.empty()) throw ValueError(where + ": empty sentence before the tab");
    if (label == "0") {
      example.label = 0;
    } else if (label == "1") {
      example.label = 1;
    } else {
      throw ValueError(where + ": label '" + label + "' is not 0 or 1");
    }
    out.push_back(std::move(example));
  }
  if (out.empty()) throw ValueError(path + ": no examples (expected '<sentence><TAB><label>' lines)");
  return out;
}

std::string sst2_split_path(const std::string& data_dir, const std::string& split) {
  namespace fs = std::filesystem;
  std::string file;
  if (split == "train") {
    file = "sentiment-train.gz";
  } else if (split == "dev") {
    file = "sentiment-dev";
  } else if (split == "test") {
    file = "sentiment-test";
  } else {
    throw IoError("unknown SST-2 split '" + split + "' (valid: train, dev, test)");
  }
  // Accept both the folder holding sst2/ and sst2/ itself.
  fs::path dir(data_dir);
  std::error_code ec;
  if (fs::is_directory(dir / "sst2", ec)) dir /= "sst2";
  return (dir / file).string();
}

std::vector<std::string> whitespace_tokens(const std::string& text) {
  std::vector<std::string> tokens;
  size_t i = 0;
  const size_t n = text.size();
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; };
  while (i < n) {
    while (i < n && is_space(text[i])) ++i;
    const size_t begin = i;
    while (i < n && !is_space(text[i])) ++i;
    if (i > begin) tokens.push_back(text.substr(begin, i - begin));
  }
  return tokens;
}

}  // namespace attn::data

namespace attn::data {

std::vector<LabeledText> sst2_sentences(const std::vector<LabeledText>& lines) {
  // Each line as token ids, so that a span is compared and hashed as integers.
  std::unordered_map<std::string, uint32_t> ids;
  std::vector<std::vector<uint32_t>> tokens(lines.size());
  for (size_t i = 0; i < lines.size(); ++i)
    for (const std::string& t : whitespace_tokens(lines[i].text))
      tokens[i].push_back(ids.emplace(t, static_cast<uint32_t>(ids.size())).first->second);
  // A span's hash, extended one token at a time (FNV-1a over the ids, then a final mix).
  const auto step = [](uint64_t h, uint32_t id) { return (h ^ (id + 1)) * 0x100000001b3ULL; };
  constexpr uint64_t kStart = 0xcbf29ce484222325ULL;
  // The first line with each content (by hash; a match is then compared token by token),
  // and the hash of every prefix of every line.
  std::unordered_map<uint64_t, size_t> line_of;
  std::unordered_set<uint64_t> prefixes;
  for (size_t i = 0; i < lines.size(); ++i) {
    uint64_t h = kStart;
    for (uint32_t id : tokens[i]) prefixes.insert(h = step(h, id));
    if (!tokens[i].empty()) line_of.emplace(h, i);
  }
  // Every proper span of every line that is itself a line is not maximal. From each start,
  // a span is extended only while it is the prefix of some line (a hash collision there only
  // walks further), which stops most walks after a token or two.
  std::vector<bool> covered(lines.size(), false);
  for (const std::vector<uint32_t>& t : tokens)
    for (size_t i = 0; i < t.size(); ++i) {
      uint64_t h = kStart;
      for (size_t j = i; j < t.size(); ++j) {
        h = step(h, t[j]);
        if (!prefixes.contains(h)) break;
        if (i == 0 && j + 1 == t.size()) break;  // the whole line
        const auto it = line_of.find(h);
        if (it == line_of.end()) continue;
        const std::vector<uint32_t>& other = tokens[it->second];
        if (std::equal(other.begin(), other.end(), t.begin() + static_cast<std::ptrdiff_t>(i),
                       t.begin() + static_cast<std::ptrdiff_t>(j + 1)))
          covered[it->second] = true;
      }
    }
  std::vector<LabeledText> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (tokens[i].empty()) continue;
    uint64_t h = kStart;
    for (uint32_t id : tokens[i]) h = step(h, id);
    // Not inside a longer line, and the first line with this content (line_of holds it).
    if (!covered[line_of.at(h)] && line_of.at(h) == i) out.push_back(lines[i]);
  }
  return out;
}

}  // namespace attn::data
