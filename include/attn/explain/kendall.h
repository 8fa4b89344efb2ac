#pragma once
// Kendall's τ-b between two rankings, with ties, and its two-sided p-value as
// scipy.stats.kendalltau (method 'auto') computes it:
//   τ_b = (C − D) / sqrt((n0 − n_x)(n0 − n_y)), n0 = n(n−1)/2, n_x / n_y = pairs tied in x / y
//   p: without ties and n <= 33 the exact null distribution of D (inversion counts of a
//      random permutation); otherwise the normal approximation with the tie-corrected
//      variance var = (m(2n+5) − Σ t(t−1)(2t+5) [x, y]) / 18 + 2 n_x n_y / m
//                     + Σ t(t−1)(t−2) [x] · Σ t(t−1)(t−2) [y] / (9 m (n−2)),  m = n(n−1)
#include <string>
#include <vector>

namespace attn::explain {

struct KendallTau {
  bool defined = false;          // false for n < 2 or a constant ranking (τ undefined)
  std::string undefined_reason;  // "fewer than 2 tokens", "constant ranking"
  double tau = 0.0;
  double p_value = 1.0;
};

// x, y the same size (ValueError otherwise); O(n²).
KendallTau kendall_tau_b(const std::vector<float>& x, const std::vector<float>& y);

}  // namespace attn::explain
