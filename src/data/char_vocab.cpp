#include "attn/data/char_vocab.h"

#include <algorithm>
#include <map>

#include "attn/data/tasks.h"
#include "attn/data/text.h"

namespace attn::data {

CharVocab::CharVocab(std::vector<std::string> characters) : characters_(std::move(characters)) {
  for (size_t i = 0; i < characters_.size(); ++i) index_.emplace(characters_[i], static_cast<int32_t>(i) + kFirstCharacter);
}

CharVocab CharVocab::build(const std::vector<std::string>& lines) {
  std::map<std::string, int64_t> counts;
  for (const auto& line : lines)
    for (auto& c : utf8_characters(line)) ++counts[c];
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
