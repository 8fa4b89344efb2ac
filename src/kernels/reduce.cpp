#include "kernels/reduce.h"

#include <algorithm>

#include "attn/parallel.h"

namespace attn::kernels {
namespace {

// Σ x[0:n) in double: eight lanes (lane k takes i ≡ k mod 8) combined pairwise, then the
// tail. The order depends on n alone.
double sum_lanes(const float* x, int64_t n) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += static_cast<double>(x[i + k]);
  double tail = 0.0;
  for (; i < n; ++i) tail += static_cast<double>(x[i]);
  return (((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))) + tail;
}

constexpr int64_t kGrain = 1 << 15;

}  // namespace

double sum_all(const float* x, int64_t n, double* partials) {
  const int64_t chunks = sum_all_partials(n);
  parallel_for(0, chunks, 1, [=](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c) {
      const int64_t begin = c * kSumChunk;
      partials[c] = sum_lanes(x + begin, std::min(kSumChunk, n - begin));
    }
  });
  double total = 0.0;
  for (int64_t c = 0; c < chunks; ++c) total += partials[c];
  return total;
}

void add_scalar_into(float* dx, float value, int64_t n) {
  parallel_for(0, n, kGrain, [=](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) dx[i] += value;
  });
}

void sum_rows_forward(const float* x, float* y, int64_t rows, int64_t n, double scale) {
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1));
  parallel_for(0, rows, grain, [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) y[r] = static_cast<float>(scale * sum_lanes(x + r * n, n));
  });
}

void sum_columns_into(const float* x, int64_t rows, int64_t n, float* out) {
  // Column chunks of at least 256 (a multiple of the vector width) and kGrain elements.
  const int64_t grain = std::max<int64_t>(256, kGrain / std::max<int64_t>(rows, 1) / 8 * 8);
  parallel_for(0, n, grain, [=](int64_t lo, int64_t hi) {
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = x + r * n;
      for (int64_t j = lo; j < hi; ++j) out[j] += row[j];
    }
  });
}

void sum_rows_backward(const float* dy, float* dx, int64_t rows, int64_t n, float scale) {
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1));
  parallel_for(0, rows, grain, [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float g = scale * dy[r];
      float* d = dx + r * n;
      for (int64_t j = 0; j < n; ++j) d[j] += g;
    }
  });
}

}  // namespace attn::kernels
