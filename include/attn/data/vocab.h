#pragma once
// A word vocabulary for classifiers, built from training texts split on whitespace (SST-2
// is already lower-cased and PTB-tokenised, so no further normalisation happens here).
//
//   id 0 "<pad>", id 1 "<unk>", then every word with frequency >= min_freq, most frequent
//   first, ties in byte order of the word, at most max_size entries in all (specials
//   included; 0 = no limit).
//
// Its specials differ from the sequence vocabularies' (models/batch.h: PAD 0, BOS 1, EOS 2,
// UNK 3) on purpose: a word vocabulary has no BOS/EOS, and moving "<unk>" to 3 would shift
// every word's id, so no classifier checkpoint already written would load and the SST-2
// results would change. Its ids never meet a sequence model's.
//
// The vocabulary is saved inside checkpoints as JSON: {"min_freq": 1, "max_size": 0,
// "tokens": ["<pad>", "<unk>", "the", ...]}.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <unordered_map>
#include <vector>

namespace attn::data {

struct VocabOptions {
  int min_freq = 1;      // >= 1
  int64_t max_size = 0;  // total entries including the two specials; 0 = unlimited, else >= 2
};

class Vocab {
 public:
  static constexpr int32_t kPad = 0;
  static constexpr int32_t kUnk = 1;

  Vocab();  // only the two specials
  // ValueError for min_freq < 1 or max_size in {1} / < 0.
  static Vocab build(const std::vector<std::string>& texts, VocabOptions options = {});
  // From an explicit token list; it must start with "<pad>", "<unk>" and hold no duplicates
  // (ValueError otherwise).
  static Vocab from_tokens(std::vector<std::string> tokens);

  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  int32_t id(const std::string& token) const;  // kUnk when unknown
  const std::string& token(int32_t id) const;  // ValueError outside [0, size)
  const std::vector<std::string>& tokens() const { return tokens_; }
  // Whitespace tokens -> ids (kUnk for unknown words). An empty text gives no ids.
  std::vector<int32_t> encode(const std::string& text) const;

  nlohmann::json to_json() const;
  // ValueError for a malformed document (not an object, no "tokens" array of strings,
  // wrong specials, duplicates).
  static Vocab from_json(const nlohmann::json& j);

  VocabOptions options;  // what build() was given (recorded in to_json)

 private:
  explicit Vocab(std::nullptr_t) {}  // empty; filled by from_tokens
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t> index_;
};

}  // namespace attn::data
