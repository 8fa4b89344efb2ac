#include "attn/json.h"

#include "attn/error.h"
#include "attn/printable.h"

namespace attn {
namespace {

// nlohmann's message without its "[json.exception.parse_error.101] " prefix, made printable
// (its "last read" excerpt is raw input).
std::string parse_reason(const std::exception& e) {
  std::string why = e.what();
  const size_t end = why.find("] ");
  if (why.rfind("[json.exception.", 0) == 0 && end != std::string::npos) why.erase(0, end + 2);
  return printable(why, true, 200);
}

// Thrown from the parser callback to stop at the first level too deep.
struct TooDeep {};

template <class Json>
Json parse_limited(std::string_view text, const std::string& what,
                   const std::function<void(const std::string&)>& on_key, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes)
    throw IoError(what + " is larger than " + std::to_string(limits.max_bytes) + " bytes");
  // `depth` counts the containers open around the event: 0 for the outermost one's start.
  typename Json::parser_callback_t callback = [&](int depth, typename Json::parse_event_t event, Json& parsed) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= limits.max_depth)
      throw TooDeep{};
    if (on_key && depth == 1 && event == Json::parse_event_t::key && parsed.is_string())
      on_key(parsed.template get_ref<const std::string&>());
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), callback);
  } catch (const TooDeep&) {
    throw IoError(what + " nests deeper than " + std::to_string(limits.max_depth) + " levels");
  } catch (const nlohmann::json::exception& e) {
    throw IoError(what + " is not valid JSON: " + parse_reason(e));
  }
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& what, const JsonLimits& limits) {
  return parse_limited<nlohmann::json>(text, what, {}, limits);
}

nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& what,
                                          const std::function<void(const std::string&)>& on_key,
                                          const JsonLimits& limits) {
  return parse_limited<nlohmann::ordered_json>(text, what, on_key, limits);
}

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string json_text(const nlohmann::ordered_json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace attn
