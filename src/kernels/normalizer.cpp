#include "kernels/normalizer.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attn/parallel.h"
#include "row_exp.h"

namespace attn::kernels::inline ATTN_ISA_NS {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Descending order for std::sort. A type of this level's namespace, so the sort it
// instantiates is this level's own copy (tests/isa/check_symbols.py).
struct Descending {
  bool operator()(float a, float b) const { return a > b; }
};

bool kept(const int32_t* mask, int64_t i) { return !mask || mask[i] != 0; }

// ---- softmax and the normalised sigmoid ------------------------------------------------------

// y = exp(z − max) / Σ exp(z − max), z = scale · x; y may alias x.
template <bool kScaled>
void softmax_row(const float* x, const int32_t* mask, float scale, float* y, int64_t n) {
  const float m = row_max<kScaled>(x, mask, scale, n);
  if (m == kRowNegInf) {  // fully masked (or all kept entries -inf): all zeros
    fill_zero(y, n);
    return;
  }
  // Σ >= 1: the max position contributes exp(0) = 1.
  const float inv = 1.0f / exp_shifted<kScaled>(x, mask, scale, m, y, n);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

// dx += scale · y ⊙ (dy − Σ dy⊙y)  (Σ y = 1; masked positions have y = 0 and get nothing)
void softmax_row_backward(const float* y, const float* dy, float scale, float* dx, int64_t n) {
  float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
  for (int64_t i = 0; i < n; ++i) dot += dy[i] * y[i];
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dx[i] += (scale * y[i]) * (dy[i] - dot);
}

// y = σ(z) / Σ σ(z) over the kept z > −inf; y may alias x.
void sigmoid_row(const float* x, const int32_t* mask, float scale, float* y, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float z = scale * x[i];
    const float s = kept(mask, i) && z > kRowNegInf ? sigmoid_approx(z) : 0.0f;
    y[i] = s;
    sum += s;
  }
  // Σ > 0 unless nothing is kept (σ(z) > 0 for finite z: sigmoid_approx caps e^{−z}).
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

// σ_i = σ(z_i), y_i = σ_i / Σ_j σ_j:  ∂y_j/∂z_i = (δ_ij y_i − y_j y_i)(1 − σ_i), so
// dx_i += scale · y_i (1 − σ_i)(dy_i − Σ_j y_j dy_j). Positions with y_i = 0 get 0.
void sigmoid_row_backward(const float* x, const float* y, const float* dy, float scale, float* dx, int64_t n) {
  float dot = 0.0f;
  for (int64_t i = 0; i < n; ++i) dot += y[i] * dy[i];
  for (int64_t i = 0; i < n; ++i) dx[i] += scale * y[i] * (1.0f - sigmoid_approx(scale * x[i])) * (dy[i] - dot);
}

// ---- the sort-based sparse normalisers -------------------------------------------------------

// Copies the kept z = scale · x with z > −inf into buf; returns their count, or −1 when one
// is NaN or +inf (the row's result is then NaN).
int64_t gather_kept(const float* x, const int32_t* mask, float scale, float* buf, int64_t n) {
  int64_t k = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!kept(mask, i)) continue;
    const float z = scale * x[i];
    if (z == kRowNegInf) continue;
    if (!(z < std::numeric_limits<float>::infinity())) return -1;  // NaN or +inf
    buf[k++] = z;
  }
  return k;
}

// The row's result when gather_kept found nothing to normalise (k = 0: zeros) or a NaN /
// +inf (k < 0: NaN on the kept positions, 0 elsewhere). Returns true when it wrote y.
bool degenerate_row(int64_t k, const int32_t* mask, float* y, int64_t n) {
  if (k > 0) return false;
  for (int64_t i = 0; i < n; ++i) y[i] = k < 0 && kept(mask, i) ? kNaN : 0.0f;
  return true;
}

// sparsemax (Martins & Astudillo 2016, alg. 1): with u the kept z − max sorted descending and
// c_k = Σ_{j<=k} u_j, the support is K = #{k : 1 + k u_k > c_k}, τ = (c_K − 1) / K and
// y = [z − max − τ]₊. Sums in double (torch's CPU cumsum accumulates float in double too).
void sparsemax_row(const float* x, const int32_t* mask, float scale, float* y, int64_t n) {
  const int64_t k = gather_kept(x, mask, scale, y, n);
  if (degenerate_row(k, mask, y, n)) return;
  std::sort(y, y + k, Descending{});
  const float top = y[0];
  double cumsum = 0.0, cumsum_at_support = 0.0;
  int64_t support = 0;
  for (int64_t j = 0; j < k; ++j) {
    const double u = static_cast<double>(y[j] - top);
    cumsum += u;
    if (1.0 + static_cast<double>(j + 1) * u > cumsum) {
      support = j + 1;
      cumsum_at_support = cumsum;
    }
  }
  const double tau = (cumsum_at_support - 1.0) / static_cast<double>(support);
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(scale * x[i] - top) - tau;
    y[i] = kept(mask, i) && v > 0.0 ? static_cast<float>(v) : 0.0f;
  }
}

// entmax-1.5 (Peters et al. 2019, alg. 2; the `entmax` package's Entmax15Function): with u the
// kept (z − max) / 2 sorted descending, for each k the threshold of a support of size k is
//   τ_k = μ_k − sqrt(max(0, (1 − k (μ²_k − μ_k²)) / k)),  μ_k, μ²_k the means of u_j, u_j² (j <= k);
// the support is K = #{k : τ_k <= u_k}, τ = τ_K, y = [(z − max) / 2 − τ]₊².
void entmax15_row(const float* x, const int32_t* mask, float scale, float* y, int64_t n) {
  const int64_t k = gather_kept(x, mask, scale, y, n);
  if (degenerate_row(k, mask, y, n)) return;
  std::sort(y, y + k, Descending{});
  const float top = y[0];
  auto threshold = [](double sum, double sum_sq, double rho) {
    const double mean = sum / rho, mean_sq = sum_sq / rho;
    const double delta = (1.0 - rho * (mean_sq - mean * mean)) / rho;
    return mean - std::sqrt(delta > 0.0 ? delta : 0.0);
  };
  double sum = 0.0, sum_sq = 0.0;
  int64_t support = 0;
  for (int64_t j = 0; j < k; ++j) {
    const double u = static_cast<double>((y[j] - top) / 2.0f);
    sum += u;
    sum_sq += u * u;
    if (threshold(sum, sum_sq, static_cast<double>(j + 1)) <= u) ++support;
  }
  sum = sum_sq = 0.0;
  for (int64_t j = 0; j < support; ++j) {
    const double u = static_cast<double>((y[j] - top) / 2.0f);
    sum += u;
    sum_sq += u * u;
  }
  const double tau = threshold(sum, sum_sq, static_cast<double>(support));
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>((scale * x[i] - top) / 2.0f) - tau;
    y[i] = kept(mask, i) && v > 0.0 ? static_cast<float>(v * v) : 0.0f;
  }
}

// ---- α-entmax by bisection ---------------------------------------------------------------------

// [t]₊^{1/(α−1)}, exactly for α = 1.5 (t²) and α = 2 (t).
double entmax_power(double t, double alpha) {
  if (!(t > 0.0)) return 0.0;
  if (alpha == 1.5) return t * t;
  if (alpha == 2.0) return t;
  return std::pow(t, 1.0 / (alpha - 1.0));
}

// Σ over the kept z > −inf of [(α−1)(z − max) − τ]₊^{1/(α−1)}.
double entmax_mass(const float* x, const int32_t* mask, float scale, float top, double alpha, double tau, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float z = scale * x[i];
    if (kept(mask, i) && z > kRowNegInf) s += entmax_power((alpha - 1.0) * static_cast<double>(z - top) - tau, alpha);
  }
  return s;
}

// The `entmax` package's EntmaxBisectFunction (n_iter = 50, ensure_sum_one), on z − max: τ in
// [−1, −(1/d)^{α−1}] (d kept positions) halved 50 times, keeping the half where
// f(τ) = mass(τ) − 1 changes sign; y = p(τ_m) / Σ p(τ_m) at the last midpoint τ_m. y may alias x.
void entmax_bisect_row(const float* x, const int32_t* mask, float scale, float alpha, float* y, int64_t n) {
  const float top = row_max(x, mask, scale, n);
  int64_t d = 0;
  bool bad = false;
  for (int64_t i = 0; i < n; ++i) {
    if (!kept(mask, i)) continue;
    const float z = scale * x[i];
    bad = bad || !(z < std::numeric_limits<float>::infinity());
    d += z > kRowNegInf ? 1 : 0;
  }
  if (degenerate_row(bad ? -1 : d, mask, y, n)) return;
  const double a = alpha;
  double tau_lo = -1.0;
  const double tau_hi = -std::pow(1.0 / static_cast<double>(d), a - 1.0);
  const double f_lo = entmax_mass(x, mask, scale, top, a, tau_lo, n) - 1.0;
  double dm = tau_hi - tau_lo, tau_m = tau_lo;
  for (int it = 0; it < 50; ++it) {
    dm /= 2.0;
    tau_m = tau_lo + dm;
    const double f_m = entmax_mass(x, mask, scale, top, a, tau_m, n) - 1.0;
    if (f_m * f_lo >= 0.0) tau_lo = tau_m;
  }
  // mass(τ_m) > 0: τ_m < τ_hi, and the max position alone gives (−τ_hi)^{1/(α−1)} = 1/d.
  const double inv = 1.0 / entmax_mass(x, mask, scale, top, a, tau_m, n);
  for (int64_t i = 0; i < n; ++i) {
    const float z = scale * x[i];
    const bool on = kept(mask, i) && z > kRowNegInf;
    y[i] = on ? static_cast<float>(entmax_power((a - 1.0) * static_cast<double>(z - top) - tau_m, a) * inv) : 0.0f;
  }
}

// dx_i += scale · g_i (dy_i − Σ g dy / Σ g), g_i = y_i^{2−α} on the support, 0 elsewhere.
void sparse_row_backward(const float* y, const float* dy, float scale, double alpha, float* dx, int64_t n) {
  double sum_g = 0.0, sum_g_dy = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    if (!(y[i] > 0.0f)) continue;
    const double g = alpha == 2.0   ? 1.0
                     : alpha == 1.5 ? std::sqrt(static_cast<double>(y[i]))
                                    : std::pow(static_cast<double>(y[i]), 2.0 - alpha);
    sum_g += g;
    sum_g_dy += g * dy[i];
  }
  if (sum_g == 0.0) return;  // fully masked row: no gradient
  const double q = sum_g_dy / sum_g;
  for (int64_t i = 0; i < n; ++i) {
    if (!(y[i] > 0.0f)) continue;
    const double g = alpha == 2.0   ? 1.0
                     : alpha == 1.5 ? std::sqrt(static_cast<double>(y[i]))
                                    : std::pow(static_cast<double>(y[i]), 2.0 - alpha);
    dx[i] += static_cast<float>(scale * g * (dy[i] - q));
  }
}

}  // namespace

void normalizer_row_forward(const Normalizer& norm, const float* x, const int32_t* mask_or_null, float* y, int64_t n) {
  switch (norm.kind) {
    case NormalizerKind::softmax:
      if (norm.scale == 1.0f) return softmax_row<false>(x, mask_or_null, 1.0f, y, n);
      return softmax_row<true>(x, mask_or_null, norm.scale, y, n);
    case NormalizerKind::sigmoid:
      return sigmoid_row(x, mask_or_null, norm.scale, y, n);
    case NormalizerKind::sparsemax:
      return sparsemax_row(x, mask_or_null, norm.scale, y, n);
    case NormalizerKind::entmax15:
      return entmax15_row(x, mask_or_null, norm.scale, y, n);
    case NormalizerKind::entmax_bisect:
      return entmax_bisect_row(x, mask_or_null, norm.scale, norm.alpha, y, n);
  }
}

void normalizer_row_backward(const Normalizer& norm, const float* x, const float* y, const float* dy, float* dx,
                             int64_t n) {
  switch (norm.kind) {
    case NormalizerKind::softmax:
      return softmax_row_backward(y, dy, norm.scale, dx, n);
    case NormalizerKind::sigmoid:
      return sigmoid_row_backward(x, y, dy, norm.scale, dx, n);
    case NormalizerKind::sparsemax:
      return sparse_row_backward(y, dy, norm.scale, 2.0, dx, n);
    case NormalizerKind::entmax15:
      return sparse_row_backward(y, dy, norm.scale, 1.5, dx, n);
    case NormalizerKind::entmax_bisect:
      return sparse_row_backward(y, dy, norm.scale, norm.alpha, dx, n);
  }
}

namespace {

// row(x_r, mask_r, y_r, extent) over every row, then zeros past the extent.
template <class RowFn>
void forward_rows(const NormalizerRows& rows, const float* x, float* y, RowFn row) {
  const int64_t n = rows.n;
  parallel_for(0, rows.rows, row_grain(n), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t g = r / rows.group;
      const int64_t len = rows.extents ? rows.extents[g] : n;
      row(x + r * n, rows.mask ? rows.mask + g * n : nullptr, y + r * n, len);
      fill_zero(y + r * n + len, n - len);
    }
  });
}

}  // namespace

void normalizer_forward(const Normalizer& norm, const NormalizerRows& rows, const float* x, float* y) {
  if (norm.kind == NormalizerKind::softmax && norm.scale == 1.0f)  // the plain softmax, inlined into the loop
    return forward_rows(rows, x, y, [](const float* xr, const int32_t* m, float* yr, int64_t len) {
      softmax_row<false>(xr, m, 1.0f, yr, len);
    });
  forward_rows(rows, x, y, [&norm](const float* xr, const int32_t* m, float* yr, int64_t len) {
    normalizer_row_forward(norm, xr, m, yr, len);
  });
}

void normalizer_backward(const Normalizer& norm, const NormalizerRows& rows, const float* x, const float* y,
                         const float* dy, float* dx) {
  const int64_t n = rows.n;
  parallel_for(0, rows.rows, row_grain(n), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t len = rows.extents ? rows.extents[r / rows.group] : n;
      normalizer_row_backward(norm, x ? x + r * n : nullptr, y + r * n, dy + r * n, dx + r * n, len);
    }
  });
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
