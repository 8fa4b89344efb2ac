#include "config_json.h"

#include <fmt/format.h>

#include <cstdint>
#include <type_traits>

#include "attn/error.h"

namespace attn::models::detail {
using nlohmann::json;

namespace {

bool fits_int64(const json& v) {
  return v.is_number_integer() && (!v.is_number_unsigned() || v.get<uint64_t>() <= INT64_MAX);
}
bool fits_int32(const json& v) {
  return fits_int64(v) && v.get<int64_t>() >= INT32_MIN && v.get<int64_t>() <= INT32_MAX;
}
bool non_negative(const json& v) { return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0); }

// Whether v fits a field of `target`'s type, and that type in words.
struct Check {
  bool ok;
  const char* type;
};
Check check(const json& v, int*) { return {fits_int32(v), "an integer"}; }
Check check(const json& v, int64_t*) { return {fits_int64(v), "an integer"}; }
Check check(const json& v, uint64_t*) { return {non_negative(v), "a non-negative integer"}; }
Check check(const json& v, float*) { return {v.is_number(), "a number"}; }
Check check(const json& v, bool*) { return {v.is_boolean(), "a boolean"}; }
Check check(const json& v, std::string*) { return {v.is_string(), "a string"}; }

}  // namespace

void read_config(const std::string& what, const json& j, const std::vector<ConfigField>& fields, const char* kind) {
  if (!j.is_object()) throw ValueError(fmt::format("{} config: expected a JSON object, got {}", what, j.type_name()));
  std::string valid = kind ? "kind" : "";
  for (const auto& [key, target] : fields) valid += (valid.empty() ? "" : ", ") + std::string(key);
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    if (kind && key == "kind") {
      if (!v.is_string()) throw ValueError(fmt::format("{} config: 'kind' must be a string, got {}", what, v.dump()));
      if (v.get<std::string>() != kind)
        throw ValueError(fmt::format("{} config: 'kind' is '{}', expected '{}'", what, v.get<std::string>(), kind));
      continue;
    }
    const ConfigField* field = nullptr;
    for (const auto& f : fields)
      if (key == f.first) field = &f;
    if (!field) throw ValueError(fmt::format("{} config: unknown key '{}' (valid: {})", what, key, valid));
    std::visit(
        [&](auto* target) {
          const Check c = check(v, target);
          if (!c.ok) throw ValueError(fmt::format("{} config: '{}' must be {}, got {}", what, key, c.type, v.dump()));
          *target = v.get<std::remove_pointer_t<decltype(target)>>();
        },
        field->second);
  }
}

std::vector<ConfigField> joined(std::initializer_list<std::vector<ConfigField>> parts) {
  std::vector<ConfigField> fields;
  for (const std::vector<ConfigField>& part : parts) fields.insert(fields.end(), part.begin(), part.end());
  return fields;
}

json write_config(const std::vector<ConfigField>& fields) {
  json j = json::object();
  for (const auto& [key, field] : fields) std::visit([&, key = key](auto* value) { j[key] = *value; }, field);
  return j;
}

void write_normalizer(nlohmann::json& j, const Normalizer& normalizer) {
  if (normalizer.kind == NormalizerKind::softmax) return;
  j["normalizer"] = normalizer_name(normalizer.kind);
  // α as the float's shortest decimal ("1.3", not 1.2999999523162842); it reads back exactly.
  if (normalizer.kind == NormalizerKind::entmax) j["alpha"] = std::stod(fmt::format("{}", normalizer.alpha));
}

}  // namespace attn::models::detail
