#include "kernels/location_aware.h"

#include <algorithm>

#include "attn/parallel.h"

namespace attn::kernels {

void location_windows_forward(const float* prev, int64_t B, int64_t S, int64_t r, float* cols) {
  const int64_t half = r / 2;
  parallel_for(0, B * S, std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, r)), [=](int64_t lo, int64_t hi) {
    for (int64_t row = lo; row < hi; ++row) {  // row = b·S + s
      const int64_t b = row / S, s = row % S;
      const float* p = prev + b * S;
      float* c = cols + row * r;
      // j in [first, last) reads p[s + j − half] inside [0, S)
      const int64_t first = std::clamp<int64_t>(half - s, 0, r), last = std::clamp<int64_t>(S + half - s, 0, r);
      std::fill(c, c + first, 0.0f);
      for (int64_t j = first; j < last; ++j) c[j] = p[s + j - half];
      std::fill(c + std::max(first, last), c + r, 0.0f);
    }
  });
}

void location_windows_backward(const float* dcols, int64_t B, int64_t S, int64_t r, float* dprev) {
  const int64_t half = r / 2;
  // One batch row per task: every (s, j) of row b adds into dprev[b, ·] only, in a fixed order.
  parallel_for(0, B, 1, [=](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      float* d = dprev + b * S;
      for (int64_t s = 0; s < S; ++s) {
        const float* c = dcols + (b * S + s) * r;
        const int64_t first = std::clamp<int64_t>(half - s, 0, r), last = std::clamp<int64_t>(S + half - s, 0, r);
        for (int64_t j = first; j < last; ++j) d[s + j - half] += c[j];
      }
    }
  });
}

}  // namespace attn::kernels
