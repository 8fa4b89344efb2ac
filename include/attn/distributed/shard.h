#pragma once
// Deterministic sharding of a global batch: rank r of N takes the contiguous rows
// [r·B/N, (r+1)·B/N) of the B rows every rank chose alike (from the seed and the step),
// so the global batch, and the data a run sees, is the same for every N.
#include <cstdint>
#include <string>
#include <vector>

#include "attn/error.h"

namespace attn::distributed {

struct Shard {
  int rank = 0;
  int size = 1;
};

// The first and one-past-last row of `shard`'s part of `rows` rows. ValueError when there
// are fewer rows than ranks (a rank would have nothing to train on).
inline std::pair<size_t, size_t> shard_range(size_t rows, const Shard& shard) {
  const size_t n = static_cast<size_t>(shard.size), r = static_cast<size_t>(shard.rank);
  if (rows < n)
    throw ValueError("a batch of " + std::to_string(rows) + " examples cannot be shared by " + std::to_string(n) +
                     " ranks: give a --batch of at least the rank count");
  return {rows * r / n, rows * (r + 1) / n};
}

template <class T>
std::vector<T> shard_of(const std::vector<T>& rows, const Shard& shard) {
  if (shard.size == 1) return rows;
  const auto [begin, end] = shard_range(rows.size(), shard);
  return std::vector<T>(rows.begin() + static_cast<std::ptrdiff_t>(begin),
                        rows.begin() + static_cast<std::ptrdiff_t>(end));
}

}  // namespace attn::distributed
