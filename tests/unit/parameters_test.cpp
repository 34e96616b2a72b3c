// The user's own parameters (docs/DESIGN.md §2.4 "parameters"): ModelConfig::parameters
// replace their entries of the seeded initialization, after it is drawn — the seeded draws (and
// drawParameters' cache of them) and the dropout masks stay as they were; names and shapes are
// validated naming the tensor; workspaces carry them losslessly; edits keep or refuse them.
// Expected parameters come from tests/unit/reference.h (torch's stream re-derived on a plain
// std::mt19937) and from the values written here; torch itself checks them in oracle_parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "editing/command.h"
#include "editing/document.h"
#include "editing/history.h"
#include "engine/attention.h"
#include "engine/errors.h"
#include "engine/parameters.h"
#include "formats/import_workspace.h"
#include "formats/tensor_import.h"
#include "formats/workspace_file.h"
#include "reference.h"
#include "test_support.h"

using namespace attnscope;
using test::errorOf;

namespace {

Matrix randomMatrix(int rows, int cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
  return m;
}

NamedTensor weight(const std::string& name, int rows, int cols, unsigned seed) {
  return {name, randomMatrix(rows, cols, seed), false};
}
NamedTensor bias(const std::string& name, int n, unsigned seed) { return {name, randomMatrix(1, n, seed), true}; }

ModelConfig withValues(ModelConfig m, ParameterValues values) {
  m.parameters = std::make_shared<const ParameterValues>(std::move(values));
  return m;
}

// The reference's layer (torch layout, out × in) as a matrix.
Matrix layerMatrix(const ref::Layer& l) {
  Matrix m(l.out, l.in);
  for (int o = 0; o < l.out; ++o)
    for (int i = 0; i < l.in; ++i) m(o, i) = l.w(o, i);
  return m;
}

Matrix inputs(int T, int d_in) { return randomMatrix(T, d_in, 1234u + static_cast<unsigned>(T * 31 + d_in)); }

// Every variant with projections, with biases and dropout where it has them.
std::vector<ModelConfig> configs() {
  std::vector<ModelConfig> out;
  ModelConfig v1 = defaultConfig(Variant::SelfAttentionV1);
  v1.d_out = 3;
  out.push_back(v1);
  ModelConfig v2 = defaultConfig(Variant::SelfAttentionV2);
  v2.qkv_bias = true;
  out.push_back(v2);
  ModelConfig causal = defaultConfig(Variant::Causal);
  causal.dropout = 0.5;
  out.push_back(causal);
  ModelConfig wrapper = defaultConfig(Variant::MultiHeadWrapper);
  wrapper.num_heads = 3;
  wrapper.dropout = 0.3;
  wrapper.qkv_bias = true;
  out.push_back(wrapper);
  ModelConfig mh = defaultConfig(Variant::MultiHead);
  mh.d_out = 4;
  mh.dropout = 0.5;
  out.push_back(mh);
  return out;
}

// New values for every parameter of m (as shapes say), in state_dict order.
ParameterValues allNew(const ModelConfig& m, int d_in, unsigned seed) {
  ParameterValues v;
  for (const ParameterShape& s : parameterShapes(m, d_in))
    v.push_back(s.is_vector ? bias(s.name, s.cols, seed++) : weight(s.name, s.rows, s.cols, seed++));
  return v;
}

}  // namespace

TEST(Parameters, ShapesAreTheStateDictsNamesAndShapes) {
  for (ModelConfig m : configs()) {
    const int d_in = 5;
    TorchGenerator g(m.seed);
    const std::vector<NamedTensor> sd = stateDict(m, initParameters(m, d_in, g));
    const std::vector<ParameterShape> shapes = parameterShapes(m, d_in);
    ASSERT_EQ(sd.size(), shapes.size()) << variantId(m.variant);
    for (std::size_t i = 0; i < sd.size(); ++i) {
      EXPECT_EQ(sd[i].name, shapes[i].name);
      EXPECT_EQ(sd[i].is_vector, shapes[i].is_vector) << sd[i].name;
      EXPECT_EQ(sd[i].value.rows(), shapes[i].rows) << sd[i].name;
      EXPECT_EQ(sd[i].value.cols(), shapes[i].cols) << sd[i].name;
    }
  }
  EXPECT_TRUE(parameterShapes(defaultConfig(Variant::Simple), 3).empty());
  EXPECT_EQ(parameterShapes(defaultConfig(Variant::SelfAttentionV1), 3)[0].dims, "d_in × d_out");
}

TEST(Parameters, ValuesReplaceTheirEntriesAndNothingElse) {
  for (const ModelConfig& base : configs()) {
    const int T = 6, d_in = 5;
    const Matrix x = inputs(T, d_in);
    const std::vector<ParameterShape> shapes = parameterShapes(base, d_in);
    // The first and the last entry replaced; the rest stay the seeded draw (reference.h).
    ParameterValues values;
    for (std::size_t k : {std::size_t{0}, shapes.size() - 1}) {
      const ParameterShape& s = shapes[k];
      values.push_back(s.is_vector ? bias(s.name, s.cols, 7 + static_cast<unsigned>(k))
                                   : weight(s.name, s.rows, s.cols, 7 + static_cast<unsigned>(k)));
    }
    const ModelConfig m = withValues(base, values);
    const Trace t = computeTrace(x, m);
    const Trace seeded = computeTrace(x, base);
    const std::vector<NamedTensor> got = stateDict(m, *t.parameters), before = stateDict(base, *seeded.parameters);
    ASSERT_EQ(got.size(), shapes.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      const NamedTensor* given = nullptr;
      for (const NamedTensor& v : values)
        if (v.name == got[k].name) given = &v;
      EXPECT_TRUE(test::bitwiseEqual(got[k].value, given ? given->value : before[k].value))
          << variantId(m.variant) << " " << got[k].name;
    }
    // The seeded draw is the reference's: drawParameters' cache was not changed by the values.
    const ref::Module r = ref::build(base, T, d_in);
    EXPECT_TRUE(test::bitwiseEqual(seeded.parameters->query[0].weight, layerMatrix(r.query[0])));
    const DrawnParameters again = drawParameters(base, d_in);
    EXPECT_TRUE(test::bitwiseEqual(again.parameters->query[0].weight, layerMatrix(r.query[0])));
    EXPECT_TRUE(test::bitwiseEqual(again.parameters->value.back().weight, layerMatrix(r.value.back())));
    // The same dropout masks: load_state_dict draws nothing.
    for (std::size_t b = 0; b < t.batches.size(); ++b)
      for (std::size_t h = 0; h < t.batches[b].heads.size(); ++h)
        EXPECT_EQ(t.batches[b].heads[h].dropout_mask, seeded.batches[b].heads[h].dropout_mask)
            << variantId(m.variant) << " b" << b << " h" << h;
  }
}

TEST(Parameters, GivingTheSeededValuesChangesNothing) {
  for (const ModelConfig& base : configs()) {
    const Matrix x = inputs(4, 3);
    const Trace seeded = computeTrace(x, base);
    const ModelConfig m = withValues(base, stateDict(base, *seeded.parameters));
    const Trace t = computeTrace(x, m);
    for (std::size_t b = 0; b < t.batches.size(); ++b)
      EXPECT_TRUE(test::bitwiseEqual(t.batches[b].output, seeded.batches[b].output)) << variantId(base.variant);
  }
}

TEST(Parameters, AllOfThemReplacedInAnyOrder) {
  for (const ModelConfig& base : configs()) {
    const Matrix x = inputs(5, 4);
    ParameterValues values = allNew(base, 4, 99);
    std::reverse(values.begin(), values.end());  // load_state_dict takes names, not positions
    const Trace t = computeTrace(x, withValues(base, values));
    const std::vector<NamedTensor> got = stateDict(base, *t.parameters);
    ASSERT_EQ(got.size(), values.size());
    for (std::size_t k = 0; k < got.size(); ++k)
      EXPECT_TRUE(test::bitwiseEqual(got[k].value, values[values.size() - 1 - k].value)) << got[k].name;
  }
}

TEST(Parameters, SelfAttentionV1TakesItsOwnLayout) {
  // W_query is d_in × d_out (x @ W): Q = X W.
  ModelConfig m = defaultConfig(Variant::SelfAttentionV1);
  const Matrix w = test::rows({{1, 0}, {0, 2}, {1, 1}});  // d_in 3 × d_out 2
  m = withValues(m, {{"W_query", w, false}});
  const Matrix x = test::bookInputs();
  const Trace t = computeTrace(x, m);
  const Matrix q = x * w;
  EXPECT_LE((t.batches[0].heads[0].queries - q).cwiseAbs().maxCoeff(), 1e-6f);
  EXPECT_TRUE(test::bitwiseEqual(stateDict(m, *t.parameters)[0].value, w));
}

TEST(Parameters, QueriesFollowTheGivenWeights) {
  ModelConfig m = defaultConfig(Variant::MultiHead);
  m.d_out = 4;
  m.qkv_bias = true;
  const NamedTensor wq = weight("W_query.weight", 4, 3, 1), bq = bias("W_query.bias", 4, 2);
  m = withValues(m, {wq, bq});
  const Matrix x = test::bookInputs();
  const Trace t = computeTrace(x, m);
  Matrix q = x * wq.value.transpose();
  q.rowwise() += RowVector(bq.value.row(0));
  for (int h = 0; h < 2; ++h)
    EXPECT_LE((t.batches[0].heads[h].queries - q.middleCols(2 * h, 2)).cwiseAbs().maxCoeff(), 1e-5f) << h;
}

TEST(Parameters, EveryRefusalNamesTheTensor) {
  ModelConfig mh = defaultConfig(Variant::MultiHead);  // d_out 2, 2 heads, no bias
  const int d_in = 3;
  auto refusal = [&](ModelConfig m, ParameterValues v) {
    return errorOf([&] { validateModel(withValues(m, std::move(v)), 6, d_in, Limits{}); });
  };
  EXPECT_EQ(refusal(mh, {weight("W_query.weight", 3, 2, 1)}),
            "parameters.W_query.weight: expected 2 × 3 (d_out × d_in), got a 3 × 2 matrix (transposed? nn.Linear "
            "stores its weight as out × in)");
  EXPECT_EQ(refusal(mh, {weight("W_query.weight", 2, 4, 1)}),
            "parameters.W_query.weight: expected 2 × 3 (d_out × d_in), got a 2 × 4 matrix");
  EXPECT_EQ(refusal(mh, {bias("W_query.weight", 6, 1)}),
            "parameters.W_query.weight: expected 2 × 3 (d_out × d_in), got a list of 6 numbers");
  EXPECT_EQ(refusal(mh, {weight("out_proj.bias", 1, 2, 1)}),
            "parameters.out_proj.bias: expected a list of 2 numbers (d_out), got a 1 × 2 matrix");
  EXPECT_EQ(refusal(mh, {bias("out_proj.bias", 3, 1)}),
            "parameters.out_proj.bias: expected a list of 2 numbers (d_out), got a list of 3 numbers");
  EXPECT_EQ(refusal(mh, {bias("W_key.bias", 2, 1)}),
            "parameters.W_key.bias: MultiHeadAttention has no W_key.bias: qkv_bias is false (set model.qkv_bias to "
            "true to load biases)");
  EXPECT_EQ(refusal(mh, {weight("mask", 6, 6, 1)}),
            "parameters.mask: a buffer (the causal mask), not a parameter: leave it out");
  EXPECT_EQ(
      refusal(mh, {weight("W_query", 2, 3, 1)}),
      "parameters.W_query: MultiHeadAttention's W_query is an nn.Linear: its weight is W_query.weight (d_out × d_in)");
  EXPECT_EQ(refusal(mh, {weight("heads.0.W_query.weight", 2, 3, 1)}),
            "parameters.heads.0.W_query.weight: MultiHeadAttention has no heads.N modules: that is "
            "MultiHeadAttentionWrapper's state_dict (variant multihead_wrapper)");
  EXPECT_EQ(refusal(mh, {weight("W_q.weight", 2, 3, 1)}),
            "parameters.W_q.weight: not a parameter of MultiHeadAttention (its parameters: W_query.weight, "
            "W_key.weight, W_value.weight, out_proj.weight, out_proj.bias)");
  EXPECT_EQ(refusal(mh, {weight("W_key.weight", 2, 3, 1), weight("W_key.weight", 2, 3, 2)}),
            "parameters.W_key.weight: given twice");
  NamedTensor nan = weight("W_value.weight", 2, 3, 1);
  nan.value(1, 2) = std::nanf("");
  EXPECT_EQ(refusal(mh, {nan}), "parameters.W_value.weight: every value must be a finite number");
  ModelConfig wrapper = defaultConfig(Variant::MultiHeadWrapper);
  EXPECT_EQ(refusal(wrapper, {weight("heads.2.W_query.weight", 2, 3, 1)}),
            "parameters.heads.2.W_query.weight: the wrapper has num_heads = 2 heads: heads.0 … heads.1");
  EXPECT_EQ(refusal(wrapper, {weight("heads.1.mask", 6, 6, 1)}),
            "parameters.heads.1.mask: a buffer (the causal mask), not a parameter: leave it out");
  EXPECT_EQ(refusal(wrapper, {weight("heads.1.W_value.weight", 2, 3, 1)}), "");
  const std::string long_list = refusal(wrapper, {weight("out_proj.weight", 2, 2, 1)});
  EXPECT_EQ(long_list,
            "parameters.out_proj.weight: not a parameter of MultiHeadAttentionWrapper (its parameters: "
            "heads.0.W_query.weight, heads.0.W_key.weight, heads.0.W_value.weight, heads.1.W_query.weight, "
            "heads.1.W_key.weight, heads.1.W_value.weight)");
  ModelConfig v1 = defaultConfig(Variant::SelfAttentionV1);
  EXPECT_EQ(refusal(v1, {weight("W_query.weight", 2, 3, 1)}),
            "parameters.W_query.weight: SelfAttention_v1 holds W_query itself (d_in × d_out, torch.rand), not an "
            "nn.Linear: name it W_query");
  EXPECT_EQ(refusal(v1, {weight("W_query", 2, 3, 1)}),
            "parameters.W_query: expected 3 × 2 (d_in × d_out), got a 2 × 3 matrix (transposed? SelfAttention_v1's W "
            "is d_in × d_out)");
  ModelConfig simple = defaultConfig(Variant::Simple);
  simple.d_out = 3;
  EXPECT_EQ(refusal(simple, {weight("W_query", 3, 2, 1)}), "parameters: the 'simple' variant has no parameters");
  EXPECT_EQ(refusal(simple, {}), "");  // an empty set is no parameters at all
}

TEST(Parameters, TheyCountTowardsTheMemoryBudget) {
  ModelConfig m = defaultConfig(Variant::MultiHead);
  m.d_out = 512;
  const Cost seeded = estimateCost(m, 4, 512, 1);
  const Cost given = estimateCost(withValues(m, {weight("W_query.weight", 512, 512, 1)}), 4, 512, 1);
  EXPECT_EQ(given.parameter_bytes - seeded.parameter_bytes, 512 * 512 * 4);
}

// ---- workspaces ---------------------------------------------------------------------------------

TEST(ParametersInWorkspaces, LoadedValidatedAndSavedLosslessly) {
  const std::string text = R"({"format": "attnscope-workspace", "version": 1,
    "embeddings": [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66]],
    "model": {"variant": "multihead", "d_out": 2, "qkv_bias": true},
    "parameters": {"W_query.weight": [[0.1, -0.2, 0.30000001], [1e-30, 3.4028234e38, -0.0]],
                   "W_query.bias": [0.5, -0.25]}})";
  const Workspace ws = parseWorkspace(text);
  ASSERT_TRUE(ws.model.parameters);
  ASSERT_EQ(ws.model.parameters->size(), 2u);
  // std::map order: W_query.bias first.
  EXPECT_EQ((*ws.model.parameters)[0].name, "W_query.bias");
  EXPECT_TRUE((*ws.model.parameters)[0].is_vector);
  EXPECT_TRUE(test::bitwiseEqual((*ws.model.parameters)[1].value,
                                 test::rows({{0.1f, -0.2f, 0.30000001f}, {1e-30f, 3.4028234e38f, -0.0f}})));
  const Workspace again = parseWorkspace(dumpWorkspace(ws));
  EXPECT_TRUE(equalWorkspaces(ws, again));
  EXPECT_EQ(dumpWorkspace(again), dumpWorkspace(ws));
  EXPECT_TRUE(std::signbit((*again.model.parameters)[1].value(1, 2)));
  const Trace t = computeTrace(again.embeddings, again.model);
  EXPECT_TRUE(test::bitwiseEqual(t.parameters->query[0].weight, (*ws.model.parameters)[1].value));
  // An empty object is no parameters, and is not written back.
  const Workspace none = parseWorkspace(R"({"format": "attnscope-workspace", "version": 1,
    "embeddings": [[1, 2]], "model": {"variant": "causal"}, "parameters": {}})");
  EXPECT_FALSE(none.model.parameters);
  EXPECT_EQ(dumpWorkspace(none).find("parameters"), std::string::npos);
}

TEST(ParametersInWorkspaces, BadDocumentsNameTheEntry) {
  auto refusal = [](const std::string& parameters, const std::string& model = R"({"variant": "multihead"})") {
    return errorOf([&] {
      parseWorkspace(R"({"format": "attnscope-workspace", "version": 1, "embeddings": [[1, 2, 3]], "model": )" + model +
                     R"(, "parameters": )" + parameters + "}");
    });
  };
  EXPECT_EQ(refusal("[]"), "parameters: expected an object of state_dict names and nested lists, got array");
  EXPECT_EQ(
      refusal(R"({"W_query.weight": 3})"),
      "parameters.W_query.weight: expected a matrix (a list of rows) or a bias (a list of numbers), got an integer");
  EXPECT_EQ(
      refusal(R"({"W_query.weight": []})"),
      "parameters.W_query.weight: expected a matrix (a list of rows) or a bias (a list of numbers), got an empty list");
  EXPECT_EQ(refusal(R"({"W_query.weight": [[1, 2, 3], [4, 5]]})"),
            "parameters.W_query.weight[1]: has 2 values but row 0 has 3");
  EXPECT_EQ(refusal(R"({"W_query.weight": [[1, 2, 3], 4]})"),
            "parameters.W_query.weight[1]: expected a row (a list of numbers), got an integer");
  EXPECT_EQ(refusal(R"({"W_query.weight": [[1, 2, "x"], [4, 5, 6]]})"),
            "parameters.W_query.weight[0][2]: expected a number, got string");
  EXPECT_EQ(refusal(R"({"out_proj.bias": [1, 1e39]})"),
            "parameters.out_proj.bias[1]: not a finite float32 number: 1e+39");
  EXPECT_EQ(refusal(R"({"W_query.weight": [[1, 2, 3]]})"),
            "parameters.W_query.weight: expected 2 × 3 (d_out × d_in), got a 1 × 3 matrix");
  EXPECT_EQ(refusal(R"({"out_proj.weight": [[1, 2], [3, 4]]})", R"({"variant": "causal"})"),
            "parameters.out_proj.weight: not a parameter of CausalAttention (its parameters: W_query.weight, "
            "W_key.weight, W_value.weight)");
  Limits small;
  small.max_dim = 2;
  EXPECT_EQ(errorOf([&] {
              parseWorkspace(R"({"format": "attnscope-workspace", "version": 1, "embeddings": [[1, 2]],
                "model": {"variant": "causal"}, "parameters": {"W_key.weight": [[1, 2, 3]]}})",
                             small);
            }),
            "parameters.W_key.weight: 1 × 3 or more exceeds the limit of 2 in either dimension");
}

// ---- edits ------------------------------------------------------------------------------------

TEST(ParametersInEdits, KeptOrRefusedAndUndoneExactly) {
  Workspace ws = bookExample(Variant::MultiHead);
  ws.model.d_out = 4;
  ws.model.parameters = std::make_shared<const ParameterValues>(ParameterValues{weight("W_key.weight", 4, 3, 5)});
  Document d(ws);
  // A change that keeps the shapes keeps the values.
  d.apply(makeCommand("set", {{"field", "seed"}, {"value", 7}}));
  ASSERT_TRUE(d.workspace().model.parameters);
  EXPECT_TRUE(test::bitwiseEqual((*d.workspace().model.parameters)[0].value, (*ws.model.parameters)[0].value));
  // One they no longer fit is refused, naming the tensor, and changes nothing.
  EXPECT_EQ(errorOf([&] {
              d.apply(makeCommand("set", {{"field", "d_out"}, {"value", 6}}));
            }),
            "parameters.W_key.weight: expected 6 × 3 (d_out × d_in), got a 4 × 3 matrix; your own parameters are for "
            "this shape: Weights › Back to the seeded initialization first (undo brings them back)");
  EXPECT_EQ(errorOf([&] {
              d.apply(makeCommand("d_in", {{"value", 4}, {"seed", 1}}));
            }),
            "parameters.W_key.weight: expected 4 × 4 (d_out × d_in), got a 4 × 3 matrix; your own parameters are for "
            "this shape: Weights › Back to the seeded initialization first (undo brings them back)");
  EXPECT_EQ(d.workspace().model.d_out, 4);
  // Another step starts from its own seeded initialization; undo brings the values back.
  d.apply(makeCommand("set", {{"field", "variant"}, {"value", "causal"}}));
  EXPECT_FALSE(d.workspace().model.parameters);
  EXPECT_NE(d.note().find("your parameters stay with step"), std::string::npos) << d.note();
  d.apply(makeCommand("undo"));
  ASSERT_TRUE(d.workspace().model.parameters);
  EXPECT_EQ(d.workspace().model.variant, Variant::MultiHead);
  EXPECT_TRUE(test::bitwiseEqual((*d.workspace().model.parameters)[0].value, (*ws.model.parameters)[0].value));
  // Equal values in another object are no change; other values are.
  Workspace same = d.workspace();
  same.model.parameters = std::make_shared<const ParameterValues>(*same.model.parameters);
  EXPECT_TRUE(equalWorkspaces(d.workspace(), same));
  Workspace other = same;
  ParameterValues changed = *other.model.parameters;
  changed[0].value(0, 0) += 1;
  other.model.parameters = std::make_shared<const ParameterValues>(changed);
  EXPECT_FALSE(equalWorkspaces(d.workspace(), other));
  other.model.parameters.reset();
  EXPECT_FALSE(equalWorkspaces(d.workspace(), other));
}

// ---- the Weights tab's commands: set_parameter, reset_parameters ----------------

TEST(ParameterCommands, OneValueSetTheRestStayTheSeededDrawOneUndoStepEach) {
  for (const Variant v :
       {Variant::SelfAttentionV1, Variant::SelfAttentionV2, Variant::MultiHeadWrapper, Variant::MultiHead}) {
    Document d(bookExample(v));
    const ModelConfig seeded = d.workspace().model;
    const ref::Module r = ref::build(seeded, 6, 3);  // torch's stream, re-derived
    // The first weight of the module, in torch's layout: v1's W_query is d_in × d_out (x @ W).
    const std::string name = v == Variant::SelfAttentionV1    ? "W_query"
                             : v == Variant::MultiHeadWrapper ? "heads.1.W_key.weight"
                                                              : "W_query.weight";
    const Matrix torch_layout = v == Variant::SelfAttentionV1    ? Matrix(layerMatrix(r.query[0]).transpose())
                                : v == Variant::MultiHeadWrapper ? layerMatrix(r.key[1])
                                                                 : layerMatrix(r.query[0]);
    const std::size_t steps = d.history().undoSteps();
    d.apply(makeCommand("set_parameter", {{"name", name}, {"row", 1}, {"col", 0}, {"value", 0.75}}));
    ASSERT_TRUE(d.workspace().model.parameters) << variantId(v);
    ASSERT_EQ(d.workspace().model.parameters->size(), 1u);
    const NamedTensor& own = (*d.workspace().model.parameters)[0];
    EXPECT_EQ(own.name, name);
    Matrix want = torch_layout;
    want(1, 0) = 0.75f;
    EXPECT_TRUE(test::bitwiseEqual(own.value, want)) << variantId(v) << "\n" << own.value << "\nwant\n" << want;
    EXPECT_EQ(d.history().undoSteps(), steps + 1);
    // A drag (one gesture) is one undo step; a second tensor joins in state_dict order.
    d.apply(makeCommand("set_parameter", {{"name", name}, {"row", 0}, {"col", 1}, {"value", -1}}));
    EXPECT_EQ(d.history().undoSteps(), steps + 2);
    Command drag1 = makeCommand("set_parameter", {{"name", name}, {"row", 0}, {"col", 0}, {"value", 2}});
    drag1.gesture = "w";
    Command drag2 = makeCommand("set_parameter", {{"name", name}, {"row", 0}, {"col", 0}, {"value", 3}});
    drag2.gesture = "w";
    d.apply(drag1);
    d.apply(drag2);
    EXPECT_EQ(d.history().undoSteps(), steps + 3);
    EXPECT_EQ((*d.workspace().model.parameters)[0].value(0, 0), 3.0f);
    // Back to the seeded initialization: no parameters, one step, and undo brings them back.
    d.endGesture();
    d.apply(makeCommand("reset_parameters"));
    EXPECT_FALSE(d.workspace().model.parameters);
    EXPECT_NE(d.note().find("Back to the seeded initialization"), std::string::npos) << d.note();
    EXPECT_EQ(d.history().undoSteps(), steps + 4);
    EXPECT_EQ(d.apply(makeCommand("reset_parameters")), DocumentChange::Unchanged);
    d.apply(makeCommand("undo"));
    ASSERT_TRUE(d.workspace().model.parameters);
    EXPECT_EQ((*d.workspace().model.parameters)[0].value(0, 0), 3.0f);
  }
  // out_proj's bias is one row; a wrapper's two tensors stay in state_dict order.
  Document mh(bookExample(Variant::MultiHead));
  mh.apply(makeCommand("set_parameter", {{"name", "out_proj.bias"}, {"row", 0}, {"col", 1}, {"value", 0.5}}));
  mh.apply(makeCommand("set_parameter", {{"name", "W_value.weight"}, {"row", 0}, {"col", 2}, {"value", 0.5}}));
  ASSERT_EQ(mh.workspace().model.parameters->size(), 2u);
  EXPECT_EQ((*mh.workspace().model.parameters)[0].name, "W_value.weight");
  EXPECT_EQ((*mh.workspace().model.parameters)[1].name, "out_proj.bias");
  EXPECT_TRUE((*mh.workspace().model.parameters)[1].is_vector);
}

TEST(ParameterCommands, RefusalsNameTheArgumentAndChangeNothing) {
  Document d(bookExample(Variant::MultiHead));
  auto refused = [&](nlohmann::json args) {
    const std::uint64_t v = d.version();
    const std::string e = errorOf([&] { d.apply(makeCommand("set_parameter", args)); });
    EXPECT_EQ(d.version(), v);
    EXPECT_FALSE(d.workspace().model.parameters);
    return e;
  };
  EXPECT_EQ(refused({{"name", "W_query"}, {"row", 0}, {"col", 0}, {"value", 1}}),
            "name: 'W_query' is not a parameter of MultiHeadAttention here (W_query.weight, W_key.weight, "
            "W_value.weight, out_proj.weight, out_proj.bias)");
  EXPECT_EQ(refused({{"name", "W_query.weight"}, {"row", 2}, {"col", 0}, {"value", 1}}),
            "row: W_query.weight has 2 rows, numbered from 0, got 2");
  EXPECT_EQ(refused({{"name", "out_proj.bias"}, {"row", 1}, {"col", 0}, {"value", 1}}),
            "row: out_proj.bias is a bias: row 0 only, got 1");
  EXPECT_EQ(refused({{"name", "W_query.weight"}, {"row", 0}, {"col", 3}, {"value", 1}}),
            "col: W_query.weight has 3 columns, numbered from 0, got 3");
  EXPECT_EQ(refused({{"name", "W_query.weight"}, {"row", 0}, {"col", 0}, {"value", 1e39}}),
            "value: not a finite number as float32");
  Document simple(bookExample(Variant::Simple));
  EXPECT_EQ(errorOf([&] {
              simple.apply(makeCommand("set_parameter", {{"name", "W_query"}, {"row", 0}, {"col", 0}, {"value", 1}}));
            }),
            "name: simple_attention has no trainable parameters (Q = K = V = X); choose step 2a or later");
  // With parameters of its own, a wrapper cannot lose the head they belong to: refused, with what to do.
  Document w(bookExample(Variant::MultiHeadWrapper));
  w.apply(makeCommand("set_parameter", {{"name", "heads.1.W_query.weight"}, {"row", 0}, {"col", 0}, {"value", 1}}));
  const std::string e = errorOf([&] { w.apply(makeCommand("set", {{"field", "num_heads"}, {"value", 1}})); });
  EXPECT_EQ(e.rfind("parameters.heads.1.W_query.weight: ", 0), 0u) << e;
  EXPECT_NE(e.find("Weights › Back to the seeded initialization first"), std::string::npos) << e;
}

TEST(ParameterCommands, PasteParametersTakesTorchsPrintedStateDict) {
  // str(SelfAttention_v2(3, 2).state_dict()) after torch.manual_seed(789), as Debian's torch prints it.
  const std::string printed =
      "OrderedDict([('W_query.weight', tensor([[ 0.3161,  0.4568,  0.5118],\n        [-0.1683, -0.3379, -0.0918]])), "
      "('W_key.weight', tensor([[ 0.4058, -0.4704,  0.2368],\n        [ 0.2134, -0.2601, -0.5105]]))])";
  Document d(bookExample(Variant::SelfAttentionV2));
  d.apply(makeCommand("set_parameter", {{"name", "W_value.weight"}, {"row", 0}, {"col", 0}, {"value", 9}}));
  const std::size_t steps = d.history().undoSteps();
  d.apply(makeCommand("paste_parameters", {{"text", printed}}));
  EXPECT_EQ(d.history().undoSteps(), steps + 1);
  EXPECT_EQ(d.note(), "Pasted 2 parameters (W_query.weight, W_key.weight). Note: " + roundedPrintNote(4));
  ASSERT_TRUE(d.workspace().model.parameters);
  const ParameterValues& p = *d.workspace().model.parameters;
  ASSERT_EQ(p.size(), 3u);  // state_dict order; the earlier edit of W_value stays
  EXPECT_EQ(p[0].name, "W_query.weight");
  EXPECT_TRUE(test::bitwiseEqual(p[0].value, test::rows({{0.3161, 0.4568, 0.5118}, {-0.1683, -0.3379, -0.0918}})));
  EXPECT_EQ(p[2].name, "W_value.weight");
  EXPECT_EQ(p[2].value(0, 0), 9.0f);
  // The mask buffer of CausalAttention's print is left out, and said so.
  Document c(bookExample(Variant::Causal));
  c.apply(makeCommand("paste_parameters", {{"text",
                                            "OrderedDict([('mask', tensor([[0., 1.],\n        [0., 0.]])), "
                                            "('W_key.weight', tensor([[1., 2., 3.],\n        [4., 5., 6.]]))])"}}));
  EXPECT_EQ(c.note(), "Pasted 1 parameter (W_key.weight); the buffer mask left out (not a parameter)");
  // Another shape, or another class's names: refused, naming the tensor and the module; nothing changes.
  const std::uint64_t v = d.version();
  const std::string wide = errorOf([&] {
    d.apply(makeCommand("paste_parameters", {{"text", "OrderedDict([('W_query.weight', tensor([[1., 2.]]))])"}}));
  });
  EXPECT_EQ(
      wide,
      "pasted text: parameters.W_query.weight: expected 1 × 3 (d_out × d_in), got a 1 × 2 matrix (this step's module "
      "is SelfAttention_v2 with d_in = 3; the pasted tensors say d_out = 1)");
  EXPECT_EQ(d.version(), v);
  const std::string bad = errorOf([&] {
    d.apply(makeCommand("paste_parameters", {{"text", "OrderedDict([('W_query.weight', tensor([[1., ...]]))])"}}));
  });
  EXPECT_EQ(bad.rfind("pasted text:1:46: torch printed this tensor summarized", 0), 0u) << bad;
  EXPECT_EQ(d.version(), v);
  // Read by the app from the clipboard, the same text is named so.
  Command from_clipboard = makeCommand("paste_parameters",
                                       {{"text", "OrderedDict([('W_query.weight', tensor([[1., ...]]))])"}});
  from_clipboard.from_clipboard = true;
  const std::string named = errorOf([&] { d.apply(from_clipboard); });
  EXPECT_EQ(named.rfind("clipboard:1:46: ", 0), 0u) << named;
  EXPECT_EQ(d.version(), v);
}

namespace {

// The entries of print(m.state_dict()) for W_query, W_key, W_value of `rows` × 3 (after `prefix`).
std::string projectionEntries(const std::string& prefix, int rows) {
  std::string text;
  for (const char* w : {"W_query", "W_key", "W_value"}) {
    text += std::string(text.empty() ? "" : ", ") + "('" + prefix + w + ".weight', tensor([";
    for (int r = 0; r < rows; ++r) text += std::string(r ? ", " : "") + "[0.25, -0.5, 1.]";
    text += "]))";
  }
  return text;
}

// print(m.state_dict()) of those projections, and `extra` entries.
std::string printedProjections(const std::string& prefix, int rows, const std::string& extra = "") {
  return "OrderedDict([" + projectionEntries(prefix, rows) + (extra.empty() ? "" : ", " + extra) + "])";
}

ModelConfig pastedInto(Workspace ws, const std::string& text, std::string* note = nullptr) {
  Document d(std::move(ws));
  d.apply(makeCommand("paste_parameters", {{"text", text}}));
  if (note) *note = d.note();
  return d.workspace().model;
}

}  // namespace

// Paste parameters takes what the tensors say of the module (DESIGN §2.4): d_out from their shapes,
// qkv_bias from their biases, the wrapper's heads from heads.N; the step, seed and mode stay.
TEST(PasteParameters, TheModuleIsWhatTheTensorsSay) {
  Workspace v2 = bookExample(Variant::SelfAttentionV2);
  v2.model.training = false;
  std::string note;
  ModelConfig m = pastedInto(v2, printedProjections("", 4, "('W_query.bias', tensor([0., 1., 2., 3.]))"), &note);
  EXPECT_EQ(m.d_out, 4);
  EXPECT_TRUE(m.qkv_bias);
  EXPECT_FALSE(m.training);  // the workspace's eval mode is kept
  EXPECT_EQ(m.variant, Variant::SelfAttentionV2);
  EXPECT_EQ(m.seed, v2.model.seed);
  EXPECT_NE(note.find("as the tensors say: d_out 2 → 4, qkv_bias on"), std::string::npos) << note;
  // Every projection named and no bias: the module has none.
  Workspace biased = bookExample(Variant::SelfAttentionV2);
  biased.model.qkv_bias = true;
  EXPECT_FALSE(pastedInto(biased, printedProjections("", 2)).qkv_bias);
  // One projection only: the biases may be elsewhere; qkv_bias stays.
  EXPECT_TRUE(pastedInto(biased, "OrderedDict([('W_key.weight', tensor([[1., 2., 3.], [4., 5., 6.]]))])").qkv_bias);
  // SelfAttention_v1's W are d_in × d_out: the columns say d_out.
  EXPECT_EQ(pastedInto(bookExample(Variant::SelfAttentionV1),
                       "{'W_query': tensor([[1., 2., 3.], [4., 5., 6.], [7., 8., 9.]])}")
                .d_out,
            3);
  // The wrapper: heads.0 … heads.2 whole → 3 heads; a part naming heads.0 only keeps its 2.
  const Workspace wrapper = bookExample(Variant::MultiHeadWrapper);
  const std::string three = printedProjections("heads.0.", 1,
                                               projectionEntries("heads.1.", 1) + ", " +
                                                   projectionEntries("heads.2.", 1));
  m = pastedInto(wrapper, three, &note);
  EXPECT_EQ(m.num_heads, 3) << three;
  EXPECT_EQ(m.d_out, 1);
  EXPECT_NE(note.find("num_heads 2 → 3"), std::string::npos) << note;
  EXPECT_EQ(
      pastedInto(wrapper, "OrderedDict([('heads.0.W_query.weight', tensor([[1., 2., 3.], [4., 5., 6.]]))])").num_heads,
      2);
}

// MultiHeadAttention's weights do not say its heads: the workspace's count is kept when it divides
// d_out, with a note; else the paste is refused with how to set it; a workspace's JSON says it.
TEST(PasteParameters, MultiHeadAttentionsHeadsAreKeptOrAskedFor) {
  const std::string out_proj = "('out_proj.weight', tensor([" + [] {
    std::string rows;
    for (int r = 0; r < 6; ++r) rows += std::string(r ? ", " : "") + "[1., 0., 0., 0., 0., 0.]";
    return rows;
  }() + "]))";
  const std::string six = printedProjections("", 6, out_proj);
  std::string note;
  const ModelConfig m = pastedInto(bookExample(Variant::MultiHead), six, &note);
  EXPECT_EQ(m.d_out, 6);
  EXPECT_EQ(m.num_heads, 2);
  EXPECT_NE(note.find("num_heads = 2 kept: the weights do not say how MultiHeadAttention splits d_out = 6 into heads"),
            std::string::npos)
      << note;
  Document d(bookExample(Variant::MultiHead));
  d.apply(makeCommand("model", {{"fields", {{"d_out", 4}, {"num_heads", 4}}}}));
  const Workspace before = d.workspace();
  const std::string e = errorOf([&] { d.apply(makeCommand("paste_parameters", {{"text", six}})); });
  EXPECT_EQ(
      e,
      "pasted text: MultiHeadAttention's weights do not say how it splits d_out = 6 into heads, and num_heads = 4 "
      "does not divide it: set d_out to 6 and num_heads to your module's (1, 2, 3 or 6) in the Model panel first, "
      "then paste again");
  EXPECT_TRUE(equalWorkspaces(d.workspace(), before));
  // As the message says: d_out 6, num_heads 3, then the paste keeps 3.
  d.apply(makeCommand("model", {{"fields", {{"d_out", 6}, {"num_heads", 3}}}}));
  d.apply(makeCommand("paste_parameters", {{"text", six}}));
  EXPECT_EQ(d.workspace().model.num_heads, 3);
  // A workspace's JSON carries its num_heads.
  Workspace ws = bookExample(Variant::MultiHead);
  ws.model.d_out = 6;
  ws.model.num_heads = 3;
  ws.model.parameters = std::make_shared<const ParameterValues>(ParameterValues{weight("W_query.weight", 6, 3, 1)});
  EXPECT_EQ(pastedInto(bookExample(Variant::MultiHead), dumpWorkspace(ws)).num_heads, 3);
}

// import --parameters (modelForParameters): the names say the wrapper's heads; MultiHeadAttention's
// are refused naming --num-heads unless given (or d_out = 1, or a workspace says them).
TEST(ImportParameters, HeadsFromNamesOrRefusedNamingTheOption) {
  ImportedParameters wrapper;
  for (int h = 0; h < 3; ++h)
    wrapper.values.push_back(weight("heads." + std::to_string(h) + ".W_query.weight", 2, 3, h));
  const ModelConfig w = modelForParameters(wrapper, std::nullopt, std::nullopt, nullptr);
  EXPECT_EQ(w.variant, Variant::MultiHeadWrapper);
  EXPECT_EQ(w.num_heads, 3);
  EXPECT_EQ(w.d_out, 2);
  EXPECT_TRUE(w.training);  // the notebook's: a module as built

  ImportedParameters mha;
  mha.values = {weight("W_query.weight", 6, 3, 1), bias("W_query.bias", 6, 2), weight("out_proj.weight", 6, 6, 3)};
  EXPECT_EQ(
      errorOf([&] { modelForParameters(mha, std::nullopt, std::nullopt, nullptr); }),
      "--num-heads: MultiHeadAttention's weights do not say how it splits d_out = 6 into heads: give --num-heads as "
      "your module was built (1, 2, 3 or 6)");
  const ModelConfig three = modelForParameters(mha, std::nullopt, 3, nullptr);
  EXPECT_EQ(three.num_heads, 3);
  EXPECT_EQ(three.d_out, 6);
  EXPECT_TRUE(three.qkv_bias);
  ImportedParameters narrow;
  narrow.values = {weight("out_proj.weight", 1, 1, 4)};
  EXPECT_EQ(modelForParameters(narrow, std::nullopt, std::nullopt, nullptr).num_heads, 1);
  // A workspace's model says its heads and its eval mode; --num-heads goes over it.
  ModelConfig saved = defaultConfig(Variant::MultiHead);
  saved.d_out = 6;
  saved.num_heads = 3;
  saved.training = false;
  mha.model = saved;
  const ModelConfig kept = modelForParameters(mha, std::nullopt, std::nullopt, nullptr);
  EXPECT_EQ(kept.num_heads, 3);
  EXPECT_FALSE(kept.training);
  EXPECT_EQ(modelForParameters(mha, std::nullopt, 6, nullptr).num_heads, 6);
}
