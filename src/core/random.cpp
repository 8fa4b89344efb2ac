#include "attn/random.h"

#include <cmath>

namespace attn {

void Rng::reseed(uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t& s : s_) {
    x = splitmix64(x);
    s = x;
  }
}

uint64_t Rng::next() {
  auto rotl = [](uint64_t v, int k) { return (v << k) | (v >> (64 - k)); };
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

float Rng::uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }

float Rng::normal() {
  // Box-Muller; u1 in (0, 1] so the log is finite.
  const double u1 = 1.0 - static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0);
  const double u2 = static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0);
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

}  // namespace attn
