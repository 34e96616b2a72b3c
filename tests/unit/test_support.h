// Helpers shared by the unit tests: the book's inputs typed in from the seed notebooks, matrices
// from nested lists, and comparisons that name the worst element when they fail.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/errors.h"
#include "engine/tensor.h"

namespace attnscope::test {

// The message of the InputError `f` throws ("" if it throws none; other exceptions propagate).
template <class F>
std::string errorOf(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A float matrix written row by row, as the notebooks print tensors.
inline Matrix rows(std::initializer_list<std::initializer_list<double>> values) {
  const int r = static_cast<int>(values.size());
  const int c = static_cast<int>(values.begin()->size());
  Matrix m(r, c);
  int i = 0;
  for (const auto& row : values) {
    EXPECT_EQ(static_cast<int>(row.size()), c) << "ragged expected matrix";
    int j = 0;
    for (double v : row) m(i, j++) = static_cast<float>(v);
    ++i;
  }
  return m;
}

// "Your journey starts with one step" (every seed notebook, cell In[1]), typed in here so the
// golden tests do not depend on bookExample().
inline Matrix bookInputs() {
  return rows({{0.43, 0.15, 0.89},
               {0.55, 0.87, 0.66},
               {0.57, 0.85, 0.64},
               {0.22, 0.58, 0.33},
               {0.77, 0.25, 0.10},
               {0.05, 0.80, 0.55}});
}

// Tolerance for numbers printed with 4 decimals: half a unit of the last digit plus float slack.
constexpr double kPrinted4 = 0.5e-4 + 1e-6;

// The worst difference seen by allNear() in the running test, printed when the test ends.
struct WorstSeen {
  bool compared = false;
  double value = 0;
};
inline WorstSeen& worstSeen() {
  static WorstSeen w;
  return w;
}
class WorstDiffPrinter : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (worstSeen().compared)
      std::printf("  worst |ours - expected| in %s.%s: %.3g\n", info.test_suite_name(), info.name(), worstSeen().value);
    worstSeen() = WorstSeen{};
  }
};
inline const bool kWorstDiffPrinterInstalled = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new WorstDiffPrinter);
  return true;
}();

// Every |actual − expected| ≤ tol; on failure reports the worst element and the count.
inline ::testing::AssertionResult allNear(const Matrix& actual, const Matrix& expected, double tol) {
  if (actual.rows() != expected.rows() || actual.cols() != expected.cols())
    return ::testing::AssertionFailure() << "shape " << actual.rows() << "×" << actual.cols() << ", expected "
                                         << expected.rows() << "×" << expected.cols();
  double worst = 0;
  int wi = 0, wj = 0, bad = 0;
  for (int i = 0; i < actual.rows(); ++i)
    for (int j = 0; j < actual.cols(); ++j) {
      const double d = std::fabs(double(actual(i, j)) - double(expected(i, j)));
      if (!(d <= tol)) ++bad;
      if (!(d <= worst)) worst = d, wi = i, wj = j;  // NaN counts as worst
    }
  worstSeen().compared = true;
  if (!(worst <= worstSeen().value)) worstSeen().value = worst;
  if (bad == 0) return ::testing::AssertionSuccess() << "worst difference " << worst;
  return ::testing::AssertionFailure() << bad << " element(s) beyond " << tol << "; worst at (" << wi << ", " << wj
                                       << "): ours " << actual(wi, wj) << ", expected " << expected(wi, wj) << " (diff "
                                       << worst << ")";
}

// Matches numbers the notebook printed with 4 decimals.
inline ::testing::AssertionResult matchesPrinted(const Matrix& actual, const Matrix& printed) {
  return allNear(actual, printed, kPrinted4);
}

// A T × d matrix of uniform values in [−amplitude, amplitude), reproducible from `seed`.
inline Matrix randomMatrix(int T, int d, std::uint32_t seed, float amplitude = 1.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-amplitude, amplitude);
  Matrix x(T, d);
  for (int i = 0; i < T; ++i)
    for (int j = 0; j < d; ++j) x(i, j) = u(g);
  return x;
}

// Bitwise equality of two float matrices (same shape, same bits, so −0 ≠ 0 and NaN == NaN).
inline ::testing::AssertionResult bitwiseEqual(const Matrix& a, const Matrix& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols())
    return ::testing::AssertionFailure() << "shape " << a.rows() << "×" << a.cols() << " vs " << b.rows() << "×"
                                         << b.cols();
  for (int i = 0; i < a.rows(); ++i)
    for (int j = 0; j < a.cols(); ++j) {
      std::uint32_t x, y;
      std::memcpy(&x, &a(i, j), 4);
      std::memcpy(&y, &b(i, j), 4);
      if (x != y)
        return ::testing::AssertionFailure()
               << "differ at (" << i << ", " << j << "): " << a(i, j) << " vs " << b(i, j);
    }
  return ::testing::AssertionSuccess();
}

}  // namespace attnscope::test
