#pragma once
// What a test expects of GNMT's coverage penalty (models::BeamOptions::coverage_penalty):
// β Σ_{i < length} log(min(Σ_t a_{t,i}, 1)) of one hypothesis's reported attention, summed
// over the source positions (columns), in double.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "attn/models/seq2seq.h"

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

}  // namespace attn::testing
