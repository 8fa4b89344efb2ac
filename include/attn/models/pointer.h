#pragma once
// The pointer-generator's extended vocabulary (See et al. 2017): per batch row, the source
// tokens outside the vocabulary (those whose id is the unknown id) get the ids V, V + 1, ...
// in order of first appearance, one id per distinct text (See et al.'s article_oovs). A target
// token outside the vocabulary that the row's source holds gets that id, so the model can learn
// to copy it; any other stays unknown. Decoding emits ids >= V for copied OOV tokens, and
// oov_text turns them back into their text.
//
//   SourceOovs s = extend_source(tokens, ids, kUnk, V);
//   std::vector<int32_t> t = extend_target(tgt_tokens, tgt_ids, kUnk, V, s.oovs);
//   add_extended_ids(batch, {s.ids...}, {t...}, V);   // batch.src_ext, tgt_out_ext, extended_vocab
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "attn/models/batch.h"

namespace attn::models {

struct SourceOovs {
  std::vector<int32_t> ids;       // the source ids, each OOV token as V + its index in oovs
  std::vector<std::string> oovs;  // the distinct OOV texts, in order of first appearance
};
// tokens and ids of one source (same length; ValueError otherwise).
SourceOovs extend_source(std::span<const std::string> tokens, std::span<const int32_t> ids, int32_t unk, int64_t V);
// The target ids with each `unk` whose text is in `oovs` replaced by V + its index there.
std::vector<int32_t> extend_target(std::span<const std::string> tokens, std::span<const int32_t> ids, int32_t unk,
                                   int64_t V, const std::vector<std::string>& oovs);
// Sets batch.src_ext (B, S), batch.tgt_out_ext (B, T: the target, EOS, PAD) and
// batch.extended_vocab (V + the most OOVs of any row) from rows made for batch.src and
// batch.tgt_out (ValueError when a row's length differs from the batch's).
void add_extended_ids(Batch& batch, const IdRows& sources_ext, const IdRows& targets_ext,
                      const std::vector<std::vector<std::string>>& oovs, int64_t V);
// The text of an emitted extended id V + k: oovs[k]; "" for an id not in [V, V + |oovs|).
std::string oov_text(int32_t id, int64_t V, const std::vector<std::string>& oovs);

}  // namespace attn::models
