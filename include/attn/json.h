#pragma once
// JSON that comes from outside (checkpoint metadata, a run folder's log.jsonl and
// results.json, --model-config) is read through one parser with limits, and JSON attn
// writes is made through one function that cannot fail on text that is not UTF-8.
//
// Reading: nlohmann's parser is iterative, but what follows it (dumping, copying,
// comparing) recurses once per level, so an array nested 100,000 deep overflowed the stack
// of `attn view --run`. parse_json refuses more than JsonLimits::max_depth levels while it
// parses, before any value that deep exists, and text larger than max_bytes.
#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace attn {

// Deeper than any JSON attn writes (a checkpoint's metadata nests 4 levels).
inline constexpr int kMaxJsonDepth = 64;
// Larger than any JSON attn writes; a bound on what one document may ask of memory.
inline constexpr size_t kMaxJsonBytes = size_t{256} << 20;

struct JsonLimits {
  int max_depth = kMaxJsonDepth;
  size_t max_bytes = kMaxJsonBytes;
};

// `text` parsed. IoError, one line, "<what> is not valid JSON: <reason>", "<what> nests
// deeper than 64 levels" or "<what> is larger than N bytes". `what` names the source for
// messages ("run/log.jsonl:3", "model.safetensors: 'attn' metadata").
nlohmann::json parse_json(std::string_view text, const std::string& what, const JsonLimits& limits = {});
// The same, keeping the order of keys; `on_key`, when given, sees every key of the
// top-level object in order (the safetensors reader refuses a name given twice).
nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& what,
                                          const std::function<void(const std::string&)>& on_key = {},
                                          const JsonLimits& limits = {});

// `j` as text (indent as nlohmann's dump). Bytes that are not UTF-8 in its strings (a
// Latin-1 file name, say) become U+FFFD instead of failing the command after its work.
std::string json_text(const nlohmann::json& j, int indent = -1);
std::string json_text(const nlohmann::ordered_json& j, int indent = -1);

}  // namespace attn
