#include "attn/data/vocab.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "attn/data/sst2.h"
#include "attn/error.h"

namespace attn::data {

Vocab::Vocab() : Vocab(from_tokens({"<pad>", "<unk>"})) {}

Vocab Vocab::from_tokens(std::vector<std::string> tokens) {
  if (tokens.size() < 2 || tokens[0] != "<pad>" || tokens[1] != "<unk>")
    throw ValueError("vocabulary must start with \"<pad>\" (id 0) and \"<unk>\" (id 1)");
  Vocab v(nullptr);
  v.index_.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!v.index_.emplace(tokens[i], static_cast<int32_t>(i)).second)
      throw ValueError("vocabulary lists '" + tokens[i] + "' twice (ids " + std::to_string(v.index_[tokens[i]]) +
                       " and " + std::to_string(i) + ")");
  }
  v.tokens_ = std::move(tokens);
  return v;
}

Vocab Vocab::build(const std::vector<std::string>& texts, VocabOptions options) {
  if (options.min_freq < 1)
    throw ValueError("vocabulary min_freq must be >= 1, got " + std::to_string(options.min_freq));
  if (options.max_size < 0 || options.max_size == 1)
    throw ValueError("vocabulary max_size must be 0 (unlimited) or >= 2, got " + std::to_string(options.max_size));
  std::unordered_map<std::string, int64_t> counts;
  for (const std::string& text : texts)
    for (std::string& word : whitespace_tokens(text)) ++counts[std::move(word)];
  counts.erase("<pad>");
  counts.erase("<unk>");
  std::vector<std::pair<std::string, int64_t>> words;
  for (auto& [word, count] : counts)
    if (count >= options.min_freq) words.emplace_back(word, count);
  std::sort(words.begin(), words.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<std::string> tokens = {"<pad>", "<unk>"};
  for (auto& [word, count] : words) {
    if (options.max_size > 0 && static_cast<int64_t>(tokens.size()) >= options.max_size) break;
    tokens.push_back(word);
  }
  Vocab v = from_tokens(std::move(tokens));
  v.options = options;
  return v;
}

int32_t Vocab::id(const std::string& token) const {
  auto it = index_.find(token);
  return it == index_.end() ? kUnk : it->second;
}

const std::string& Vocab::token(int32_t id) const {
  if (id < 0 || id >= size())
    throw ValueError("vocabulary id " + std::to_string(id) + " is out of range [0, " + std::to_string(size()) + ")");
  return tokens_[static_cast<size_t>(id)];
}

std::vector<int32_t> Vocab::encode(const std::string& text) const {
  std::vector<int32_t> ids;
  for (const std::string& word : whitespace_tokens(text)) ids.push_back(id(word));
  return ids;
}

nlohmann::json Vocab::to_json() const {
  return {{"min_freq", options.min_freq}, {"max_size", options.max_size}, {"tokens", tokens_}};
}

Vocab Vocab::from_json(const nlohmann::json& j) {
  try {
    if (!j.is_object()) throw ValueError("vocabulary: expected a JSON object");
    if (!j.contains("tokens") || !j.at("tokens").is_array())
      throw ValueError("vocabulary: expected a \"tokens\" array");
    std::vector<std::string> tokens;
    for (const auto& t : j.at("tokens")) {
      if (!t.is_string()) throw ValueError("vocabulary: every token must be a string, got " + t.dump());
      tokens.push_back(t.get<std::string>());
    }
    Vocab v = from_tokens(std::move(tokens));
    v.options.min_freq = j.value("min_freq", 1);
    v.options.max_size = j.value("max_size", int64_t{0});
    return v;
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(std::string("vocabulary: bad JSON: ") + e.what());
  }
}

}  // namespace attn::data
