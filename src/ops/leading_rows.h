#pragma once
// Private to src/ops/.
#include <cstdint>

#include "attn/shape.h"

namespace attn::detail {

// Product of every dimension but the last (Shape::rows() treats a zero last dimension as
// one element per row, which would lose the row count of an (R, 0) tensor).
inline int64_t leading_rows(const Shape& shape) {
  int64_t rows = 1;
  for (int i = 0; i + 1 < shape.rank(); ++i) rows *= shape[i];
  return rows;
}

}  // namespace attn::detail
