#include "kernels/linear.h"

#include <algorithm>

#include "attn/parallel.h"

namespace attn::kernels {

void broadcast_rows(const float* row, float* y, int64_t rows, int64_t n) {
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(n, 1));
  parallel_for(0, rows, grain, [=](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) std::copy(row, row + n, y + r * n);
  });
}

}  // namespace attn::kernels
