#pragma once
// A model configuration's JSON object (private to src/models/): every configuration lists its
// fields once, in a table that to_json writes with write_config and from_json reads with read_config.
#include <cstdint>
#include <initializer_list>
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

// The parts one after the other: a table, then the keys newer than its first checkpoints.
std::vector<ConfigField> joined(std::initializer_list<std::vector<ConfigField>> parts);

// The JSON object of the fields: each field's value under its key.
nlohmann::json write_config(const std::vector<ConfigField>& fields);

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

// A configuration as its JSON holds it: the configuration, its choices by name (Names, a
// struct of strings) and its normaliser's fields. A table over a form serves both to_json
// (write_config) and from_json (read_config, then parsed()).
template <class Config, class Names>
struct ConfigForm {
  Config c;
  Names names;
  NormalizerFields normalizer;

  // The configuration read into this form: its choices parsed (parse_names(Config&, const
  // Names&), beside Names), its normaliser, then checked.
  Config parsed() {
    parse_names(c, names);
    c.normalizer = normalizer.normalizer();
    c.validate();
    return c;
  }
};

}  // namespace attn::models::detail
