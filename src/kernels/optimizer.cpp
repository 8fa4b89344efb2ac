#include "kernels/optimizer.h"

#include <cmath>

#include "attn/parallel.h"

namespace attn::kernels::inline ATTN_ISA_NS {
namespace {
constexpr int64_t kGrain = 1 << 14;  // elements per thread chunk, at least

// Elements [lo, hi) of one Adam step. The two scalar branches (torch.lerp's side, AdamW's
// decay) are template arguments: a branch inside the loop kept GCC from vectorising it.
template <bool kLowWeight, bool kDecay>
void adam_chunk(float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v, int64_t lo,
                int64_t hi, const AdamScalars s) {
  for (int64_t i = lo; i < hi; ++i) {
    float x = p[i];
    if constexpr (kDecay) x *= s.decay;  // AdamW: p *= 1 − lr·wd
    const float d = g[i] + s.l2 * x;     // Adam: g + wd·p (l2 = 0 for AdamW)
    // torch.lerp(m, d, w1): w < 0.5 ? m + w (d − m) : d − (d − m)(1 − w)
    float mi;
    if constexpr (kLowWeight) {
      mi = m[i] + s.w1 * (d - m[i]);
    } else {
      mi = d - (d - m[i]) * (1.0f - s.w1);
    }
    const float vi = s.beta2 * v[i] + s.w2 * d * d;
    m[i] = mi;
    v[i] = vi;
    p[i] = x - s.step_size * (mi / (std::sqrt(vi) / s.bc2_sqrt + s.eps));
  }
}

template <bool kLowWeight, bool kDecay>
void adam_all(float* p, const float* g, float* m, float* v, int64_t n, const AdamScalars s) {
  parallel_for(0, n, kGrain, [=](int64_t lo, int64_t hi) { adam_chunk<kLowWeight, kDecay>(p, g, m, v, lo, hi, s); });
}

}  // namespace

void adam_update(float* p, const float* g, float* m, float* v, int64_t n, const AdamScalars& s) {
  const bool low = s.w1 < 0.5f, decay = s.decay != 1.0f;
  if (low && decay) return adam_all<true, true>(p, g, m, v, n, s);
  if (low) return adam_all<true, false>(p, g, m, v, n, s);
  if (decay) return adam_all<false, true>(p, g, m, v, n, s);
  adam_all<false, false>(p, g, m, v, n, s);
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
