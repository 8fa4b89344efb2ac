#pragma once
// The CLI's numeric option checks as plain functions (no CLI11), so the libFuzzer target
// fuzz/option_parsing_fuzz.cpp calls exactly what `attn` runs. Each returns "" for an
// accepted text, else the message CLI11 shows; parse_lengths throws UsageError.
#include <string>
#include <vector>

namespace attn::cli {

// A decimal integer outside the 64-bit range of the option's type ("99999999999999999999":
// CLI11's strtoll would clamp it silently). Anything else (not a decimal number) is left to
// CLI11's own conversion and gives "".
std::string integer_range_error(const std::string& text, bool is_unsigned);
// A whole number >= min: digits after an optional '+', nothing else (no white space, no '-') ("must be a positive integer, got '0'").
std::string integer_at_least_error(const std::string& text, unsigned long long min);
// "5,10,20" -> {5, 10, 20}; UsageError on an empty list, an empty item, or an item that is
// not a positive int.
std::vector<int> parse_lengths(const std::string& text);

}  // namespace attn::cli
