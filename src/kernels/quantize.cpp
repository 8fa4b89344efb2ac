// Dynamic per-row quantization of the int8 GEMM's activations (kernels/quantize.h).
#include "kernels/quantize.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

namespace attn::kernels::inline ATTN_ISA_NS {

void quantize_rows_u8(const float* src, int64_t ld, int64_t rows, int64_t cols, uint8_t* dst, float* scale) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* x = src + i * ld;
    uint8_t* q = dst + i * cols;
    float amax = 0.0f;
    bool finite = true;
    for (int64_t j = 0; j < cols; ++j) {
      const float a = std::fabs(x[j]);
      amax = std::max(amax, a);
      finite &= a <= FLT_MAX;  // false for NaN and inf
    }
    if (!finite || amax == 0.0f) {
      scale[i] = finite ? 0.0f : std::numeric_limits<float>::quiet_NaN();
      std::fill(q, q + cols, uint8_t{128});
      continue;
    }
    scale[i] = amax / 127.0f;
    const float inverse = 127.0f / amax;
    for (int64_t j = 0; j < cols; ++j) {
      const float r = std::clamp(std::nearbyint(x[j] * inverse), -127.0f, 127.0f);
      q[j] = static_cast<uint8_t>(static_cast<int32_t>(r) + 128);
    }
  }
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
