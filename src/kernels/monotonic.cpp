#include "attn/kernels/monotonic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attn/parallel.h"

namespace attn::kernels {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double sigmoid(double x) { return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)); }
// log(1 − σ(x)) = −softplus(x), exact for large |x|.
double log1m_sigmoid(double x) { return x > 0 ? -x - std::log1p(std::exp(-x)) : -std::log1p(std::exp(x)); }
double log_add_exp(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  const double m = std::max(a, b);
  return m + std::log1p(std::exp(-std::abs(a - b)));
}

int64_t row_length(const int32_t* lengths, int64_t b, int64_t S) { return std::clamp<int64_t>(lengths[b], 0, S); }

// q_j = Σ_{k≤j} prev_k Π_{m=k}^{j−1} (1 − p_m) in the parallel log-space form; p_j into p.
void expected_reach(const float* e, const float* prev, int64_t L, double* p, double* q) {
  double log_cumprod = 0.0;  // L_j = Σ_{m<j} log(1 − p_m)
  double log_sum = kNegInf;  // logcumsumexp_{k≤j}(log prev_k − L_k)
  for (int64_t j = 0; j < L; ++j) {
    p[j] = sigmoid(e[j]);
    if (prev[j] > 0.0f) log_sum = log_add_exp(log_sum, std::log(static_cast<double>(prev[j])) - log_cumprod);
    q[j] = log_sum == kNegInf ? 0.0 : std::exp(log_cumprod + log_sum);
    log_cumprod += log1m_sigmoid(e[j]);
  }
}

// LSE_j over window j = [j − W + 1, j] ∩ [0, L) of u.
void window_log_sums(const float* u, int64_t L, int64_t W, double* lse) {
  for (int64_t j = 0; j < L; ++j) {
    const int64_t first = std::max<int64_t>(0, j - W + 1);
    double m = kNegInf, sum = 0.0;
    for (int64_t l = first; l <= j; ++l) m = std::max(m, static_cast<double>(u[l]));
    for (int64_t l = first; l <= j; ++l) sum += std::exp(u[l] - m);
    lse[j] = m + std::log(sum);
  }
}

}  // namespace

void monotonic_alignment_forward(const float* energies, const float* prev, const int32_t* lengths, int64_t B, int64_t S,
                                 float* alpha) {
  parallel_for(0, B, 1, [=](int64_t lo, int64_t hi) {
    std::vector<double> p(S), q(S);
    for (int64_t b = lo; b < hi; ++b) {
      const int64_t L = row_length(lengths, b, S);
      expected_reach(energies + b * S, prev + b * S, L, p.data(), q.data());
      float* a = alpha + b * S;
      for (int64_t j = 0; j < L; ++j) a[j] = static_cast<float>(p[j] * q[j]);
      std::fill(a + L, a + S, 0.0f);
    }
  });
}

void monotonic_alignment_backward(const float* energies, const float* prev, const float* dalpha, const int32_t* lengths,
                                  int64_t B, int64_t S, float* denergies, float* dprev) {
  parallel_for(0, B, 1, [=](int64_t lo, int64_t hi) {
    std::vector<double> p(S), q(S);
    for (int64_t b = lo; b < hi; ++b) {
      const int64_t L = row_length(lengths, b, S);
      expected_reach(energies + b * S, prev + b * S, L, p.data(), q.data());
      const float* da = dalpha + b * S;
      double next = 0.0;  // G_{j+1}
      for (int64_t j = L - 1; j >= 0; --j) {
        const double g = da[j] * p[j] + (1.0 - p[j]) * next;  // G_j
        if (dprev) dprev[b * S + j] += static_cast<float>(g);
        // p (1 − p) = σ(e) σ(−e), exact for large |e|
        if (denergies)
          denergies[b * S + j] += static_cast<float>(p[j] * sigmoid(-energies[b * S + j]) * q[j] * (da[j] - next));
        next = g;
      }
    }
  });
}

void mocha_chunk_forward(const float* alpha, const float* u, const int32_t* lengths, int64_t B, int64_t S, int64_t W,
                         float* beta) {
  parallel_for(0, B, 1, [=](int64_t lo, int64_t hi) {
    std::vector<double> lse(S);
    for (int64_t b = lo; b < hi; ++b) {
      const int64_t L = row_length(lengths, b, S);
      const float* ub = u + b * S;
      const float* ab = alpha + b * S;
      window_log_sums(ub, L, W, lse.data());
      float* out = beta + b * S;
      for (int64_t k = 0; k < L; ++k) {
        double sum = 0.0;
        for (int64_t j = k; j < std::min(L, k + W); ++j) sum += ab[j] * std::exp(ub[k] - lse[j]);
        out[k] = static_cast<float>(sum);
      }
      std::fill(out + L, out + S, 0.0f);
    }
  });
}

void mocha_chunk_backward(const float* alpha, const float* u, const float* dbeta, const int32_t* lengths, int64_t B,
                          int64_t S, int64_t W, float* dalpha, float* du) {
  parallel_for(0, B, 1, [=](int64_t lo, int64_t hi) {
    std::vector<double> lse(S), h(S);
    for (int64_t b = lo; b < hi; ++b) {
      const int64_t L = row_length(lengths, b, S);
      const float* ub = u + b * S;
      const float* ab = alpha + b * S;
      const float* db = dbeta + b * S;
      window_log_sums(ub, L, W, lse.data());
      for (int64_t j = 0; j < L; ++j) {
        double sum = 0.0;
        for (int64_t k = std::max<int64_t>(0, j - W + 1); k <= j; ++k) sum += db[k] * std::exp(ub[k] - lse[j]);
        h[j] = sum;
        if (dalpha) dalpha[b * S + j] += static_cast<float>(sum);
      }
      if (!du) continue;
      for (int64_t l = 0; l < L; ++l) {
        double sum = 0.0;
        for (int64_t j = l; j < std::min(L, l + W); ++j) sum += ab[j] * std::exp(ub[l] - lse[j]) * (db[l] - h[j]);
        du[b * S + l] += static_cast<float>(sum);
      }
    }
  });
}

void monotonic_select(const float* energies, const int32_t* lengths, const int32_t* start, int64_t B, int64_t S,
                      int32_t* selected) {
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = row_length(lengths, b, S);
    selected[b] = -1;
    for (int64_t j = std::max<int64_t>(0, start[b]); j < L; ++j)
      if (energies[b * S + j] > 0.0f) {
        selected[b] = static_cast<int32_t>(j);
        break;
      }
  }
}

void mocha_hard_weights(const float* u, const int32_t* selected, int64_t B, int64_t S, int64_t W, float* weights) {
  for (int64_t b = 0; b < B; ++b) {
    float* w = weights + b * S;
    std::fill(w, w + S, 0.0f);
    const int64_t j = selected[b];
    if (j < 0) continue;
    const int64_t first = std::max<int64_t>(0, j - W + 1);
    const float* ub = u + b * S;
    double m = kNegInf, sum = 0.0;
    for (int64_t l = first; l <= j; ++l) m = std::max(m, static_cast<double>(ub[l]));
    for (int64_t l = first; l <= j; ++l) sum += std::exp(ub[l] - m);
    for (int64_t l = first; l <= j; ++l) w[l] = static_cast<float>(std::exp(ub[l] - m) / sum);
  }
}

}  // namespace attn::kernels
