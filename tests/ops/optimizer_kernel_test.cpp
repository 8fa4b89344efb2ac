// kernels::adam_update (src/kernels/optimizer.cpp), run at every ISA level by isa/<level>/ops:
// every level must give the bits of the plain element loop Adam::update ran before it became a
// kernel (the same IEEE operations in the same order, no FMA), for each of the four loop forms.
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "attn/random.h"
#include "kernels/optimizer.h"
#include "test_support.h"

namespace attn {
namespace {

// The scalar reference: torch.optim.Adam / AdamW's update of one element.
void adam_reference(float* p, const float* g, float* m, float* v, int64_t n, const kernels::AdamScalars& s) {
  for (int64_t i = 0; i < n; ++i) {
    float x = p[i];
    if (s.decay != 1.0f) x *= s.decay;
    const float d = g[i] + s.l2 * x;
    const float mi = s.w1 < 0.5f ? m[i] + s.w1 * (d - m[i]) : d - (d - m[i]) * (1.0f - s.w1);
    const float vi = s.beta2 * v[i] + s.w2 * d * d;
    m[i] = mi;
    v[i] = vi;
    p[i] = x - s.step_size * (mi / (std::sqrt(vi) / s.bc2_sqrt + s.eps));
  }
}

// The first element whose bits differ, or -1.
int64_t first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i])) return static_cast<int64_t>(i);
  return -1;
}

TEST(AdamKernel, SameBitsAsTheScalarLoopInEveryForm) {
  constexpr int64_t n = (1 << 16) + 37;  // threaded (above the grain) and an odd tail
  Rng rng(7);
  std::vector<float> p(n), g(n), m(n), v(n);
  for (int64_t i = 0; i < n; ++i) {
    p[i] = rng.normal();
    g[i] = 0.1f * rng.normal();
    m[i] = 0.01f * rng.normal();
    v[i] = 1e-4f * rng.uniform();
  }
  struct Form {
    const char* name;
    float w1, l2, decay;
  };
  // beta1 0.9 (w1 = 0.1, lerp's low side) and 0.3 (w1 = 0.7, the high side); Adam's L2 or AdamW's decay.
  for (const Form& f : {Form{"adam", 0.1f, 0.01f, 1.0f}, Form{"adamw", 0.1f, 0.0f, 0.999f},
                        Form{"adam, beta1 0.3", 0.7f, 0.01f, 1.0f}, Form{"adamw, beta1 0.3", 0.7f, 0.0f, 0.999f}}) {
    kernels::AdamScalars s{};
    s.w1 = f.w1;
    s.beta2 = 0.999f;
    s.w2 = 1.0f - 0.999f;
    s.l2 = f.l2;
    s.decay = f.decay;
    s.step_size = 1e-3f / 0.19f;
    s.bc2_sqrt = std::sqrt(0.002f);
    s.eps = 1e-8f;
    std::vector<float> p1 = p, m1 = m, v1 = v, p2 = p, m2 = m, v2 = v;
    kernels::adam_update(p1.data(), g.data(), m1.data(), v1.data(), n, s);
    adam_reference(p2.data(), g.data(), m2.data(), v2.data(), n, s);
    for (auto [name, got, want] : {std::tuple{"p", &p1, &p2}, std::tuple{"m", &m1, &m2}, std::tuple{"v", &v1, &v2}}) {
      const int64_t i = first_difference(*got, *want);
      EXPECT_EQ(i, -1) << f.name << ": " << name << " (" << n << ") differs first at [" << i << "]: kernel "
                       << (i >= 0 ? (*got)[static_cast<size_t>(i)] : 0.0f) << ", scalar loop "
                       << (i >= 0 ? (*want)[static_cast<size_t>(i)] : 0.0f);
    }
    EXPECT_NE(first_difference(p1, p), -1) << f.name << ": the update changed nothing";
  }
}

}  // namespace
}  // namespace attn
