// Per-head attention statistics (see attn/explain/head_statistics.h).
#include "attn/explain/head_statistics.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>

#include "attn/error.h"
#include "attn/shape.h"

namespace attn::explain {

HeadStatistics& HeadStatistics::operator+=(const HeadStatistics& o) {
  entropy += o.entropy;
  cls += o.cls;
  punctuation += o.punctuation;
  rows += o.rows;
  previous += o.previous;
  previous_rows += o.previous_rows;
  next += o.next;
  next_rows += o.next_rows;
  return *this;
}

bool is_punctuation(const std::string& token) {
  if (token.empty()) return false;
  for (unsigned char c : token)
    if (!std::ispunct(c)) return false;
  return true;
}

std::vector<HeadStatistics> head_statistics(const std::vector<Tensor>& layers, const std::vector<bool>& punctuation) {
  if (layers.empty()) throw ShapeError("head_statistics: 'layers' expected at least one layer, got none");
  ShapeContract c("head_statistics");
  for (size_t l = 0; l < layers.size(); ++l) c.check(fmt::format("layers[{}]", l), layers[l], {"H", "N", "N"});
  const int64_t H = c["H"], N = c["N"];
  if (static_cast<int64_t>(punctuation.size()) != N - 1)
    throw ShapeError(fmt::format("head_statistics: 'punctuation' expected N − 1 = {} flags (one per token), got {}",
                                 N - 1, punctuation.size()));
  std::vector<HeadStatistics> out;
  for (const Tensor& layer : layers)
    for (int64_t h = 0; h < H; ++h) {
      HeadStatistics s;
      for (int64_t i = 0; i < N; ++i) {
        const float* a = layer.f32() + (h * N + i) * N;  // query i over the N keys
        for (int64_t j = 0; j < N; ++j) {
          if (a[j] > 0.0f) s.entropy -= a[j] * std::log(static_cast<double>(a[j]));
          if (j >= 1 && punctuation[static_cast<size_t>(j - 1)]) s.punctuation += a[j];
        }
        s.cls += a[0];
        ++s.rows;
        if (i >= 2) {
          s.previous += a[i - 1];
          ++s.previous_rows;
        }
        if (i >= 1 && i + 1 < N) {
          s.next += a[i + 1];
          ++s.next_rows;
        }
      }
      out.push_back(s);
    }
  return out;
}

}  // namespace attn::explain
