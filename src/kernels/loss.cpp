#include "kernels/loss.h"

#include "attn/parallel.h"
#include "fast_math.h"
#include "kernels/softmax.h"

namespace attn::kernels::inline ATTN_ISA_NS {
namespace {
int64_t row_grain(int64_t v) { return v >= 16384 ? 1 : 16384 / (v < 1 ? 1 : v); }
}  // namespace

void cross_entropy_forward(const float* logits, const int32_t* targets, int64_t rows, int64_t v, int32_t ignore_index,
                           float smoothing, float* lse, float* loss) {
  parallel_for(0, rows, row_grain(v), [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int32_t t = targets[r];
      if (t == ignore_index) {
        lse[r] = 0.0f;
        loss[r] = 0.0f;
        continue;
      }
      const float* x = logits + r * v;
      const float l = logsumexp_row(x, nullptr, v);
      lse[r] = l;
      float value = (1.0f - smoothing) * (l - x[t]);
      if (smoothing != 0.0f) {
        // ε · mean_j (−log p_j) = ε (lse − mean_j x_j)
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < v; ++j) sum += x[j];
        value += smoothing * (l - sum / static_cast<float>(v));
      }
      loss[r] = value;
    }
  });
}

void cross_entropy_backward(const float* logits, const int32_t* targets, const float* lse, int64_t rows, int64_t v,
                            int32_t ignore_index, float smoothing, float scale, float* dlogits) {
  // d loss_r / d x_j = p_j − (1 − ε)[j = t] − ε / V
  const float uniform = smoothing / static_cast<float>(v);
  parallel_for(0, rows, row_grain(v), [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int32_t t = targets[r];
      if (t == ignore_index) continue;
      const float* x = logits + r * v;
      float* dx = dlogits + r * v;
      const float l = lse[r];
#pragma omp simd
      for (int64_t j = 0; j < v; ++j) dx[j] += scale * (fast_exp(x[j] - l) - uniform);
      dx[t] -= scale * (1.0f - smoothing);
    }
  });
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
