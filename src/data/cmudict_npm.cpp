#include "attn/data/cmudict_npm.h"

#include <nlohmann/json.hpp>
#include <unordered_set>

#include "attn/error.h"
#include "attn/printable.h"

namespace attn::data {
namespace {

constexpr std::string_view kModulePrefix = "export const dictionary =";

bool valid_word(const std::string& word) {
  if (word.empty()) return false;
  for (unsigned char c : word)
    if (c <= ' ' || c == 0x7f) return false;
  return true;
}

// "B AW1 T", or with CMUdict's own comment, "AO1 L B AO0 R G # place, danish": one line,
// kept as it is.
bool valid_pronunciation(const std::string& text) {
  if (text.empty() || text.front() == ' ') return false;
  for (unsigned char c : text)
    if (c < ' ' || c == 0x7f) return false;
  return true;
}

// SAX events of the JSON object: only {"word": "PHONEMES", ...} is accepted; each entry is
// written as a line as it arrives (the package's order).
struct DictionaryReader : nlohmann::json_sax<nlohmann::json> {
  std::string lines, word, problem;  // word: the key whose value comes next
  std::unordered_set<std::string> seen;
  int depth = 0;
  size_t entries = 0;
  size_t offset = 0;  // of the object in index.js

  bool refuse(const std::string& why) {
    if (problem.empty()) problem = why;
    return false;
  }
  bool not_a_string(const char* what) {
    return refuse(depth == 0 ? "the export is not an object"
                             : "the value of \"" + printable(word) + "\" is " + what + ", not a string of phonemes");
  }
  bool null() override { return not_a_string("null"); }
  bool boolean(bool) override { return not_a_string("a boolean"); }
  bool number_integer(number_integer_t) override { return not_a_string("a number"); }
  bool number_unsigned(number_unsigned_t) override { return not_a_string("a number"); }
  bool number_float(number_float_t, const string_t&) override { return not_a_string("a number"); }
  bool binary(binary_t&) override { return not_a_string("binary"); }
  bool start_array(std::size_t) override { return not_a_string("an array"); }
  bool end_array() override { return false; }
  bool start_object(std::size_t) override {
    if (depth++ > 0) return not_a_string("an object");
    return true;
  }
  bool end_object() override {
    --depth;
    return true;
  }
  bool key(string_t& text) override {
    if (!valid_word(text)) return refuse("the word \"" + printable(text) + "\" is empty or holds white space");
    if (!seen.insert(text).second) return refuse("the word \"" + printable(text) + "\" appears twice");
    word = text;
    return true;
  }
  bool string(string_t& value) override {
    if (depth == 0) return not_a_string("a string");
    if (!valid_pronunciation(value))
      return refuse("the pronunciation of \"" + printable(word) + "\" is empty or not one line: \"" + printable(value) +
                    "\"");
    lines += word;
    lines += "  ";
    lines += value;
    lines += '\n';
    ++entries;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) override {
    return refuse("the object does not parse as JSON at byte " + std::to_string(offset + position) + " of index.js");
  }
};

}  // namespace

std::string cmudict_lines_from_npm_module(std::string_view js) {
  const std::string what = "index.js of cmu-pronouncing-dictionary: ";
  // The leading `/** @type ... */` comment and white space, then the export.
  size_t at = js.find_first_not_of(" \t\r\n");
  while (at != std::string_view::npos && js.substr(at, 2) == "/*") {
    const size_t end = js.find("*/", at + 2);
    if (end == std::string_view::npos) throw ValueError(what + "a comment is not closed");
    at = js.find_first_not_of(" \t\r\n", end + 2);
  }
  if (at == std::string_view::npos || js.substr(at, kModulePrefix.size()) != kModulePrefix)
    throw ValueError(what + "not the package's module (expected `export const dictionary = {...}`)");
  std::string_view object = js.substr(at + kModulePrefix.size());
  // The statement's end: white space and an optional semicolon.
  while (!object.empty() && (object.back() == ';' || object.back() == ' ' || object.back() == '\n' ||
                             object.back() == '\r' || object.back() == '\t'))
    object.remove_suffix(1);
  DictionaryReader reader;
  reader.offset = static_cast<size_t>(object.data() - js.data());
  const bool parsed = nlohmann::json::sax_parse(object.begin(), object.end(), &reader);
  if (!parsed || !reader.problem.empty())
    throw ValueError(what + (reader.problem.empty() ? "the dictionary object does not parse" : reader.problem));
  if (reader.entries == 0) throw ValueError(what + "the dictionary is empty");
  return std::move(reader.lines);
}

}  // namespace attn::data
