#pragma once
// Sentences as a padded batch for the classifier tests.
#include <cstdint>
#include <utility>
#include <vector>

#include "attn/tensor.h"

namespace attn::testing {

// `rows` as ids (B, S), padded with 0; *lengths (B) their lengths.
inline Tensor ids_of(const std::vector<std::vector<int32_t>>& rows, int64_t S, Tensor* lengths) {
  const int64_t B = static_cast<int64_t>(rows.size());
  Tensor ids = Tensor::zeros({B, S}, DType::i32);
  std::vector<int32_t> l;
  for (int64_t b = 0; b < B; ++b) {
    for (size_t s = 0; s < rows[b].size(); ++s) ids.i32()[b * S + static_cast<int64_t>(s)] = rows[b][s];
    l.push_back(static_cast<int32_t>(rows[b].size()));
  }
  *lengths = Tensor::from_vector(l, {B});
  return ids;
}

// B sentences from `sentence()`, which returns one (row, label), as ids (B, S) padded with 0;
// *lengths (B) and *labels (B).
template <class Sentence>
Tensor labelled_batch(int64_t B, int64_t S, Sentence&& sentence, Tensor* lengths, Tensor* labels) {
  std::vector<std::vector<int32_t>> rows;
  std::vector<int32_t> y;
  for (int64_t b = 0; b < B; ++b) {
    auto [row, label] = sentence();
    rows.push_back(std::move(row));
    y.push_back(label);
  }
  *labels = Tensor::from_vector(y, {B});
  return ids_of(rows, S, lengths);
}

}  // namespace attn::testing
