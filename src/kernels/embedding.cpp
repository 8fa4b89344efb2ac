#include "kernels/embedding.h"

#include <algorithm>

#include "attn/parallel.h"

namespace attn::kernels::inline ATTN_ISA_NS {

void embedding_forward(const int32_t* ids, const float* weight, float* y, int64_t n, int64_t d) {
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(d, 1));
  parallel_for(0, n, grain, [=](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const float* src = weight + static_cast<int64_t>(ids[p]) * d;
      std::copy(src, src + d, y + p * d);
    }
  });
}

void embedding_backward(const int32_t* ids, const float* dy, float* dweight, int64_t n, int64_t d,
                        int32_t padding_idx) {
  // Columns per chunk: enough work (n * columns adds) to pay for a thread, and at least a
  // few cache lines wide so neighbouring chunks rarely share a line.
  const int64_t grain = std::max<int64_t>(64, (int64_t{1} << 14) / std::max<int64_t>(n, 1));
  parallel_for(0, d, grain, [=](int64_t lo, int64_t hi) {
    for (int64_t p = 0; p < n; ++p) {
      const int32_t id = ids[p];
      if (id == padding_idx) continue;
      const float* g = dy + p * d;
      float* w = dweight + static_cast<int64_t>(id) * d;
      for (int64_t j = lo; j < hi; ++j) w[j] += g[j];
    }
  });
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
