#include "kernels/dropout.h"

#include "attn/parallel.h"

namespace attn::kernels::inline ATTN_ISA_NS {
namespace {
constexpr int64_t kGrain = 1 << 14;
}  // namespace

// The loops read and write through local restrict pointers and select instead of branching,
// so that GCC vectorises the hash (the pointers captured in the closure could alias the
// output, which kept the loop scalar: 16 % of a bf16 Transformer step).

void dropout_forward(const float* x, float* y, int64_t n, float p, uint64_t seed) {
  const float scale = 1.0f / (1.0f - p);
  parallel_for(0, n, kGrain, [=](int64_t lo, int64_t hi) {
    const float* __restrict xs = x;
    float* __restrict ys = y;
    for (int64_t i = lo; i < hi; ++i) {
      const float kept = xs[i] * scale;
      ys[i] = dropout_keep(seed, static_cast<uint64_t>(i), p) ? kept : 0.0f;
    }
  });
}

void dropout_backward(const float* dy, float* dx, int64_t n, float p, uint64_t seed) {
  // dx += dy · keep / (1 − p)
  const float scale = 1.0f / (1.0f - p);
  parallel_for(0, n, kGrain, [=](int64_t lo, int64_t hi) {
    const float* __restrict dys = dy;
    float* __restrict dxs = dx;
    for (int64_t i = lo; i < hi; ++i) {
      const float kept = dys[i] * scale;
      dxs[i] += dropout_keep(seed, static_cast<uint64_t>(i), p) ? kept : 0.0f;
    }
  });
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
