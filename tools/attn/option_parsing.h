#pragma once
// The CLI's option value checks, apart from main so that the libFuzzer targets
// (fuzz/option_parsing_fuzz.cpp, fuzz/train_config_fuzz.cpp) run exactly what `attn` runs.
// The text checks return "" for an accepted text, else the message CLI11 shows;
// parse_lengths throws UsageError.
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace attn::cli {

// Adds to every option of `app` and its subcommands the checks main() relies on: a flag
// given a value takes only true or false, and an integer option refuses a decimal number
// outside its 64-bit range (integer_range_error).
void add_option_value_checks(CLI::App& app);

// A decimal integer outside the 64-bit range of the option's type ("99999999999999999999":
// CLI11's strtoll would clamp it silently). Anything else (not a decimal number) is left to
// CLI11's own conversion and gives "".
std::string integer_range_error(const std::string& text, bool is_unsigned);
// A whole number >= min: digits after an optional '+', nothing else (no white space, no '-') ("must be a positive
// integer, got '0'").
std::string integer_at_least_error(const std::string& text, unsigned long long min);
// "5,10,20" -> {5, 10, 20}; UsageError on an empty list, an empty item, or an item that is
// not a positive int.
std::vector<int> parse_lengths(const std::string& text);
// The whole of `text` as a decimal integer (std::stoll: optional white space and sign first),
// or nothing when any of it is not, or it is outside the 64-bit range.
std::optional<long long> whole_integer(const std::string& text);

}  // namespace attn::cli
