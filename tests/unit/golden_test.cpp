// Golden cases: every tensor the seed notebooks print for a configuration the engine can express
// (docs/DESIGN.md §2.2), typed in from the notebook and matched to its 4 printed decimals. The notebook and
// cell are named above each number. 004 = 004_b57ce7cf1f8c6fd4.txt (all classes), 001 and 003
// print the same simple-attention numbers, 000 prints the sum-normalized context.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "engine/attention.h"
#include "engine/stages.h"
#include "engine/torch_generator.h"
#include "formats/workspace_file.h"
#include "test_support.h"

namespace attnscope {
namespace {

using test::bookInputs;
using test::matchesPrinted;
using test::rows;

Trace traceOf(const ModelConfig& m) { return computeTrace(bookInputs(), m); }

// A row of a matrix as a 1 × n matrix, to compare with a printed vector.
Matrix row(const Matrix& m, int i) { return m.middleRows(i, 1); }

TEST(GoldenInputs, BookExampleHasTheNotebookEmbeddings) {
  // All seeds, In[1]: the inputs tensor, and the six tokens of the sentence.
  const Workspace ws = bookExample();
  EXPECT_TRUE(test::allNear(ws.embeddings, bookInputs(), 0.0));
  EXPECT_EQ(ws.tokens, (std::vector<std::string>{"Your", "journey", "starts", "with", "one", "step"}));
}

// ---- 1 · simple self-attention (no weights) ----

TEST(GoldenSimple, ScoresWeightsContext) {
  const Trace t = traceOf(defaultConfig(Variant::Simple));
  ASSERT_EQ(t.batches.size(), 1u);
  ASSERT_EQ(t.batches[0].heads.size(), 1u);
  const HeadTrace& h = t.batches[0].heads[0];
  // 004 In[7]/In[8] (also 001 In[9]/In[11], 003 In[5]): attention_scores = inputs @ inputs.T
  EXPECT_TRUE(matchesPrinted(h.scores, rows({{0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310},
                                             {0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865},
                                             {0.9422, 1.4754, 1.4570, 0.8296, 0.7154, 1.0605},
                                             {0.4753, 0.8434, 0.8296, 0.4937, 0.3474, 0.6565},
                                             {0.4576, 0.7070, 0.7154, 0.3474, 0.6654, 0.2935},
                                             {0.6310, 1.0865, 1.0605, 0.6565, 0.2935, 0.9450}})));
  // 001 In[12] "attn_weights = torch.softmax(attn_scores, dim=-1)" (same in 003 In[6]);
  // row 1 is also 004 In[4]/In[5] "PyTorch softmax weights".
  EXPECT_TRUE(matchesPrinted(h.weights, rows({{0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452},
                                              {0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581},
                                              {0.1390, 0.2369, 0.2326, 0.1242, 0.1108, 0.1565},
                                              {0.1435, 0.2074, 0.2046, 0.1462, 0.1263, 0.1720},
                                              {0.1526, 0.1958, 0.1975, 0.1367, 0.1879, 0.1295},
                                              {0.1385, 0.2184, 0.2128, 0.1420, 0.0988, 0.1896}})));
  // 004 In[10] context_vectors = attention_weights @ inputs (001 In[13], 003 In[7]);
  // row 1 is also 004 In[6] context_vector.
  const Matrix context = rows({{0.4421, 0.5931, 0.5790},
                               {0.4419, 0.6515, 0.5683},
                               {0.4431, 0.6496, 0.5671},
                               {0.4304, 0.6298, 0.5510},
                               {0.4671, 0.5910, 0.5266},
                               {0.4177, 0.6503, 0.5645}});
  EXPECT_TRUE(matchesPrinted(h.context, context));
  EXPECT_TRUE(matchesPrinted(t.batches[0].output, context));
}

TEST(GoldenSimple, SumNormalizedWeights) {
  ModelConfig m = defaultConfig(Variant::Simple);
  m.normalization = Normalization::Sum;
  const Trace t = traceOf(m);
  const HeadTrace& h = t.batches[0].heads[0];
  // 004 In[3] attention_scores_normed = attention_scores / attention_scores.sum() for x^2
  // (001 In[5], 000 In[3] print the same).
  EXPECT_TRUE(matchesPrinted(row(h.weights, 1), rows({{0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656}})));
  // 000 In[4]: the context vector of x^2 with those weights.
  EXPECT_TRUE(matchesPrinted(row(t.batches[0].output, 1), rows({{0.4355, 0.6451, 0.5680}})));
}

// ---- 2 · trainable weights ----

TEST(GoldenSelfAttentionV1, Seed123StepByStep) {
  ModelConfig m = defaultConfig(Variant::SelfAttentionV1);
  m.seed = 123;
  m.d_out = 2;
  const Trace t = traceOf(m);
  const HeadTrace& h = t.batches[0].heads[0];
  // 004 In[11] (001 In[8]): query_2 = x_2 @ W_query after torch.manual_seed(123) and 3 torch.rand.
  EXPECT_TRUE(matchesPrinted(row(h.queries, 1), rows({{0.4306, 1.4551}})));
  // 004 In[13]: attn_score_22 = query_2.dot(keys_2)
  EXPECT_NEAR(h.scores(1, 1), 1.8524, test::kPrinted4);
  // 004 In[14] (001 In[14]): attn_scores_2 = query_2 @ keys.T
  EXPECT_TRUE(matchesPrinted(row(h.scores, 1), rows({{1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440}})));
  // 004 In[15] (001 In[15]): attn_weights_2 = softmax(attn_scores_2 / d_k**0.5)
  EXPECT_TRUE(matchesPrinted(row(h.weights, 1), rows({{0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820}})));
  // 004 In[16] (001 In[16]): context_vec_2 = attn_weights_2 @ values
  EXPECT_TRUE(matchesPrinted(row(h.context, 1), rows({{0.3061, 0.8210}})));
}

TEST(GoldenSelfAttentionV1, Seed123WeightMapsAreTheNotebooksW) {
  // 004 In[11]: torch.manual_seed(123); W_query = torch.rand(d_in, d_out) — Debian torch prints
  // [[0.2961, 0.5166], [0.2517, 0.6886], [0.0740, 0.8665]]; the map is W_query as x @ W_query uses it.
  ModelConfig m = defaultConfig(Variant::SelfAttentionV1);
  m.seed = 123;
  m.d_out = 2;
  const Trace t = traceOf(m);
  const HeadTrace& h = t.batches[0].heads[0];
  const Matrix w_query = stageValues(t, h, Stage::WQuery);
  ASSERT_EQ(w_query.rows(), 3);
  ASSERT_EQ(w_query.cols(), 2);
  EXPECT_TRUE(matchesPrinted(w_query, rows({{0.2961, 0.5166}, {0.2517, 0.6886}, {0.0740, 0.8665}})));
  // and query_2 = x_2 @ W_query is the printed [0.4306, 1.4551] (004 In[11]) from the map itself
  const Matrix x2 = rows({{0.55, 0.87, 0.66}});
  EXPECT_TRUE(matchesPrinted(x2 * w_query, rows({{0.4306, 1.4551}})));
}

TEST(GoldenMultiHead, Seed123ModuleMapsHoldThePrintedOutput) {
  // 004 In[43]: the module's output is the printed [[0.3190, 0.4858], …]; out_proj's map is its
  // weight as concat @ W uses it, so concat · map + bias gives that output again.
  ModelConfig m = defaultConfig(Variant::MultiHead);
  m.seed = 123;
  m.d_out = 2;
  m.num_heads = 2;
  m.dropout = 0.0;
  const Trace t = traceOf(m);
  const BatchTrace& bt = t.batches[0];
  const Matrix output = moduleMapValues(t, bt, ModuleMap::Output).toMatrix();
  EXPECT_TRUE(matchesPrinted(output.topRows(2), rows({{0.3190, 0.4858}, {0.2943, 0.3897}})));
  const Matrix w_out = moduleMapValues(t, bt, ModuleMap::OutProj).toMatrix();
  ASSERT_EQ(w_out.rows(), 2);
  Matrix again = moduleMapValues(t, bt, ModuleMap::Concat).toMatrix() * w_out;
  again.rowwise() += t.parameters->out_proj.bias;
  EXPECT_TRUE(matchesPrinted(again.topRows(2), rows({{0.3190, 0.4858}, {0.2943, 0.3897}})));
  // Each head's W maps are its columns of the one projection: X · W_query(h) is head h's Q.
  for (const HeadTrace& h : bt.heads) {
    const Matrix q = t.batches[0].heads[static_cast<std::size_t>(h.index)].queries;
    EXPECT_TRUE(test::allNear(bookInputs() * stageValues(t, h, Stage::WQuery), q, 1e-6f)) << "head " << h.index;
    EXPECT_TRUE(test::allNear(bookInputs() * stageValues(t, h, Stage::WValue), h.values, 1e-6f)) << "head " << h.index;
  }
}

TEST(GoldenWrapper, EachHeadsWeightMapsAreItsOwnLayer) {
  ModelConfig m = defaultConfig(Variant::MultiHeadWrapper);
  m.num_heads = 3;
  const Trace t = traceOf(m);
  ASSERT_EQ(t.batches[0].heads.size(), 3u);
  for (const HeadTrace& h : t.batches[0].heads) {
    EXPECT_TRUE(test::allNear(bookInputs() * stageValues(t, h, Stage::WKey), h.keys, 1e-6f)) << "head " << h.index;
    EXPECT_TRUE(test::allNear(bookInputs() * stageValues(t, h, Stage::WQuery), h.queries, 1e-6f)) << "head " << h.index;
  }
}

TEST(GoldenSelfAttentionV1, Seed123Output) {
  // 004 In[18]: torch.manual_seed(123); sa_v1 = SelfAttention_v1(d_in, d_out); sa_v1(inputs)
  ModelConfig m = defaultConfig(Variant::SelfAttentionV1);
  m.seed = 123;
  const Trace t = traceOf(m);
  EXPECT_TRUE(matchesPrinted(t.batches[0].output, rows({{0.2996, 0.8053},
                                                        {0.3061, 0.8210},
                                                        {0.3058, 0.8203},
                                                        {0.2948, 0.7939},
                                                        {0.2927, 0.7891},
                                                        {0.2990, 0.8040}})));
}

TEST(GoldenSelfAttentionV2, Seed789Output) {
  // 004 In[20]: torch.manual_seed(789); sa_v2 = SelfAttention_v2(d_in, d_out); sa_v2(inputs)
  ModelConfig m = defaultConfig(Variant::SelfAttentionV2);
  m.seed = 789;
  const Trace t = traceOf(m);
  EXPECT_TRUE(matchesPrinted(t.batches[0].output, rows({{-0.0739, 0.0713},
                                                        {-0.0748, 0.0703},
                                                        {-0.0749, 0.0702},
                                                        {-0.0760, 0.0685},
                                                        {-0.0763, 0.0679},
                                                        {-0.0754, 0.0693}})));
}

TEST(GoldenSelfAttentionV2, Seed789UnmaskedWeights) {
  // 004 In[25]: softmax(sa_v2.W_query(inputs) @ sa_v2.W_key(inputs).T / d_k**0.5)
  ModelConfig m = defaultConfig(Variant::SelfAttentionV2);
  m.seed = 789;
  const Trace t = traceOf(m);
  EXPECT_TRUE(matchesPrinted(t.batches[0].heads[0].weights, rows({{0.1921, 0.1646, 0.1652, 0.1550, 0.1721, 0.1510},
                                                                  {0.2041, 0.1659, 0.1662, 0.1496, 0.1665, 0.1477},
                                                                  {0.2036, 0.1659, 0.1662, 0.1498, 0.1664, 0.1480},
                                                                  {0.1869, 0.1667, 0.1668, 0.1571, 0.1661, 0.1564},
                                                                  {0.1830, 0.1669, 0.1670, 0.1588, 0.1658, 0.1585},
                                                                  {0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529}})));
}

TEST(GoldenSelfAttentionV2, Seed123Output) {
  // 004 In[21]/In[22]: torch.manual_seed(123); sa_v2_v1 = SelfAttention_v2(d_in, d_out)
  ModelConfig m = defaultConfig(Variant::SelfAttentionV2);
  m.seed = 123;
  const Trace t = traceOf(m);
  EXPECT_TRUE(matchesPrinted(t.batches[0].output, rows({{-0.5337, -0.1051},
                                                        {-0.5323, -0.1080},
                                                        {-0.5323, -0.1079},
                                                        {-0.5297, -0.1076},
                                                        {-0.5311, -0.1066},
                                                        {-0.5299, -0.1081}})));
  // 004 In[41]: torch.manual_seed(123); nn.Linear(3, 2, bias=False)(batch) — the same W_query.
  EXPECT_TRUE(matchesPrinted(t.batches[0].heads[0].queries, rows({{-0.3536, 0.3965},
                                                                  {-0.3021, -0.0289},
                                                                  {-0.3015, -0.0232},
                                                                  {-0.1353, -0.0978},
                                                                  {-0.2052, 0.0870},
                                                                  {-0.1542, -0.1499}})));
}

// ---- 3 · causal attention ----

TEST(GoldenCausal, Seed789MaskedScoresAndWeights) {
  // The causal variant with seed 789 and no dropout has sa_v2's weights (same draws).
  ModelConfig m = defaultConfig(Variant::Causal);
  m.seed = 789;
  m.dropout = 0.0;
  const Trace t = traceOf(m);
  ASSERT_EQ(t.batches.size(), static_cast<std::size_t>(m.batch_size));
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // 004 In[29]: attn_scores.masked_fill(mask.bool(), -torch.inf) — UNscaled scores with −inf.
  const Matrix printed_masked = rows({{0.2899, -kInf, -kInf, -kInf, -kInf, -kInf},
                                      {0.4656, 0.1723, -kInf, -kInf, -kInf, -kInf},
                                      {0.4594, 0.1703, 0.1731, -kInf, -kInf, -kInf},
                                      {0.2642, 0.1024, 0.1036, 0.0186, -kInf, -kInf},
                                      {0.2183, 0.0874, 0.0882, 0.0177, 0.0786, -kInf},
                                      {0.3408, 0.1270, 0.1290, 0.0198, 0.1290, 0.0078}});
  // 004 In[30] (and In[28], the renormalized tril): softmax(masked / d_k**0.5, dim=1)
  const Matrix printed_weights = rows({{1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000},
                                       {0.5517, 0.4483, 0.0000, 0.0000, 0.0000, 0.0000},
                                       {0.3800, 0.3097, 0.3103, 0.0000, 0.0000, 0.0000},
                                       {0.2758, 0.2460, 0.2462, 0.2319, 0.0000, 0.0000},
                                       {0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0.0000},
                                       {0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529}});
  for (const BatchTrace& bt : t.batches) {
    const HeadTrace& h = bt.heads.at(0);
    // The masked stage is the notebook's printed tensor itself: raw scores, −∞ above the diagonal.
    const Matrix masked_scores = stageValues(t, h, Stage::MaskedScores);
    const Matrix scaled_scores = stageValues(t, h, Stage::ScaledScores);
    Matrix masked_finite = masked_scores, printed_finite = printed_masked;  // −∞ compared apart
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 6; ++j) {
        const bool hidden = std::isinf(printed_masked(i, j));
        EXPECT_EQ(std::isinf(masked_scores(i, j)) && masked_scores(i, j) < 0, hidden)
            << "masked_scores(" << i << ", " << j << ") = " << masked_scores(i, j);
        // Then ÷ √d_k (d_k = 2): −∞ stays, the rest is the printed score / √2.
        EXPECT_EQ(std::isinf(scaled_scores(i, j)) && scaled_scores(i, j) < 0, hidden);
        if (hidden) {
          masked_finite(i, j) = printed_finite(i, j) = 0;
        } else {
          EXPECT_NEAR(scaled_scores(i, j), printed_masked(i, j) / std::sqrt(2.0), 1e-4);
        }
      }
    EXPECT_TRUE(matchesPrinted(masked_finite, printed_finite));
    EXPECT_TRUE(matchesPrinted(h.weights, printed_weights));
  }
}

// ---- 4 · multi-head attention ----

TEST(GoldenMultiHead, Seed123StackedBatch) {
  // 004 In[43]: torch.manual_seed(123); MultiHeadAttention(d_in=3, d_out=2, context_length=6,
  // dropout=0.0, num_heads=2)(batch) with batch = torch.stack((inputs, inputs)).
  ModelConfig m = defaultConfig(Variant::MultiHead);
  m.seed = 123;
  m.d_out = 2;
  m.num_heads = 2;
  m.dropout = 0.0;
  m.batch_size = 2;
  const Trace t = traceOf(m);
  const Matrix printed = rows(
      {{0.3190, 0.4858}, {0.2943, 0.3897}, {0.2856, 0.3593}, {0.2693, 0.3873}, {0.2639, 0.3928}, {0.2575, 0.4028}});
  ASSERT_EQ(t.batches.size(), 2u);
  for (const BatchTrace& bt : t.batches) EXPECT_TRUE(matchesPrinted(bt.output, printed));
  // 004 In[41]/In[42]: the seed-123 W_query(batch) viewed as (B, T, heads=2, head_dim=1):
  // head 0 sees column 0, head 1 column 1.
  const Matrix queries = rows({{-0.3536, 0.3965},
                               {-0.3021, -0.0289},
                               {-0.3015, -0.0232},
                               {-0.1353, -0.0978},
                               {-0.2052, 0.0870},
                               {-0.1542, -0.1499}});
  for (const BatchTrace& bt : t.batches) {
    ASSERT_EQ(bt.heads.size(), 2u);
    EXPECT_TRUE(matchesPrinted(bt.heads[0].queries, queries.col(0)));
    EXPECT_TRUE(matchesPrinted(bt.heads[1].queries, queries.col(1)));
  }
}

// ---- dropout ----

TEST(GoldenDropout, DebianTorchSeed123HalfOnSixBySix) {
  // 004 In[31]: torch.manual_seed(123); nn.Dropout(0.5)(torch.ones(6, 6)). The notebook was
  // printed by an MKL build; docs/DESIGN.md §2.2 gives what Debian's torch (no MKL) prints: 2 = kept.
  const int expected[6][6] = {{2, 2, 0, 2, 2, 0}, {0, 0, 0, 2, 0, 2}, {2, 2, 2, 2, 0, 2},
                              {0, 2, 2, 0, 0, 2}, {0, 2, 0, 2, 0, 2}, {0, 2, 2, 2, 2, 0}};
  TorchGenerator g(123);
  std::vector<std::uint8_t> keep(36, 7);
  g.fillDropoutKeep(keep.data(), keep.size(), 0.5);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j)
      EXPECT_EQ(keep[i * 6 + j] ? 2 : 0, expected[i][j]) << "element (" << i << ", " << j << ")";
  EXPECT_EQ(TorchGenerator::dropoutScale(0.5), 2.0f);
  // 1.0f / float(1 − p): the factor torch's dropout multiplies kept elements by.
  EXPECT_EQ(TorchGenerator::dropoutScale(0.1), 1.0f / static_cast<float>(1.0 - 0.1));
}

}  // namespace
}  // namespace attnscope
