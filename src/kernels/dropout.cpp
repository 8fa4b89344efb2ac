#include "kernels/dropout.h"

#include "attn/parallel.h"

namespace attn::kernels {
namespace {
constexpr int64_t kGrain = 1 << 14;
}  // namespace

void dropout_forward(const float* x, float* y, int64_t n, float p, uint64_t seed) {
  const float scale = 1.0f / (1.0f - p);
  parallel_for(0, n, kGrain, [=](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) y[i] = dropout_keep(seed, static_cast<uint64_t>(i), p) ? x[i] * scale : 0.0f;
  });
}

void dropout_backward(const float* dy, float* dx, int64_t n, float p, uint64_t seed) {
  // dx += dy · keep / (1 − p)
  const float scale = 1.0f / (1.0f - p);
  parallel_for(0, n, kGrain, [=](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      if (dropout_keep(seed, static_cast<uint64_t>(i), p)) dx[i] += dy[i] * scale;
  });
}

}  // namespace attn::kernels
