#include "kernels/bf16.h"

#include <bit>

namespace attn::kernels::inline ATTN_ISA_NS {
namespace {

// Round to nearest even: add 0x7FFF plus the lowest kept bit, keep the top 16 bits. A NaN
// (whose payload could carry into the exponent) becomes the quiet NaN 0x7FC0, with its sign.
inline uint16_t to_bf16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  const bool nan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
  return static_cast<uint16_t>(nan ? ((bits >> 16) | 0x0040u) : rounded);
}

}  // namespace

void convert_to_bf16(const float* src, int64_t ld, int64_t rows, int64_t cols, uint16_t* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * ld;
    uint16_t* d = dst + r * cols;
    for (int64_t c = 0; c < cols; ++c) d[c] = to_bf16(s[c]);
  }
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
