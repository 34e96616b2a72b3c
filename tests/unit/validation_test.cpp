// Refusals (docs/DESIGN.md §2.1, §2.3): a config the seed would assert on, non-finite embeddings and values
// that overflow float32 give a clear exception, never NaN in a trace or a crash.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "engine/attention.h"
#include "engine/errors.h"
#include "test_support.h"

namespace attnscope {
namespace {

const Variant kAll[] = {Variant::Simple,  Variant::SelfAttentionV1,  Variant::SelfAttentionV2,
                        Variant::Causal, Variant::MultiHeadWrapper, Variant::MultiHead};

TEST(Validation, MultiHeadDoutNotDivisibleByHeads) {
  ModelConfig m = defaultConfig(Variant::MultiHead);
  m.d_out = 5;
  m.num_heads = 2;
  try {
    computeTrace(test::bookInputs(), m);
    FAIL() << "d_out 5 with 2 heads was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("divisible"), std::string::npos) << e.what();
  }
}

TEST(Validation, NonFiniteEmbeddingsThrow) {
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity()};
  for (Variant v : kAll)
    for (float value : bad) {
      Matrix x = test::bookInputs();
      x(3, 1) = value;
      EXPECT_THROW(computeTrace(x, defaultConfig(v)), InputError)
          << variantId(v) << " with " << value;
    }
}

TEST(Validation, OverflowingEmbeddingsAreAComputeError) {
  // 1e30 is a finite float, but its dot products (1e60) are not: the engine must refuse with a
  // ComputeError instead of returning NaN or ±∞ heatmaps.
  for (Variant v : kAll)
    for (float value : {1e30f, -1e30f}) {
      const Matrix x = Matrix::Constant(6, 3, value);
      EXPECT_THROW(computeTrace(x, defaultConfig(v)), ComputeError)
          << variantId(v) << " with " << value;
      Matrix one = test::bookInputs();
      one(2, 0) = value;  // a single huge value is enough
      EXPECT_THROW(computeTrace(one, defaultConfig(v)), ComputeError)
          << variantId(v) << " with one " << value;
    }
}

TEST(Validation, EmptyEmbeddingsThrow) {
  EXPECT_THROW(computeTrace(Matrix(0, 3), defaultConfig(Variant::MultiHead)), InputError);
  EXPECT_THROW(computeTrace(Matrix(6, 0), defaultConfig(Variant::MultiHead)), InputError);
}

TEST(Validation, ConfigsTheSeedCannotBuild) {
  const Matrix x = test::bookInputs();
  auto refused = [&](ModelConfig m, const char* field) {
    try {
      computeTrace(x, m);
      ADD_FAILURE() << "accepted a config with a bad " << field;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  ModelConfig m = defaultConfig(Variant::MultiHead);
  m.dropout = 1.0;
  refused(m, "dropout");
  m.dropout = -0.1;
  refused(m, "dropout");
  m = defaultConfig(Variant::SelfAttentionV2);
  m.dropout = 0.1;  // v2 has no nn.Dropout
  refused(m, "dropout");
  m = defaultConfig(Variant::Causal);
  m.num_heads = 2;
  refused(m, "num_heads");
  m = defaultConfig(Variant::MultiHead);
  m.batch_size = 0;
  refused(m, "batch_size");
  m = defaultConfig(Variant::SelfAttentionV1);
  m.d_out = 0;
  refused(m, "d_out");
}

}  // namespace
}  // namespace attnscope
