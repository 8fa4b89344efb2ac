#pragma once
// The one way attn writes a number into a message: the shortest text that reads back as
// the same value (std::to_chars), so 0.1f prints "0.1", 1e-7f "1e-07" (not "0.000000"),
// 3e37f "3e+37", and NaN / infinities "nan", "inf", "-inf". A float and a double each
// round-trip in their own precision: format_number(0.1f) is "0.1", not 0.10000000149011612.
#include <string>

namespace attn {

std::string format_number(float value);
std::string format_number(double value);

}  // namespace attn
