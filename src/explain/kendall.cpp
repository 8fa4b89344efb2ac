// Kendall's τ-b and its p-value (see attn/explain/kendall.h).
#include "attn/explain/kendall.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "attn/error.h"

namespace attn::explain {
namespace {

struct TieSums {
  double pairs = 0.0;  // Σ t(t−1)/2
  double v0 = 0.0;     // Σ t(t−1)(t−2)
  double v1 = 0.0;     // Σ t(t−1)(2t+5)
};

TieSums tie_sums(const std::vector<float>& x) {
  std::map<float, double> counts;
  for (float v : x) counts[v] += 1.0;
  TieSums s;
  for (const auto& [value, t] : counts) {
    s.pairs += t * (t - 1) / 2;
    s.v0 += t * (t - 1) * (t - 2);
    s.v1 += t * (t - 1) * (2 * t + 5);
  }
  return s;
}

// P(D <= d) for D the inversion count of a uniform random permutation of n: the Mahonian
// distribution, built one element at a time (adding element i spreads each count over
// 0..i−1 new inversions), kept as probabilities so that n! never overflows.
double inversions_cdf(int n, int64_t d) {
  std::vector<double> p = {1.0};
  for (int i = 2; i <= n; ++i) {
    std::vector<double> next(p.size() + static_cast<size_t>(i - 1), 0.0);
    double window = 0.0;  // Σ p[k − i + 1 .. k], a sliding sum
    for (size_t k = 0; k < next.size(); ++k) {
      if (k < p.size()) window += p[k];
      if (k >= static_cast<size_t>(i)) window -= p[k - static_cast<size_t>(i)];
      next[k] = window / i;
    }
    p = std::move(next);
  }
  double total = 0.0;
  for (int64_t k = 0; k <= d && k < static_cast<int64_t>(p.size()); ++k) total += p[static_cast<size_t>(k)];
  return total;
}

}  // namespace

KendallTau kendall_tau_b(const std::vector<float>& x, const std::vector<float>& y) {
  if (x.size() != y.size())
    throw ValueError("kendall_tau_b: x has " + std::to_string(x.size()) + " values, y has " + std::to_string(y.size()));
  KendallTau r;
  const int64_t n = static_cast<int64_t>(x.size());
  if (n < 2) {
    r.undefined_reason = "fewer than 2 tokens";
    return r;
  }
  double concordant_minus_discordant = 0.0, discordant = 0.0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) {
      const double sx = (x[j] > x[i]) - (x[j] < x[i]), sy = (y[j] > y[i]) - (y[j] < y[i]);
      concordant_minus_discordant += sx * sy;
      discordant += sx * sy < 0;
    }
  const TieSums tx = tie_sums(x), ty = tie_sums(y);
  const double n0 = static_cast<double>(n) * (n - 1) / 2;
  if (tx.pairs == n0 || ty.pairs == n0) {
    r.undefined_reason = "constant ranking";
    return r;
  }
  r.defined = true;
  r.tau = concordant_minus_discordant / std::sqrt((n0 - tx.pairs) * (n0 - ty.pairs));
  r.tau = std::clamp(r.tau, -1.0, 1.0);
  if (tx.pairs == 0 && ty.pairs == 0 && n <= 33) {
    // Exact: two-sided, from the smaller tail of D (symmetric around n0 / 2).
    const int64_t d = static_cast<int64_t>(discordant);
    const int64_t tail = std::min(d, static_cast<int64_t>(n0) - d);
    r.p_value = std::min(1.0, 2.0 * inversions_cdf(static_cast<int>(n), tail));
  } else {
    const double m = static_cast<double>(n) * (n - 1);
    double var = (m * (2.0 * n + 5) - tx.v1 - ty.v1) / 18 + 2 * tx.pairs * ty.pairs / m;
    if (n > 2) var += tx.v0 * ty.v0 / (9 * m * (n - 2));
    const double z = concordant_minus_discordant / std::sqrt(var);
    r.p_value = std::erfc(std::fabs(z) / std::sqrt(2.0));
  }
  return r;
}

}  // namespace attn::explain
