// Numeric option checks shared by the CLI and its fuzz target (see option_parsing.h).
#include "option_parsing.h"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "commands.h"

namespace attn::cli {

std::string integer_range_error(const std::string& text, bool is_unsigned) {
  const size_t digits = text.find_first_not_of("+-") == 1 ? 1 : 0;
  if (text.size() <= digits || text.find_first_not_of("0123456789", digits) != std::string::npos) return "";
  errno = 0;
  if (is_unsigned && text[0] != '-')
    (void)std::strtoull(text.c_str(), nullptr, 10);
  else
    (void)std::strtoll(text.c_str(), nullptr, 10);
  if (errno != ERANGE) return "";
  return text + " is out of range (at most " + (is_unsigned ? std::to_string(UINT64_MAX) : std::to_string(INT64_MAX)) +
         ")";
}

std::string integer_at_least_error(const std::string& text, unsigned long long min) {
  const std::string what = min == 0   ? "a non-negative integer"
                           : min == 1 ? "a positive integer"
                                      : "an integer >= " + std::to_string(min);
  // Digits only, after an optional '+': stoull would take "-1" as 2^64 - 1, and skips
  // leading white space first, so " -1" wrapped too (found by fuzz/option_parsing_fuzz).
  const size_t digits = !text.empty() && text[0] == '+' ? 1 : 0;
  if (text.size() > digits && text.find_first_not_of("0123456789", digits) == std::string::npos) {
    try {
      if (std::stoull(text) >= min) return "";
    } catch (const std::exception&) {  // out of range
    }
  }
  return "must be " + what + ", got '" + text + "'";
}

std::optional<long long> whole_integer(const std::string& text) {
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != text.size()) return std::nullopt;
  return value;
}

std::vector<int> parse_lengths(const std::string& text) {
  std::vector<int> lengths;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const std::optional<long long> value = whole_integer(item);
    if (!value || *value < 1 || *value > INT_MAX)
      throw UsageError("bad length '" + item + "' (expected positive integers, e.g. 5,10,20)");
    lengths.push_back(static_cast<int>(*value));
  }
  if (lengths.empty()) throw UsageError("no lengths given (e.g. --eval-lengths 5,10,20,40,80)");
  return lengths;
}

namespace {

// CLI11 reads a 64-bit integer option with strtoll and keeps the clamped value of one out
// of range (--steps 99999999999999999999 ran 9223372036854775807 steps): every integer
// option of every command refuses a decimal number outside its 64-bit range instead.
CLI::Validator integer_in_range(bool is_unsigned) {
  return CLI::Validator([is_unsigned](std::string& text) { return integer_range_error(text, is_unsigned); }, "");
}

// A flag given a value (--bidirectional=on, =5, `bidirectional = "on"` in a --config file)
// takes only true or false: CLI11 would read "on", "yes" or 5 as true, and a run's
// config.toml, which records true or false, would then describe another run. (A negated
// flag, --no-input-feeding, arrives here already turned into "true" or "false".)
CLI::Validator true_or_false() {
  return CLI::Validator(
      [](std::string& text) {
        return text == "true" || text == "false" ? std::string() : "must be true or false, got '" + text + "'";
      },
      "");
}

}  // namespace

void add_option_value_checks(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    const std::string name = option->get_name();
    if (option->get_expected_min() == 0 && name != "--help" && name != "--help-all" && name != "--version")
      option->check(true_or_false());
    else if (type.rfind("UINT", 0) == 0)
      option->check(integer_in_range(true));
    else if (type.rfind("INT", 0) == 0)
      option->check(integer_in_range(false));
  }
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) add_option_value_checks(*sub);
}

}  // namespace attn::cli
