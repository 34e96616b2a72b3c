// Dense row-major matrices as the engine stores them: torch's default (C) layout, so a matrix
// prints row by row exactly as the notebook's tensors do.
#pragma once
#include <Eigen/Core>
#include <cstdint>

namespace attnscope {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVector = Eigen::Matrix<float, 1, Eigen::Dynamic>;
using ByteMatrix = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace attnscope
