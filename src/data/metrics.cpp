#include "attn/data/metrics.h"

#include <fmt/format.h>

namespace attn::data {

double AccuracyCounts::token_accuracy() const {
  return tokens_total > 0 ? static_cast<double>(tokens_correct) / static_cast<double>(tokens_total) : 0.0;
}

double AccuracyCounts::sequence_accuracy() const {
  return sequences_total > 0 ? static_cast<double>(sequences_correct) / static_cast<double>(sequences_total) : 0.0;
}

void AccuracyCounts::add(const AccuracyCounts& other) {
  tokens_correct += other.tokens_correct;
  tokens_total += other.tokens_total;
  sequences_correct += other.sequences_correct;
  sequences_total += other.sequences_total;
}

AccuracyCounts score_predictions(const Tensor& predicted, const Tensor& tgt_out, const Tensor& tgt_lengths) {
  ShapeContract c("score_predictions");
  c.check("predicted", predicted, {"B", "T'"}, DType::i32);
  c.check("tgt_out", tgt_out, {"B", "T"}, DType::i32);
  c.check("tgt_lengths", tgt_lengths, {"B"}, DType::i32);
  const int64_t B = c["B"];
  const int64_t Tp = c["T'"];
  const int64_t T = c["T"];
  const int32_t* pred = predicted.i32();       // (B, T')
  const int32_t* ref = tgt_out.i32();          // (B, T)
  const int32_t* lengths = tgt_lengths.i32();  // (B)
  check_length_values("score_predictions", "tgt_lengths", tgt_lengths, 0, "T", T);

  AccuracyCounts counts;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = lengths[b];
    int64_t right = 0;
    for (int64_t t = 0; t < L; ++t) {
      if (t < Tp && pred[b * Tp + t] == ref[b * T + t]) ++right;
    }
    counts.tokens_correct += right;
    counts.tokens_total += L;
    counts.sequences_correct += right == L ? 1 : 0;
    counts.sequences_total += 1;
  }
  return counts;
}

}  // namespace attn::data
