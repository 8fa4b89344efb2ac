#include "kernels/pool.h"

#include <algorithm>

#include "attn/parallel.h"

namespace attn::kernels {
namespace {
// Rows per chunk: enough work per thread to pay for the fork.
int64_t batch_grain(int64_t S, int64_t E) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, S * E)); }
}  // namespace

void masked_max_time_forward(const float* x, const int32_t* lengths, float* y, int32_t* argmax, int64_t B, int64_t S,
                             int64_t E) {
  parallel_for(0, B, batch_grain(S, E), [=](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const int64_t L = lengths[b];
      float* yb = y + b * E;
      int32_t* ab = argmax + b * E;
      if (L <= 0) {
        for (int64_t e = 0; e < E; ++e) {
          yb[e] = 0.0f;
          ab[e] = -1;
        }
        continue;
      }
      const float* xb = x + b * S * E;
      for (int64_t e = 0; e < E; ++e) {
        yb[e] = xb[e];
        ab[e] = 0;
      }
      // Strictly greater: the first position wins ties.
      for (int64_t s = 1; s < L; ++s) {
        const float* xs = xb + s * E;
        for (int64_t e = 0; e < E; ++e) {
          const bool better = xs[e] > yb[e];
          yb[e] = better ? xs[e] : yb[e];
          ab[e] = better ? static_cast<int32_t>(s) : ab[e];
        }
      }
    }
  });
}

void masked_max_time_backward(const float* dy, const int32_t* argmax, float* dx, int64_t B, int64_t S, int64_t E) {
  parallel_for(0, B, batch_grain(S, E), [=](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const float* dyb = dy + b * E;
      const int32_t* ab = argmax + b * E;
      float* dxb = dx + b * S * E;
      for (int64_t e = 0; e < E; ++e)
        if (ab[e] >= 0) dxb[static_cast<int64_t>(ab[e]) * E + e] += dyb[e];
    }
  });
}

void masked_mean_time_forward(const float* x, const int32_t* lengths, float* y, int64_t B, int64_t S, int64_t E) {
  parallel_for(0, B, batch_grain(S, E), [=](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const int64_t L = lengths[b];
      float* yb = y + b * E;
      for (int64_t e = 0; e < E; ++e) yb[e] = 0.0f;
      if (L <= 0) continue;
      const float* xb = x + b * S * E;
      for (int64_t s = 0; s < L; ++s) {
        const float* xs = xb + s * E;
        for (int64_t e = 0; e < E; ++e) yb[e] += xs[e];
      }
      const float inv = 1.0f / static_cast<float>(L);
      for (int64_t e = 0; e < E; ++e) yb[e] *= inv;
    }
  });
}

void masked_mean_time_backward(const float* dy, const int32_t* lengths, float* dx, int64_t B, int64_t S, int64_t E) {
  parallel_for(0, B, batch_grain(S, E), [=](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const int64_t L = lengths[b];
      if (L <= 0) continue;
      const float inv = 1.0f / static_cast<float>(L);
      const float* dyb = dy + b * E;
      float* dxb = dx + b * S * E;
      for (int64_t s = 0; s < L; ++s) {
        float* ds = dxb + s * E;
        for (int64_t e = 0; e < E; ++e) ds[e] += dyb[e] * inv;
      }
    }
  });
}

}  // namespace attn::kernels
