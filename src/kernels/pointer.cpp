#include "kernels/pointer.h"

#include <algorithm>
#include <cmath>

#include "attn/parallel.h"
#include "kernels/normalizer.h"

namespace attn::kernels::inline ATTN_ISA_NS {
namespace {
// Rows per chunk: enough work per thread to pay for the fork.
int64_t row_grain(int64_t width) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, width)); }
}  // namespace

void pointer_mixture_forward(const float* logits, const float* p_gen, const float* a, const int32_t* src, float* pv,
                             float* P, float* y, int64_t N, int64_t V, int64_t Vx, int64_t S, float floor) {
  parallel_for(0, N, row_grain(Vx + S), [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      float* pv_r = pv + r * V;
      float* P_r = P + r * Vx;
      normalizer_row_forward(Normalizer{}, logits + r * V, nullptr, pv_r, V);  // softmax
      const float gen = p_gen[r], copy = 1.0f - p_gen[r];
      for (int64_t v = 0; v < V; ++v) P_r[v] = gen * pv_r[v];
      for (int64_t v = V; v < Vx; ++v) P_r[v] = 0.0f;
      for (int64_t i = 0; i < S; ++i) P_r[src[r * S + i]] += copy * a[r * S + i];  // scatter_add, i ascending
      for (int64_t v = 0; v < Vx; ++v) y[r * Vx + v] = std::log(std::max(P_r[v], floor));
    }
  });
}

void pointer_mixture_backward(const float* dy, const float* p_gen, const float* a, const int32_t* src, const float* pv,
                              const float* P, float* dlogits, float* dp_gen, float* da, int64_t N, int64_t V,
                              int64_t Vx, int64_t S, float floor) {
  parallel_for(0, N, row_grain(Vx + S), [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* dy_r = dy + r * Vx;
      const float* P_r = P + r * Vx;
      const float* pv_r = pv + r * V;
      // d log max(P, floor) / dP: 1 / P above the floor, 0 below (as torch.clamp).
      auto g = [&](int64_t v) { return P_r[v] >= floor ? dy_r[v] / P_r[v] : 0.0f; };
      double vocab_sum = 0.0;  // Σ_{v<V} pv[v] g[v]
      for (int64_t v = 0; v < V; ++v) vocab_sum += static_cast<double>(pv_r[v]) * g(v);
      const float gen = p_gen[r];
      if (dlogits) {
        float* dl = dlogits + r * V;
        for (int64_t v = 0; v < V; ++v) dl[v] += gen * (pv_r[v] * g(v) - pv_r[v] * static_cast<float>(vocab_sum));
      }
      double copy_sum = 0.0;  // Σ_i a[i] g[src[i]]
      for (int64_t i = 0; i < S; ++i) {
        const float gi = g(src[r * S + i]);
        copy_sum += static_cast<double>(a[r * S + i]) * gi;
        if (da) da[r * S + i] += (1.0f - gen) * gi;
      }
      if (dp_gen) dp_gen[r] += static_cast<float>(vocab_sum - copy_sum);
    }
  });
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
