// Undo/redo (core/editing/history.h, docs/DESIGN.md §3): undo and redo walk back and forth through the
// steps, a drag (many records with one gesture) is one step, a new edit clears redo, steps store
// only what changed (a one-cell edit of GPT-2-sized inputs costs bytes, not megabytes), the byte
// budget drops the oldest steps, and undo/redo restore every part of the workspace exactly, also
// after long random runs of edits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "editing/history.h"
#include "editing/token_table.h"
#include "formats/workspace_file.h"
#include "test_support.h"

namespace attnscope {
namespace {

// ---- comparing workspaces part by part ----------------------------------------------------------

bool sameDoubleBits(double a, double b) {
  std::uint64_t x, y;
  std::memcpy(&x, &a, 8);
  std::memcpy(&y, &b, 8);
  return x == y;
}

// The model as the workspace file writes it (without the embeddings, which can be large).
nlohmann::json modelJson(const ModelConfig& model) {
  Workspace only;
  only.model = model;
  return workspaceToJson(only)["model"];
}

// Every part, exactly: tokens, embeddings bit for bit, the random recipe, the model (field by
// field and as the workspace file writes it, which catches fields added later) and the view.
::testing::AssertionResult sameWorkspace(const Workspace& a, const Workspace& b) {
  if (a.tokens != b.tokens) return ::testing::AssertionFailure() << "tokens differ";
  if (auto e = test::bitwiseEqual(a.embeddings, b.embeddings); !e)
    return ::testing::AssertionFailure() << "embeddings: " << e.message();
  if (a.random.has_value() != b.random.has_value()) return ::testing::AssertionFailure() << "random: set in one only";
  if (a.random && (a.random->normal != b.random->normal || a.random->seed != b.random->seed ||
                   a.random->rows != b.random->rows || a.random->cols != b.random->cols))
    return ::testing::AssertionFailure() << "random recipes differ";
  const ModelConfig &m = a.model, &n = b.model;
  if (m.variant != n.variant || m.d_out != n.d_out || m.num_heads != n.num_heads ||
      !sameDoubleBits(m.dropout, n.dropout) || m.seed != n.seed || m.qkv_bias != n.qkv_bias || m.causal != n.causal ||
      m.scale != n.scale || m.training != n.training || m.batch_size != n.batch_size ||
      m.normalization != n.normalization || modelJson(m) != modelJson(n))
    return ::testing::AssertionFailure() << "models differ: " << modelJson(m).dump() << " vs " << modelJson(n).dump();
  if (a.view != b.view)
    return ::testing::AssertionFailure() << "views differ: " << a.view.dump() << " vs " << b.view.dump();
  return ::testing::AssertionSuccess();
}

// Applies an edit the way the app does: a copy is changed, then (before, after) is recorded.
void edit(History& h, Workspace& ws, const std::function<void(Workspace&)>& change, const std::string& gesture = "") {
  Workspace next = ws;
  change(next);
  h.record(ws, next, gesture);
  ws = std::move(next);
}

// ---- states told apart by one cell: state(k) has embeddings(0, 0) = k ---------------------------

Workspace state(int k) {
  Workspace ws = bookExample();
  ws.embeddings(0, 0) = static_cast<float>(k);
  return ws;
}
int id(const Workspace& ws) { return static_cast<int>(ws.embeddings(0, 0)); }

struct Session {
  History history;
  Workspace now = state(0);
  explicit Session(std::size_t budget = History::kDefaultBudget) : history(budget) {}
  void edit(int k, const std::string& gesture = "") {
    Workspace next = state(k);
    history.record(now, next, gesture);
    now = std::move(next);
  }
  int undo() {
    history.undo(now);
    return id(now);
  }
  int redo() {
    history.redo(now);
    return id(now);
  }
};

// A workspace of GPT-2's size: 1024 tokens of 768 dimensions.
Workspace gpt2Sized() {
  Workspace ws = bookExample();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  ws.embeddings.resize(1024, 768);
  for (Eigen::Index i = 0; i < ws.embeddings.size(); ++i) ws.embeddings.data()[i] = u(rng);
  ws.tokens.clear();
  for (int i = 0; i < 1024; ++i) ws.tokens.push_back("tok" + std::to_string(i));
  return ws;
}

Workspace filled(int rows, int cols, float value) {
  Workspace ws = bookExample();
  ws.embeddings = Matrix::Constant(rows, cols, value);
  ws.tokens.assign(static_cast<std::size_t>(rows), "t");
  return ws;
}

// ---- walking back and forth ---------------------------------------------------------------------

TEST(History, UndoRedoWalkBackAndForth) {
  Session s;
  EXPECT_FALSE(s.history.canUndo());
  EXPECT_FALSE(s.history.canRedo());
  s.edit(1);
  s.edit(2);
  s.edit(3);
  EXPECT_EQ(s.history.undoSteps(), 3u);
  EXPECT_EQ(s.undo(), 2);
  EXPECT_EQ(s.undo(), 1);
  EXPECT_TRUE(s.history.canRedo());
  EXPECT_EQ(s.redo(), 2);
  EXPECT_EQ(s.undo(), 1);
  EXPECT_EQ(s.undo(), 0);
  EXPECT_FALSE(s.history.canUndo());
  EXPECT_EQ(s.history.redoSteps(), 3u);
  EXPECT_EQ(s.redo(), 1);
  EXPECT_EQ(s.redo(), 2);
  EXPECT_EQ(s.redo(), 3);
  EXPECT_FALSE(s.history.canRedo());
  EXPECT_TRUE(s.history.canUndo());
  EXPECT_TRUE(sameWorkspace(s.now, state(3)));
}

TEST(History, NothingToUndoOrRedoChangesNothing) {
  History h;
  Workspace ws = gpt2Sized();
  ws.random = RandomEmbeddings{true, 5, 1024, 768};
  ws.view["tab"] = "pipeline";
  const Workspace original = ws;
  EXPECT_FALSE(h.undo(ws));
  EXPECT_TRUE(sameWorkspace(ws, original));
  EXPECT_FALSE(h.redo(ws));
  EXPECT_TRUE(sameWorkspace(ws, original));
  EXPECT_FALSE(h.canUndo());
  EXPECT_FALSE(h.canRedo());
  EXPECT_EQ(h.bytes(), 0u);

  Session s;
  s.edit(1);
  EXPECT_FALSE(s.history.redo(s.now));  // nothing undone yet
  EXPECT_EQ(id(s.now), 1);
  EXPECT_TRUE(s.history.undo(s.now));
  EXPECT_EQ(id(s.now), 0);
  EXPECT_FALSE(s.history.undo(s.now));
  EXPECT_TRUE(sameWorkspace(s.now, state(0)));
}

// ---- gestures -----------------------------------------------------------------------------------

TEST(History, ADragIsOneStep) {
  Session s;
  s.edit(1);
  for (int k = 10; k < 60; ++k) s.edit(k, "embeddings[0][0]");  // the mouse moves…
  s.history.endGesture();                                       // …and is released
  EXPECT_EQ(s.history.undoSteps(), 2u);
  EXPECT_EQ(s.undo(), 1);  // the whole drag in one step, back to before it began
  EXPECT_EQ(s.undo(), 0);
  EXPECT_FALSE(s.history.canUndo());
  EXPECT_EQ(s.redo(), 1);
  EXPECT_EQ(s.redo(), 59);  // and redo brings back where it ended
}

TEST(History, HundredDragsOnOneCellOfGpt2SizedInputsAreOneSmallStep) {
  History h;
  Workspace ws = gpt2Sized();
  const Workspace original = ws;
  for (int k = 0; k < 100; ++k)
    edit(
        h, ws, [k](Workspace& w) { setEmbedding(w, 517, 300, 0.01f * static_cast<float>(k)); }, "embeddings[517][300]");
  h.endGesture();
  const Workspace dragged = ws;
  EXPECT_EQ(h.undoSteps(), 1u);
  EXPECT_LT(h.bytes(), 1024u);
  EXPECT_TRUE(h.undo(ws));
  EXPECT_TRUE(sameWorkspace(ws, original));
  EXPECT_FALSE(h.canUndo());
  EXPECT_TRUE(h.redo(ws));
  EXPECT_TRUE(sameWorkspace(ws, dragged));
  EXPECT_FLOAT_EQ(ws.embeddings(517, 300), 0.99f);
}

TEST(History, GesturesEndAndKeysSeparateSteps) {
  Session s;
  s.edit(1, "slider d_out");
  s.edit(2, "slider d_out");
  s.history.endGesture();
  s.edit(3, "slider d_out");  // a second drag of the same slider
  s.edit(4, "slider seed");   // another control
  s.edit(5, "slider d_out");  // back to the first: a new step
  s.edit(6);                  // no gesture: always its own step
  s.edit(7);
  EXPECT_EQ(s.history.undoSteps(), 6u);
  EXPECT_EQ(s.undo(), 6);
  EXPECT_EQ(s.undo(), 5);
  EXPECT_EQ(s.undo(), 4);
  EXPECT_EQ(s.undo(), 3);
  EXPECT_EQ(s.undo(), 2);  // 1 was inside the first drag
  EXPECT_EQ(s.undo(), 0);
  EXPECT_FALSE(s.history.canUndo());
}

TEST(History, UndoClosesTheGesture) {
  Session s;
  s.edit(1);
  s.edit(2, "drag");
  s.edit(3, "drag");
  EXPECT_EQ(s.undo(), 1);
  s.edit(4, "drag");  // the same gesture after an undo starts a new step
  s.edit(5, "drag");
  EXPECT_EQ(s.undo(), 1);
  EXPECT_EQ(s.undo(), 0);
  EXPECT_FALSE(s.history.canUndo());
  // Redo closes it too.
  Session t;
  t.edit(1, "drag");
  t.edit(2);
  EXPECT_EQ(t.undo(), 1);
  EXPECT_EQ(t.redo(), 2);
  t.edit(3, "drag");
  EXPECT_EQ(t.undo(), 2);
}

TEST(History, AGestureMergesEveryKindOfPartIntoOneStep) {
  History h;
  Workspace ws = bookExample(Variant::Simple);
  const Workspace original = ws;
  // One gesture touching the model, the tokens, the view, the recipe and the shape: the step
  // keeps each part's first `before` and its newest `after`.
  edit(
      h, ws, [](Workspace& w) { setInputWidth(w, 5, 2); }, "g");
  edit(
      h, ws, [](Workspace& w) { renameToken(w, 2, "begins"); }, "g");
  edit(
      h, ws, [](Workspace& w) { w.view["zoom"] = 2.5; }, "g");
  edit(
      h, ws, [](Workspace& w) { setEmbedding(w, 1, 4, -0.0f); }, "g");
  edit(
      h, ws,
      [](Workspace& w) {
        w.random = RandomEmbeddings{false, 9, 6, 5};
      },
      "g");
  edit(
      h, ws, [](Workspace& w) { w.model.seed = 77; }, "g");
  edit(
      h, ws, [](Workspace& w) { setInputWidth(w, 4, 3); }, "g");
  const Workspace final_state = ws;
  EXPECT_EQ(h.undoSteps(), 1u);
  EXPECT_TRUE(h.undo(ws));
  EXPECT_TRUE(sameWorkspace(ws, original));
  EXPECT_TRUE(h.redo(ws));
  EXPECT_TRUE(sameWorkspace(ws, final_state));
}

TEST(History, AGestureBackWhereItBeganLeavesNoStep) {
  History h;
  Workspace ws = bookExample();
  edit(h, ws, [](Workspace& w) { w.model.seed = 1; });
  const Workspace start = ws;
  const std::size_t bytes = h.bytes();
  for (int d_in : {4, 6, 3})  // a d_in slider dragged out and back: kept columns are unchanged
    edit(
        h, ws, [d_in](Workspace& w) { setInputWidth(w, d_in, 5); }, "slider d_in");
  EXPECT_TRUE(sameWorkspace(ws, start));
  EXPECT_EQ(h.undoSteps(), 1u);
  EXPECT_EQ(h.bytes(), bytes);
  // The gesture goes on from there: its step still undoes to where it began.
  edit(
      h, ws, [](Workspace& w) { setInputWidth(w, 7, 5); }, "slider d_in");
  edit(
      h, ws, [](Workspace& w) { setInputWidth(w, 8, 5); }, "slider d_in");
  EXPECT_EQ(h.undoSteps(), 2u);
  EXPECT_TRUE(h.undo(ws));
  EXPECT_TRUE(sameWorkspace(ws, start));
}

TEST(History, AGesturesCellListFallsBackToMatricesWhenItGrows) {
  History h;
  Workspace ws = filled(32, 32, 0.5f);  // 1024 cells: at most 64 in a cell list
  const Workspace original = ws;
  std::vector<std::size_t> bytes;
  for (int k = 0; k < 100; ++k) {  // paint 100 different cells in one stroke
    edit(
        h, ws, [k](Workspace& w) { w.embeddings(k / 32, (k * 7) % 32) = static_cast<float>(k); }, "paint");
    bytes.push_back(h.bytes());
  }
  EXPECT_EQ(h.undoSteps(), 1u);
  EXPECT_LT(bytes[10], 1024u);               // a cell list while it is short…
  EXPECT_GE(bytes.back(), 2u * 1024u * 4u);  // …both matrices once it is long
  EXPECT_LT(bytes.back(), 2u * 1024u * 4u + 1024u);
  const Workspace painted = ws;
  EXPECT_TRUE(h.undo(ws));
  EXPECT_TRUE(sameWorkspace(ws, original));
  EXPECT_TRUE(h.redo(ws));
  EXPECT_TRUE(sameWorkspace(ws, painted));
}

// ---- what a step costs --------------------------------------------------------------------------

TEST(History, AOneCellEditCostsAboutOneCell) {
  History h;
  Workspace ws = gpt2Sized();
  edit(h, ws, [](Workspace& w) { setEmbedding(w, 1000, 700, 42.0f); });
  EXPECT_EQ(h.undoSteps(), 1u);
  EXPECT_GT(h.bytes(), 0u);
  EXPECT_LT(h.bytes(), 1024u);
  edit(h, ws, [](Workspace& w) { renameToken(w, 3, "renamed"); });  // both token lists
  EXPECT_GT(h.bytes(), 2u * 1024u * 32u);
  EXPECT_LT(h.bytes(), 200u * 1024u);
}

TEST(History, ASentenceThatChangesTheShapeCostsBothMatrices) {
  History h;
  Workspace ws = gpt2Sized();
  const Workspace original = ws;
  edit(h, ws, [](Workspace& w) { setSentence(w, "Your journey starts with one step", 123); });
  ASSERT_EQ(ws.embeddings.rows(), 6);
  const std::size_t both = (1024u * 768u + 6u * 768u) * sizeof(float);
  EXPECT_GE(h.bytes(), both);
  EXPECT_LE(h.bytes(), both + both / 16);  // plus the two token lists
  const std::size_t bytes = h.bytes();
  EXPECT_TRUE(h.undo(ws));
  EXPECT_TRUE(sameWorkspace(ws, original));
  EXPECT_EQ(h.bytes(), bytes);  // the step moved to redo, and costs the same there
}

TEST(History, ManyChangedCellsOfTheSameShapeAreKeptAsMatrices) {
  History h;
  Workspace ws = filled(64, 64, 1.0f);  // at most 256 cells in a list
  edit(h, ws, [](Workspace& w) {
    for (int i = 0; i < 64; ++i) w.embeddings(i, i) = -1.0f;  // a diagonal: a list of 64
  });
  EXPECT_LT(h.bytes(), 64u * 16u + 256u);
  h.clear();
  edit(h, ws, [](Workspace& w) {
    w.embeddings.row(3).setConstant(2.0f);
    w.embeddings.col(9).setZero();
  });
  EXPECT_LT(h.bytes(), 127u * 16u + 256u);  // 127 cells: still a list
  h.clear();
  const Workspace before = ws;
  edit(h, ws, [](Workspace& w) { w.embeddings.array() += 1.0f; });  // every cell
  EXPECT_GE(h.bytes(), 2u * 64u * 64u * 4u);
  const Workspace after = ws;
  EXPECT_TRUE(h.undo(ws));
  EXPECT_TRUE(sameWorkspace(ws, before));
  EXPECT_TRUE(h.redo(ws));
  EXPECT_TRUE(sameWorkspace(ws, after));
}

// ---- the budget ---------------------------------------------------------------------------------

// 20 edits that each replace the whole matrix: a step holds both matrices, so only the newest
// fit, and they still undo in order.
TEST(History, TheBudgetDropsTheOldestSteps) {
  for (int n : {128, 256}) {
    SCOPED_TRACE(n);
    const std::size_t budget = std::size_t{1} << 20;
    History h(budget);
    Workspace ws = filled(n, n, 0.0f);
    for (int k = 1; k <= 20; ++k) {
      edit(h, ws, [n, k](Workspace& w) { w.embeddings = Matrix::Constant(n, n, static_cast<float>(k)); });
      EXPECT_LE(h.bytes(), budget);
      EXPECT_TRUE(h.canUndo());
    }
    const std::size_t step = 2u * static_cast<std::size_t>(n * n) * sizeof(float);
    const std::size_t kept = h.undoSteps();
    EXPECT_EQ(kept, n == 128 ? 7u : 1u);  // 7 × 128 KiB (+ a little each) ≤ 1 MiB; 512 KiB
    EXPECT_GE(h.bytes(), kept * step);
    for (std::size_t i = 1; i <= kept; ++i) {
      EXPECT_TRUE(h.undo(ws));
      EXPECT_EQ(ws.embeddings(0, 0), static_cast<float>(20 - i));
      EXPECT_LE(h.bytes(), budget);  // undo and redo steps together
    }
    EXPECT_FALSE(h.canUndo());
    for (std::size_t i = 1; i <= kept; ++i) {
      EXPECT_TRUE(h.redo(ws));
      EXPECT_EQ(ws.embeddings(0, 0), static_cast<float>(20 - kept + i));
    }
    EXPECT_FALSE(h.canRedo());
    EXPECT_TRUE(test::bitwiseEqual(ws.embeddings, Matrix::Constant(n, n, 20.0f)));
  }
}

TEST(History, AStepOverTheWholeBudgetIsNotKept) {
  const std::size_t budget = std::size_t{1} << 20;
  History h(budget);
  Workspace ws = filled(512, 512, 0.0f);  // a whole-matrix step: 2 MiB
  edit(h, ws, [](Workspace& w) { w.embeddings(1, 1) = 1.0f; });
  edit(h, ws, [](Workspace& w) { w.embeddings(2, 2) = 2.0f; });
  EXPECT_EQ(h.undoSteps(), 2u);
  edit(h, ws, [](Workspace& w) { w.embeddings.setConstant(3.0f); });
  // Not kept, and the older steps went first (they only apply on the state it replaced).
  EXPECT_FALSE(h.canUndo());
  EXPECT_EQ(h.bytes(), 0u);
  edit(h, ws, [](Workspace& w) { w.embeddings(4, 4) = 4.0f; });  // later edits are kept again
  EXPECT_EQ(h.undoSteps(), 1u);
  EXPECT_TRUE(h.undo(ws));
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings, Matrix::Constant(512, 512, 3.0f)));

  // A gesture that grows beyond the budget is dropped, and so is the rest of it: a step from its
  // middle would undo to a state the user never chose.
  History g(4096);
  Workspace w = filled(32, 32, 0.0f);  // whole matrices: 8 KiB
  edit(g, w, [](Workspace& x) { x.embeddings(0, 0) = 1.0f; });
  for (int k = 0; k < 100; ++k)
    edit(
        g, w, [k](Workspace& x) { x.embeddings(1 + k / 32, k % 32) = 1.0f; }, "paint");
  EXPECT_FALSE(g.canUndo());
  edit(
      g, w, [](Workspace& x) { x.embeddings(9, 9) = 9.0f; }, "paint");
  EXPECT_FALSE(g.canUndo());
  g.endGesture();
  edit(
      g, w, [](Workspace& x) { x.embeddings(9, 9) = 10.0f; }, "paint");
  EXPECT_EQ(g.undoSteps(), 1u);
  EXPECT_TRUE(g.undo(w));
  EXPECT_EQ(w.embeddings(9, 9), 9.0f);

  // A budget of nothing keeps nothing.
  History none(0);
  Workspace z = state(0);
  edit(none, z, [](Workspace& x) { x.embeddings(0, 0) = 1.0f; });
  EXPECT_FALSE(none.canUndo());
  EXPECT_EQ(none.bytes(), 0u);
}

// ---- redo, no-ops, clear ------------------------------------------------------------------------

TEST(History, NewEditClearsRedo) {
  Session s;
  s.edit(1);
  s.edit(2);
  const std::size_t two = s.history.bytes();
  EXPECT_EQ(s.undo(), 1);
  EXPECT_EQ(s.history.bytes(), two);
  s.edit(5);
  EXPECT_FALSE(s.history.canRedo());
  EXPECT_EQ(s.history.redoSteps(), 0u);
  EXPECT_FALSE(s.history.redo(s.now));
  EXPECT_EQ(id(s.now), 5);
  EXPECT_EQ(s.undo(), 1);
  EXPECT_EQ(s.undo(), 0);
  // An edit in a gesture of the same name clears redo too.
  Session t;
  t.edit(1, "drag");
  t.edit(2, "drag");
  t.history.endGesture();
  t.edit(3);
  EXPECT_EQ(t.undo(), 2);
  t.edit(9, "drag");
  EXPECT_FALSE(t.history.canRedo());
  EXPECT_EQ(t.undo(), 2);
}

TEST(History, RecordingNoChangeAddsNoStep) {
  Session s;
  s.history.record(s.now, s.now);
  EXPECT_FALSE(s.history.canUndo());
  EXPECT_EQ(s.history.bytes(), 0u);
  s.edit(1);
  s.edit(2);
  EXPECT_EQ(s.undo(), 1);
  s.history.record(s.now, s.now);  // nothing happened: redo stays
  s.history.record(s.now, s.now, "drag");
  EXPECT_EQ(s.history.undoSteps(), 1u);
  EXPECT_TRUE(s.history.canRedo());
  EXPECT_EQ(s.redo(), 2);
  // -0 and 0 differ (the user sees the sign); the same NaN is no change.
  History h;
  Workspace ws = bookExample();
  ws.embeddings(2, 2) = std::nanf("");
  edit(h, ws, [](Workspace&) {});
  EXPECT_FALSE(h.canUndo());
  ws.embeddings(1, 1) = 0.0f;
  edit(h, ws, [](Workspace& w) { w.embeddings(1, 1) = -0.0f; });
  EXPECT_EQ(h.undoSteps(), 1u);
  EXPECT_TRUE(h.undo(ws));
  EXPECT_FALSE(std::signbit(ws.embeddings(1, 1)));
  // A pause in a drag (no change) keeps it one step.
  Session d;
  d.edit(1, "drag");
  d.history.record(d.now, d.now, "drag");
  d.edit(2, "drag");
  EXPECT_EQ(d.history.undoSteps(), 1u);
  EXPECT_EQ(d.undo(), 0);
}

TEST(History, ClearForgetsEverything) {
  Session s;
  s.edit(1, "drag");
  s.edit(2);
  EXPECT_EQ(s.undo(), 1);
  s.history.clear();
  EXPECT_FALSE(s.history.canUndo());
  EXPECT_FALSE(s.history.canRedo());
  EXPECT_EQ(s.history.bytes(), 0u);
  s.edit(3, "drag");  // the old gesture is gone: this is a step of its own
  EXPECT_TRUE(s.history.canUndo());
  EXPECT_EQ(s.undo(), 1);
}

// ---- every part round-trips ---------------------------------------------------------------------

TEST(History, EachPartUndoesAndRedoesExactly) {
  struct Case {
    const char* name;
    std::function<void(Workspace&)> change;
  };
  const std::vector<Case> cases = {
      {"model",
       [](Workspace& w) {
         w.model.num_heads = 1;
         w.model.dropout = 0.25;
       }},
      {"model variant", [](Workspace& w) { w.model = defaultConfig(Variant::Causal); }},
      {"tokens", [](Workspace& w) { renameToken(w, 0, "My"); }},
      {"random",
       [](Workspace& w) {
         w.random = RandomEmbeddings{true, 42, 6, 3};
       }},
      {"random cleared", [](Workspace& w) { w.random.reset(); }},
      {"view",
       [](Workspace& w) {
         w.view["tab"] = "pipeline";
         w.view["zoom"] = 3;
       }},
      {"one cell", [](Workspace& w) { setEmbedding(w, 5, 2, 9.5f); }},
      {"every cell", [](Workspace& w) { randomizeEmbeddings(w, 77); }},
      {"shape (token)", [](Workspace& w) { insertToken(w, 2, "new", 8); }},
      {"shape (width)", [](Workspace& w) { setInputWidth(w, 8, 4); }},
      {"everything",
       [](Workspace& w) {
         setSentence(w, "a b c d e f g h", 3);
         w.model.causal = false;
         w.random = RandomEmbeddings{false, 1, 8, 3};
         w.view["head"] = 1;
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    History h;
    Workspace ws = bookExample();
    ws.random = RandomEmbeddings{false, 5, 6, 3};
    ws.view = {{"tab", "heatmaps"}};
    const Workspace before = ws;
    edit(h, ws, c.change);
    const Workspace after = ws;
    ASSERT_FALSE(sameWorkspace(before, after));
    EXPECT_EQ(h.undoSteps(), 1u);
    EXPECT_GT(h.bytes(), 0u);
    EXPECT_TRUE(h.undo(ws));
    EXPECT_TRUE(sameWorkspace(ws, before));
    EXPECT_TRUE(h.redo(ws));
    EXPECT_TRUE(sameWorkspace(ws, after));
    EXPECT_TRUE(h.undo(ws));
    EXPECT_TRUE(sameWorkspace(ws, before));
  }
}

TEST(History, UndoesInputsPanelEditsExactly) {
  History h;
  Workspace ws = bookExample(Variant::Simple);
  const std::string d0 = dumpWorkspace(ws);
  edit(h, ws, [](Workspace& w) { setInputWidth(w, 5, 2); });
  const std::string d1 = dumpWorkspace(ws);
  for (int k = 0; k < 20; ++k)  // a drag of one cell
    edit(
        h, ws, [k](Workspace& w) { setEmbedding(w, 1, 4, 0.05f * static_cast<float>(k)); }, "embeddings[1][4]");
  h.endGesture();
  const std::string d2 = dumpWorkspace(ws);
  edit(h, ws, [](Workspace& w) { insertToken(w, 3, "new", 8); });
  edit(h, ws, [](Workspace& w) { moveToken(w, 0, 6); });
  const std::string d4 = dumpWorkspace(ws);

  EXPECT_TRUE(h.undo(ws));
  EXPECT_TRUE(h.undo(ws));
  EXPECT_EQ(dumpWorkspace(ws), d2);
  EXPECT_TRUE(h.undo(ws));
  EXPECT_EQ(dumpWorkspace(ws), d1);
  EXPECT_TRUE(h.undo(ws));
  EXPECT_EQ(dumpWorkspace(ws), d0);
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings, bookExample().embeddings));
  EXPECT_EQ(ws.model.d_out, 3);
  EXPECT_FALSE(h.canUndo());
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(h.redo(ws));
  EXPECT_EQ(dumpWorkspace(ws), d4);
}

// ---- random runs --------------------------------------------------------------------------------

int pick(std::mt19937& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

// One random edit of any part: cells, tokens, the model, the shape, the recipe, the view, or
// nothing at all.
void randomEdit(std::mt19937& rng, Workspace& w, int max_rows, int max_cols) {
  std::uniform_real_distribution<float> value(-2, 2);
  const auto fill = [&](Matrix& m, Eigen::Index from_row, Eigen::Index from_col) {
    for (Eigen::Index i = 0; i < m.rows(); ++i)
      for (Eigen::Index j = 0; j < m.cols(); ++j)
        if (i >= from_row || j >= from_col) m(i, j) = value(rng);
  };
  Matrix& e = w.embeddings;
  const int kind = pick(rng, 0, 99);
  if (kind < 30) {  // one cell, sometimes −0 or the value it has
    const int r = pick(rng, 0, int(e.rows()) - 1), c = pick(rng, 0, int(e.cols()) - 1);
    const int how = pick(rng, 0, 9);
    e(r, c) = how == 0 ? -0.0f : how == 1 ? e(r, c) : value(rng);
  } else if (kind < 40) {  // a handful of cells up to all of them
    const int n = pick(rng, 1, int(e.size()));
    for (int k = 0; k < n; ++k) {
      const int r = pick(rng, 0, int(e.rows()) - 1), c = pick(rng, 0, int(e.cols()) - 1);
      e(r, c) = value(rng);
    }
  } else if (kind < 50) {  // rename a token
    w.tokens[static_cast<std::size_t>(pick(rng, 0, int(w.tokens.size()) - 1))] = "w" + std::to_string(pick(rng, 0, 30));
  } else if (kind < 65) {  // one model field
    ModelConfig& m = w.model;
    switch (pick(rng, 0, 10)) {
      case 0: m.variant = static_cast<Variant>(pick(rng, 0, 5)); break;
      case 1: m.d_out = pick(rng, 1, 8); break;
      case 2: m.num_heads = pick(rng, 1, 4); break;
      case 3: m.dropout = pick(rng, 0, 4) == 0 ? -0.0 : pick(rng, 0, 9) / 10.0; break;
      case 4: m.seed = static_cast<std::uint32_t>(pick(rng, 0, 1000)); break;
      case 5: m.qkv_bias = !m.qkv_bias; break;
      case 6: m.causal = !m.causal; break;
      case 7: m.scale = m.scale == Scale::SqrtDk ? Scale::None : Scale::SqrtDk; break;
      case 8: m.training = !m.training; break;
      case 9: m.batch_size = pick(rng, 1, 4); break;
      default:
        m.normalization = m.normalization == Normalization::Softmax ? Normalization::Sum : Normalization::Softmax;
    }
  } else if (kind < 77) {  // a new shape: tokens and rows in step, kept cells unchanged
    const int rows = pick(rng, 1, max_rows), cols = pick(rng, 1, max_cols);
    const Eigen::Index old_rows = e.rows(), old_cols = e.cols();
    e.conservativeResize(rows, cols);
    fill(e, old_rows, old_cols);
    w.tokens.resize(static_cast<std::size_t>(rows), "new");
  } else if (kind < 82) {  // every cell, same shape
    fill(e, 0, 0);
  } else if (kind < 88) {  // the recipe
    if (pick(rng, 0, 2) == 0)
      w.random.reset();
    else
      w.random = RandomEmbeddings{pick(rng, 0, 1) == 1, static_cast<std::uint32_t>(pick(rng, 0, 9)), int(e.rows()),
                                  int(e.cols())};
  } else if (kind < 94) {  // the view
    w.view[pick(rng, 0, 1) ? "zoom" : "tab"] = pick(rng, 0, 3);
  }  // else: nothing changes
}

// 200 random edits, some in gestures, with undo and redo in between: every undo and redo lands on
// the state the history should hold there, undoing everything gives back the original, redoing
// everything the final workspace, exactly.
TEST(History, RandomEditsUndoAndRedoExactly) {
  for (std::uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    History h;
    Workspace ws = filled(8, 5, 0.0f);
    for (Eigen::Index i = 0; i < ws.embeddings.size(); ++i) ws.embeddings.data()[i] = 0.1f * float(i);
    const Workspace original = ws;
    // timeline[i]: the state after i undo steps; the present is timeline[undoSteps()].
    std::vector<Workspace> timeline = {ws};
    const char* gestures[] = {"", "", "drag a", "drag b"};
    for (int edits = 0; edits < 200;) {
      const int op = pick(rng, 0, 99);
      if (op < 5) {
        const std::size_t at = h.undoSteps();
        ASSERT_EQ(h.undo(ws), at > 0);
        ASSERT_TRUE(sameWorkspace(ws, timeline[at > 0 ? at - 1 : 0]));
      } else if (op < 8) {
        const std::size_t at = h.undoSteps();
        const bool redone = h.redo(ws);
        ASSERT_EQ(redone, h.undoSteps() > at);
        ASSERT_TRUE(sameWorkspace(ws, timeline[h.undoSteps()]));
      } else if (op < 15) {
        h.endGesture();
      } else {
        edit(
            h, ws, [&](Workspace& w) { randomEdit(rng, w, 20, 12); }, gestures[pick(rng, 0, 3)]);
        ++edits;
        timeline.resize(h.undoSteps() + h.redoSteps() + 1);
        timeline[h.undoSteps()] = ws;
      }
    }
    const Workspace final_state = ws;
    EXPECT_GT(h.undoSteps(), 20u);
    while (h.canUndo()) {
      const std::size_t at = h.undoSteps();
      ASSERT_TRUE(h.undo(ws));
      ASSERT_TRUE(sameWorkspace(ws, timeline[at - 1])) << "undo from step " << at;
    }
    EXPECT_TRUE(sameWorkspace(ws, original));
    while (h.canRedo()) {
      ASSERT_TRUE(h.redo(ws));
      ASSERT_TRUE(sameWorkspace(ws, timeline[h.undoSteps()])) << "redo to step " << h.undoSteps();
    }
    EXPECT_TRUE(sameWorkspace(ws, final_state));
  }
}

// The same under a budget that a few steps fill: the history keeps a run of the newest steps,
// bytes() stays within the budget, and undo walks back only through states that really were,
// in order (never a mix of a dropped step's state and an older one).
TEST(History, RandomEditsUnderASmallBudgetStayConsistent) {
  for (std::uint32_t seed : {11u, 12u, 13u}) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    const std::size_t budget = 24 << 10;
    History h(budget);
    Workspace ws = filled(16, 16, 0.5f);
    std::vector<Workspace> seen = {ws};  // every state, in order
    const char* gestures[] = {"", "drag"};
    for (int edits = 0; edits < 200; ++edits) {
      if (pick(rng, 0, 9) == 0) h.endGesture();
      edit(
          h, ws, [&](Workspace& w) { randomEdit(rng, w, 80, 48); }, gestures[pick(rng, 0, 1)]);
      seen.push_back(ws);
      ASSERT_LE(h.bytes(), budget);
    }
    const Workspace final_state = ws;
    std::vector<Workspace> walked = {ws};
    std::size_t position = seen.size() - 1;
    while (h.canUndo()) {
      ASSERT_TRUE(h.undo(ws));
      ASSERT_LE(h.bytes(), budget);
      std::size_t found = position;
      while (found > 0 && !sameWorkspace(seen[found - 1], ws)) --found;
      ASSERT_GT(found, 0u) << "undo reached a state that never was";
      position = found - 1;
      walked.push_back(ws);
    }
    for (std::size_t i = walked.size() - 1; i > 0; --i) {
      ASSERT_TRUE(h.redo(ws));
      ASSERT_TRUE(sameWorkspace(ws, walked[i - 1]));
    }
    EXPECT_FALSE(h.canRedo());
    EXPECT_TRUE(sameWorkspace(ws, final_state));
  }
}

}  // namespace
}  // namespace attnscope
