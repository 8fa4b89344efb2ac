#pragma once
// Accuracy of decoded sequences against the reference targets: token accuracy per target
// position (EOS included) and exact-sequence accuracy.
#include <cstdint>

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
