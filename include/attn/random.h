#pragma once
// A seeded generator with the same stream on every platform (std:: distributions are
// implementation-defined, so attn draws its own). xoshiro256** seeded through splitmix64.
#include <array>
#include <cstddef>
#include <cstdint>

namespace attn {

// Inline so that the counter-based draws below vectorise inside kernel loops (dropout).
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }
  void reseed(uint64_t seed);
  uint64_t next();
  float uniform();  // [0, 1), 24 random bits
  float normal();   // standard normal (Box-Muller)
  // An integer in [0, n).
  uint64_t below(uint64_t n) { return next() % n; }

  // The generator's whole state, for a checkpoint that must continue the same stream
  // (--resume with dropout): set_state(state()) changes nothing.
  using State = std::array<uint64_t, 4>;
  State state() const { return {s_[0], s_[1], s_[2], s_[3]}; }
  void set_state(const State& state) {
    for (int i = 0; i < 4; ++i) s_[i] = state[static_cast<std::size_t>(i)];
  }

 private:
  uint64_t s_[4];
};

// A counter-based uniform in [0, 1): the same value for (seed, index) whatever the thread
// that asks, so parallel kernels (dropout) are deterministic.
inline float uniform_at(uint64_t seed, uint64_t index) {
  // The top 24 bits, exact as an int32 (a 32-bit conversion vectorises on AVX2; 64-bit does not).
  return static_cast<float>(static_cast<int32_t>(splitmix64(seed ^ splitmix64(index)) >> 40)) * (1.0f / 16777216.0f);
}

}  // namespace attn
