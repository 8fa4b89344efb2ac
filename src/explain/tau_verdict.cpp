#include "tau_verdict.h"

#include <algorithm>
#include <cstdio>

namespace attn::explain::detail {

std::string format(const char* pattern, double a, double b, double c) {
  char buffer[1024];
  std::snprintf(buffer, sizeof buffer, pattern, a, b, c);
  return buffer;
}

std::string tau_verdict(const TauSummary& ag, const TauSummary& al, const TauSummary& gl, const char* measures_agree,
                        const char* attention_tracks, const char* moderate) {
  const double best_attention = std::max(ag.mean, al.mean);
  if (gl.mean - best_attention > 0.1) return format(measures_agree, gl.mean, ag.mean, al.mean);
  return format(best_attention >= 0.5 ? attention_tracks : moderate, ag.mean, al.mean, gl.mean);
}

}  // namespace attn::explain::detail
