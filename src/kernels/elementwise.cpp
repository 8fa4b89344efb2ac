#include "kernels/elementwise.h"

#include <cmath>

#include "attn/parallel.h"
#include "fast_math.h"

namespace attn::kernels::inline ATTN_ISA_NS {
namespace {
constexpr int64_t kGrain = 1 << 15;

template <class Fn>
void for_each_chunk(int64_t n, Fn&& fn) {
  parallel_for(0, n, kGrain, [&](int64_t lo, int64_t hi) {
    // A local copy of the closure: the loop's stores cannot alias its pointers, so they stay
    // in registers and the loop vectorises (through `fn` GCC reloaded them every element).
    const auto local_fn = fn;
    for (int64_t i = lo; i < hi; ++i) local_fn(i);
  });
}
constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;
}  // namespace

void add_into(float* dst, const float* src, int64_t n) {
  for_each_chunk(n, [=](int64_t i) { dst[i] += src[i]; });
}
void scale_add_into(float* dst, const float* src, float alpha, int64_t n) {
  for_each_chunk(n, [=](int64_t i) { dst[i] += alpha * src[i]; });
}
void add(const float* a, const float* b, float* y, int64_t n) {
  for_each_chunk(n, [=](int64_t i) { y[i] = a[i] + b[i]; });
}
void mul(const float* a, const float* b, float* y, int64_t n) {
  for_each_chunk(n, [=](int64_t i) { y[i] = a[i] * b[i]; });
}
void mul_add_into(float* dst, const float* a, const float* b, int64_t n) {
  for_each_chunk(n, [=](int64_t i) { dst[i] += a[i] * b[i]; });
}

void tanh_forward(const float* x, float* y, int64_t n) {
  for_each_chunk(n, [=](int64_t i) { y[i] = tanh_accurate(x[i]); });  // vectorised, a few ulp also where it saturates
}
void tanh_backward(const float* y, const float* dy, float* dx, int64_t n) {
  for_each_chunk(n, [=](int64_t i) { dx[i] += dy[i] * (1.0f - y[i] * y[i]); });
}
void sigmoid_forward(const float* x, float* y, int64_t n) {
  for_each_chunk(n, [=](int64_t i) { y[i] = sigmoid(x[i]); });
}
void sigmoid_backward(const float* y, const float* dy, float* dx, int64_t n) {
  for_each_chunk(n, [=](int64_t i) { dx[i] += dy[i] * y[i] * (1.0f - y[i]); });
}
void exp_forward(const float* x, float* y, int64_t n) {
  for_each_chunk(n, [=](int64_t i) { y[i] = std::exp(x[i]); });
}
void exp_backward(const float* y, const float* dy, float* dx, int64_t n) {
  for_each_chunk(n, [=](int64_t i) { dx[i] += dy[i] * y[i]; });
}
void log_forward(const float* x, float* y, int64_t n) {
  for_each_chunk(n, [=](int64_t i) { y[i] = std::log(x[i]); });
}
void log_backward(const float* x, const float* dy, float* dx, int64_t n) {
  for_each_chunk(n, [=](int64_t i) { dx[i] += dy[i] / x[i]; });
}
void relu_forward(const float* x, float* y, int64_t n) {
  for_each_chunk(n, [=](int64_t i) { y[i] = x[i] > 0.0f ? x[i] : 0.0f; });
}
void relu_backward(const float* x, const float* dy, float* dx, int64_t n) {
  // dy[i] read on both sides of the select (a conditional load does not vectorise).
  for_each_chunk(n, [=](int64_t i) {
    const float g = dy[i];
    dx[i] += x[i] > 0.0f ? g : 0.0f;
  });
}
void gelu_forward(const float* x, float* y, int64_t n) {
  for_each_chunk(n, [=](int64_t i) { y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2)); });
}
void gelu_backward(const float* x, const float* dy, float* dx, int64_t n) {
  for_each_chunk(n, [=](int64_t i) {
    const float cdf = 0.5f * (1.0f + std::erf(x[i] * kInvSqrt2));
    const float pdf = kInvSqrt2Pi * std::exp(-0.5f * x[i] * x[i]);
    dx[i] += dy[i] * (cdf + x[i] * pdf);
  });
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
