#pragma once
// Private to src/decode/ (translate.cpp, g2p.cpp): building a checkpoint's models::Translator,
// decoding id sequences with it in length-sorted batches, and the weights each step reports.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/data/parallel.h"
#include "attn/error.h"
#include "attn/models/batch.h"
#include "attn/models/translator.h"

namespace attn::decode::detail {

// The translator of a checkpoint's "kind" and "config"; IoError naming `path` for an unknown
// kind or a bad configuration.
inline std::unique_ptr<models::Translator> checkpoint_translator(const std::string& kind, const nlohmann::json& config,
                                                                 const std::string& path) {
  try {
    return models::make_translator(models::parse_translator_kind(kind), config);
  } catch (const ValueError& e) {
    throw IoError(path + ": bad model configuration: " + e.what());
  }
}

// ValueError for beam or batch < 1 (the options of translate and pronounce).
inline void check_decode_options(int beam, int batch) {
  if (beam < 1) throw ValueError("--beam must be >= 1, got " + std::to_string(beam));
  if (batch < 1) throw ValueError("--batch must be >= 1, got " + std::to_string(batch));
}

// The longest source `model` (of configuration `config`) takes (Transformer: its positions;
// RNN: max_src_len).
inline size_t source_limit(const models::Translator& model, const nlohmann::json& config) {
  if (model.kind() == models::TranslatorKind::transformer) return static_cast<size_t>(config.value("max_len", 256));
  return static_cast<size_t>(config.value("max_src_len", 128));
}

// Decodes every (non-empty) source in data::sorted_batches of `batch`, calling
// each(indices, decoded, S) per batch (indices into `sources`, in the batch's row order; S its
// padded source length). options.max_len 0: 2 · the batch's longest source + 10; a
// Transformer's is capped at its positions (limit − 1). sources_ext: the pointer-generator's
// extended ids of each source (models/pointer.h), for a vocabulary of `vocab`.
template <class Fn>
void decode_sorted(models::Translator& model, size_t limit, const std::vector<std::vector<int32_t>>& sources, int batch,
                   models::TranslatorDecodeOptions options, Fn&& each,
                   const std::vector<std::vector<int32_t>>* sources_ext = nullptr, int64_t vocab = 0) {
  const int given_max_len = options.max_len;
  for (const auto& indices : data::sorted_batches(sources, batch)) {
    models::IdRows rows;
    int64_t longest = 1;
    for (size_t k : indices) {
      rows.emplace_back(sources[k]);
      longest = std::max<int64_t>(longest, static_cast<int64_t>(sources[k].size()));
    }
    const Tensor src = models::pad_rows(rows), src_lengths = models::row_lengths(rows);  // (B, S), (B)
    options.max_len = given_max_len > 0 ? given_max_len : static_cast<int>(2 * longest + 10);
    if (sources_ext) {
      models::IdRows ext_rows;
      int64_t extended = vocab;  // Vx: one past the largest extended id
      for (size_t k : indices) {
        ext_rows.emplace_back((*sources_ext)[k]);
        for (int32_t id : (*sources_ext)[k]) extended = std::max<int64_t>(extended, id + 1);
      }
      options.src_ext = models::pad_rows(ext_rows);  // (B, S)
      options.extended_vocab = extended;
    }
    if (model.kind() == models::TranslatorKind::transformer)
      options.max_len = std::min<int>(options.max_len, static_cast<int>(limit) - 1);
    each(indices, model.decode(src, src_lengths, options), src.dim(1));
  }
}

// One output step's weights over the first `n` source positions, averaged over heads (a
// multi-head RNN reports them head-major, H·S).
inline std::vector<float> head_average(const std::vector<float>& w, int64_t S, size_t n) {
  const int64_t heads = static_cast<int64_t>(w.size()) / S;
  std::vector<float> row(n, 0.0f);
  for (int64_t h = 0; h < heads; ++h)
    for (size_t s = 0; s < n; ++s) row[s] += w[static_cast<size_t>(h * S) + s] / heads;
  return row;
}

}  // namespace attn::decode::detail
