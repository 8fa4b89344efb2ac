#include "attn/models/batch.h"

#include <algorithm>

namespace attn::models {

Tensor pad_rows(const IdRows& rows, int64_t min_width) {
  int64_t T = min_width;
  for (const auto& r : rows) T = std::max<int64_t>(T, static_cast<int64_t>(r.size()));
  Tensor ids = Tensor::zeros({static_cast<int64_t>(rows.size()), T}, DType::i32);  // (B, T), PAD = 0
  for (size_t b = 0; b < rows.size(); ++b) std::copy(rows[b].begin(), rows[b].end(), ids.i32() + b * T);
  return ids;
}

Tensor row_lengths(const IdRows& rows) {
  Tensor lengths = Tensor::empty({static_cast<int64_t>(rows.size())}, DType::i32);  // (B)
  for (size_t b = 0; b < rows.size(); ++b) lengths.i32()[b] = static_cast<int32_t>(rows[b].size());
  return lengths;
}

Batch pack_pairs(const IdRows& sources, const IdRows& targets) {
  const int64_t B = static_cast<int64_t>(sources.size());
  int64_t T = 0;
  for (const auto& t : targets) T = std::max<int64_t>(T, static_cast<int64_t>(t.size()) + 1);
  Batch batch;
  batch.src = pad_rows(sources);                       // (B, S)
  batch.src_lengths = row_lengths(sources);            // (B)
  batch.tgt_in = Tensor::zeros({B, T}, DType::i32);    // (B, T)
  batch.tgt_out = Tensor::zeros({B, T}, DType::i32);   // (B, T)
  batch.tgt_lengths = Tensor::empty({B}, DType::i32);  // (B)
  for (int64_t b = 0; b < B; ++b) {
    const auto& t = targets[static_cast<size_t>(b)];
    int32_t* in_row = batch.tgt_in.i32() + b * T;
    int32_t* out_row = batch.tgt_out.i32() + b * T;
    in_row[0] = kBos;
    std::copy(t.begin(), t.end(), in_row + 1);
    std::copy(t.begin(), t.end(), out_row);
    out_row[t.size()] = kEos;
    batch.tgt_lengths.i32()[b] = static_cast<int32_t>(t.size()) + 1;
  }
  return batch;
}

}  // namespace attn::models
