// Issue 34, defects 2, 10 and 12: JSON from outside goes through one parser with depth and
// size limits (a 100,000-deep array in a log.jsonl overflowed the stack of `attn view
// --run`), JSON output never fails on bytes that are not UTF-8 (eval --json failed after
// the whole evaluation), and quoted text is made printable (a newline or an ESC from a
// checkpoint reached the terminal).
#include "attn/json.h"

#include "attn/printable.h"
#include "test_support.h"

namespace attn {
namespace {

std::string nested(int depth) {
  return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']');
}

TEST(Json, DepthIsLimitedWhileParsing) {
  EXPECT_EQ(parse_json(nested(kMaxJsonDepth), "x").dump().size(), 2u * kMaxJsonDepth);
  EXPECT_THROW_MSG(parse_json(nested(kMaxJsonDepth + 1), "run/log.jsonl:3"), IoError,
                   "run/log.jsonl:3 nests deeper than 64 levels");
  // The red-team's case: 100,000 levels (200 KB), objects and arrays alike.
  EXPECT_THROW_MSG(parse_json(nested(100000), "x"), IoError, "nests deeper than 64 levels");
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  EXPECT_THROW_MSG(parse_json(objects + "1" + std::string(100000, '}'), "x"), IoError, "nests deeper than 64 levels");
  // Brackets inside strings are text, not depth.
  EXPECT_EQ(parse_json("[\"" + nested(1000) + "\"]", "x")[0].get<std::string>().size(), 2000u);
  EXPECT_THROW_MSG(parse_json(nested(3), "x", {.max_depth = 2}), IoError, "x nests deeper than 2 levels");
  // The ordered reader (safetensors headers) keeps the same limit.
  EXPECT_THROW_MSG(parse_ordered_json(nested(100000), "header"), IoError, "header nests deeper than 64 levels");
}

TEST(Json, SizeAndSyntaxAreOneLine) {
  EXPECT_THROW_MSG(parse_json("[1, 2, 3]", "results.json", {.max_bytes = 4}), IoError,
                   "results.json is larger than 4 bytes");
  try {
    parse_json("{\"a\": \x1b[31m}", "meta");
    ADD_FAILURE() << "accepted";
  } catch (const IoError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("meta is not valid JSON: parse error", 0), 0u) << message;
    EXPECT_EQ(message.find('\x1b'), std::string::npos) << "raw ESC in: " << message;
    EXPECT_EQ(message.find("[json.exception"), std::string::npos) << message;
  }
  std::vector<std::string> keys;
  parse_ordered_json(R"({"b": 1, "a": {"c": 2}, "b": 3})", "x", [&](const std::string& k) { keys.push_back(k); });
  EXPECT_EQ(keys, (std::vector<std::string>{"b", "a", "b"}));  // the top level only, duplicates seen
}

TEST(Json, TextReplacesBytesThatAreNotUtf8) {
  const nlohmann::json j = {{"model", "mod\xe8le.safetensors"}, {"text", "caf\xe9"}};
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);  // what eval --json did
  EXPECT_EQ(json_text(j), "{\"model\":\"mod\xEF\xBF\xBDle.safetensors\",\"text\":\"caf\xEF\xBF\xBD\"}");
  EXPECT_EQ(json_text(nlohmann::json{{"a", 1}}, 1), "{\n \"a\": 1\n}");
}

TEST(Printable, ControlsAndInvalidBytesAreEscaped) {
  EXPECT_EQ(printable("plain caf\xC3\xA9 \xE2\x82\xAC"), "plain caf\xC3\xA9 \xE2\x82\xAC");  // UTF-8 kept
  EXPECT_EQ(printable("a\nb\x1b[2Jc\x7f"), "a\\x0ab\\x1b[2Jc\\x7f");
  EXPECT_EQ(printable("caf\xe9"), "caf\\xe9");  // Latin-1: not UTF-8
  EXPECT_EQ(printable("x\xC2\x9B"
                      "y"),
            "x\\xc2\\x9by");  // U+009B, the 8-bit CSI
  EXPECT_EQ(printable("\xC3\xA9", true), "\\xc3\\xa9");
  EXPECT_EQ(printable("abcdef", false, 3), "abc...");
}

}  // namespace
}  // namespace attn
