#pragma once
// Elementwise CPU kernels: raw pointers and sizes, no checks, no allocation.
// Backward kernels accumulate (+=) into the input gradient.
#include <cstdint>

namespace attn::kernels {

void add_into(float* dst, const float* src, int64_t n);                   // dst += src
void scale_add_into(float* dst, const float* src, float alpha, int64_t n);  // dst += alpha * src
void add(const float* a, const float* b, float* y, int64_t n);            // y = a + b
void mul(const float* a, const float* b, float* y, int64_t n);            // y = a * b
void mul_add_into(float* dst, const float* a, const float* b, int64_t n); // dst += a * b

void tanh_forward(const float* x, float* y, int64_t n);
void tanh_backward(const float* y, const float* dy, float* dx, int64_t n);     // dx += dy (1 - y²)
void sigmoid_forward(const float* x, float* y, int64_t n);
void sigmoid_backward(const float* y, const float* dy, float* dx, int64_t n);  // dx += dy y (1 - y)
void relu_forward(const float* x, float* y, int64_t n);
void exp_forward(const float* x, float* y, int64_t n);
void exp_backward(const float* y, const float* dy, float* dx, int64_t n);      // dx += dy y
void log_forward(const float* x, float* y, int64_t n);
void log_backward(const float* x, const float* dy, float* dx, int64_t n);      // dx += dy / x
void relu_backward(const float* x, const float* dy, float* dx, int64_t n);     // dx += dy [x > 0]
void gelu_forward(const float* x, float* y, int64_t n);                        // x Φ(x), exact erf form
void gelu_backward(const float* x, const float* dy, float* dx, int64_t n);     // dx += dy (Φ(x) + x φ(x))

// Numerically safe scalar sigmoid, shared by fused kernels (GRU, LSTM, attention).
inline float sigmoid(float x);

}  // namespace attn::kernels

#include <cmath>
inline float attn::kernels::sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}
