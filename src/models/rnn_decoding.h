#pragma once
// The decoding loops of the RNN decoder (models::Decoder) over an encoding, private to
// src/models/: Seq2Seq::greedy / beam run them after their token encoder, ListenAttendSpell
// after its listener. Both run without recording (the caller holds a NoGradGuard).
#include <cstdint>
#include <functional>

#include "attn/models/seq2seq.h"
#include "beam_search.h"

namespace attn::models::detail {

// Greedy decoding's rows are independent: decode_rows(lo, hi) encodes and decodes rows
// [lo, hi) and returns their DecodeResult. With T threads and B >= 2 kMinRowsPerBlock rows
// the batch is run as up to T contiguous blocks, one per thread, inside one parallel region,
// each block's kernels single-threaded; the blocks' results are joined in row order. One
// 2-thread team per batch instead of dozens per step: at B = 64, H = 256 the step's small
// products ran no faster on two threads than on one
// (bench/results/2026-12-04-rnnperf-9ce28fe-amd-genoa.md). An exception in a block is
// rethrown here.
inline constexpr int64_t kMinRowsPerBlock = 8;
// The blocks a batch of B rows runs as: min(threads, B / kMinRowsPerBlock); <= 1 means whole.
int64_t row_block_count(int64_t B);
DecodeResult decode_row_blocks(int64_t B, const std::function<DecodeResult(int64_t, int64_t)>& decode_rows);

// Greedy decoding of every row of `enc` (outputs (B, S, E), initial states) for up to max_len
// steps by `decoder`, built from `config`. With the pointer-generator, src_ext (B, S) int32 holds
// the source in extended ids and extended_vocab is Vx (>= V).
DecodeResult greedy_decode(Decoder& decoder, const Seq2SeqConfig& config, const EncoderOutput& enc,
                           const Tensor& src_lengths, int max_len, const Tensor& src_ext = Tensor(),
                           int64_t extended_vocab = 0);

// Beam search over the B rows of `enc` with `search` (built by the caller for B rows and
// options.width K, which must be search's): every row expanded to K hypotheses. src_ext as
// above (the pointer only).
DecodeResult beam_decode(Decoder& decoder, const Seq2SeqConfig& config, BeamSearch& search, int width, int max_len,
                         const EncoderOutput& enc, const Tensor& src_lengths, const Tensor& src_ext = Tensor(),
                         int64_t extended_vocab = 0);

}  // namespace attn::models::detail
