// Operands of the hand-written kernels' tests (tile_kernels_test, packed_linear_test): matrices
// with a row stride, at any float offset from an alignment, surrounded by NaN, so that a read past
// a row turns a result into NaN and a write past it changes a guard.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/simd_isa.h"

namespace attnscope::test {

inline const float kNaN = std::numeric_limits<float>::quiet_NaN();
inline const float kInf = std::numeric_limits<float>::infinity();

// Scalar, and each SIMD version this CPU runs.
inline std::vector<Isa> isasToTest() {
  std::vector<Isa> out{Isa::Scalar};
  for (Isa isa : {Isa::Avx2, Isa::Avx512})
    if (isaSupported(isa)) out.push_back(isa);
  return out;
}

inline std::uint32_t bitsOf(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// A rows × cols operand with row stride ld, starting `offset` floats into its buffer; everything
// else in the buffer (the stride's padding, the floats before and 64 after) is NaN.
struct Operand {
  int rows, cols, ld, offset;
  std::vector<float> buf;
  Operand(int r, int c, int pad, int off)
      : rows(r), cols(c), ld(c + pad), offset(off), buf(off + static_cast<std::size_t>(r) * (c + pad) + 64, kNaN) {}
  float* data() { return buf.data() + offset; }
  float& at(int r, int c) { return buf[offset + static_cast<std::size_t>(r) * ld + c]; }
  float at(int r, int c) const { return buf[offset + static_cast<std::size_t>(r) * ld + c]; }
  void fillRandom(std::mt19937& g, float lo, float hi) {
    std::uniform_real_distribution<float> u(lo, hi);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) at(r, c) = u(g);
  }
  // Whether every float outside the operand is still the NaN it was.
  bool guardsIntact() const {
    for (std::size_t i = 0; i < buf.size(); ++i) {
      const std::ptrdiff_t k = static_cast<std::ptrdiff_t>(i) - offset;
      const bool inside = k >= 0 && k / ld < rows && k % ld < cols;
      if (!inside && bitsOf(buf[i]) != bitsOf(kNaN)) return false;
    }
    return true;
  }
};

}  // namespace attnscope::test
