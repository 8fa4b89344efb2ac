#pragma once
// Reading a model configuration from its JSON object (private to src/models/): every
// configuration's from_json is one read_config call over its table of fields.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "attn/ops/softmax.h"

namespace attn::models::detail {

// A configuration field by its JSON key: int (an integer in the int32 range), int64_t,
// uint64_t (a non-negative integer: seeds), float (a number), bool, or std::string.
using ConfigField = std::pair<const char*, std::variant<int*, int64_t*, uint64_t*, float*, bool*, std::string*>>;

// Copies the keys of `j` into their fields (an absent key leaves its field alone).
// ValueError for
//   a non-object          <what> config: expected a JSON object, got array
//   a key not in fields   <what> config: unknown key 'hiden' (valid: kind, vocab, emb, ...)
//   a wrong type          <what> config: 'd_model' must be an integer, got "16"
//   another kind          <what> config: 'kind' is 'bilstm', expected 'bilstm-attn'
// With `kind`, a "kind" key is allowed and must be that string.
void read_config(const std::string& what, const nlohmann::json& j, const std::vector<ConfigField>& fields,
                 const char* kind = nullptr);

// A configuration's attention normaliser in its JSON: "normalizer" (and "alpha" for entmax),
// written only when not softmax, so a softmax model's JSON keeps its older form. read_config
// fills a NormalizerFields through fields(); normalizer() parses it (ValueError for an
// unknown name: "unknown normaliser 'x': expected softmax, ...").
void write_normalizer(nlohmann::json& j, const Normalizer& normalizer);
struct NormalizerFields {
  std::string name = "softmax";
  float alpha = Normalizer{}.alpha;
  std::vector<ConfigField> fields() { return {{"normalizer", &name}, {"alpha", &alpha}}; }
  Normalizer normalizer() const { return {parse_normalizer(name), alpha}; }
};

}  // namespace attn::models::detail
