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

const Variant kAll[] = {Variant::Simple, Variant::SelfAttentionV1,  Variant::SelfAttentionV2,
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
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity()};
  for (Variant v : kAll)
    for (float value : bad) {
      Matrix x = test::bookInputs();
      x(3, 1) = value;
      EXPECT_THROW(computeTrace(x, defaultConfig(v)), InputError) << variantId(v) << " with " << value;
    }
}

TEST(Validation, OverflowingEmbeddingsAreAComputeError) {
  // 1e30 is a finite float, but its dot products (1e60) are not: the engine must refuse with a
  // ComputeError instead of returning NaN or ±∞ heatmaps.
  for (Variant v : kAll)
    for (float value : {1e30f, -1e30f}) {
      const Matrix x = Matrix::Constant(6, 3, value);
      EXPECT_THROW(computeTrace(x, defaultConfig(v)), ComputeError) << variantId(v) << " with " << value;
      Matrix one = test::bookInputs();
      one(2, 0) = value;  // a single huge value is enough
      EXPECT_THROW(computeTrace(one, defaultConfig(v)), ComputeError) << variantId(v) << " with one " << value;
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
  m.dropout = 1.5;  // 1.0 is torch's "drop every weight", accepted
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

// Limits by cost (docs/DESIGN.md §2.4): decided up front from the sizes, so an accepted workspace
// completes in bounded memory and time. The figures are computed here by hand from the shapes.
std::string refusal(const ModelConfig& m, int T, int d_in, const Limits& limits = {}) {
  try {
    validateModel(m, T, d_in, limits);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Cost, AWrapperOf64HeadsOf4096IsRefusedForItsParameters) {
  // The probe's 211-byte workspace: 64 heads × 3 × 4096 × 4096 floats = 12 GiB of parameters,
  // twice (the packed copy), and one head's three stacked while it is packed.
  ModelConfig m = defaultConfig(Variant::MultiHeadWrapper);
  m.d_out = 4096;
  m.num_heads = 64;
  const Cost c = estimateCost(m, 1, 4096, m.batch_size);
  EXPECT_EQ(c.parameter_bytes, (2 * std::int64_t{64} + 1) * 3 * 4096 * 4096 * 4);
  const std::string why = refusal(m, 1, 4096);
  EXPECT_EQ(why.rfind("model.num_heads: this configuration needs about 24.3 GiB (parameters 24.2 GiB", 0), 0u) << why;
  EXPECT_NE(why.find("over the memory budget of 1 GiB"), std::string::npos) << why;
}

TEST(Cost, Gpt2SmallFitsAndItsMapsAreCountedPerTracedElement) {
  ModelConfig m = defaultConfig(Variant::MultiHead);
  m.d_out = 768;
  m.num_heads = 12;
  m.batch_size = 2;
  EXPECT_EQ(refusal(m, 1024, 768), "");
  m.training = false;
  const Cost one = estimateCost(m, 1024, 768, 1), both = estimateCost(m, 1024, 768, 2);
  // Per head: two float maps of 1024² (scores, weights; the other stages are derived when read),
  // Q, K, V of 1024 × 64; with dropout a byte keep mask of 1024² too.
  const std::int64_t per_element = 12 * (std::int64_t{1024} * 1024 * 8 + 3 * 1024 * 64 * 4);
  EXPECT_EQ(one.map_bytes, per_element);
  EXPECT_EQ(both.map_bytes, 2 * per_element);
  m.training = true;
  m.dropout = 0.1;
  EXPECT_EQ(estimateCost(m, 1024, 768, 1).map_bytes, per_element + 12 * std::int64_t{1024} * 1024);
  // The weights, their packed copy, and W_query, W_key, W_value stacked while packing.
  EXPECT_EQ(one.parameter_bytes, (2 * (3 * 768 * 768 + 768 * 768 + 768) + 3 * 768 * 768) * 4);
  // 2·B·T·(3·d_in·d_out + d_out²) for the projections, 4·B·H·T²·w for Q Kᵀ and weights · V.
  EXPECT_NEAR(one.gflop, (2.0 * 2 * 1024 * (3.0 * 768 * 768 + 768.0 * 768) + 4.0 * 2 * 12 * 1024 * 1024 * 64) / 1e9,
              1e-9);
}

TEST(Cost, TheBudgetsAreLimitsAndNameTheField) {
  ModelConfig m = defaultConfig(Variant::MultiHead);
  m.d_out = 768;
  m.num_heads = 12;
  m.batch_size = 2;
  Limits small;
  small.max_memory_bytes = std::int64_t{100} << 20;
  const std::string why = refusal(m, 1024, 768, small);
  EXPECT_EQ(why.rfind("model.batch_size: this configuration needs about", 0), 0u) << why;
  EXPECT_NE(why.find("over the memory budget of 100 MiB"), std::string::npos) << why;
  Limits slow;
  slow.max_gflop = 1;
  const std::string time = refusal(m, 1024, 768, slow);
  EXPECT_NE(time.find("GFLOP, over the budget of 1 GFLOP"), std::string::npos) << time;
  // computeTrace refuses before allocating anything.
  EXPECT_THROW(computeTrace(Matrix::Zero(1024, 768), m, {}, {}, small), InputError);
}

TEST(Cost, DropoutDrawsCountOnlyWhenTheyHappen) {
  ModelConfig m = defaultConfig(Variant::Causal);
  m.dropout = 0.5;
  const Cost on = estimateCost(m, 100, 3, 0);
  m.training = false;
  const Cost off = estimateCost(m, 100, 3, 0);
  EXPECT_EQ(on.working_bytes - off.working_bytes, std::int64_t{2} * 100 * 100);  // B × H × T² bytes
}

}  // namespace
}  // namespace attnscope
