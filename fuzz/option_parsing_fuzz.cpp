// libFuzzer target: the CLI's numeric option checks (tools/attn/option_parsing.cpp), which
// every integer option of every command and --eval-lengths go through. Checks the promises
// too: an accepted integer_at_least text is a whole number >= min, and parse_lengths returns
// only positive lengths, one per comma-separated item.
#include <cstdlib>

#include "commands.h"
#include "option_parsing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)attn::cli::integer_range_error(text, true);
  (void)attn::cli::integer_range_error(text, false);
  for (unsigned long long min : {0ull, 1ull, 2ull}) {
    if (!attn::cli::integer_at_least_error(text, min).empty()) continue;
    // Digits after an optional '+', nothing else.
    const size_t digits = !text.empty() && text[0] == '+' ? 1 : 0;
    if (digits >= text.size() || text.find_first_not_of("0123456789", digits) != std::string::npos ||
        std::strtoull(text.c_str(), nullptr, 10) < min)
      std::abort();  // accepted something that is not a whole number >= min
  }
  try {
    const std::vector<int> lengths = attn::cli::parse_lengths(text);
    for (int n : lengths)
      if (n < 1) std::abort();
  } catch (const attn::cli::UsageError&) {
  }
  return 0;
}
