// Undo/redo (core/history.h, SPEC §3): undo and redo walk back and forth through snapshots, a drag
// (many records with one coalesce key) is one step, a new edit clears redo, the capacity drops the
// oldest steps, and undo after real Inputs-panel edits restores the workspace exactly.
#include <gtest/gtest.h>

#include <string>

#include "editing/history.h"
#include "test_support.h"
#include "editing/token_table.h"
#include "formats/workspace.h"

namespace attnscope {
namespace {

// Snapshots told apart by one cell: state(k) has embeddings(0, 0) = k.
Workspace state(int k) {
  Workspace ws = bookExample();
  ws.embeddings(0, 0) = static_cast<float>(k);
  return ws;
}
int id(const Workspace& ws) { return static_cast<int>(ws.embeddings(0, 0)); }

// Applies edits the way the app does: record the state before, then change it.
struct Session {
  History history;
  Workspace now = state(0);
  explicit Session(std::size_t capacity = 200) : history(capacity) {}
  void edit(int k, const std::string& coalesce = "") {
    history.record(now, coalesce);
    now = state(k);
  }
  int undo() { return id(now = history.undo(now)); }
  int redo() { return id(now = history.redo(now)); }
};

TEST(History, UndoRedoWalkBackAndForth) {
  Session s;
  EXPECT_FALSE(s.history.canUndo());
  EXPECT_FALSE(s.history.canRedo());
  s.edit(1);
  s.edit(2);
  s.edit(3);
  EXPECT_EQ(s.undo(), 2);
  EXPECT_EQ(s.undo(), 1);
  EXPECT_TRUE(s.history.canRedo());
  EXPECT_EQ(s.redo(), 2);
  EXPECT_EQ(s.undo(), 1);
  EXPECT_EQ(s.undo(), 0);
  EXPECT_FALSE(s.history.canUndo());
  EXPECT_EQ(s.redo(), 1);
  EXPECT_EQ(s.redo(), 2);
  EXPECT_EQ(s.redo(), 3);
  EXPECT_FALSE(s.history.canRedo());
  EXPECT_TRUE(s.history.canUndo());
}

TEST(History, NothingToUndoOrRedoChangesNothing) {
  Session s;
  EXPECT_EQ(s.undo(), 0);
  EXPECT_EQ(s.redo(), 0);
  EXPECT_FALSE(s.history.canUndo());
  EXPECT_FALSE(s.history.canRedo());
  s.edit(1);
  EXPECT_EQ(s.redo(), 1);  // nothing undone yet
  EXPECT_EQ(s.undo(), 0);
}

TEST(History, ADragIsOneStep) {
  Session s;
  s.edit(1);
  for (int k = 10; k < 60; ++k) s.edit(k, "embeddings[2][1]");  // the mouse moves…
  s.history.endGesture();                                       // …and is released
  EXPECT_EQ(s.undo(), 1);  // the whole drag in one step, back to before it began
  EXPECT_EQ(s.undo(), 0);
  EXPECT_FALSE(s.history.canUndo());
  EXPECT_EQ(s.redo(), 1);
  EXPECT_EQ(s.redo(), 59);  // and redo brings back where it ended
}

TEST(History, GesturesEndAndKeysSeparateSteps) {
  Session s;
  s.edit(1, "slider d_out");
  s.edit(2, "slider d_out");
  s.history.endGesture();
  s.edit(3, "slider d_out");  // a second drag of the same slider
  s.edit(4, "slider seed");   // another control
  s.edit(5, "slider d_out");  // back to the first: a new step
  s.edit(6);                  // no key: always its own step
  s.edit(7);
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
  s.edit(4, "drag");  // same key after an undo starts a new step
  s.edit(5, "drag");
  EXPECT_EQ(s.undo(), 1);
  EXPECT_EQ(s.undo(), 0);
  EXPECT_FALSE(s.history.canUndo());
}

TEST(History, NewEditClearsRedo) {
  Session s;
  s.edit(1);
  s.edit(2);
  EXPECT_EQ(s.undo(), 1);
  s.edit(5);
  EXPECT_FALSE(s.history.canRedo());
  EXPECT_EQ(s.redo(), 5);
  EXPECT_EQ(s.undo(), 1);
  EXPECT_EQ(s.undo(), 0);
  // A record that coalesces into the open step clears redo too.
  Session t;
  t.edit(1, "drag");
  t.edit(2, "drag");
  t.history.endGesture();
  t.edit(3);
  EXPECT_EQ(t.undo(), 2);
  t.history.record(t.now, "");
  EXPECT_FALSE(t.history.canRedo());
}

TEST(History, CapacityDropsTheOldest) {
  Session s(3);
  for (int k = 1; k <= 5; ++k) s.edit(k);
  EXPECT_EQ(s.undo(), 4);
  EXPECT_EQ(s.undo(), 3);
  EXPECT_EQ(s.undo(), 2);
  EXPECT_FALSE(s.history.canUndo());  // 0 and 1 were dropped
  EXPECT_EQ(s.redo(), 3);
  EXPECT_EQ(s.redo(), 4);
  EXPECT_EQ(s.redo(), 5);
  EXPECT_FALSE(s.history.canRedo());
  Session none(0);
  none.edit(1);
  EXPECT_FALSE(none.history.canUndo());
}

TEST(History, ClearForgetsEverything) {
  Session s;
  s.edit(1, "drag");
  s.edit(2);
  EXPECT_EQ(s.undo(), 1);
  s.history.clear();
  EXPECT_FALSE(s.history.canUndo());
  EXPECT_FALSE(s.history.canRedo());
  s.edit(3, "drag");  // the old gesture is gone: this is a step of its own
  EXPECT_TRUE(s.history.canUndo());
  EXPECT_EQ(s.undo(), 1);
}

TEST(History, UndoesInputsPanelEditsExactly) {
  History h;
  Workspace ws = bookExample(Variant::Simple);
  const std::string d0 = dumpWorkspace(ws);
  h.record(ws);
  setInputWidth(ws, 5, 2);
  const std::string d1 = dumpWorkspace(ws);
  for (int k = 0; k < 20; ++k) {  // a drag of one cell
    h.record(ws, "embeddings[1][4]");
    setEmbedding(ws, 1, 4, 0.05f * k);
  }
  h.endGesture();
  const std::string d2 = dumpWorkspace(ws);
  h.record(ws);
  insertToken(ws, 3, "new", 8);
  h.record(ws);
  moveToken(ws, 0, 6);
  const std::string d4 = dumpWorkspace(ws);

  ws = h.undo(ws);
  ws = h.undo(ws);
  EXPECT_EQ(dumpWorkspace(ws), d2);
  ws = h.undo(ws);
  EXPECT_EQ(dumpWorkspace(ws), d1);
  ws = h.undo(ws);
  EXPECT_EQ(dumpWorkspace(ws), d0);
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings, bookExample().embeddings));
  EXPECT_EQ(ws.model.d_out, 3);
  EXPECT_FALSE(h.canUndo());
  for (int i = 0; i < 4; ++i) ws = h.redo(ws);
  EXPECT_EQ(dumpWorkspace(ws), d4);
}

}  // namespace
}  // namespace attnscope
