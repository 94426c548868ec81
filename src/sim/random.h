// The simulator's only source of randomness: a seeded xoshiro256** generator.
//
// Written out here (rather than std::mt19937 + <random> distributions) because the
// standard distributions are implementation-defined: the same seed must give the same
// run with libstdc++ and libc++, today and after an upgrade.
#pragma once

#include <cmath>
#include <cstdint>

namespace xm::sim {

// splitmix64: spreads a seed (or any 64-bit key) over all bits. Also the hash used for
// ECMP, so a flow's path is a pure function of its 5-tuple and the switch's seed.
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class Random {
 public:
  explicit Random(uint64_t seed) {
    for (uint64_t& word : s_) word = seed = mix64(seed);
  }

  uint64_t next() {
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

  // Uniform in [0, 1), 53 random bits.
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n). Precondition: n > 0. (Multiply-shift; the bias is < n / 2^64.)
  uint64_t below(uint64_t n) { return uint64_t((__uint128_t(next()) * n) >> 64); }
  // Exponentially distributed with the given mean.
  double exponential(double mean) { return -std::log1p(-uniform()) * mean; }

 private:
  static constexpr uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace xm::sim
