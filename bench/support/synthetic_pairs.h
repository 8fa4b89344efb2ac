#pragma once
// The synthetic training data of `attn bench transformer`, drawn and batched exactly as
// bench/torch_peer.py does, so that both sides time the same batches.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "attn/data/parallel.h"

namespace attn::bench {

// n Multi30k-like pairs over ids [EOS + 1, vocab): draw i is splitmix64(seed ^ splitmix64(i)),
// i = 0, 1, 2, ... in order. Source length 5 + four draws in [0, 5] (mean 15, sd 3.4, 5..25
// pieces), target length source + a draw in [-3, 2] (mean 14.5); tokens uniform. Multi30k's
// training text has 11.1 (German) and 11.9 (English) words per sentence (sd 3.8) before the
// recipe's 6,000-piece subword model splits them.
std::vector<data::EncodedPair> multi30k_like_pairs(int64_t n, int64_t vocab, uint64_t seed);

// Token-budget batches as the recipe's (data::token_batches, without its seeded shuffles, so
// the PyTorch peer can cut the same ones): pairs sorted by (source, target length, index),
// cut so that rows · (longest source + longest target + 1) <= max_tokens.
std::vector<std::vector<size_t>> budget_batches(const std::vector<data::EncodedPair>& pairs, int64_t max_tokens);

}  // namespace attn::bench
