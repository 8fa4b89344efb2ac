#pragma once
// What the sequence models read: a padded batch of (source, target) pairs, and the special
// ids every sequence vocabulary shares (the synthetic tasks', SentencePiece's as attn
// trains it, the character LM's): PAD 0, BOS 1, EOS 2. A vocabulary with an unknown entry
// (SentencePiece, characters) puts it at kUnk = 3 and its own entries from 4; the synthetic
// tasks have none (3 is their first symbol). The classifiers' word vocabulary, data::Vocab,
// has no BOS/EOS and keeps its own layout ("<pad>" 0, "<unk>" 1; see vocab.h).
// The data sets (attn/data/) build batches with pack_pairs; the models never include them.
#include <cstdint>
#include <span>
#include <vector>

#include "attn/tensor.h"

namespace attn::models {

inline constexpr int32_t kPad = 0;
inline constexpr int32_t kBos = 1;
inline constexpr int32_t kEos = 2;
inline constexpr int32_t kUnk = 3;  // SentencePiece and character vocabularies

// One batch of examples. The source carries no BOS/EOS; the decoder is fed BOS + target
// (teacher forcing) and must produce target + EOS.
//   src          (B, S) int32, S = longest source in the batch, PAD after each source
//   src_lengths  (B)    int32, in [1, S]
//   tgt_in       (B, T) int32, BOS then the target, PAD after; T = longest target + 1
//   tgt_out      (B, T) int32, the target then EOS, PAD after
//   tgt_lengths  (B)    int32, target length + 1 (EOS included), in [2, T]
//   The pointer-generator's extended vocabulary (models/pointer.h), undefined without one
//   (src and tgt_out then stand in, and extended_vocab is V):
//   src_ext         (B, S) int32, src with each OOV source token as V + k (k: its index in the
//                   row's list of OOVs)
//   tgt_out_ext     (B, T) int32, tgt_out with each OOV target token found in the row's source
//                   as that V + k
//   extended_vocab  Vx: V + the longest row's list of OOVs
struct Batch {
  Tensor src;
  Tensor src_lengths;
  Tensor tgt_in;
  Tensor tgt_out;
  Tensor tgt_lengths;
  Tensor src_ext = Tensor();  // default initialisers: brace-initialised batches may leave these out
  Tensor tgt_out_ext = Tensor();
  int64_t extended_vocab = 0;
};

using IdRows = std::vector<std::span<const int32_t>>;

// rows → (B, T) int32, PAD after each row, T = max(longest row, min_width).
Tensor pad_rows(const IdRows& rows, int64_t min_width = 1);
// The lengths (B) int32 of `rows`.
Tensor row_lengths(const IdRows& rows);

// The Batch of sources[b] → targets[b] (both non-empty; trusted: the callers check and
// name their own arguments). B = sources.size() = targets.size() >= 1.
Batch pack_pairs(const IdRows& sources, const IdRows& targets);

}  // namespace attn::models
