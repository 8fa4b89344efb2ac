#pragma once
// Accuracy of decoded sequences against the reference targets: token accuracy per target
// position (EOS included) and exact-sequence accuracy; edit distance and the G2P scores PER
// and WER (a word is right when it matches any of its pronunciations).
#include <cstdint>
#include <vector>

#include "attn/tensor.h"

namespace attn::data {

struct AccuracyCounts {
  int64_t tokens_correct = 0;
  int64_t tokens_total = 0;
  int64_t sequences_correct = 0;
  int64_t sequences_total = 0;

  // Fractions in [0, 1]; 0 when nothing was counted.
  double token_accuracy() const;
  double sequence_accuracy() const;
  void add(const AccuracyCounts& other);
};

// Scores a batch of predictions.
//   predicted    (B, T') int32, any length T' >= 0 (PAD or anything after the prediction's end)
//   tgt_out      (B, T)  int32, target + EOS, PAD-padded (Batch::tgt_out)
//   tgt_lengths  (B)     int32, in [0, T], target length with EOS (Batch::tgt_lengths)
// Token accuracy counts the tgt_lengths[b] reference positions of each row: position t is
// right when t < T' and predicted[b, t] == tgt_out[b, t], so a prediction shorter than the
// target counts the missing positions wrong; positions past the target length are ignored.
// A sequence is right when all of its reference positions (EOS included) are right.
// Shape mismatches throw ShapeError; a length outside [0, T] throws ValueError.
AccuracyCounts score_predictions(const Tensor& predicted, const Tensor& tgt_out, const Tensor& tgt_lengths);

}  // namespace attn::data

namespace attn::data {

// The Levenshtein distance between two symbol sequences (insertions, deletions and
// substitutions each cost 1).
int64_t edit_distance(const std::vector<int32_t>& a, const std::vector<int32_t>& b);

// Pronunciation scores of G2P over a set of words, each with one or more reference
// pronunciations:
//   PER = Σ_words d(hyp, r*) / Σ_words |r*|, r* the reference closest to the hypothesis (by
//         edit distance; the shorter one on a tie, then the first), the phoneme error rate;
//   WER = the fraction of words whose hypothesis equals none of their references.
struct PronunciationScore {
  int64_t edits = 0;     // Σ d(hyp, r*)
  int64_t phonemes = 0;  // Σ |r*|
  int64_t words = 0;
  int64_t words_wrong = 0;

  // ValueError when `references` is empty.
  void add(const std::vector<int32_t>& hypothesis, const std::vector<std::vector<int32_t>>& references);
  double per() const;  // in [0, ∞) (a long wrong hypothesis can exceed 1); 0 when nothing was counted
  double wer() const;  // in [0, 1]; 0 when nothing was counted
};

}  // namespace attn::data
