#pragma once
// The open-vocabulary copy task (issue 32): copy a string of symbols, where the model's
// vocabulary holds only the symbols 1..20 and test sources mix in unseen ones (21, 22, ...).
// An unseen symbol reads as the unknown id, so only a pointer-generator can emit it, by copying
// it from the source (models/pointer.h's extended ids).
//
// Vocabulary (V = 24): PAD 0, BOS 1, EOS 2, UNK 3 (models/batch.h), symbol n at 3 + n.
#include <string>
#include <vector>

#include "attn/models/batch.h"
#include "attn/random.h"

namespace attn::data {

inline constexpr int kOpenVocabSeen = 20;                                     // symbols 1..20
inline constexpr int32_t kOpenVocabSize = models::kUnk + 1 + kOpenVocabSeen;  // V = 24

// The vocabulary id of symbol n >= 1: 3 + n for a seen symbol, else kUnk.
int32_t open_vocab_id(int symbol);

// `count` sources with lengths uniform in [min_len, max_len]; each position holds an unseen
// symbol (uniform over 21..20 + unseen_symbols) with probability unseen_share, else a seen one
// (uniform over 1..20). ValueError for min_len < 1, min_len > max_len, unseen_share outside
// [0, 1] or unseen_symbols < 1.
std::vector<std::vector<int>> open_vocab_sources(Rng& rng, int count, int min_len, int max_len, double unseen_share,
                                                 int unseen_symbols = 20);

// The copy batch of `sources` (symbols): src and targets in vocabulary ids, and the pointer's
// extended ids (batch.src_ext, tgt_out_ext, extended_vocab), each row's unseen symbols as its
// OOVs (their text, "21", ...). ValueError for an empty list, an empty source or a symbol < 1.
struct OpenVocabBatch {
  models::Batch batch;
  std::vector<std::vector<std::string>> oovs;  // per row
};
OpenVocabBatch open_vocab_copy_batch(const std::vector<std::vector<int>>& sources);

}  // namespace attn::data
