#pragma once
// Characters ↔ ids for character-level models: PAD 0, BOS 1, EOS 2, UNK 3 (models/batch.h), then the
// characters (UTF-8 strings of one code point each, data::utf8_characters) by falling
// frequency.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "attn/models/batch.h"

namespace attn::data {

class CharVocab {
 public:
  static constexpr int32_t kUnk = models::kUnk;
  static constexpr int32_t kFirstCharacter = models::kUnk + 1;
  CharVocab() = default;
  // A checkpoint's list holds no more (models bound vocabularies at 2^24).
  static constexpr size_t kMaxCharacters = size_t{1} << 24;
  // Every character seen in `lines`, most frequent first (ties by code point order); control
  // characters are left out (they encode as UNK).
  static CharVocab build(const std::vector<std::string>& lines);
  // ValueError "character list: entry 5 ("ab") is not one UTF-8 character" (or "is a control
  // character", "appears twice"): a checkpoint's list is checked before anything decodes
  // with it, so `attn sample` never prints a newline or an ESC that the list smuggled in.
  explicit CharVocab(std::vector<std::string> characters);
  std::vector<int32_t> encode(const std::string& text) const;  // no BOS/EOS; unknown → UNK
  std::string decode(const std::vector<int32_t>& ids) const;   // skips specials, stops at EOS
  int32_t size() const { return static_cast<int32_t>(characters_.size()) + kFirstCharacter; }
  const std::vector<std::string>& characters() const { return characters_; }

 private:
  std::vector<std::string> characters_;
  std::unordered_map<std::string, int32_t> index_;
};

}  // namespace attn::data
