#include "kernels/monotonic_online.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attn/parallel.h"
#include "fast_math.h"

namespace attn::kernels::inline ATTN_ISA_NS {
namespace {

// The energy of frame j of row b.
float energy_at(const OnlineEnergy& x, int64_t b, int64_t j, int64_t S, int64_t A) {
  const float e = additive_score(x.u + b * A, x.keys + (b * S + j) * A, x.v, A);
  return x.r ? e + *x.r : e;
}

// The first frame in [from, L) whose energy fires (e > 0), or −1.
int64_t first_stop(const OnlineEnergy& select, int64_t b, int64_t from, int64_t L, int64_t S, int64_t A) {
  for (int64_t j = std::max<int64_t>(0, from); j < L; ++j)
    if (energy_at(select, b, j, S, A) > 0.0f) return j;
  return -1;
}

// w[l − first] = softmax of chunk's u over [first, j], as kernels/monotonic.cpp's
// mocha_hard_weights computes it (double, max-subtracted), so the weights agree bit for bit.
void chunk_softmax(const OnlineEnergy& chunk, int64_t b, int64_t first, int64_t j, int64_t S, int64_t A, float* w) {
  float* u = w;  // the chunk energies, overwritten by the weights
  double m = -std::numeric_limits<double>::infinity(), sum = 0.0;
  for (int64_t l = first; l <= j; ++l) {
    u[l - first] = energy_at(chunk, b, l, S, A);
    m = std::max(m, static_cast<double>(u[l - first]));
  }
  for (int64_t l = first; l <= j; ++l) sum += std::exp(u[l - first] - m);
  for (int64_t l = first; l <= j; ++l) w[l - first] = static_cast<float>(std::exp(u[l - first] - m) / sum);
}

}  // namespace

void monotonic_online_forward(OnlineEnergy select, OnlineEnergy chunk, const float* values, const int32_t* lengths,
                              const int32_t* start, int64_t B, int64_t S, int64_t A, int64_t E, int64_t W,
                              int32_t* selected, float* context, float* weights, float* scratch) {
  // A step usually reads a frame or two: rows are worth a thread only in bulk.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / ((W + 2) * A + W * E));
  parallel_for(0, B, grain, [=](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const int64_t L = std::clamp<int64_t>(lengths[b], 0, S);
      const int64_t j = first_stop(select, b, start[b], L, S, A);
      selected[b] = static_cast<int32_t>(j);
      float* c = context + b * E;
      std::fill(c, c + E, 0.0f);
      if (weights) std::fill(weights + b * S, weights + (b + 1) * S, 0.0f);
      if (j < 0) continue;
      const int64_t first = chunk.keys ? std::max<int64_t>(0, j - W + 1) : j;
      float* w = scratch + b * W;
      if (chunk.keys)
        chunk_softmax(chunk, b, first, j, S, A, w);
      else
        w[0] = 1.0f;
      for (int64_t l = first; l <= j; ++l) {
        axpy(w[l - first], values + (b * S + l) * E, c, E);  // c += w_l values_l
        if (weights) weights[b * S + l] = w[l - first];
      }
    }
  });
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
