#include "attn/data/open_vocab.h"

#include <fmt/format.h>

#include "attn/error.h"
#include "attn/models/pointer.h"

namespace attn::data {

int32_t open_vocab_id(int symbol) { return symbol <= kOpenVocabSeen ? models::kUnk + symbol : models::kUnk; }

std::vector<std::vector<int>> open_vocab_sources(Rng& rng, int count, int min_len, int max_len, double unseen_share,
                                                 int unseen_symbols) {
  if (min_len < 1 || min_len > max_len)
    throw ValueError(
        fmt::format("open_vocab_sources: lengths [{}, {}] must satisfy 1 <= min <= max", min_len, max_len));
  if (!(unseen_share >= 0.0 && unseen_share <= 1.0))
    throw ValueError(fmt::format("open_vocab_sources: unseen_share must be in [0, 1], got {}", unseen_share));
  if (unseen_symbols < 1)
    throw ValueError(fmt::format("open_vocab_sources: unseen_symbols must be >= 1, got {}", unseen_symbols));
  std::vector<std::vector<int>> sources(static_cast<size_t>(count));
  for (auto& s : sources) {
    const int len = min_len + static_cast<int>(rng.below(static_cast<uint64_t>(max_len - min_len + 1)));
    for (int i = 0; i < len; ++i) {
      const bool unseen = rng.uniform() < unseen_share;
      s.push_back(unseen ? kOpenVocabSeen + 1 + static_cast<int>(rng.below(static_cast<uint64_t>(unseen_symbols)))
                         : 1 + static_cast<int>(rng.below(kOpenVocabSeen)));
    }
  }
  return sources;
}

OpenVocabBatch open_vocab_copy_batch(const std::vector<std::vector<int>>& sources) {
  if (sources.empty()) throw ValueError("open_vocab_copy_batch: no sources");
  std::vector<std::vector<int32_t>> ids, ext;
  std::vector<std::vector<std::string>> oovs;
  for (const auto& s : sources) {
    if (s.empty()) throw ValueError("open_vocab_copy_batch: an empty source");
    std::vector<int32_t> row;
    std::vector<std::string> tokens;
    for (int symbol : s) {
      if (symbol < 1) throw ValueError(fmt::format("open_vocab_copy_batch: symbol {} is not >= 1", symbol));
      row.push_back(open_vocab_id(symbol));
      tokens.push_back(std::to_string(symbol));
    }
    models::SourceOovs extended = models::extend_source(tokens, row, models::kUnk, kOpenVocabSize);
    ids.push_back(std::move(row));
    ext.push_back(std::move(extended.ids));  // the target is the source: the same extended ids
    oovs.push_back(std::move(extended.oovs));
  }
  const models::IdRows rows(ids.begin(), ids.end()), ext_rows(ext.begin(), ext.end());
  OpenVocabBatch out{models::pack_pairs(rows, rows), oovs};
  models::add_extended_ids(out.batch, ext_rows, ext_rows, out.oovs, kOpenVocabSize);
  return out;
}

}  // namespace attn::data
