#pragma once
// Elementwise CPU kernels: raw pointers and sizes, no checks, no allocation.
// Backward kernels accumulate (+=) into the input gradient.
#include <cmath>
#include <cstdint>

#include "kernels/isa.h"

namespace attn::kernels {

ATTN_KERNEL(add_into, void(float* dst, const float* src, int64_t n));                     // dst += src
ATTN_KERNEL(scale_add_into, void(float* dst, const float* src, float alpha, int64_t n));  // dst += alpha * src
ATTN_KERNEL(add, void(const float* a, const float* b, float* y, int64_t n));              // y = a + b
ATTN_KERNEL(mul, void(const float* a, const float* b, float* y, int64_t n));              // y = a * b
ATTN_KERNEL(mul_add_into, void(float* dst, const float* a, const float* b, int64_t n));   // dst += a * b

ATTN_KERNEL(tanh_forward, void(const float* x, float* y, int64_t n));
ATTN_KERNEL(tanh_backward, void(const float* y, const float* dy, float* dx, int64_t n));  // dx += dy (1 - y²)
ATTN_KERNEL(sigmoid_forward, void(const float* x, float* y, int64_t n));
ATTN_KERNEL(sigmoid_backward, void(const float* y, const float* dy, float* dx, int64_t n));  // dx += dy y (1 - y)
ATTN_KERNEL(relu_forward, void(const float* x, float* y, int64_t n));
ATTN_KERNEL(exp_forward, void(const float* x, float* y, int64_t n));
ATTN_KERNEL(exp_backward, void(const float* y, const float* dy, float* dx, int64_t n));  // dx += dy y
ATTN_KERNEL(log_forward, void(const float* x, float* y, int64_t n));
ATTN_KERNEL(log_backward, void(const float* x, const float* dy, float* dx, int64_t n));   // dx += dy / x
ATTN_KERNEL(relu_backward, void(const float* x, const float* dy, float* dx, int64_t n));  // dx += dy [x > 0]
ATTN_KERNEL(gelu_forward, void(const float* x, float* y, int64_t n));                     // x Φ(x), exact erf form
ATTN_KERNEL(gelu_backward, void(const float* x, const float* dy, float* dx, int64_t n));  // dx += dy (Φ(x) + x φ(x))

}  // namespace attn::kernels

namespace attn::kernels::inline ATTN_ISA_NS {

// Numerically safe scalar sigmoid, shared by fused kernels (GRU, LSTM, attention).
inline float sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
