#include "kernels/shape_ops.h"

#include <algorithm>

#include "attn/parallel.h"

namespace attn::kernels {
namespace {

int64_t row_grain(int64_t width) { return std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(width, 1)); }

constexpr int64_t kTile = 32;

// y[b, j, i] (=|+=) x[b, i, j] for x (batch, m, n), y (batch, n, m); tiles of 32 x 32 so
// both sides stay in cache. Work items are (batch, tile of x rows): each writes a
// distinct band of y.
template <bool Accumulate>
void transpose_last2(const float* x, float* y, int64_t batch, int64_t m, int64_t n) {
  const int64_t row_tiles = (m + kTile - 1) / kTile;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(kTile * n, 1));
  parallel_for(0, batch * row_tiles, grain, [=](int64_t lo, int64_t hi) {
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t b = item / row_tiles;
      const int64_t i0 = (item % row_tiles) * kTile;
      const int64_t i1 = std::min(i0 + kTile, m);
      const float* xb = x + b * m * n;
      float* yb = y + b * m * n;
      for (int64_t j0 = 0; j0 < n; j0 += kTile) {
        const int64_t j1 = std::min(j0 + kTile, n);
        for (int64_t j = j0; j < j1; ++j)
          for (int64_t i = i0; i < i1; ++i) {
            if constexpr (Accumulate)
              yb[j * m + i] += xb[i * n + j];
            else
              yb[j * m + i] = xb[i * n + j];
          }
      }
    }
  });
}

}  // namespace

void copy_2d(const float* src, int64_t src_stride, float* dst, int64_t dst_stride, int64_t rows, int64_t width) {
  parallel_for(0, rows, row_grain(width), [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r)
      std::copy(src + r * src_stride, src + r * src_stride + width, dst + r * dst_stride);
  });
}

void add_2d(const float* src, int64_t src_stride, float* dst, int64_t dst_stride, int64_t rows, int64_t width) {
  parallel_for(0, rows, row_grain(width), [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* s = src + r * src_stride;
      float* d = dst + r * dst_stride;
      for (int64_t j = 0; j < width; ++j) d[j] += s[j];
    }
  });
}

void transpose_last2_forward(const float* x, float* y, int64_t batch, int64_t m, int64_t n) {
  transpose_last2<false>(x, y, batch, m, n);
}

void transpose_last2_backward(const float* dy, float* dx, int64_t batch, int64_t m, int64_t n) {
  // dy is (batch, n, m); its transpose is added into dx (batch, m, n).
  transpose_last2<true>(dy, dx, batch, n, m);
}

}  // namespace attn::kernels
