#include "attn/data/char_vocab.h"

#include <algorithm>
#include <map>

#include "attn/data/tasks.h"
#include "attn/data/text.h"
#include "attn/error.h"
#include "attn/printable.h"

namespace attn::data {

namespace {

// A C0 control (newline, ESC, ...), DEL or a C1 control (U+0080..U+009F), one code point.
bool is_control(std::string_view c) {
  const auto b0 = static_cast<unsigned char>(c[0]);
  return b0 < 0x20 || b0 == 0x7f || (b0 == 0xC2 && c.size() == 2 && static_cast<unsigned char>(c[1]) < 0xA0);
}

}  // namespace

CharVocab::CharVocab(std::vector<std::string> characters) : characters_(std::move(characters)) {
  if (characters_.size() > kMaxCharacters)
    throw ValueError("character list: " + std::to_string(characters_.size()) + " entries, more than " +
                     std::to_string(kMaxCharacters));
  for (size_t i = 0; i < characters_.size(); ++i) {
    const std::string& c = characters_[i];
    auto refuse = [&](const std::string& why) {
      throw ValueError("character list: entry " + std::to_string(i) + " (\"" + printable(c, false, 40) + "\") " + why);
    };
    if (c.empty() || utf8_length_at(c, 0) != c.size()) refuse("is not one UTF-8 character");
    if (is_control(c)) refuse("is a control character");
    if (!index_.emplace(c, static_cast<int32_t>(i) + kFirstCharacter).second) refuse("appears twice");
  }
}

CharVocab CharVocab::build(const std::vector<std::string>& lines) {
  std::map<std::string, int64_t> counts;
  for (const auto& line : lines)
    for (auto& c : utf8_characters(line))
      if (!is_control(c)) ++counts[c];  // a '\r' or ESC in the text is read as unknown
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> characters;
  for (auto& [c, n] : sorted) characters.push_back(c);
  return CharVocab(std::move(characters));
}

std::vector<int32_t> CharVocab::encode(const std::string& text) const {
  std::vector<int32_t> ids;
  for (const auto& c : utf8_characters(text)) {
    auto it = index_.find(c);
    ids.push_back(it == index_.end() ? kUnk : it->second);
  }
  return ids;
}

std::string CharVocab::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  for (int32_t id : ids) {
    if (id == kEos) break;
    if (id < kFirstCharacter || id >= size()) continue;
    text += characters_[static_cast<size_t>(id - kFirstCharacter)];
  }
  return text;
}

}  // namespace attn::data
