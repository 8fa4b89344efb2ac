#include "attn/number_format.h"

#include <charconv>

namespace attn {
namespace {

template <typename T>
std::string shortest(T value) {
  char text[32];  // the longest double, -2.2250738585072014e-308, takes 24
  const auto [end, error] = std::to_chars(text, text + sizeof text, value);
  return error == std::errc() ? std::string(text, end) : std::string("?");
}

}  // namespace

std::string format_number(float value) { return shortest(value); }
std::string format_number(double value) { return shortest(value); }

}  // namespace attn
