#include "attn/data/metrics.h"

#include <fmt/format.h>

#include <algorithm>

#include "attn/error.h"

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

int64_t edit_distance(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  // One row of the dynamic programme: row[j] = d(a[0, i), b[0, j)).
  std::vector<int64_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int64_t>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int64_t diagonal = row[0];  // d(a[0, i-1), b[0, j-1))
    row[0] = static_cast<int64_t>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int64_t up = row[j];
      row[j] = std::min({up + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

void PronunciationScore::add(const std::vector<int32_t>& hypothesis,
                             const std::vector<std::vector<int32_t>>& references) {
  if (references.empty()) throw ValueError("PronunciationScore::add: a word with no reference pronunciation");
  int64_t best = -1, best_length = 0;
  for (const std::vector<int32_t>& r : references) {
    const int64_t d = edit_distance(hypothesis, r), length = static_cast<int64_t>(r.size());
    if (best < 0 || d < best || (d == best && length < best_length)) {
      best = d;
      best_length = length;
    }
  }
  edits += best;
  phonemes += best_length;
  words += 1;
  words_wrong += best == 0 ? 0 : 1;
}

double PronunciationScore::per() const {
  return phonemes > 0 ? static_cast<double>(edits) / static_cast<double>(phonemes) : 0.0;
}

double PronunciationScore::wer() const {
  return words > 0 ? static_cast<double>(words_wrong) / static_cast<double>(words) : 0.0;
}

}  // namespace attn::data
