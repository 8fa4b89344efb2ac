#include "kernels/dropout.h"

#include "attn/parallel.h"

namespace attn::kernels::inline ATTN_ISA_NS {
namespace {
constexpr int64_t kGrain = 1 << 14;

// The loops read and write through local restrict pointers and select instead of branching,
// so that GCC vectorises the hash (the pointers captured in the closure could alias the
// output, which kept the loop scalar: 16 % of a bf16 Transformer step).
// out[i] = in[i] · keep_i / (1 − p), or out[i] += that when Accumulate.
template <bool Accumulate>
void dropout_apply(const float* in, float* out, int64_t n, float p, uint64_t seed) {
  const float scale = 1.0f / (1.0f - p);
  parallel_for(0, n, kGrain, [=](int64_t lo, int64_t hi) {
    const float* __restrict ins = in;
    float* __restrict outs = out;
    for (int64_t i = lo; i < hi; ++i) {
      const float kept = ins[i] * scale;
      const float value = dropout_keep(seed, static_cast<uint64_t>(i), p) ? kept : 0.0f;
      if constexpr (Accumulate)
        outs[i] += value;
      else
        outs[i] = value;
    }
  });
}

}  // namespace

void dropout_forward(const float* x, float* y, int64_t n, float p, uint64_t seed) {
  dropout_apply<false>(x, y, n, p, seed);
}

void dropout_backward(const float* dy, float* dx, int64_t n, float p, uint64_t seed) {
  // dx += dy · keep / (1 − p)
  dropout_apply<true>(dy, dx, n, p, seed);
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
