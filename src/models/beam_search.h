#pragma once
// The bookkeeping of batched beam search, shared by Seq2Seq::beam and
// TransformerSeq2Seq::beam. B source rows × K hypotheses step together as B·K decoder rows:
// row b·K + k is hypothesis k of source row b.
//
// At each step every alive hypothesis k of row b proposes its V continuations with score
// raw_k + log p(v); the best 2K candidates are visited in order (score desc, then hypothesis
// and token index asc): a candidate ending in EOS becomes a finished hypothesis, scored
// raw / lp(len) with GNMT's lp(len) = ((5 + len) / 6)^α; the others fill the K new alive
// hypotheses. A row stops (BeamStop::bound) when its best finished score cannot be beaten by
// any alive hypothesis: raw scores only decrease, so an alive one can at best reach
// raw / lp(max_len) (α > 0) or raw (α = 0); with BeamStop::top, at the step whose best
// candidate is EOS (the rule CTranslate2 uses when α = 0). Finished rows keep stepping with
// the batch but are ignored. Backpointers per step rebuild the tokens and attention of the
// winner.
//
// BeamRules::ctranslate2 follows CTranslate2 4.8.5's BeamSearch::search (src/decoding.cc) at
// patience 1 and min_decoding_length 1 instead: no EOS at step 0 (the other log-probs
// renormalised without it); of the best 2K candidates, positions 0..K-1 are the new beams,
// and one that ends in EOS (any of them at step max_len - 1) finishes with raw / len^α, its
// slot taken by the next non-EOS candidate from positions K..2K-1; a row stops once K
// hypotheses have finished (α = 0: once some step's best candidate was EOS). The winner is
// the best finished one.
//
// The model's loop:
//   BeamSearch search("op", B, options, W);
//   for (int t = 0; t < max_steps; ++t) {
//     logp (B·K, V) = the decoder's log-probs after search.next_tokens();
//     if (!search.advance(logp, weights)) break;  // weights: (B·K, W) floats or nullptr
//     search.reorder(state);  // the decoder's nn::DecodingState
//   }
//   return search.result();
#include <cstdint>
#include <string>
#include <vector>

#include "attn/models/batch.h"
#include "attn/models/seq2seq.h"
#include "attn/nn/decoding_state.h"
#include "attn/tensor.h"

namespace attn::models::detail {

// What the coverage penalty needs to read the weights: each row's weights_per_row floats are
// heads blocks of S source positions (head-major), and source row b has lengths[b] real ones.
struct BeamSource {
  int64_t S = 0;
  std::vector<int32_t> lengths;  // (B)
};

// The BeamSource of a padded batch of S positions with src_lengths (B) int32.
BeamSource beam_source(const Tensor& src_lengths, int64_t S);

class BeamSearch {
 public:
  // `op` prefixes the ValueError for a bad width, max_len, length_penalty or coverage_penalty
  // (or a coverage penalty without weights).
  // weights_per_row: attention floats per hypothesis and step (0: no attention kept).
  // live_only: the decoder steps only the rows not done yet (L source rows, L·K decoder rows,
  // in source-row order): advance() takes (L·K, ...) and reorder() drops the rows that finished.
  // Otherwise every row steps until all are done (L = B).
  BeamSearch(const std::string& op, int64_t batch, const BeamOptions& options, int64_t weights_per_row,
             BeamSource source = {}, bool live_only = false);

  int64_t rows() const { return batch_ * K_; }  // B·K
  // The token each live hypothesis feeds next (BOS at the start), as an int32 (L·K) tensor.
  Tensor next_tokens() const;
  // Takes one step's log-probabilities (L·K, V) and attention weights (L·K, W) (nullptr
  // when weights_per_row is 0). Returns false when every row is done.
  // copy: the pointer-generator's copy probability of each hypothesis's step (L·K), or nullptr.
  bool advance(const Tensor& logp, const float* weights, const float* copy = nullptr);
  // Hypothesis i of the next step extends decoder row reorder()[i] of this one (int32 (L'·K),
  // values in [0, L·K), each group of K from one source row).
  const Tensor& reorder() const { return reorder_; }
  // Reorders a decoder's state to the new hypotheses (state.reorder(reorder())): the one path
  // for the RNN decoders' DecoderState and the Transformer's TransformerDecodingState.
  void reorder(nn::DecodingState& state) const { state.reorder(reorder_); }
  // The winner of each row: its tokens (with EOS when it finished) and attention.
  DecodeResult result() const;

 private:
  struct Finished {
    float normalized;
    int step;             // the step that produced its last token
    int parent;           // beam index (within the row) of the hypothesis it extended
    int32_t last = kEos;  // its last token: EOS, or any token at CTranslate2's last step
  };
  struct Candidate {
    float score;
    int beam;
    int token;
  };
  float lp(int len) const;  // GNMT's ((5 + len) / 6)^α, or len^α under CTranslate2's rules
  // One row's step from its best candidates (candidates_[0, top), sorted): fills the row's new
  // beams (tok, par, new_score) and its finished hypotheses; true when the row is done.
  bool place_attn(int64_t b, int t, size_t top, std::vector<int32_t>& tok, std::vector<int32_t>& par,
                  std::vector<float>& new_score, std::vector<float>& new_coverage);
  bool place_ctranslate2(int64_t b, int t, size_t top, std::vector<int32_t>& tok, std::vector<int32_t>& par,
                         std::vector<float>& new_score);
  // β Σ_{i < L_b} log(min(coverage_i, 1)) of one hypothesis's summed attention (S floats).
  float coverage_penalty(int64_t b, const float* coverage) const;
  // coverage (S) = from (S) + the head-averaged weights of one step (heads · S).
  void add_weights(const float* from, const float* weights, float* coverage) const;

  int64_t batch_;
  int K_;
  float alpha_;
  int max_len_;
  int64_t W_;
  float beta_;
  BeamStop stop_;
  BeamRules rules_;
  BeamSource source_;
  std::vector<float> coverage_;                  // Σ_t a_t of alive hypotheses (B·K, S); β > 0 only
  std::vector<float> score_;                     // raw log-prob of alive hypotheses (B·K)
  std::vector<std::vector<int32_t>> tokens_;     // per step, per new beam (B·K)
  std::vector<std::vector<int32_t>> parents_;    // per step, per new beam (B·K)
  std::vector<std::vector<float>> weights_;      // per step, (B·K, W) by source beam
  std::vector<std::vector<float>> copies_;       // per step, (B·K) by source beam; the pointer only
  std::vector<std::vector<Finished>> finished_;  // per row
  std::vector<char> done_;                       // per row
  std::vector<char> top_ended_;                  // per row: some step's best candidate was EOS (ctranslate2)
  std::vector<int32_t> next_;                    // per hypothesis
  bool live_only_;
  std::vector<int64_t> live_;          // the source rows the decoder steps (L)
  std::vector<Candidate> candidates_;  // one row's best 2K proposals per hypothesis, reused
  Tensor reorder_;
};

}  // namespace attn::models::detail
