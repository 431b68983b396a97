// Deterministic pseudo-random numbers that are the same on every platform and compiler
// (std::uniform_int_distribution is not): xoshiro256** seeded through SplitMix64.
// Used for synthetic data and for the packer's --shuffle-seed permutation, whose output must
// never change between builds. Not thread-safe: one Rng per thread or stream.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace ds {

inline uint64_t SplitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  // Independent streams for the same seed: Rng(seed, file_number).
  explicit Rng(uint64_t seed, uint64_t stream = 0) {
    uint64_t x = seed ^ (stream * 0xD1B54A32D192ED03ull);
    for (auto& v : s_) v = SplitMix64(x);
  }
  uint64_t Next() {
    uint64_t r = Rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return r;
  }
  // Uniform in [0, n) without modulo bias (Lemire's multiply-and-reject). REQUIRES: n > 0.
  uint64_t Below(uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(Next()) * n;
    auto low = static_cast<uint64_t>(m);
    if (low < n) {
      uint64_t threshold = -n % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(Next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
  uint64_t Range(uint64_t lo, uint64_t hi) { return lo + Below(hi - lo + 1); }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1p-53; }
  double Normal() {  // Box-Muller
    double u1 = Uniform(), u2 = Uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
  }
  void Fill(char* p, size_t n) {
    while (n >= 8) {
      uint64_t v = Next();
      std::memcpy(p, &v, 8);
      p += 8;
      n -= 8;
    }
    uint64_t v = Next();
    std::memcpy(p, &v, n);
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace ds
