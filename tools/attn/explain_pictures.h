#pragma once
// One Kendall-τ histogram series of attn explain's τ pictures (cmd_explain.cpp per sentence,
// explain_seq2seq.cpp per target token): the share of the defined τ per bin of 0.1 over
// [-1, 1], at the bins' centres. t.defined must be > 0.
#include <algorithm>
#include <cmath>
#include <vector>

#include "attn/explain/report.h"
#include "attn/viz/plot.h"

namespace attn::cli {

inline viz::Series tau_histogram(const explain::TauSummary& t) {
  viz::Series series{t.pair.first + "-" + t.pair.second, {}, {}};
  std::vector<double> counts(20, 0.0);
  for (const auto& k : t.per_sentence)
    if (k.defined) counts[static_cast<size_t>(std::clamp(static_cast<int>(std::floor((k.tau + 1.0) / 0.1)), 0, 19))] += 1;
  for (int b = 0; b < 20; ++b) {
    series.x.push_back(-0.95 + 0.1 * b);
    series.y.push_back(counts[static_cast<size_t>(b)] / static_cast<double>(t.defined));
  }
  return series;
}

}  // namespace attn::cli
