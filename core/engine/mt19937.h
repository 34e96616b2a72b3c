// Mt19937: the 32-bit Mersenne Twister, drawing exactly std::mt19937's stream (and so torch's CPU
// generator's), with block draws that refill and temper the state 8 (AVX2) or 16 (AVX-512) words at
// a time. The SIMD versions are chosen at run time from what the CPU has, never assumed from the
// build flags; the scalar refill in mt19937.cpp is the source of truth they are tested against.
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/simd_isa.h"

namespace attnscope {

class Mt19937 {
 public:
  static constexpr std::size_t kStateSize = 624;

  // Which refill/tempering code runs. Auto picks the widest the CPU supports; the others force one
  // (for tests and measurements) and are refused with std::invalid_argument when the CPU lacks it.

  // std::mt19937(seed): the standard initialization; the first draw refills the state.
  explicit Mt19937(std::uint32_t seed = 5489u, Isa impl = Isa::Auto);
  void seed(std::uint32_t seed);

  Isa impl() const { return impl_; }  // the resolved implementation, never Auto

  // The next output, the same as std::mt19937's operator().
  std::uint32_t next() {
    if (index_ >= kStateSize) refill();
    return temper(state_[index_++]);
  }
  std::uint32_t operator()() { return next(); }

  // The next n outputs, in order: the same as n calls of next().
  void fill(std::uint32_t* out, std::size_t n);

  // MT19937's output transformation.
  static std::uint32_t temper(std::uint32_t y) {
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    return y ^ (y >> 18);
  }

 private:
  void refill();

  // Aligned to a cache line so the refill's loads of x[k] and its stores never split lines
  // (unaligned, the AVX-512 draws measured clearly slower). C++17's new and std::allocator honour
  // it. Plain data otherwise: a copy continues the identical stream.
  alignas(64) std::uint32_t state_[kStateSize];
  std::size_t index_;
  Isa impl_;
};

}  // namespace attnscope
