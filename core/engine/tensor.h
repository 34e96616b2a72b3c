// Dense row-major matrices as the engine stores them: torch's default (C) layout, so a matrix
// prints row by row exactly as the notebook's tensors do.
#pragma once
#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace attnscope {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVector = Eigen::Matrix<float, 1, Eigen::Dynamic>;
using ByteMatrix = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Whether every one of the n floats is finite (exponent field not all ones): an integer test the
// compiler vectorizes; the order of an OR does not matter. (Eigen's allFinite tests x − x == 0
// one float at a time, on one thread before every forward pass: docs/engine-measurements.md.)
inline bool allFinite(const float* x, std::size_t n) {
  std::uint32_t non_finite = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    non_finite |= (bits & 0x7f800000u) == 0x7f800000u;
  }
  return non_finite == 0;
}

}  // namespace attnscope
