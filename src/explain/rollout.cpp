// Attention rollout and attention flow (see attn/explain/rollout.h).
#include "attn/explain/rollout.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <queue>

#include "attn/error.h"
#include "attn/shape.h"

namespace attn::explain {
namespace {

using Matrix = std::vector<double>;  // (N, N) row-major

// Every layer (H, N, N) with the same H and N; returns N.
int64_t checked_size(const char* op, const std::vector<Tensor>& layers) {
  if (layers.empty()) throw ShapeError(std::string(op) + ": 'layers' expected at least one layer, got none");
  ShapeContract c(op);
  for (size_t l = 0; l < layers.size(); ++l) c.check(fmt::format("layers[{}]", l), layers[l], {"H", "N", "N"});
  return c["N"];
}

// Ã_l = ½ mean_h A_l,h + ½ I, rows renormalised (a zero row stays the identity's).
std::vector<Matrix> residual_matrices(const char* op, const std::vector<Tensor>& layers) {
  const int64_t N = checked_size(op, layers);
  std::vector<Matrix> out;
  for (const Tensor& layer : layers) {
    const int64_t H = layer.dim(0);
    const float* w = layer.f32();
    Matrix m(N * N, 0.0);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t k = 0; k < N * N; ++k) m[k] += 0.5 * w[h * N * N + k] / static_cast<double>(H);
    for (int64_t i = 0; i < N; ++i) {
      m[i * N + i] += 0.5;
      double sum = 0.0;
      for (int64_t j = 0; j < N; ++j) sum += m[i * N + j];
      for (int64_t j = 0; j < N; ++j) m[i * N + j] /= sum;  // sum >= 0.5
    }
    out.push_back(std::move(m));
  }
  return out;
}

Tensor to_tensor(const Matrix& m, int64_t rows, int64_t cols) {
  Tensor t = Tensor::empty({rows, cols});
  for (int64_t k = 0; k < rows * cols; ++k) t.f32()[k] = static_cast<float>(m[k]);
  return t;
}

// Dinic's maximum flow on a small dense-ish graph.
class MaxFlow {
 public:
  explicit MaxFlow(int64_t nodes) : adjacency_(nodes), level_(nodes), next_(nodes) {}
  void add_edge(int64_t from, int64_t to, double capacity) {
    adjacency_[from].push_back(edges_.size());
    edges_.push_back({to, capacity});
    adjacency_[to].push_back(edges_.size());
    edges_.push_back({from, 0.0});
  }
  // Consumes the capacities: build a fresh graph per (source, sink).
  double run(int64_t source, int64_t sink) {
    double total = 0.0;
    while (levels(source, sink)) {
      std::fill(next_.begin(), next_.end(), 0);
      while (double pushed = push(source, sink, std::numeric_limits<double>::infinity())) total += pushed;
    }
    return total;
  }

 private:
  struct Edge {
    int64_t to;
    double capacity;
  };
  static constexpr double kEps = 1e-15;

  bool levels(int64_t source, int64_t sink) {
    std::fill(level_.begin(), level_.end(), -1);
    std::queue<int64_t> queue;
    level_[source] = 0;
    queue.push(source);
    while (!queue.empty()) {
      const int64_t u = queue.front();
      queue.pop();
      for (size_t e : adjacency_[u])
        if (edges_[e].capacity > kEps && level_[edges_[e].to] < 0) {
          level_[edges_[e].to] = level_[u] + 1;
          queue.push(edges_[e].to);
        }
    }
    return level_[sink] >= 0;
  }
  double push(int64_t u, int64_t sink, double limit) {
    if (u == sink) return limit;
    for (size_t& k = next_[u]; k < adjacency_[u].size(); ++k) {
      const size_t e = adjacency_[u][k];
      Edge& edge = edges_[e];
      if (edge.capacity <= kEps || level_[edge.to] != level_[u] + 1) continue;
      if (double pushed = push(edge.to, sink, std::min(limit, edge.capacity)); pushed > 0.0) {
        edge.capacity -= pushed;
        edges_[e ^ 1].capacity += pushed;
        return pushed;
      }
    }
    return 0.0;
  }

  std::vector<std::vector<size_t>> adjacency_;
  std::vector<Edge> edges_;
  std::vector<int64_t> level_;
  std::vector<size_t> next_;
};

}  // namespace

std::vector<Tensor> sentence_layers(const std::vector<Tensor>& batch_layers, int64_t b, int64_t n) {
  ShapeContract c("sentence_layers");
  for (size_t l = 0; l < batch_layers.size(); ++l)
    c.check(fmt::format("batch_layers[{}]", l), batch_layers[l], {"B", "H", "S", "S"});
  if (batch_layers.empty()) throw ShapeError("sentence_layers: 'batch_layers' expected at least one layer, got none");
  const int64_t B = c["B"], H = c["H"], S = c["S"];
  if (b < 0 || b >= B) throw ValueError(fmt::format("sentence_layers: row b={} outside [0, B={})", b, B));
  if (n < 1 || n > S) throw ValueError(fmt::format("sentence_layers: length n={} outside [1, S={}]", n, S));
  std::vector<Tensor> out;
  for (const Tensor& layer : batch_layers) {
    Tensor t = Tensor::empty({H, n, n});
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < n; ++i) {
        const float* row = layer.f32() + ((b * H + h) * S + i) * S;
        std::copy(row, row + n, t.f32() + (h * n + i) * n);
      }
    out.push_back(t);
  }
  return out;
}

std::vector<Tensor> residual_attention(const std::vector<Tensor>& layers) {
  const std::vector<Matrix> m = residual_matrices("residual_attention", layers);
  const int64_t N = layers[0].dim(1);
  std::vector<Tensor> out;
  for (const Matrix& a : m) out.push_back(to_tensor(a, N, N));
  return out;
}

Tensor attention_rollout(const std::vector<Tensor>& layers) {
  const std::vector<Matrix> m = residual_matrices("attention_rollout", layers);
  const int64_t N = layers[0].dim(1);
  Matrix r = m[0];  // R_1 = Ã_1; R_l = Ã_l · R_{l−1}
  for (size_t l = 1; l < m.size(); ++l) {
    Matrix next(N * N, 0.0);
    for (int64_t i = 0; i < N; ++i)
      for (int64_t k = 0; k < N; ++k) {
        const double a = m[l][i * N + k];
        for (int64_t j = 0; j < N; ++j) next[i * N + j] += a * r[k * N + j];
      }
    r = std::move(next);
  }
  return to_tensor(r, N, N);
}

Tensor attention_flow(const std::vector<Tensor>& layers, const std::vector<int64_t>& rows) {
  const std::vector<Matrix> m = residual_matrices("attention_flow", layers);
  const int64_t N = layers[0].dim(1), L = static_cast<int64_t>(m.size());
  for (int64_t row : rows)
    if (row < 0 || row >= N) throw ValueError(fmt::format("attention_flow: row {} outside [0, N={})", row, N));
  const auto node = [N](int64_t layer, int64_t position) { return layer * N + position; };
  Matrix flows(rows.size() * N, 0.0);
  for (size_t k = 0; k < rows.size(); ++k) {
    double sum = 0.0;
    for (int64_t j = 0; j < N; ++j) {
      MaxFlow graph((L + 1) * N);
      for (int64_t l = 1; l <= L; ++l)
        for (int64_t i = 0; i < N; ++i)
          for (int64_t from = 0; from < N; ++from)
            if (const double capacity = m[l - 1][i * N + from]; capacity > 0.0)
              graph.add_edge(node(l - 1, from), node(l, i), capacity);
      flows[k * N + j] = graph.run(node(0, j), node(L, rows[k]));
      sum += flows[k * N + j];
    }
    if (sum > 0.0)
      for (int64_t j = 0; j < N; ++j) flows[k * N + j] /= sum;
  }
  return to_tensor(flows, static_cast<int64_t>(rows.size()), N);
}

}  // namespace attn::explain
