// The output head's logits (core/lm/head_logits.h) on every version this CPU runs: against a dot
// product in long double written here (within a float's rounding), and to the bit against the
// scalar version, for widths around the 8 lanes (1 … 17, GPT-2's 768, 1027), rows around the
// register blocks (1 … 9, 37) and 1, 2, 3, 4, 5 and 9 positions (in groups of 4). Nothing outside
// the rows asked for is written, nor read: the head and the positions' rows end in NaNs, which a
// read past them would carry into a logit.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "guarded_operand.h"
#include "lm/head_logits.h"

namespace attnscope {
namespace {

using test::bitsOf;
using test::isasToTest;

TEST(HeadLogits, EveryVersionIsTheScalarDefinitionToTheBit) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float guard = -12345.0f;
  int compared = 0;
  for (int d : {1, 5, 8, 9, 16, 17, 768, 1027})
    for (int rows : {1, 2, 3, 4, 5, 8, 9, 37})
      for (int P : {1, 2, 3, 4, 5, 9}) {
        const std::size_t x_size = static_cast<std::size_t>(P) * d, head_size = static_cast<std::size_t>(rows) * d;
        std::vector<float> x(x_size + 16, NAN), head(head_size + 16, NAN);
        for (std::size_t i = 0; i < x_size; ++i) x[i] = normal(gen) * 3.0f;
        for (std::size_t i = 0; i < head_size; ++i) head[i] = normal(gen) * 0.02f;
        const int ld = rows + 3;  // the rows asked for, then room that must stay as it was
        std::vector<float> scalar(static_cast<std::size_t>(P) * ld, guard);
        headLogits(x.data(), P, d, head.data(), rows, scalar.data(), ld, Isa::Scalar);
        for (int p = 0; p < P; ++p)
          for (int v = 0; v < rows; ++v) {
            long double exact = 0;
            for (int i = 0; i < d; ++i)
              exact += static_cast<long double>(x[static_cast<std::size_t>(p) * d + i]) *
                       head[static_cast<std::size_t>(v) * d + i];
            const float got = scalar[static_cast<std::size_t>(p) * ld + v];
            ASSERT_NEAR(got, static_cast<double>(exact), 1e-6 * (1 + std::fabs(static_cast<double>(exact))))
                << "d " << d << " rows " << rows << " P " << P << " position " << p << " row " << v;
          }
        for (Isa isa : isasToTest()) {
          std::vector<float> out(static_cast<std::size_t>(P) * ld, guard);
          headLogits(x.data(), P, d, head.data(), rows, out.data(), ld, isa);
          for (int p = 0; p < P; ++p)
            for (int v = 0; v < ld; ++v) {
              const std::size_t at = static_cast<std::size_t>(p) * ld + v;
              ASSERT_EQ(bitsOf(out[at]), bitsOf(scalar[at]))
                  << isaName(isa) << ": d " << d << " rows " << rows << " P " << P << " position " << p << " row " << v
                  << (v >= rows ? " (past the rows asked for)" : "");
              ++compared;
            }
        }
      }
  EXPECT_GT(compared, 0);
}

}  // namespace
}  // namespace attnscope
