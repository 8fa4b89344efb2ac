#pragma once
// What a test expects of GNMT's coverage penalty (models::BeamOptions::coverage_penalty):
// β Σ_{i < length} log(min(Σ_t a_{t,i}, 1)) of one hypothesis's reported attention, summed
// over the source positions (columns), in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "attn/models/seq2seq.h"
#include "attn/tensor.h"

namespace attn::testing {

inline double coverage_penalty_of(const models::DecodeResult::Hypothesis& h, int32_t length, float beta) {
  double sum = 0.0;
  for (int32_t i = 0; i < length; ++i) {  // the source positions: columns, never the target rows
    double column = 0.0;
    for (const auto& step : h.attention) column += step[static_cast<size_t>(i)];
    sum += std::log(std::min(column, 1.0));
  }
  return beta * sum;
}

struct CoveragePenaltyRun {
  models::DecodeResult with;      // the beam with the penalty
  std::vector<double> penalties;  // coverage_penalty_of each hypothesis found in both beams
};

// Decodes with `plain` and again with coverage penalty β; each hypothesis that both beams found
// (the same tokens) must score higher or lower by exactly its coverage_penalty_of (1e-4), with
// padding left out: the row's length from src_lengths (CTranslate2 #906 / #915).
template <class Model>
CoveragePenaltyRun expect_scores_move_by_coverage_penalty(Model& model, const Tensor& src, const Tensor& src_lengths,
                                                          const models::BeamOptions& plain, float beta) {
  models::BeamOptions covered = plain;
  covered.coverage_penalty = beta;
  const models::DecodeResult without = model.beam(src, src_lengths, plain);
  CoveragePenaltyRun run{model.beam(src, src_lengths, covered), {}};
  for (size_t r = 0; r < run.with.hypotheses.size(); ++r)
    for (const auto& h : run.with.hypotheses[r])
      for (const auto& g : without.hypotheses[r]) {
        if (g.tokens != h.tokens) continue;
        const double penalty = coverage_penalty_of(h, src_lengths.i32()[r], beta);
        EXPECT_NEAR(h.score - g.score, penalty, 1e-4) << "row " << r;
        run.penalties.push_back(penalty);
      }
  return run;
}

}  // namespace attn::testing
