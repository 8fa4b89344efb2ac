#include "attn/models/pointer.h"

#include <fmt/format.h>

#include <algorithm>

#include "attn/error.h"

namespace attn::models {
namespace {

int32_t index_of(const std::vector<std::string>& list, const std::string& text) {
  const auto it = std::find(list.begin(), list.end(), text);
  return it == list.end() ? -1 : static_cast<int32_t>(it - list.begin());
}

}  // namespace

SourceOovs extend_source(std::span<const std::string> tokens, std::span<const int32_t> ids, int32_t unk, int64_t V) {
  if (tokens.size() != ids.size())
    throw ValueError(fmt::format("extend_source: {} tokens but {} ids", tokens.size(), ids.size()));
  SourceOovs out;
  out.ids.assign(ids.begin(), ids.end());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != unk) continue;
    int32_t k = index_of(out.oovs, tokens[i]);
    if (k < 0) {
      k = static_cast<int32_t>(out.oovs.size());
      out.oovs.push_back(tokens[i]);
    }
    out.ids[i] = static_cast<int32_t>(V) + k;
  }
  return out;
}

std::vector<int32_t> extend_target(std::span<const std::string> tokens, std::span<const int32_t> ids, int32_t unk,
                                   int64_t V, const std::vector<std::string>& oovs) {
  if (tokens.size() != ids.size())
    throw ValueError(fmt::format("extend_target: {} tokens but {} ids", tokens.size(), ids.size()));
  std::vector<int32_t> out(ids.begin(), ids.end());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t k = ids[i] == unk ? index_of(oovs, tokens[i]) : -1;
    if (k >= 0) out[i] = static_cast<int32_t>(V) + k;
  }
  return out;
}

void add_extended_ids(Batch& batch, const IdRows& sources_ext, const IdRows& targets_ext,
                      const std::vector<std::vector<std::string>>& oovs, int64_t V) {
  const int64_t B = batch.src.dim(0), S = batch.src.dim(1), T = batch.tgt_out.dim(1);
  if (static_cast<int64_t>(sources_ext.size()) != B || static_cast<int64_t>(targets_ext.size()) != B ||
      static_cast<int64_t>(oovs.size()) != B)
    throw ValueError(fmt::format("add_extended_ids: expected {} rows of sources, targets and OOVs", B));
  batch.src_ext = Tensor::zeros({B, S}, DType::i32);      // (B, S)
  batch.tgt_out_ext = Tensor::zeros({B, T}, DType::i32);  // (B, T)
  size_t most = 0;
  for (int64_t b = 0; b < B; ++b) {
    const auto& s = sources_ext[static_cast<size_t>(b)];
    const auto& t = targets_ext[static_cast<size_t>(b)];
    if (static_cast<int32_t>(s.size()) != batch.src_lengths.i32()[b] ||
        static_cast<int32_t>(t.size()) + 1 != batch.tgt_lengths.i32()[b])
      throw ValueError(fmt::format("add_extended_ids: row {} differs in length from the batch's", b));
    std::copy(s.begin(), s.end(), batch.src_ext.i32() + b * S);
    std::copy(t.begin(), t.end(), batch.tgt_out_ext.i32() + b * T);
    batch.tgt_out_ext.i32()[b * T + static_cast<int64_t>(t.size())] = kEos;
    most = std::max(most, oovs[static_cast<size_t>(b)].size());
  }
  batch.extended_vocab = V + static_cast<int64_t>(most);
}

std::string oov_text(int32_t id, int64_t V, const std::vector<std::string>& oovs) {
  const int64_t k = id - V;
  return k >= 0 && k < static_cast<int64_t>(oovs.size()) ? oovs[static_cast<size_t>(k)] : std::string();
}

}  // namespace attn::models
