// The command path in core (core/editing/command.h, core/editing/document.h; DESIGN §3.1–3.2),
// tested as users use it: commands parsed from JSON and checked against the table, every
// document command applied to a Document with the values it must give (the book's tokens and
// embeddings, the notebook's settings per variant, torch.rand draws), refusals that name the
// argument or field and change nothing (workspace, version, dirty flag, file, history), gestures
// as one undo step, fewer tokens after more (undo, book example, open), the memory of a one-cell
// edit at GPT-2 size, and a seeded stream of 3,000 random commands built from the command table.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "editing/command.h"
#include "editing/document.h"
#include "editing/token_table.h"
#include "engine/attention.h"
#include "engine/errors.h"
#include "engine/model_config.h"
#include "formats/file_reading.h"
#include "formats/presets.h"
#include "formats/tensor_import.h"
#include "formats/workspace_file.h"
#include "test_support.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string> kBookTokens = {"Your", "journey", "starts", "with", "one", "step"};

// ---- helpers ----------------------------------------------------------------------------------

Command cmd(const std::string& name, json args = json::object(), const std::string& gesture = "") {
  Command c = makeCommand(name, std::move(args));
  c.gesture = gesture;
  return c;
}

using test::errorOf;

std::string refusal(Document& d, const Command& c) {
  return errorOf([&] { d.apply(c); });
}

bool startsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Everything a user could notice about a document: its workspace as the file would write it, the
// version, the unsaved mark, the file, and the history.
struct DocState {
  std::string dump;
  std::uint64_t version;
  bool dirty;
  std::string file;
  std::size_t undo_steps, redo_steps, bytes;
};
DocState stateOf(const Document& d) {
  return {workspaceToJson(d.workspace()).dump(),
          d.version(),
          d.dirty(),
          d.file(),
          d.history().undoSteps(),
          d.history().redoSteps(),
          d.history().bytes()};
}
::testing::AssertionResult sameState(const DocState& a, const DocState& b) {
  if (a.dump != b.dump) return ::testing::AssertionFailure() << "workspace changed:\n" << a.dump << "\nvs\n" << b.dump;
  if (a.version != b.version) return ::testing::AssertionFailure() << "version " << a.version << " → " << b.version;
  if (a.dirty != b.dirty) return ::testing::AssertionFailure() << "dirty " << a.dirty << " → " << b.dirty;
  if (a.file != b.file) return ::testing::AssertionFailure() << "file '" << a.file << "' → '" << b.file << "'";
  if (a.undo_steps != b.undo_steps || a.redo_steps != b.redo_steps || a.bytes != b.bytes)
    return ::testing::AssertionFailure() << "history (undo, redo, bytes) (" << a.undo_steps << ", " << a.redo_steps
                                         << ", " << a.bytes << ") → (" << b.undo_steps << ", " << b.redo_steps << ", "
                                         << b.bytes << ")";
  return ::testing::AssertionSuccess();
}

// Applies `c`, expects an InputError whose message starts with `prefix`, and nothing changed.
::testing::AssertionResult refusedUnchanged(Document& d, const Command& c, const std::string& prefix) {
  const DocState before = stateOf(d);
  const std::string e = refusal(d, c);
  if (e.empty()) return ::testing::AssertionFailure() << commandToJson(c).dump() << " was applied";
  if (!startsWith(e, prefix))
    return ::testing::AssertionFailure() << commandToJson(c).dump() << ": message '" << e << "' does not start with '"
                                         << prefix << "'";
  if (auto same = sameState(before, stateOf(d)); !same)
    return ::testing::AssertionFailure() << commandToJson(c).dump() << " refused ('" << e
                                         << "') but changed the document: " << same.message();
  return ::testing::AssertionSuccess() << e;
}

// The document is usable: one token per row, a model the engine accepts, finite numbers.
::testing::AssertionResult consistent(const Document& d) {
  const Workspace& w = d.workspace();
  if (static_cast<Eigen::Index>(w.tokens.size()) != w.embeddings.rows())
    return ::testing::AssertionFailure() << w.tokens.size() << " tokens, " << w.embeddings.rows() << " rows";
  if (w.embeddings.rows() < 1 || w.embeddings.cols() < 1)
    return ::testing::AssertionFailure() << "empty embeddings " << w.embeddings.rows() << "×" << w.embeddings.cols();
  try {
    validateModel(w.model, static_cast<int>(w.embeddings.rows()), static_cast<int>(w.embeddings.cols()), d.limits());
  } catch (const InputError& e) {
    return ::testing::AssertionFailure() << "validateModel: " << e.what();
  }
  for (Eigen::Index i = 0; i < w.embeddings.size(); ++i)
    if (!std::isfinite(w.embeddings.data()[i]))
      return ::testing::AssertionFailure() << "non-finite embedding at flat index " << i;
  return ::testing::AssertionSuccess();
}

Matrix rowOf(const std::vector<float>& v) {
  Matrix m(1, static_cast<int>(v.size()));
  for (std::size_t i = 0; i < v.size(); ++i) m(0, static_cast<int>(i)) = v[i];
  return m;
}

json modelJson(const Document& d) { return modelToJson(d.workspace().model); }

// A folder of its own under the system's temporary folder, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = fs::temp_directory_path() /
            ("attnscope_document_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = path(name);
    std::ofstream out(p, std::ios::binary);
    out << text;
    return p;
  }
  const fs::path& dir() const { return path_; }

 private:
  fs::path path_;
};

// A 6-token workspace file unlike the book's: other tokens, d_in 4, the causal step with d_out 3.
const char* kSixTokenFile = R"({"format": "attnscope-workspace", "version": 1,
  "tokens": ["a", "b", "c", "d", "e", "f"],
  "embeddings": [[0.5, -1, 2, 0.25], [1, 2, 3, 4], [-0.5, 0, 0, 1], [9, 8, 7, 6], [0.125, 0.375, 0.625, 0.875], [-3, -2, -1, 0]],
  "model": {"variant": "causal", "d_out": 3, "seed": 5}})";

Matrix sixTokenEmbeddings() {
  return test::rows(
      {{0.5, -1, 2, 0.25}, {1, 2, 3, 4}, {-0.5, 0, 0, 1}, {9, 8, 7, 6}, {0.125, 0.375, 0.625, 0.875}, {-3, -2, -1, 0}});
}

std::string wordsSentence(int n, const std::string& stem = "w") {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? " " : "") + stem + std::to_string(i);
  return s;
}

// ---- parseCommand / parseCommandList ----------------------------------------------------------

// One valid example per command of the table, with every argument it may take.
std::vector<json> everyCommandExample() {
  return {
      {{"do", "open"}, {"path", "/tmp/w.json"}, {"discard", true}},
      {{"do", "preset"}, {"name", "multihead"}, {"discard", false}},
      {{"do", "new"}, {"discard", true}},
      {{"do", "restore"}, {"path", "/tmp/autosave.json"}},
      {{"do", "sentence"}, {"text", "Your journey"}, {"seed", 9}},
      {{"do", "add_token"}, {"name", "cat"}, {"at", 2}, {"seed", 31}},
      {{"do", "remove_token"}, {"index", 0}},
      {{"do", "rename_token"}, {"index", 1}, {"name", "trip"}},
      {{"do", "move_token"}, {"from", 0}, {"to", 5}},
      {{"do", "set"}, {"field", "num_heads"}, {"value", 2}},
      {{"do", "model"}, {"fields", {{"d_out", 4}, {"num_heads", 4}}}},
      {{"do", "set_cell"}, {"row", 1}, {"col", 2}, {"value", -0.5}},
      {{"do", "d_in"}, {"value", 5}, {"seed", 7}},
      {{"do", "randomize"}, {"seed", 2024}},
      {{"do", "book_example"}},
      {{"do", "workspace"}, {"json", {{"embeddings", {{1, 2}, {3, 4}}}, {"model", {{"variant", "simple"}}}}}},
      {{"do", "reload"}},
      {{"do", "pin"}},
      {{"do", "unpin"}},
      {{"do", "swap"}},
      {{"do", "wait"}},
      {{"do", "paste_embeddings"}, {"text", "tensor([[0.4300, 0.1500]])"}},
      {{"do", "set_parameter"}, {"name", "W_query.weight"}, {"row", 1}, {"col", 2}, {"value", 0.5}},
      {{"do", "reset_parameters"}},
      {{"do", "paste_parameters"}, {"text", "OrderedDict([('W_query.weight', tensor([[1., 2., 3.]]))])"}},
      {{"do", "undo"}},
      {{"do", "redo"}},
      {{"do", "select_token"}, {"index", 1}, {"step", -1}},
      {{"do", "select_key"}, {"index", -1}},
      {{"do", "select_head"}, {"index", 0}, {"step", 1}},
      {{"do", "go_to"}, {"text", "t5-t9"}, {"index", 4}, {"to", 8}},
      {{"do", "select_batch"}, {"index", 1}},
      {{"do", "view"}, {"field", "theme"}, {"value", "dark"}},
      {{"do", "engine"}, {"parallel", true}, {"threads", 0}},
      {{"do", "screenshot"}, {"path", "a.png"}, {"panel", "weights"}, {"head", 0}, {"scale", 2}},
      {{"do", "save"}, {"path", "w.json"}},
      {{"do", "export_trace"}, {"path", "out"}, {"format", "npy"}},
      {{"do", "export_map"}, {"stage", "weights"}, {"head", 1}, {"path", "m.csv"}, {"format", "csv"}},
      {{"do", "save_pytorch"}, {"path", "m.py"}},
      {{"do", "copy_pytorch"}},
      {{"do", "dialog"}, {"which", "export_map"}, {"stage", "weights"}, {"head", 0}, {"format", "csv"}},
      {{"do", "quit"}, {"discard", true}},
      {{"do", "unsaved"}, {"choice", "save"}},
      {{"do", "recovery"}, {"choice", "restore"}},
      {{"do", "fullscreen"}, {"on", true}},
      {{"do", "lesson_open"}, {"path", "chapter3.json"}, {"step", 5}, {"discard", true}},
      {{"do", "lesson_step"}, {"step", 2}},
      {{"do", "lesson_next"}},
      {{"do", "lesson_back"}},
      {{"do", "lesson_close"}},
      {{"do", "model_open"}, {"path", "gpt2"}, {"num_heads", 12}, {"prepend_eot", true}},
      {{"do", "model_close"}},
      {{"do", "select_layer"}, {"layer", 5}, {"head", 1}},
      {{"do", "text"}, {"value", "Every effort moves you"}, {"prepend_eot", false}},
      {{"do", "append_token"}, {"id", 345}},
      {{"do", "repeat_text"}},
      {{"do", "attention"},
       {"maps", json::array({json::array({json::array({1.0, 0.0}), json::array({0.5, 0.5})})})},
       {"tokens", json::array({"The", "cat"})},
       {"title", "GPT-2, layer 0"}},
      {{"do", "learn"}, {"task", {{"task", "sort"}, {"steps", 300}}}, {"play", true}, {"keep", true}},
      {{"do", "learn_play"}},
      {{"do", "learn_pause"}},
      {{"do", "learn_step"}, {"steps", 100}},
      {{"do", "learn_to"}, {"step", 650}},
      {{"do", "learn_show"}, {"step", 700}},
      {{"do", "learn_save"}, {"path", "/tmp/model.npz"}},
      {{"do", "learn_close"}},
  };
}

TEST(ParseCommand, EveryCommandOfTheTableRoundTripsThroughJson) {
  std::set<std::string> seen;
  for (const json& j : everyCommandExample()) {
    SCOPED_TRACE(j.dump());
    const Command c = parseCommand(j);
    EXPECT_EQ(c.name, j["do"].get<std::string>());
    EXPECT_EQ(c.gesture, "");
    EXPECT_EQ(c.script_index, -1);
    EXPECT_EQ(std::string(c.info().name), c.name);
    EXPECT_EQ(c.args.size() + 1, j.size());  // every argument kept, "do" not among them
    EXPECT_EQ(commandToJson(c), j);
    EXPECT_EQ(commandToJson(parseCommand(commandToJson(c))), j);  // and again
    seen.insert(c.name);
  }
  // The examples cover the whole table (a command added to the table needs one here).
  for (const CommandInfo& info : commandTable()) EXPECT_TRUE(seen.count(info.name)) << info.name;
  EXPECT_EQ(seen.size(), commandTable().size());
  // Optional arguments may be left out; typed getters read what was given.
  const Command c = parseCommand(json::parse(R"({"do": "add_token"})"));
  EXPECT_FALSE(c.has("at"));
  const Command s = parseCommand(json::parse(R"({"do": "set_cell", "row": 4, "col": 0, "value": 2})"));
  EXPECT_EQ(s.integer("row"), 4);
  EXPECT_EQ(s.number("value"), 2.0);  // an integer is a number
}

TEST(ParseCommand, TargetsAreAsDocumented) {
  for (const char* name : {"open",
                           "preset",
                           "new",
                           "restore",
                           "sentence",
                           "add_token",
                           "remove_token",
                           "rename_token",
                           "move_token",
                           "set",
                           "model",
                           "set_cell",
                           "d_in",
                           "randomize",
                           "book_example",
                           "reload",
                           "paste_embeddings",
                           "set_parameter",
                           "reset_parameters",
                           "paste_parameters",
                           "undo",
                           "redo"}) {
    ASSERT_NE(findCommand(name), nullptr) << name;
    EXPECT_EQ(findCommand(name)->target, CommandTarget::Document) << name;
  }
  for (const char* name : {"select_token", "select_key", "select_head", "select_batch", "view"})
    EXPECT_EQ(findCommand(name)->target, CommandTarget::View) << name;
  for (const char* name : {"screenshot", "save", "export_trace", "export_map", "save_pytorch", "quit", "unsaved",
                           "recovery", "fullscreen", "engine"})
    EXPECT_EQ(findCommand(name)->target, CommandTarget::App) << name;
  EXPECT_EQ(findCommand("frobnicate"), nullptr);
  EXPECT_EQ(findCommand(""), nullptr);
  EXPECT_EQ(findCommand("Undo"), nullptr);  // names are exact
}

TEST(ParseCommand, UnknownDoListsTheCommands) {
  const std::string e = errorOf([] { parseCommand(json::parse(R"({"do": "frobnicate", "x": 1})")); });
  EXPECT_TRUE(startsWith(e, "unknown command 'frobnicate' (one of: open, preset, new, ")) << e;
  for (const CommandInfo& info : commandTable()) EXPECT_TRUE(contains(e, info.name)) << info.name << " not in: " << e;
  EXPECT_TRUE(startsWith(errorOf([] { makeCommand(""); }), "unknown command '' (one of: "));
}

TEST(ParseCommand, MissingOrMistypedDo) {
  for (const char* text : {R"({"index": 1})", R"({"do": 5})", R"({"do": null})", R"({"do": ["undo"]})", "{}"}) {
    const std::string e = errorOf([&] { parseCommand(json::parse(text)); });
    EXPECT_EQ(e, "\"do\": required, the command's name") << text;
  }
}

TEST(ParseCommand, MissingRequiredArgument) {
  EXPECT_EQ(errorOf([] { parseCommand(json::parse(R"({"do": "remove_token"})")); }), "index: required");
  EXPECT_EQ(errorOf([] { parseCommand(json::parse(R"({"do": "set", "field": "d_out"})")); }), "value: required");
  EXPECT_EQ(errorOf([] { parseCommand(json::parse(R"({"do": "set_cell", "row": 0, "value": 1})")); }), "col: required");
  EXPECT_EQ(errorOf([] { parseCommand(json::parse(R"({"do": "open"})")); }), "path: required");
  // A typed getter names a missing argument too.
  const Command c = makeCommand("add_token");
  EXPECT_EQ(errorOf([&] { c.integer("at"); }), "at: required");
}

TEST(ParseCommand, UnknownArgumentNamesTheExpectedOnes) {
  EXPECT_EQ(errorOf([] { parseCommand(json::parse(R"({"do": "remove_token", "index": 1, "idx": 2})")); }),
            "idx: unknown argument (expected index)");
  EXPECT_EQ(errorOf([] {
              parseCommand(json::parse(R"({"do": "set_cell", "row": 1, "col": 1, "value": 1, "gesture": "g"})"));
            }),
            "gesture: unknown argument (expected row, col, value)");
  EXPECT_EQ(errorOf([] { parseCommand(json::parse(R"({"do": "undo", "steps": 2})")); }),
            "steps: unknown argument (this command takes none)");
}

TEST(ParseCommand, WrongTypeNamesTheArgument) {
  EXPECT_EQ(errorOf([] { parseCommand(json::parse(R"({"do": "remove_token", "index": "2"})")); }),
            "index: expected an integer, got \"2\"");
  EXPECT_EQ(errorOf([] { parseCommand(json::parse(R"({"do": "remove_token", "index": 1.5})")); }),
            "index: expected an integer, got 1.5");
  EXPECT_EQ(errorOf([] { parseCommand(json::parse(R"({"do": "remove_token", "index": true})")); }),
            "index: expected an integer, got true");
  EXPECT_EQ(errorOf([] { parseCommand(json::parse(R"({"do": "set_cell", "row": 0, "col": 0, "value": "0.5"})")); }),
            "value: expected a number, got \"0.5\"");
  EXPECT_EQ(errorOf([] { parseCommand(json::parse(R"({"do": "sentence", "text": 42})")); }),
            "text: expected a string, got 42");
  EXPECT_EQ(errorOf([] { parseCommand(json::parse(R"({"do": "quit", "discard": 1})")); }),
            "discard: expected true or false, got 1");
  EXPECT_EQ(errorOf([] { parseCommand(json::parse(R"({"do": "d_in", "value": 4, "seed": null})")); }),
            "seed: expected an integer, got null");
  EXPECT_EQ(errorOf([] { makeCommand("undo", json::array()); }), "arguments: expected an object");
}

TEST(ParseCommand, NotAnObject) {
  for (const char* text : {R"(["undo"])", R"("undo")", "42", "null", "true"}) {
    const std::string e = errorOf([&] { parseCommand(json::parse(text)); });
    EXPECT_TRUE(startsWith(e, "expected an object such as {\"do\": \"undo\"}, got ")) << text << ": " << e;
    EXPECT_TRUE(contains(e, json::parse(text).dump())) << e;
  }
}

TEST(ParseCommandList, ValidListInOrder) {
  const std::vector<Command> list = parseCommandList(R"([
    {"do": "preset", "name": "causal_dropout"},
    {"do": "set", "field": "dropout", "value": 0.3},
    {"do": "set_cell", "row": 1, "col": 0, "value": 0.9},
    {"do": "undo"}])");
  ASSERT_EQ(list.size(), 4u);
  EXPECT_EQ(list[0].name, "preset");
  EXPECT_EQ(list[1].args, json({{"field", "dropout"}, {"value", 0.3}}));
  EXPECT_EQ(list[2].integer("row"), 1);
  EXPECT_EQ(list[3].name, "undo");
  EXPECT_TRUE(parseCommandList("[]").empty());
  EXPECT_TRUE(parseCommandList(" [ ] \n").empty());
}

TEST(ParseCommandList, NotAnArrayOrNotJson) {
  EXPECT_EQ(errorOf([] { parseCommandList(R"({"do": "undo"})"); }), "expected a JSON array of commands");
  EXPECT_EQ(errorOf([] { parseCommandList("\"undo\""); }), "expected a JSON array of commands");
  for (const char* text : {"", "[", "[{\"do\": \"undo\"}", "[{\"do\": undo}]", "[1,]", "nonsense"}) {
    const std::string e = errorOf([&] { parseCommandList(text); });
    EXPECT_TRUE(startsWith(e, "not valid JSON: ")) << "'" << text << "' gave: " << e;
    EXPECT_FALSE(contains(e, "[json.exception")) << "the library's prefix is cut: " << e;
  }
}

TEST(ParseCommandList, NamesThePositionAndCommand) {
  // Positions are 0-based (DESIGN §3.2: "command N (do): why").
  EXPECT_EQ(errorOf([] { parseCommandList(R"([{"do": "undo"}, {"do": "redo"}, {"do": "set", "field": "d_out"}])"); }),
            "command 2 (set): value: required");
  EXPECT_EQ(errorOf([] { parseCommandList(R"([{"do": "undo"}, {"do": "frobnicate", "x": 1}])"); }).substr(0, 48),
            "command 1 (frobnicate): unknown command 'frobnic");
  EXPECT_EQ(errorOf([] { parseCommandList(R"([{"do": "remove_token", "index": "two"}])"); }),
            "command 0 (remove_token): index: expected an integer, got \"two\"");
  EXPECT_EQ(errorOf([] { parseCommandList(R"([{"do": "undo"}, 7])"); }),
            "command 1: expected an object such as {\"do\": \"undo\"}, got 7");
  EXPECT_EQ(errorOf([] { parseCommandList(R"([{"undo": true}])"); }),
            "command 0: \"do\": required, the command's name");
  // The first bad one is named, not a later one.
  EXPECT_TRUE(startsWith(errorOf([] { parseCommandList(R"([{"do": "undo"}, {"do": "x"}, {"do": "y"}])"); }),
                         "command 1 (x): "));
}

// A commands file nested 100 000 levels deep (200 KB) once crashed parseCommandList with a stack
// overflow: parseCommand copied the object and its messages dumped the value, both recursive in
// nlohmann. Nesting is now refused while parsing (formats/json_reading.h). Each case runs in a child
// process, so a crash fails this test only.
TEST(ParseCommandList, DeeplyNestedJsonIsRefusedNotACrash) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const std::string& text : {"[" + deep + "]",  // not an object: dumped
                                  R"([{"do": "set", "field": "d_out", "value": )" + deep + "}]",  // copied
                                  R"([{"do": "remove_token", "index": )" + deep + "}]"}) {        // dumped
    EXPECT_EXIT(
        {
          try {
            parseCommandList(text);
          } catch (const InputError&) {
          }
          std::exit(0);
        },
        ::testing::ExitedWithCode(0), "")
        << text.substr(0, 60);
  }
}

TEST(ParseCommand, IntegerBeyondIntIsRefusedWhenRead) {
  Document d;
  // The table accepts any JSON integer; the typed getter refuses one beyond int.
  EXPECT_TRUE(refusedUnchanged(d, cmd("remove_token", {{"index", 10000000000LL}}), "index: out of range: 10000000000"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("remove_token", {{"index", -2147483649LL}}), "index: out of range: -2147483649"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("move_token", {{"from", 0}, {"to", std::numeric_limits<std::uint64_t>::max()}}),
                               "to: out of range: 18446744073709551615"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("add_token", {{"at", 2147483648LL}}), "at: out of range"));
  // The edges of int are read, then refused as indices.
  EXPECT_TRUE(refusedUnchanged(d, cmd("remove_token", {{"index", 2147483647}}), "tokens[2147483647]: no such token"));
  EXPECT_TRUE(
      refusedUnchanged(d, cmd("remove_token", {{"index", -2147483647 - 1}}), "tokens[-2147483648]: no such token"));
}

// ---- a new document ---------------------------------------------------------------------------

TEST(Document, StartsAsTheBookExampleUntitledAndClean) {
  const Document d;
  EXPECT_EQ(d.workspace().tokens, kBookTokens);
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, test::bookInputs()));
  EXPECT_EQ(modelJson(d), modelToJson(defaultConfig(Variant::MultiHead)));
  EXPECT_EQ(d.file(), "");
  EXPECT_FALSE(d.dirty());
  EXPECT_EQ(d.version(), 1u);
  EXPECT_FALSE(d.history().canUndo());
  EXPECT_FALSE(d.history().canRedo());
  EXPECT_EQ(d.history().bytes(), 0u);
}

// Every model field is one undo step, the generator's too (the history compares whole models).
TEST(Document, EachModelFieldEditIsAnUndoStep) {
  const std::vector<std::pair<const char*, json>> edits = {{"dropout", 0.5},      {"dropout_rng", "default"},
                                                           {"dropout_seed", 123}, {"dropout_seed", nullptr},
                                                           {"draws_before", 19},  {"seed", 7},
                                                           {"training", false},   {"batch_size", 3}};
  Document d;
  std::vector<json> models{modelJson(d)};
  for (const auto& [field, value] : edits) {
    d.apply(cmd("set", {{"field", field}, {"value", value}}));
    EXPECT_EQ(modelJson(d)[field], value) << field;
    models.push_back(modelJson(d));
  }
  for (std::size_t k = edits.size(); k-- > 0;) {
    ASSERT_TRUE(d.history().canUndo()) << "before " << edits[k].first;
    d.apply(cmd("undo"));
    EXPECT_EQ(modelJson(d), models[k]) << "undo of " << edits[k].first;
  }
  EXPECT_FALSE(d.history().canUndo());
}

// ---- open, preset, new, restore ---------------------------------------------------------------

// Another program's write of the document's file is noticed (docs/DESIGN.md §3.5): a rewrite in
// place (new contents and time), a rename over it with the same size and time (a new inode), but
// not our own save; a file that is gone has not changed; an autosave carries the stamp.
TEST(Open, AWriteByAnotherProgramIsNoticed) {
  TempDir tmp;
  const std::string file = tmp.write("six.json", kSixTokenFile);
  Document d;
  d.apply(cmd("open", {{"path", file}}));
  EXPECT_FALSE(d.fileChangedOnDisk());
  struct stat before;
  ASSERT_EQ(::stat(file.c_str(), &before), 0);
  std::string changed = kSixTokenFile;
  changed.replace(changed.find("\"seed\": 5"), 9, "\"seed\": 6");
  tmp.write("six.json", changed);
  EXPECT_TRUE(d.fileChangedOnDisk());  // rewritten in place
  saveWorkspace(file, d.workspace());
  d.markSaved(file);
  EXPECT_FALSE(d.fileChangedOnDisk());  // our own save
  // Renamed over, same size and time: only the inode tells.
  struct stat ours;
  ASSERT_EQ(::stat(file.c_str(), &ours), 0);
  std::string same;
  {
    std::ifstream in(file);
    same.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const std::string other = tmp.write("other.json", same);
  const struct timespec times[2] = {ours.st_atim, ours.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, other.c_str(), times, 0), 0);
  ASSERT_EQ(std::rename(other.c_str(), file.c_str()), 0);
  EXPECT_TRUE(d.fileChangedOnDisk());
  // The stamp rides in a view (the autosave) and comes back with it.
  nlohmann::json view = nlohmann::json::object();
  putFileStamp(view, attnscope::fileStamp(file));
  EXPECT_EQ(fileStampOf(view), attnscope::fileStamp(file));
  std::remove(file.c_str());
  EXPECT_FALSE(d.fileChangedOnDisk());  // gone: saving writes it again
}

TEST(Open, ReplacesTheWorkspaceWithAnAbsoluteFileCleanAndANewHistory) {
  TempDir tmp;
  const std::string file = tmp.write("six.json", kSixTokenFile);
  Document d;
  d.apply(cmd("sentence", {{"text", "one two three"}}));
  d.apply(cmd("remove_token", {{"index", 0}}));
  d.apply(cmd("undo"));
  ASSERT_TRUE(d.history().canUndo());
  ASSERT_TRUE(d.history().canRedo());
  ASSERT_TRUE(d.dirty());
  const std::uint64_t v = d.version();

  // A relative path, as typed: the document keeps it absolute.
  std::error_code ec;
  std::string path = fs::relative(file, fs::current_path(), ec).string();
  if (ec || path.empty()) path = file;
  EXPECT_EQ(d.apply(cmd("open", {{"path", path}})), DocumentChange::Replaced);
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"a", "b", "c", "d", "e", "f"}));
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, sixTokenEmbeddings()));
  const ModelConfig& m = d.workspace().model;
  EXPECT_EQ(m.variant, Variant::Causal);
  EXPECT_EQ(m.d_out, 3);
  EXPECT_EQ(m.seed, 5u);
  EXPECT_EQ(m.num_heads, 1);  // the causal step's own settings for what the file leaves out
  EXPECT_EQ(m.batch_size, 2);
  EXPECT_TRUE(m.causal);
  EXPECT_TRUE(fs::path(d.file()).is_absolute()) << d.file();
  EXPECT_TRUE(fs::equivalent(d.file(), file)) << d.file();
  EXPECT_FALSE(d.dirty());
  EXPECT_FALSE(d.history().canUndo());
  EXPECT_FALSE(d.history().canRedo());
  EXPECT_EQ(d.history().bytes(), 0u);
  EXPECT_GT(d.version(), v);
  EXPECT_EQ(refusal(d, cmd("undo")), "nothing to undo");
  EXPECT_TRUE(consistent(d));

  // The file with a random recipe keeps it; tokens default to t1 … tT.
  const std::string random = tmp.write("random.json", R"({"format": "attnscope-workspace", "version": 1,
    "embeddings": {"random": "uniform", "seed": 7, "rows": 2, "cols": 3}, "model": {"variant": "self_attention_v2"}})");
  d.apply(cmd("open", {{"path", random}}));
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"t1", "t2"}));
  ASSERT_TRUE(d.workspace().random.has_value());
  // torch.manual_seed(7); torch.rand(2, 3)
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings,
                                 test::rows({{0.5349225401878357, 0.19880318641662598, 0.6592116951942444},
                                             {0.6568902730941772, 0.23276156187057495, 0.4250614047050476}})));
  EXPECT_EQ(d.workspace().model.seed, 789u);
  EXPECT_EQ(d.file(), random);
}

TEST(Open, AFileThatCannotBeOpenedChangesNothing) {
  TempDir tmp;
  Document d;
  d.apply(cmd("set_cell", {{"row", 0}, {"col", 0}, {"value", 1}}));
  d.markSaved(tmp.path("saved.json"));
  const std::string missing = tmp.path("missing.json");
  EXPECT_TRUE(refusedUnchanged(d, cmd("open", {{"path", missing}}), missing + ": cannot open the file"));
  EXPECT_TRUE(
      refusedUnchanged(d, cmd("open", {{"path", tmp.dir().string()}}), tmp.dir().string() + ": is a directory"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("open", {{"path", ""}}), ": cannot open the file"));
  const std::string bad = tmp.write("bad.json", "{\"format\": ");
  EXPECT_TRUE(refusedUnchanged(d, cmd("open", {{"path", bad}}), bad + ": workspace: not valid JSON"));
  // A PNG whose signature was damaged (an FTP in text mode): said so, not parsed as JSON.
  const std::string png = tmp.write("shot.png", std::string("\x89PNG\n\x1a\n\0\0\0\rIHDR", 16));
  EXPECT_TRUE(refusedUnchanged(d, cmd("open", {{"path", png}}), png + ": a damaged PNG file"));
  // A file whose model the seed would refuse: its own message, naming the file and the field.
  const std::string odd = tmp.write("odd.json", R"({"format": "attnscope-workspace", "version": 1,
    "embeddings": [[1, 2, 3]], "model": {"variant": "multihead", "d_out": 3, "num_heads": 2}})");
  EXPECT_TRUE(
      refusedUnchanged(d, cmd("open", {{"path", odd}}), odd + ": model.d_out: d_out must be divisible by num_heads"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("restore", {{"path", missing}}), missing + ": cannot open the file"));
  EXPECT_FALSE(d.dirty());
  EXPECT_TRUE(d.history().canUndo());
}

TEST(Preset, LoadsByNameUntitledAndUndoable) {
  TempDir tmp;
  Document d;
  d.apply(cmd("sentence", {{"text", "a b c d"}}));
  d.markSaved(tmp.path("mine.json"));
  ASSERT_FALSE(d.file().empty());
  const std::size_t steps = d.history().undoSteps();
  const std::uint64_t v = d.version();

  EXPECT_EQ(d.apply(cmd("preset", {{"name", "simple_sum"}})), DocumentChange::Replaced);
  EXPECT_EQ(d.workspace().tokens, kBookTokens);
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, test::bookInputs()));
  EXPECT_EQ(d.workspace().model.variant, Variant::Simple);
  EXPECT_EQ(d.workspace().model.normalization, Normalization::Sum);
  EXPECT_EQ(d.workspace().model.d_out, 3);  // d_in, for 'simple'
  EXPECT_EQ(d.workspace().view["preset"]["title"], "1 · Normalizing by the row sum");
  EXPECT_EQ(d.file(), "");  // untitled until saved
  EXPECT_FALSE(d.dirty());  // a preset as it loads is nothing of the user's to save
  EXPECT_GT(d.version(), v);
  EXPECT_EQ(d.history().undoSteps(), steps + 1);
  EXPECT_TRUE(consistent(d));

  EXPECT_EQ(d.apply(cmd("undo")), DocumentChange::Edited);
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(d.workspace().view, json::object());
  EXPECT_EQ(d.workspace().model.variant, Variant::MultiHead);
  // The window's name as it was: the file, saved.
  EXPECT_EQ(d.file(), documentPath(tmp.path("mine.json")));
  EXPECT_FALSE(d.dirty());
  EXPECT_TRUE(consistent(d));

  d.apply(cmd("redo"));
  EXPECT_EQ(d.workspace().tokens, kBookTokens);
  EXPECT_EQ(d.workspace().model.normalization, Normalization::Sum);
  EXPECT_EQ(d.file(), "");
  EXPECT_FALSE(d.dirty());
  // Edited, it is unsaved work; undone back to the preset as it loaded, it is not.
  d.apply(cmd("set", {{"field", "seed"}, {"value", 5}}));
  EXPECT_TRUE(d.dirty());
  d.apply(cmd("undo"));
  EXPECT_FALSE(d.dirty());

  // Another preset, then back by two undos: the file's name again.
  d.apply(cmd("preset", {{"name", "multihead"}}));
  EXPECT_EQ(modelJson(d), modelToJson(defaultConfig(Variant::MultiHead)));
  d.apply(cmd("undo"));
  EXPECT_EQ(d.file(), "");
  d.apply(cmd("undo"));
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(d.file(), documentPath(tmp.path("mine.json")));
  EXPECT_FALSE(d.dirty());
}

TEST(Preset, UndoAfterSavingUnderAnotherNameKeepsThatName) {
  TempDir tmp;
  Document d;
  d.apply(cmd("sentence", {{"text", "a b"}}));
  d.markSaved(tmp.path("mine.json"));
  d.apply(cmd("set_cell", {{"row", 0}, {"col", 0}, {"value", 2}}));  // unsaved work before the preset
  d.apply(cmd("preset", {{"name", "causal"}}));
  d.apply(cmd("undo"));
  EXPECT_EQ(d.file(), documentPath(tmp.path("mine.json")));
  EXPECT_TRUE(d.dirty());  // as it was: the cell edit was not saved
  d.apply(cmd("redo"));
  d.markSaved(tmp.path("causal.json"));  // the preset saved as a file of its own
  d.apply(cmd("undo"));
  EXPECT_EQ(d.file(), documentPath(tmp.path("causal.json")));  // the file being edited stays
  EXPECT_TRUE(d.dirty());
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"a", "b"}));
}

// GPT-2 small's preset draws its inputs and its weights from different seeds: with torch.manual_seed(123)
// before both, W_query's draws repeat the inputs' stream and every head's queries had a diagonal
// (Q[i, i] ≈ −5.5 where the rest is ≈ 0) that students would ask about.
TEST(Preset, Gpt2InputsAndWeightsAreNotTheSameDraws) {
  const Workspace ws = loadWorkspace(presetPath("gpt2-small"));
  ASSERT_TRUE(ws.random.has_value());
  EXPECT_NE(ws.random->seed, ws.model.seed);
  TraceRequest only = TraceRequest::only({0});
  only.heads = {0};
  const Trace t = computeTrace(ws.embeddings, ws.model, {}, only);
  const Matrix& q = t.batches[0].heads[0].queries;
  double diagonal = 0, rest = 0;
  for (int i = 0; i < 64; ++i) diagonal += q(i, i) / 64;
  for (int i = 0; i < 64; ++i) rest += q(i, (i + 17) % 64) / 64;
  EXPECT_LT(std::fabs(diagonal - rest), 0.5) << "Q[i, i] averages " << diagonal << ", Q[i, i + 17] " << rest;
}

TEST(Preset, EveryPresetLoadsAndAnUnknownNameListsThem) {
  const std::vector<std::string> names = presetNames();
  ASSERT_GE(names.size(), 8u) << "assets: " << assetsDir();
  Document d;
  for (const std::string& name : names) {
    if (name == "gpt2-small" || name == "medium") continue;  // large: see FewerTokens
    SCOPED_TRACE(name);
    ASSERT_NO_THROW(d.apply(cmd("preset", {{"name", name}})));
    EXPECT_TRUE(consistent(d));
    EXPECT_TRUE(d.workspace().view.contains("preset"));
  }
  for (const char* bad : {"nope", "", "Multihead", "multihead.json", "../presets/multihead"}) {
    const Document before = d;
    const std::string e = refusal(d, cmd("preset", {{"name", bad}}));
    EXPECT_TRUE(startsWith(e, "preset: no preset '" + std::string(bad) + "' (presets: ")) << e;
    for (const std::string& name : names) EXPECT_TRUE(contains(e, name)) << name << " not in: " << e;
    EXPECT_EQ(d.version(), before.version());
  }
  Document fresh;
  EXPECT_TRUE(refusedUnchanged(fresh, cmd("preset", {{"name", "nope"}}), "preset: no preset 'nope' (presets: "));
}

TEST(New, TheBookExampleWithTheCurrentStepsNotebookSettings) {
  TempDir tmp;
  Document d;
  d.apply(cmd("set", {{"field", "variant"}, {"value", "causal"}}));
  d.apply(cmd("set", {{"field", "dropout"}, {"value", 0.5}}));
  d.apply(cmd("sentence", {{"text", "one two three"}}));
  d.apply(cmd("d_in", {{"value", 5}}));
  d.markSaved(tmp.path("x.json"));
  const std::size_t steps = d.history().undoSteps();

  EXPECT_EQ(d.apply(cmd("new")), DocumentChange::Replaced);
  EXPECT_EQ(d.workspace().tokens, kBookTokens);
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, test::bookInputs()));
  // The notebook's causal step: torch.manual_seed(789), d_out 2, one head, the stacked batch of 2.
  const ModelConfig& m = d.workspace().model;
  EXPECT_EQ(m.variant, Variant::Causal);
  EXPECT_EQ(m.d_out, 2);
  EXPECT_EQ(m.num_heads, 1);
  EXPECT_EQ(m.seed, 789u);
  EXPECT_EQ(m.dropout, 0.0);
  EXPECT_TRUE(m.causal);
  EXPECT_EQ(m.batch_size, 2);
  EXPECT_EQ(modelJson(d), modelToJson(defaultConfig(Variant::Causal)));
  EXPECT_EQ(d.file(), "");
  EXPECT_FALSE(d.dirty());  // New: nothing of the user's to save yet
  EXPECT_EQ(d.history().undoSteps(), steps + 1);

  d.apply(cmd("undo"));
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"one", "two", "three"}));
  EXPECT_EQ(d.workspace().embeddings.cols(), 5);
  EXPECT_EQ(d.workspace().model.dropout, 0.5);
  EXPECT_EQ(d.file(), documentPath(tmp.path("x.json")));  // its name back, and nothing unsaved
  EXPECT_FALSE(d.dirty());

  // On the simple step, d_out is d_in = 3.
  Document s;
  s.apply(cmd("set", {{"field", "variant"}, {"value", "simple"}}));
  s.apply(cmd("d_in", {{"value", 7}}));
  s.apply(cmd("new"));
  EXPECT_EQ(s.workspace().model.d_out, 3);
  EXPECT_EQ(s.workspace().model.batch_size, 1);
  EXPECT_EQ(s.workspace().model.scale, Scale::None);
  EXPECT_TRUE(consistent(s));
}

// Edit › Paste embeddings: the text as torch's str() prints it (strings made with
// /usr/bin/python3 and torch 1.13: str(torch.tensor([[0.43, 0.15, 0.89], …]))), one undo step.
const char* kPrintedFour =
    "tensor([[0.4300, 0.1500, 0.8900],\n        [0.5500, 0.8700, 0.6600],\n        [0.5700, 0.8500, 0.6400],\n"
    "        [0.2200, 0.5800, 0.3300]])";
const char* kPrintedScientific =
    "tensor([[ 1.5000e+00, -2.2500e+00,  1.0000e-03,  4.0000e+00],\n"
    "        [ 1.0000e-01,  2.0000e-01,  3.0000e-01,  4.0000e-01]])";

TEST(PasteEmbeddings, ReplacesTheTableAsOneUndoStepAndNamesTheTokens) {
  Document d;  // the book's six tokens
  const DocState before = stateOf(d);
  // Four rows for six tokens: t1 … t4.
  EXPECT_EQ(d.apply(cmd("paste_embeddings", {{"text", kPrintedFour}})), DocumentChange::Edited);
  EXPECT_TRUE(test::bitwiseEqual(
      d.workspace().embeddings,
      test::rows({{0.43f, 0.15f, 0.89f}, {0.55f, 0.87f, 0.66f}, {0.57f, 0.85f, 0.64f}, {0.22f, 0.58f, 0.33f}})));
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"t1", "t2", "t3", "t4"}));
  // torch's default print: 4 decimals, so the note says the values are rounded and how to print more.
  EXPECT_EQ(d.note(),
            "Pasted 4 × 3 embeddings (a printed torch tensor); tokens named t1 … t4 (4 rows for 6 tokens). Note: " +
                roundedPrintNote(4));
  EXPECT_EQ(d.history().undoSteps(), before.undo_steps + 1);
  EXPECT_TRUE(d.dirty());
  EXPECT_TRUE(consistent(d));
  // The same count keeps the names; a new width is fine without parameters (multihead: d_out stays).
  d.apply(cmd("rename_token", {{"index", 0}, {"name", "Your"}}));
  d.apply(cmd("remove_token", {{"index", 3}}));
  d.apply(cmd("remove_token", {{"index", 2}}));
  d.apply(cmd("paste_embeddings", {{"text", kPrintedScientific}}));
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"Your", "t2"}));
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings,
                                 test::rows({{1.5f, -2.25f, 1e-3f, 4.0f}, {0.1f, 0.2f, 0.3f, 0.4f}})));
  EXPECT_EQ(d.note(),
            "Pasted 2 × 4 embeddings (a printed torch tensor); the 2 token names kept. Note: " + roundedPrintNote(4));
  // A CSV's own names win; one undo brings the table back whole.
  d.apply(cmd("paste_embeddings", {{"text", "token,d0\ncat,1\nsat,2\n"}}));
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"cat", "sat"}));
  d.apply(cmd("undo"));
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"Your", "t2"}));
  EXPECT_EQ(d.workspace().embeddings.cols(), 4);
  // 'simple' follows d_in with d_out.
  Document s;
  s.apply(cmd("set", {{"field", "variant"}, {"value", "simple"}}));
  s.apply(cmd("paste_embeddings", {{"text", kPrintedScientific}}));
  EXPECT_EQ(s.workspace().model.d_out, 4);
  EXPECT_TRUE(consistent(s));
}

// Token names are text (docs/DESIGN.md §2.4): a name with bytes that are not UTF-8 — from a Latin-1
// CSV, or a command made in memory — is refused by every edit, so nothing in the document changes
// when it is saved and opened again (it did: each bad byte came back as U+FFFD).
TEST(TokenNames, BytesThatAreNotUtf8AreRefusedByEveryEdit) {
  Document d;
  const std::string bad = "caf\xE9";
  EXPECT_TRUE(
      refusedUnchanged(d, cmd("rename_token", {{"index", 1}, {"name", bad}}), "tokens[1]: the name is not UTF-8 text"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("add_token", {{"name", bad}}), "tokens[6]: the name is not UTF-8 text"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("sentence", {{"text", "the " + bad + " opens"}}),
                               "tokens[1]: the name is not UTF-8 text"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("paste_embeddings", {{"text", "Your,1\n" + bad + ",2\n"}}),
                               "pasted text:2:1: this token name is not UTF-8"));
  // Valid names of every kind survive a save and a load byte for byte.
  d.apply(cmd("paste_embeddings",
              {{"text", "\"caf\xC3\xA9\",1\n\"two\nlines\",2\n\xF0\x9F\x98\x80,3\n\"\xEF\xBF\xBF\",4\n"}}));
  EXPECT_EQ(parseWorkspace(dumpWorkspace(d.workspace())).tokens, d.workspace().tokens);
}

// Parameters nested 150 000 deep in a pasted JSON (a state_dict as JSON, or a workspace) are one
// message, not a stack overflow: the JSON was copied recursively before it was checked.
TEST(PasteParameters, DeepJsonIsRefusedNotACrash) {
  const int d = 150000;
  for (const std::string& text : {"{\"W_query.weight\": " + std::string(d, '[') + std::string(d, ']') + "}",
                                  "{\"format\": \"attnscope-workspace\", \"parameters\": {\"W_query.weight\": " +
                                      std::string(d, '[') + std::string(d, ']') + "}}",
                                  "{\"W_query.weight\": " +
                                      [&] {
                                        std::string s;
                                        for (int i = 0; i < d; ++i) s += "{\"a\": ";
                                        return s + "1" + std::string(d, '}');
                                      }() +
                                      "}"}) {
    Document doc;
    EXPECT_TRUE(refusedUnchanged(doc, cmd("paste_parameters", {{"text", text}}), "pasted text")) << text.substr(0, 60);
  }
}

// Whatever an edit accepts can be saved and opened again under the same limits (the app saved a
// 4096 × 1024 workspace it then refused to open): the size of its file and what reading it holds
// are checked with the edit.
TEST(Limits, WhatAnEditAcceptsOpensAgain) {
  for (const std::int64_t budget_mib : {4, 48}) {
    Limits limits;
    limits.max_memory_bytes = budget_mib << 20;
    limits.max_workspace_bytes = std::min<std::int64_t>(limits.max_workspace_bytes, (budget_mib << 20) / 2);
    Document doc(bookExample(Variant::SelfAttentionV1), "", false, limits);
    int accepted = 0, refused = 0;
    for (const auto& [rows, cols] : std::vector<std::pair<int, int>>{{64, 64}, {64, 4096}, {1024, 512}, {4096, 1024}}) {
      {
        std::string csv;
        for (int i = 0; i < rows; ++i) {
          for (int c = 0; c < cols; ++c) csv += (c ? "," : "") + std::string(c % 3 ? "-1.17549435e-38" : "0.333333343");
          csv += "\n";
        }
        try {
          doc.apply(cmd("paste_embeddings", {{"text", csv}}));
        } catch (const InputError& e) {
          ++refused;
          continue;
        }
        ++accepted;
        const std::string saved = dumpWorkspace(doc.workspace());
        EXPECT_NO_THROW(parseWorkspace(saved, limits)) << rows << " × " << cols << " with " << budget_mib << " MiB";
      }
    }
    EXPECT_GT(accepted, 0) << budget_mib;
    EXPECT_GT(refused, 0) << budget_mib;
  }
}

// What a program holds besides one computation (docs/DESIGN.md §2.4 "What the app holds"): the app
// counts 2 elements' maps whatever the batch size, and bytes held beside (a pinned result); a
// document whose workspace does not fit new limits keeps its old ones and everything else.
TEST(Limits, TracedElementsAndHeldBytesCount) {
  Workspace ws = bookExample(Variant::MultiHead);
  ws.embeddings = Matrix::Constant(1024, 64, 0.25f);
  ws.tokens = tokenNames({}, 1024);
  ws.model.d_out = 64;
  ws.model.num_heads = 8;
  ws.model.batch_size = 8;
  const Cost every = estimateCost(ws.model, 1024, 64, 8), two = estimateCost(ws.model, 1024, 64, 2);
  ASSERT_GT(every.map_bytes, two.map_bytes);
  Limits cli;  // every element traced: over a budget between the two
  cli.max_memory_bytes = (every.bytes() + two.bytes()) / 2;
  EXPECT_THROW(validateWorkspace(ws, cli), InputError);
  Limits app = cli;
  app.traced_elements = 2;
  EXPECT_NO_THROW(validateWorkspace(ws, app));
  Document doc(ws, "", false, app);
  const std::uint64_t version = doc.version();
  Limits pinned = app;
  pinned.held_bytes = app.max_memory_bytes - two.bytes() + 1;  // one byte too many beside it
  try {
    doc.setLimits(pinned);
    ADD_FAILURE() << "held bytes beyond the budget were accepted";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "the pinned result")) << e.what();
  }
  EXPECT_EQ(doc.limits().held_bytes, 0);
  EXPECT_EQ(doc.version(), version);
  pinned.held_bytes -= 1;
  doc.setLimits(pinned);  // exactly the budget
  // Held, an edit that costs more is refused, and nothing changes; unheld, it goes through.
  EXPECT_TRUE(refusedUnchanged(doc, cmd("set", {{"field", "num_heads"}, {"value", 16}}), "model.num_heads"));
  doc.setLimits(app);
  EXPECT_NO_THROW(doc.apply(cmd("set", {{"field", "num_heads"}, {"value", 16}})));
}

TEST(PasteEmbeddings, BadTextIsRefusedAtItsPlaceAndChangesNothing) {
  Document d;
  d.apply(cmd("set_cell", {{"row", 0}, {"col", 0}, {"value", 0.5}}));
  // str(torch.rand(1001, 3)) is summarized: refused with how to print it in full.
  const std::string cut =
      "tensor([[0.2961, 0.5166, 0.2517],\n        [0.6886, 0.0740, 0.8665],\n        ...,\n"
      "        [0.1746, 0.9441, 0.8916]])";
  const auto r = refusedUnchanged(d, cmd("paste_embeddings", {{"text", cut}}), "pasted text:3:9: ");
  EXPECT_TRUE(r);
  EXPECT_TRUE(contains(r.message(), "set_printoptions(profile=\"full\")")) << r.message();
  EXPECT_TRUE(
      refusedUnchanged(d, cmd("paste_embeddings", {{"text", "tensor([[1., 2.],\n        [3.]])"}}), "pasted text:2:"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("paste_embeddings", {{"text", "[[1, nan]]"}}), "pasted text:1:"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("paste_embeddings", {{"text", ""}}), "pasted text"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("paste_embeddings"), "text: required"));
  // The user's parameters are for d_in = 3: four columns do not fit them, and the message says so.
  Document p;
  p.apply(cmd("set", {{"field", "variant"}, {"value", "self_attention_v2"}}));
  Workspace ws = p.workspace();
  ws.model.parameters = std::make_shared<const ParameterValues>(
      ParameterValues{NamedTensor{"W_query.weight", test::rows({{1, 0, 0}, {0, 1, 0}}), false}});
  p.reset(ws, "", false);
  const auto w = refusedUnchanged(p, cmd("paste_embeddings", {{"text", kPrintedScientific}}),
                                  "the pasted embeddings have d_in = 4, your parameters are for d_in = 3");
  EXPECT_TRUE(w);
  EXPECT_TRUE(contains(w.message(), "parameters.W_query.weight")) << w.message();
  p.apply(cmd("paste_embeddings", {{"text", kPrintedFour}}));  // the same width: kept
  ASSERT_TRUE(p.workspace().model.parameters);
  EXPECT_EQ(p.workspace().model.parameters->size(), 1u);
}

TEST(Restore, TakesTheFileAndTheUnsavedMarkFromTheView) {
  TempDir tmp;
  const std::string saved = tmp.write("autosave1.json", R"({"format": "attnscope-workspace", "version": 1,
    "tokens": ["x", "y"], "embeddings": [[1, 2, 3], [4, 5, 6]], "model": {"variant": "self_attention_v1"},
    "view": {"file": "/home/me/lesson.json", "dirty": false, "theme": "dark"}})");
  Document d;
  d.apply(cmd("book_example"));
  d.apply(cmd("set_cell", {{"row", 0}, {"col", 0}, {"value", 9}}));
  const std::uint64_t v = d.version();
  EXPECT_EQ(d.apply(cmd("restore", {{"path", saved}})), DocumentChange::Replaced);
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, test::rows({{1, 2, 3}, {4, 5, 6}})));
  EXPECT_EQ(d.workspace().model.variant, Variant::SelfAttentionV1);
  EXPECT_EQ(d.workspace().view["theme"], "dark");
  EXPECT_EQ(d.file(), "/home/me/lesson.json");
  EXPECT_FALSE(d.dirty());
  EXPECT_FALSE(d.history().canUndo());
  EXPECT_GT(d.version(), v);

  const std::string unsaved = tmp.write("autosave2.json", R"({"format": "attnscope-workspace", "version": 1,
    "embeddings": [[1, 2, 3]], "model": {"variant": "multihead"}, "view": {"file": "/a/b.json", "dirty": true}})");
  d.apply(cmd("restore", {{"path", unsaved}}));
  EXPECT_EQ(d.file(), "/a/b.json");
  EXPECT_TRUE(d.dirty());
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"t1"}));

  // An autosave of an untitled document: no file, and unsaved unless it says otherwise.
  const std::string untitled = tmp.write("autosave3.json", R"({"format": "attnscope-workspace", "version": 1,
    "embeddings": [[1, 2, 3]], "model": {"variant": "multihead"}})");
  d.markSaved(tmp.path("elsewhere.json"));
  d.apply(cmd("restore", {{"path", untitled}}));
  EXPECT_EQ(d.file(), "");
  EXPECT_TRUE(d.dirty());
}

TEST(Restore, WrongTypesInTheViewFallBack) {
  TempDir tmp;
  Document d;
  for (const char* view : {R"({"file": 5, "dirty": "yes"})", R"({"file": null, "dirty": 0})",
                           R"({"file": ["a"], "dirty": {"x": false}})", R"({"file": {"path": "/a"}, "dirty": null})"}) {
    SCOPED_TRACE(view);
    const std::string path = tmp.write("weird.json", std::string(R"({"format": "attnscope-workspace", "version": 1,
      "embeddings": [[1, 2], [3, 4]], "model": {"variant": "causal"}, "view": )") +
                                                         view + "}");
    d.markSaved(tmp.path("before.json"));
    ASSERT_NO_THROW(d.apply(cmd("restore", {{"path", path}})));  // no JSON type error
    EXPECT_EQ(d.file(), "");                                     // not a string: untitled
    EXPECT_TRUE(d.dirty());                                      // not true or false: unsaved, the safe side
    EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"t1", "t2"}));
    EXPECT_TRUE(consistent(d));
  }
}

// ---- inputs: sentence, tokens, cells, d_in, randomize, book example ---------------------------

TEST(Sentence, SplitsIntoTokensAndTheSameWordGetsTheSameVector) {
  Document d;
  const std::uint64_t v = d.version();
  EXPECT_EQ(d.apply(cmd("sentence", {{"text", "the journey, the step."}})), DocumentChange::Edited);
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"the", "journey", ",", "the", "step", "."}));
  const Matrix& x = d.workspace().embeddings;
  ASSERT_EQ(x.rows(), 6);
  ASSERT_EQ(x.cols(), 3);                               // d_in is kept
  EXPECT_TRUE(test::bitwiseEqual(x.row(0), x.row(3)));  // "the" twice
  EXPECT_FALSE(test::bitwiseEqual(x.row(0), x.row(1)));
  // The default seed is the inputs panel's, 123: torch.manual_seed(FNV-1a("journey", 123)); torch.rand(3).
  EXPECT_TRUE(
      test::bitwiseEqual(x.row(1), test::rows({{0.9365062117576599, 0.10838896036148071, 0.32853078842163086}})));
  for (int i = 0; i < 6; ++i)
    EXPECT_TRUE(test::bitwiseEqual(x.row(i), rowOf(wordEmbedding(d.workspace().tokens[i], 3, 123))));
  EXPECT_TRUE(d.dirty());
  EXPECT_GT(d.version(), v);
  EXPECT_EQ(d.history().undoSteps(), 1u);
  EXPECT_TRUE(consistent(d));

  // With a seed; "step" at seed 0 (/usr/bin/python3 + torch, see inputs_test): its known draws.
  d.apply(cmd("d_in", {{"value", 4}}));
  d.apply(cmd("sentence", {{"text", "one step"}, {"seed", 0}}));
  EXPECT_TRUE(
      test::bitwiseEqual(d.workspace().embeddings.row(1),
                         test::rows({{0.61252361536026, 0.687980055809021, 0.0547526478767395, 0.13238263130187988}})));
  // The same word in another sentence: the same vector.
  const Matrix one = d.workspace().embeddings.row(0);
  d.apply(cmd("sentence", {{"text", "just one more"}, {"seed", 0}}));
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings.row(1), one));
  // Unicode words are words.
  d.apply(cmd("sentence", {{"text", "na\xc3\xafve \xe2\x98\x83 \xe6\x97\xa5\xe6\x9c\xac"}}));
  EXPECT_EQ(d.workspace().tokens,
            (std::vector<std::string>{"na\xc3\xafve", "\xe2\x98\x83", "\xe6\x97\xa5\xe6\x9c\xac"}));
  EXPECT_TRUE(consistent(d));
}

TEST(Sentence, RefusesNoWordsTooManyAndBadSeeds) {
  Document d;
  d.apply(cmd("set_cell", {{"row", 0}, {"col", 0}, {"value", 2}}));
  for (const char* empty : {"", "   ", "\t\n"})
    EXPECT_TRUE(refusedUnchanged(d, cmd("sentence", {{"text", empty}}), "sentence: type at least one word"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("sentence", {{"text", wordsSentence(4097)}}),
                               "sentence: 4097 tokens exceeds the limit of 4096 tokens"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("sentence", {{"text", "a b"}, {"seed", -1}}),
                               "seed: must be between 0 and 4294967295, got -1"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("sentence", {{"text", "a b"}, {"seed", 4294967296LL}}),
                               "seed: must be between 0 and 4294967295, got 4294967296"));
  EXPECT_NO_THROW(d.apply(cmd("sentence", {{"text", "a b"}, {"seed", 4294967295LL}})));
  // Too many tokens for the model's attention-cell limit: the model's field is named.
  Document big(bookExample(), "", false, Limits{4096, 4096, 64, 64, std::int64_t{2} * 2 * 8 * 8});
  EXPECT_TRUE(refusedUnchanged(big, cmd("sentence", {{"text", wordsSentence(9)}}), "model.batch_size: "));
  EXPECT_NO_THROW(big.apply(cmd("sentence", {{"text", wordsSentence(8)}})));
}

TEST(AddToken, AtTheEndAtAnIndexAndNamed) {
  Document d;
  // At the end, unnamed: "t1", seeded 123 + its position.
  d.apply(cmd("add_token"));
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"Your", "journey", "starts", "with", "one", "step", "t1"}));
  ASSERT_EQ(d.workspace().embeddings.rows(), 7);
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings.topRows(6), test::bookInputs()));
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings.row(6), rowOf(wordEmbedding("t1", 3, 123 + 6))));
  // At an index, named, with a seed.
  d.apply(cmd("add_token", {{"name", "cat"}, {"at", 2}, {"seed", 31}}));
  EXPECT_EQ(d.workspace().tokens,
            (std::vector<std::string>{"Your", "journey", "cat", "starts", "with", "one", "step", "t1"}));
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings.row(2), rowOf(wordEmbedding("cat", 3, 31))));
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings.row(3), test::rows({{0.57, 0.85, 0.64}})));
  // At the front, unnamed: the next free name.
  d.apply(cmd("add_token", {{"at", 0}}));
  EXPECT_EQ(d.workspace().tokens.front(), "t2");
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings.row(0), rowOf(wordEmbedding("t2", 3, 123))));
  EXPECT_EQ(d.history().undoSteps(), 3u);
  EXPECT_TRUE(consistent(d));
  // Each undo takes one back.
  d.apply(cmd("undo"));
  EXPECT_EQ(d.workspace().tokens.size(), 8u);
  d.apply(cmd("undo"));
  d.apply(cmd("undo"));
  EXPECT_EQ(d.workspace().tokens, kBookTokens);
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, test::bookInputs()));
}

TEST(AddToken, RefusesPositionsOutsideTheTable) {
  Document d;
  EXPECT_TRUE(refusedUnchanged(d, cmd("add_token", {{"at", 7}}),
                               "tokens[7]: cannot insert there (positions run from 0 to 6, the end)"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("add_token", {{"at", -1}}), "tokens[-1]: cannot insert there"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("add_token", {{"seed", -5}}), "seed: must be between 0 and 4294967295"));
  EXPECT_NO_THROW(d.apply(cmd("add_token", {{"at", 6}})));  // the end is a place
  Document full(bookExample(), "", false, Limits{7, 4096, 64, 64, std::int64_t{1} << 28});
  full.apply(cmd("add_token"));
  EXPECT_TRUE(refusedUnchanged(full, cmd("add_token"), "tokens: cannot add a token: the limit is 7 tokens"));
}

TEST(RemoveToken, TakesTheTokenAndItsRow) {
  Document d;
  d.apply(cmd("remove_token", {{"index", 0}}));
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"journey", "starts", "with", "one", "step"}));
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, test::bookInputs().bottomRows(5)));
  d.apply(cmd("remove_token", {{"index", 4}}));
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"journey", "starts", "with", "one"}));
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, test::bookInputs().middleRows(1, 4)));
  EXPECT_TRUE(refusedUnchanged(d, cmd("remove_token", {{"index", 4}}),
                               "tokens[4]: no such token to remove (there are 4 tokens, numbered from 0)"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("remove_token", {{"index", -1}}), "tokens[-1]: no such token to remove"));
  for (int i = 0; i < 3; ++i) d.apply(cmd("remove_token", {{"index", 0}}));
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"one"}));
  EXPECT_TRUE(refusedUnchanged(d, cmd("remove_token", {{"index", 0}}),
                               "tokens: cannot remove the last token (attention needs at least one)"));
  EXPECT_TRUE(consistent(d));
}

TEST(RenameToken, RenamesOnlyTheLabel) {
  Document d;
  d.apply(cmd("rename_token", {{"index", 1}, {"name", "trip"}}));
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"Your", "trip", "starts", "with", "one", "step"}));
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, test::bookInputs()));  // the row stays
  d.apply(cmd("rename_token", {{"index", 5}, {"name", "\xf0\x9f\x99\x82 smile"}}));
  EXPECT_EQ(d.workspace().tokens[5], "\xf0\x9f\x99\x82 smile");
  EXPECT_TRUE(
      refusedUnchanged(d, cmd("rename_token", {{"index", 2}, {"name", ""}}), "tokens[2]: a token needs a name"));
  EXPECT_TRUE(
      refusedUnchanged(d, cmd("rename_token", {{"index", 6}, {"name", "x"}}), "tokens[6]: no such token to rename"));
  d.apply(cmd("undo"));
  d.apply(cmd("undo"));
  EXPECT_EQ(d.workspace().tokens, kBookTokens);
}

TEST(MoveToken, MovesTheTokenAndItsRow) {
  Document d;
  d.apply(cmd("move_token", {{"from", 0}, {"to", 5}}));
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"journey", "starts", "with", "one", "step", "Your"}));
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings.row(5), test::rows({{0.43, 0.15, 0.89}})));
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings.topRows(5), test::bookInputs().bottomRows(5)));
  d.apply(cmd("move_token", {{"from", 4}, {"to", 1}}));  // "step" back up
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"journey", "step", "starts", "with", "one", "Your"}));
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings.row(1), test::rows({{0.05, 0.80, 0.55}})));
  EXPECT_TRUE(refusedUnchanged(d, cmd("move_token", {{"from", 6}, {"to", 0}}), "tokens[6]: no such token to move"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("move_token", {{"from", 0}, {"to", 6}}), "tokens[6]: no such place to move to"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("move_token", {{"from", -1}, {"to", 0}}), "tokens[-1]: "));
  // A move to where it is changes nothing and adds no undo step.
  const std::size_t steps = d.history().undoSteps();
  d.apply(cmd("move_token", {{"from", 2}, {"to", 2}}));
  EXPECT_EQ(d.history().undoSteps(), steps);
  d.apply(cmd("undo"));
  d.apply(cmd("undo"));
  EXPECT_EQ(d.workspace().tokens, kBookTokens);
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, test::bookInputs()));
}

TEST(SetCell, SetsOneValue) {
  Document d;
  d.apply(cmd("set_cell", {{"row", 1}, {"col", 2}, {"value", -2.5}}));
  Matrix expected = test::bookInputs();
  expected(1, 2) = -2.5f;
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, expected));
  d.apply(cmd("set_cell", {{"row", 5}, {"col", 0}, {"value", 3}}));  // an integer is a number
  EXPECT_EQ(d.workspace().embeddings(5, 0), 3.0f);
  d.apply(cmd("set_cell", {{"row", 0}, {"col", 0}, {"value", 1e-30}}));
  EXPECT_EQ(d.workspace().embeddings(0, 0), 1e-30f);
  d.apply(cmd("set_cell", {{"row", 0}, {"col", 1}, {"value", 3.4e38}}));  // below FLT_MAX
  EXPECT_EQ(d.workspace().embeddings(0, 1), 3.4e38f);
  EXPECT_EQ(d.history().undoSteps(), 4u);
  for (int i = 0; i < 4; ++i) d.apply(cmd("undo"));
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, test::bookInputs()));
}

TEST(SetCell, RefusesNonFiniteOverflowingAndMissingCells) {
  Document d;
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(
      refusedUnchanged(d, cmd("set_cell", {{"row", 1}, {"col", 2}, {"value", inf}}), "value: not a finite number"));
  EXPECT_TRUE(
      refusedUnchanged(d, cmd("set_cell", {{"row", 1}, {"col", 2}, {"value", -inf}}), "value: not a finite number"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("set_cell", {{"row", 1}, {"col", 2}, {"value", std::nan("")}}),
                               "value: not a finite number"));
  // Finite as a double, beyond float32: refused as the cell's value, not stored as inf.
  EXPECT_TRUE(refusedUnchanged(d, cmd("set_cell", {{"row", 1}, {"col", 2}, {"value", 1e39}}),
                               "embeddings[1][2]: not a finite number"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("set_cell", {{"row", 1}, {"col", 2}, {"value", -1e300}}),
                               "embeddings[1][2]: not a finite number"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("set_cell", {{"row", 6}, {"col", 0}, {"value", 1}}),
                               "embeddings[6][0]: no such cell (the table is 6 × 3)"));
  EXPECT_TRUE(
      refusedUnchanged(d, cmd("set_cell", {{"row", 0}, {"col", 3}, {"value", 1}}), "embeddings[0][3]: no such cell"));
  EXPECT_TRUE(
      refusedUnchanged(d, cmd("set_cell", {{"row", -1}, {"col", 0}, {"value", 1}}), "embeddings[-1][0]: no such cell"));
  // Through JSON text: numbers beyond double are not valid JSON for the list either.
  EXPECT_TRUE(
      startsWith(errorOf([] { parseCommandList(R"([{"do": "set_cell", "row": 0, "col": 0, "value": 1e400}])"); }),
                 "not valid JSON: "));
}

TEST(DIn, DownKeepsTheFirstColumnsUpAddsSeededOnes) {
  Document d;
  d.apply(cmd("d_in", {{"value", 2}}));
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, test::bookInputs().leftCols(2)));
  EXPECT_TRUE(consistent(d));
  d.apply(cmd("d_in", {{"value", 3}}));  // up again: the third column is new, not the book's
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings.leftCols(2), test::bookInputs().leftCols(2)));
  EXPECT_FALSE(test::bitwiseEqual(d.workspace().embeddings.col(2), test::bookInputs().col(2)));
  d.apply(cmd("undo"));
  d.apply(cmd("undo"));
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, test::bookInputs()));

  // 3 → 5 with seed 7: the added 6 × 2 block is torch.manual_seed(7); torch.rand(6, 2), row-major;
  // its first six draws are torch.rand(2, 3)'s after the same seed.
  d.apply(cmd("d_in", {{"value", 5}, {"seed", 7}}));
  const Matrix& x = d.workspace().embeddings;
  ASSERT_EQ(x.cols(), 5);
  EXPECT_TRUE(test::bitwiseEqual(x.leftCols(3), test::bookInputs()));
  EXPECT_TRUE(test::bitwiseEqual(x.block(0, 3, 3, 2), test::rows({{0.5349225401878357, 0.19880318641662598},
                                                                  {0.6592116951942444, 0.6568902730941772},
                                                                  {0.23276156187057495, 0.4250614047050476}})));
  EXPECT_EQ(d.workspace().model.d_out, 2);  // multihead keeps its own d_out
  EXPECT_TRUE(consistent(d));
  EXPECT_TRUE(refusedUnchanged(d, cmd("d_in", {{"value", 0}}), "d_in: must be between 1 and 4096, got 0"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("d_in", {{"value", -3}}), "d_in: must be between 1 and 4096, got -3"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("d_in", {{"value", 4097}}), "d_in: must be between 1 and 4096, got 4097"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("d_in", {{"value", 4}, {"seed", 4294967296LL}}), "seed: "));

  // The simple step: d_out follows d_in.
  Document s;
  s.apply(cmd("set", {{"field", "variant"}, {"value", "simple"}}));
  s.apply(cmd("d_in", {{"value", 6}}));
  EXPECT_EQ(s.workspace().model.d_out, 6);
  s.apply(cmd("d_in", {{"value", 1}}));
  EXPECT_EQ(s.workspace().model.d_out, 1);
  EXPECT_TRUE(consistent(s));
  s.apply(cmd("undo"));
  EXPECT_EQ(s.workspace().model.d_out, 6);
}

TEST(Randomize, TorchRandOfTheSeed) {
  Document d;
  d.apply(cmd("randomize", {{"seed", 2024}}));
  // torch.manual_seed(2024); torch.rand(6, 3)
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings,
                                 test::rows({{0.5317158699035645, 0.8312679529190063, 0.9718379974365234},
                                             {0.11930084228515625, 0.16690224409103394, 0.3494589328765869},
                                             {0.21499240398406982, 0.6201280951499939, 0.4848504662513733},
                                             {0.7492141127586365, 0.15209585428237915, 0.562518835067749},
                                             {0.173475444316864, 0.7045942544937134, 0.9265328645706177},
                                             {0.4060955047607422, 0.30449897050857544, 0.9073178768157959}})));
  EXPECT_EQ(d.workspace().tokens, kBookTokens);
  d.apply(cmd("randomize"));  // the default seed, 123
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, makeRandomEmbeddings(RandomEmbeddings{false, 123, 6, 3})));
  d.apply(cmd("undo"));
  d.apply(cmd("undo"));
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, test::bookInputs()));
}

TEST(BookExample, GivesTheBooksInputsAndKeepsTheModel) {
  Document d;
  d.apply(cmd("model", {{"fields", {{"d_out", 4}, {"num_heads", 4}, {"seed", 9}}}}));
  d.apply(cmd("sentence", {{"text", "something else entirely"}}));
  d.apply(cmd("d_in", {{"value", 8}}));
  d.apply(cmd("book_example"));
  EXPECT_EQ(d.workspace().tokens, kBookTokens);
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, test::bookInputs()));
  EXPECT_EQ(d.workspace().model.d_out, 4);
  EXPECT_EQ(d.workspace().model.num_heads, 4);
  EXPECT_EQ(d.workspace().model.seed, 9u);
  // Simple: d_out back to 3.
  Document s;
  s.apply(cmd("set", {{"field", "variant"}, {"value", "simple"}}));
  s.apply(cmd("d_in", {{"value", 5}}));
  s.apply(cmd("book_example"));
  EXPECT_EQ(s.workspace().model.d_out, 3);
  EXPECT_TRUE(consistent(s));
}

// ---- the model ----------------------------------------------------------------------------------

TEST(Set, EveryModelField) {
  Document d;  // multihead, the notebook's: d_out 2, 2 heads, seed 123, batch 2
  std::size_t steps = 0;
  const auto set = [&](const char* field, const json& value) {
    SCOPED_TRACE(std::string(field) + " = " + value.dump());
    const std::uint64_t v = d.version();
    EXPECT_EQ(d.apply(cmd("set", {{"field", field}, {"value", value}})), DocumentChange::Edited);
    EXPECT_GT(d.version(), v);
    EXPECT_EQ(d.history().undoSteps(), ++steps);
    EXPECT_TRUE(consistent(d));
  };
  set("d_out", 4);
  EXPECT_EQ(d.workspace().model.d_out, 4);
  set("num_heads", 4);
  EXPECT_EQ(d.workspace().model.num_heads, 4);
  set("dropout", 0.25);
  EXPECT_EQ(d.workspace().model.dropout, 0.25);
  set("seed", 4294967295LL);
  EXPECT_EQ(d.workspace().model.seed, 4294967295u);
  set("training", false);
  EXPECT_FALSE(d.workspace().model.training);
  set("qkv_bias", true);
  EXPECT_TRUE(d.workspace().model.qkv_bias);
  set("causal", false);
  EXPECT_FALSE(d.workspace().model.causal);
  set("scale", "none");
  EXPECT_EQ(d.workspace().model.scale, Scale::None);
  set("batch_size", 3);
  EXPECT_EQ(d.workspace().model.batch_size, 3);
  set("variant", "multihead_wrapper");  // another step: its notebook settings
  EXPECT_EQ(modelJson(d), modelToJson(defaultConfig(Variant::MultiHeadWrapper)));
  set("num_heads", 3);
  set("variant", "simple");
  EXPECT_EQ(d.workspace().model.variant, Variant::Simple);
  EXPECT_EQ(d.workspace().model.d_out, 3);  // d_in
  set("normalization", "sum");
  EXPECT_EQ(d.workspace().model.normalization, Normalization::Sum);
  // Every step undone: the notebook's multihead again.
  while (d.history().canUndo()) d.apply(cmd("undo"));
  EXPECT_EQ(modelJson(d), modelToJson(defaultConfig(Variant::MultiHead)));
  EXPECT_EQ(steps, 13u);
}

TEST(Set, SwitchingTheStepTakesThatStepsNotebookSettings) {
  struct Expected {
    const char* id;
    int d_out, num_heads;
    std::uint32_t seed;
    bool causal;
    Scale scale;
    int batch_size;
  };
  // defaultConfig: the seed notebooks' torch.manual_seed and module arguments per step.
  const Expected steps[] = {
      {"simple", 3, 1, 123, false, Scale::None, 1},
      {"self_attention_v1", 2, 1, 123, false, Scale::SqrtDk, 1},
      {"self_attention_v2", 2, 1, 789, false, Scale::SqrtDk, 1},
      {"causal", 2, 1, 789, true, Scale::SqrtDk, 2},
      {"multihead_wrapper", 2, 2, 123, true, Scale::SqrtDk, 2},
      {"multihead", 2, 2, 123, true, Scale::SqrtDk, 2},
  };
  for (const Expected& e : steps) {
    SCOPED_TRACE(e.id);
    Document d;
    d.apply(cmd("set", {{"field", "variant"}, {"value", "self_attention_v1"}}));
    d.apply(cmd("set", {{"field", "seed"}, {"value", 77}}));  // a user's seed, dropped by the switch
    d.apply(cmd("set", {{"field", "variant"}, {"value", e.id}}));
    const ModelConfig& m = d.workspace().model;
    EXPECT_EQ(variantId(m.variant), std::string(e.id));
    EXPECT_EQ(m.d_out, e.d_out);
    EXPECT_EQ(m.num_heads, e.num_heads);
    EXPECT_EQ(m.seed, std::string(e.id) == "self_attention_v1" ? 77u : e.seed);  // the same step keeps it
    EXPECT_EQ(m.causal, e.causal);
    EXPECT_EQ(m.scale, e.scale);
    EXPECT_EQ(m.batch_size, e.batch_size);
    EXPECT_EQ(m.dropout, 0.0);
    EXPECT_FALSE(m.qkv_bias);
    EXPECT_TRUE(m.training);
    EXPECT_TRUE(consistent(d));
  }
  // Setting the step it already is keeps the user's fields.
  Document d;
  d.apply(cmd("model", {{"fields", {{"d_out", 6}, {"num_heads", 3}}}}));
  d.apply(cmd("set", {{"field", "variant"}, {"value", "multihead"}}));
  EXPECT_EQ(d.workspace().model.d_out, 6);
  EXPECT_EQ(d.workspace().model.num_heads, 3);
}

TEST(Set, InvalidValuesAreRefusedNamingTheField) {
  Document d;
  d.apply(cmd("set", {{"field", "d_out"}, {"value", 4}}));
  d.markSaved("doc_test_unused.json");
  const struct {
    const char* field;
    json value;
    const char* prefix;
  } cases[] = {
      {"num_heads", 0, "model.num_heads: must be between 1 and"},
      {"num_heads", -2, "model.num_heads: "},
      {"num_heads", 65, "model.num_heads: must be between 1 and 64, got 65"},
      {"num_heads", 3, "model.d_out: d_out must be divisible by num_heads"},
      {"num_heads", "2", "model.num_heads: expected an integer"},
      {"num_heads", 2.5, "model.num_heads: expected an integer"},
      {"d_out", -1, "model.d_out: "},
      {"d_out", 0, "model.d_out: must be between 1 and 4096, got 0"},
      {"d_out", 4097, "model.d_out: must be between 1 and 4096, got 4097"},
      {"d_out", 2147483648LL, "model.d_out: must be between 0 and 2147483647"},
      {"d_out", nullptr, "model.d_out: expected an integer"},
      {"dropout", 1.01, "model.dropout: must be in [0, 1], got 1.01"},
      {"dropout", -0.1, "model.dropout: must be in [0, 1]"},
      {"dropout", std::nan(""), "model.dropout: must be in [0, 1]"},
      {"dropout", 1e300, "model.dropout: must be in [0, 1]"},
      {"dropout", "0.1", "model.dropout: expected a number"},
      {"seed", -1, "model.seed: must be between 0 and 4294967295, got -1"},
      {"seed", 4294967296LL, "model.seed: must be between 0 and 4294967295, got 4294967296"},
      {"training", "yes", "model.training: expected true or false"},
      {"training", 1, "model.training: expected true or false"},
      {"qkv_bias", 0, "model.qkv_bias: expected true or false"},
      {"causal", "no", "model.causal: expected true or false"},
      {"scale", "sqrt", "model.scale: "},
      {"scale", 1, "model.scale: "},
      {"batch_size", 0, "model.batch_size: must be between 1 and"},
      {"batch_size", 65, "model.batch_size: must be between 1 and 64, got 65"},
      {"normalization", "sum", "model.normalization: \"sum\" is only for the 'simple' variant"},
      {"normalization", "max", "model.normalization: "},
      {"variant", "gpt", "model.variant: unknown variant 'gpt'"},
      {"variant", 4, "model.variant: expected a string"},
      {"variant", nullptr, "model.variant: expected a string"},
      {"heads", 2, "model.heads: unknown field (expected one of: variant, d_out, num_heads"},
      {"", 2, "model.: unknown field"},
      {"d_in", 4, "model.d_in: unknown field"},
  };
  for (const auto& c : cases)
    EXPECT_TRUE(refusedUnchanged(d, cmd("set", {{"field", c.field}, {"value", c.value}}), c.prefix));
  EXPECT_FALSE(d.dirty());

  // Fields a step does not have.
  Document v1;
  v1.apply(cmd("set", {{"field", "variant"}, {"value", "self_attention_v1"}}));
  EXPECT_TRUE(refusedUnchanged(v1, cmd("set", {{"field", "dropout"}, {"value", 0.1}}),
                               "model.dropout: the 'self_attention_v1' variant has no dropout"));
  EXPECT_TRUE(refusedUnchanged(v1, cmd("set", {{"field", "qkv_bias"}, {"value", true}}),
                               "model.qkv_bias: the 'self_attention_v1' variant has no nn.Linear layers"));
  EXPECT_TRUE(refusedUnchanged(v1, cmd("set", {{"field", "num_heads"}, {"value", 2}}),
                               "model.num_heads: the 'self_attention_v1' variant has one head"));
  Document simple;
  simple.apply(cmd("set", {{"field", "variant"}, {"value", "simple"}}));
  EXPECT_TRUE(refusedUnchanged(simple, cmd("set", {{"field", "causal"}, {"value", true}}),
                               "model.causal: the 'simple' variant has no mask"));
  EXPECT_TRUE(refusedUnchanged(simple, cmd("set", {{"field", "d_out"}, {"value", 2}}),
                               "model.d_out: the 'simple' variant has no projection, its width is d_in (3); got 2"));
  // Batch × heads × T² beyond the attention-cell limit names batch_size.
  Document cells(bookExample(), "", false, Limits{4096, 4096, 64, 64, 2 * 2 * 36});
  EXPECT_TRUE(
      refusedUnchanged(cells, cmd("set", {{"field", "batch_size"}, {"value", 3}}),
                       "model.batch_size: batch_size × num_heads × T² = 216 attention cells exceeds the limit of 144"));
}

// Issue 11: a new d_out moves num_heads to the nearest count that divides it, says so, and brings
// the user's count back when d_out allows — a drag from 2 to 14 passes 3, 5, 7 … and used to end
// with 1 head. An explicit num_heads (or d_out with num_heads) that does not divide is still the
// seed's assert.
TEST(Set, DoutMovesNumHeadsToTheNearestDivisorAndSaysSo) {
  Document d;
  ASSERT_EQ(d.workspace().model.num_heads, 2);
  d.apply(cmd("set", {{"field", "d_out"}, {"value", 3}}));
  EXPECT_EQ(d.workspace().model.d_out, 3);
  EXPECT_EQ(d.workspace().model.num_heads, 1);  // 1 and 3 are as near to 2: fewer, wider heads
  EXPECT_EQ(d.note(), "num_heads 2 → 1: d_out 3 is not divisible by 2 (back to 2 once it is)");
  EXPECT_TRUE(consistent(d));
  d.apply(cmd("set", {{"field", "d_out"}, {"value", 14}}));  // the user's 2 is back, not 1
  EXPECT_EQ(d.workspace().model.num_heads, 2);
  EXPECT_EQ(d.note(), "num_heads back to 2: d_out 14 is divisible by it");
  EXPECT_EQ(d.history().undoSteps(), 2u);
  // The nearest divisor: 4 heads and d_out 6 → 3; then 8 → 4 again.
  d.apply(cmd("model", {{"fields", {{"d_out", 8}, {"num_heads", 4}}}}));
  EXPECT_EQ(d.note(), "");
  d.apply(cmd("set", {{"field", "d_out"}, {"value", 6}}));
  EXPECT_EQ(d.workspace().model.num_heads, 3);
  d.apply(cmd("set", {{"field", "d_out"}, {"value", 8}}));
  EXPECT_EQ(d.workspace().model.num_heads, 4);
  // A num_heads the user sets is the one to keep from then on.
  d.apply(cmd("set", {{"field", "d_out"}, {"value", 10}}));
  EXPECT_EQ(d.workspace().model.num_heads, 5);  // |5 − 4| < |2 − 4|
  d.apply(cmd("set", {{"field", "num_heads"}, {"value", 1}}));
  d.apply(cmd("set", {{"field", "d_out"}, {"value", 8}}));
  EXPECT_EQ(d.workspace().model.num_heads, 1);
  EXPECT_EQ(d.note(), "");
  // A given num_heads that does not divide is refused, as is d_out with it.
  const DocState before = stateOf(d);
  EXPECT_EQ(refusal(d, cmd("set", {{"field", "num_heads"}, {"value", 3}})),
            "model.d_out: d_out must be divisible by num_heads (the seed's assert), got d_out = 8, num_heads = 3");
  EXPECT_EQ(refusal(d, cmd("model", {{"fields", {{"d_out", 3}, {"num_heads", 2}}}})),
            "model.d_out: d_out must be divisible by num_heads (the seed's assert), got d_out = 3, num_heads = 2");
  EXPECT_TRUE(sameState(before, stateOf(d)));
  // The wrapper has no such assert: d_out is per head.
  d.apply(cmd("set", {{"field", "variant"}, {"value", "multihead_wrapper"}}));
  d.apply(cmd("set", {{"field", "d_out"}, {"value", 3}}));
  EXPECT_EQ(d.workspace().model.num_heads, 2);
  EXPECT_EQ(d.note(), "");
}

TEST(Set, ADoutDragThroughOddValuesEndsWithTheUsersHeadsAsOneStep) {
  Document d;
  for (int d_out = 3; d_out <= 14; ++d_out) {
    SCOPED_TRACE(d_out);
    d.apply(cmd("set", {{"field", "d_out"}, {"value", d_out}}, "d_out"));
    EXPECT_EQ(d.workspace().model.num_heads, d_out % 2 == 0 ? 2 : 1);
    EXPECT_TRUE(consistent(d));
  }
  EXPECT_EQ(d.history().undoSteps(), 1u);
  // Undo forgets the count it was fitting: the one on screen is kept from then on.
  d.apply(cmd("set", {{"field", "d_out"}, {"value", 5}}));
  EXPECT_EQ(d.workspace().model.num_heads, 1);
  d.apply(cmd("undo"));
  EXPECT_EQ(d.workspace().model.num_heads, 2);
  d.apply(cmd("set", {{"field", "d_out"}, {"value", 9}}));
  EXPECT_EQ(d.workspace().model.num_heads, 1);
  d.apply(cmd("undo"));
  d.apply(cmd("set", {{"field", "num_heads"}, {"value", 7}}));
  d.apply(cmd("set", {{"field", "d_out"}, {"value", 9}}));
  EXPECT_EQ(d.workspace().model.num_heads, 9);  // 7 → nearest divisor of 9
}

// The seed policy (docs/DESIGN.md §3.2): choosing a step — the variant selector, a preset, New —
// runs it with the notebook's seed for that step; every other edit keeps the seed. A switch that
// replaces the user's seed says so.
TEST(Set, ChoosingAStepTakesItsNotebookSeedAndSaysSo) {
  Document d;
  d.apply(cmd("set", {{"field", "seed"}, {"value", 7}}));
  for (const char* id : {"self_attention_v2", "causal", "multihead"}) {
    SCOPED_TRACE(id);
    Variant v;
    ASSERT_TRUE(parseVariant(id, &v));
    const std::uint32_t was = d.workspace().model.seed;
    d.apply(cmd("set", {{"field", "variant"}, {"value", id}}));
    const std::uint32_t seed = defaultConfig(v).seed;
    EXPECT_EQ(d.workspace().model.seed, seed);
    if (was != seed) {
      EXPECT_TRUE(contains(d.note(), "seed " + std::to_string(seed) + " (was " + std::to_string(was) + "): step "))
          << d.note();
    } else {
      EXPECT_EQ(d.note(), "");
    }
    // Other edits keep it.
    d.apply(cmd("set", {{"field", "seed"}, {"value", 7}}));
    d.apply(cmd("set", {{"field", "d_out"}, {"value", 4}}));
    d.apply(cmd("sentence", {{"text", "a b c"}}));
    d.apply(cmd("book_example"));
    EXPECT_EQ(d.workspace().model.seed, 7u);
  }
  EXPECT_EQ(d.note(), "");
  // A seed given with the step wins, without a note.
  d.apply(cmd("model", {{"fields", {{"variant", "causal"}, {"seed", 5}}}}));
  EXPECT_EQ(d.workspace().model.seed, 5u);
  EXPECT_EQ(d.note(), "");
  // New: the book's example with the step's notebook settings, its seed among them.
  d.apply(cmd("new"));
  EXPECT_EQ(d.workspace().model.seed, 789u);
  // Each preset of one step uses the notebook's seed for it; one that rebuilds a later cell of the
  // step (the CausalAttention class of [36], seed 123 and one draw after) says so by its draws.
  for (const std::string& name : presetNames()) {
    SCOPED_TRACE(name);
    Document p;
    p.apply(cmd("preset", {{"name", name}}));
    const ModelConfig& m = p.workspace().model;
    if (m.variant != Variant::Simple && m.seed != defaultConfig(m.variant).seed) {
      EXPECT_GT(m.draws_before, 0);
      EXPECT_EQ(m.seed, 123u);
    }
  }
}

TEST(Model, SeveralFieldsAtOnceAreOneUndoStep) {
  Document d;
  const json before = modelJson(d);
  // d_out 6 with 3 heads: neither alone would pass from d_out 2, 2 heads (6 % 2 == 0 but 2 % 3 != 0).
  d.apply(cmd("model", {{"fields", {{"num_heads", 3}, {"d_out", 6}, {"dropout", 0.1}, {"qkv_bias", true}}}}));
  const ModelConfig& m = d.workspace().model;
  EXPECT_EQ(m.num_heads, 3);
  EXPECT_EQ(m.d_out, 6);
  EXPECT_EQ(m.dropout, 0.1);
  EXPECT_TRUE(m.qkv_bias);
  EXPECT_EQ(d.history().undoSteps(), 1u);
  d.apply(cmd("undo"));
  EXPECT_EQ(modelJson(d), before);
  d.apply(cmd("redo"));
  EXPECT_EQ(d.workspace().model.d_out, 6);
  // A step and its fields together: the step's settings, then the fields.
  d.apply(cmd("model", {{"fields", {{"variant", "causal"}, {"dropout", 0.5}}}}));
  EXPECT_EQ(d.workspace().model.variant, Variant::Causal);
  EXPECT_EQ(d.workspace().model.seed, 789u);
  EXPECT_EQ(d.workspace().model.d_out, 2);
  EXPECT_EQ(d.workspace().model.dropout, 0.5);
  EXPECT_FALSE(d.workspace().model.qkv_bias);
  EXPECT_EQ(d.history().undoSteps(), 2u);
  // Nothing at all: no change, no step.
  d.apply(cmd("model", {{"fields", json::object()}}));
  EXPECT_EQ(d.history().undoSteps(), 2u);
}

TEST(Model, AnInvalidCombinationChangesNothing) {
  Document d;
  d.apply(cmd("set_cell", {{"row", 0}, {"col", 0}, {"value", 5}}));
  EXPECT_TRUE(refusedUnchanged(
      d, cmd("model", {{"fields", {{"d_out", 4}, {"num_heads", 3}}}}),
      "model.d_out: d_out must be divisible by num_heads (the seed's assert), got d_out = 4, num_heads = 3"));
  // One bad field among good ones: nothing of it applies.
  EXPECT_TRUE(refusedUnchanged(d, cmd("model", {{"fields", {{"d_out", 4}, {"seed", 1}, {"training", "no"}}}}),
                               "model.training: expected true or false"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("model", {{"fields", {{"variant", "simple"}, {"d_out", 5}}}}), "model.d_out: "));
  for (const json& notObject : {json(4), json("d_out"), json::array({1, 2}), json(nullptr)})
    EXPECT_TRUE(refusedUnchanged(d, cmd("model", {{"fields", notObject}}), "fields: expected an object"));
}

// ---- undo and redo ------------------------------------------------------------------------------

TEST(UndoRedo, NothingToUndoOrRedo) {
  Document d;
  EXPECT_TRUE(refusedUnchanged(d, cmd("undo"), "nothing to undo"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("redo"), "nothing to redo"));
  EXPECT_EQ(refusal(d, cmd("undo")), "nothing to undo");
  d.apply(cmd("remove_token", {{"index", 0}}));
  EXPECT_TRUE(refusedUnchanged(d, cmd("redo"), "nothing to redo"));
  d.apply(cmd("undo"));
  EXPECT_TRUE(refusedUnchanged(d, cmd("undo"), "nothing to undo"));
}

TEST(UndoRedo, WalkBackAndForthAndANewEditClearsRedo) {
  Document d;
  std::vector<std::string> dumps = {workspaceToJson(d.workspace()).dump()};
  d.apply(cmd("remove_token", {{"index", 0}}));
  dumps.push_back(workspaceToJson(d.workspace()).dump());
  d.apply(cmd("set", {{"field", "seed"}, {"value", 5}}));
  dumps.push_back(workspaceToJson(d.workspace()).dump());
  d.apply(cmd("d_in", {{"value", 4}}));
  dumps.push_back(workspaceToJson(d.workspace()).dump());
  for (int i = 2; i >= 0; --i) {
    const std::uint64_t v = d.version();
    EXPECT_EQ(d.apply(cmd("undo")), DocumentChange::Edited);
    EXPECT_GT(d.version(), v);
    EXPECT_EQ(workspaceToJson(d.workspace()).dump(), dumps[i]) << "undo to " << i;
  }
  for (int i = 1; i <= 3; ++i) {
    d.apply(cmd("redo"));
    EXPECT_EQ(workspaceToJson(d.workspace()).dump(), dumps[i]) << "redo to " << i;
  }
  d.apply(cmd("undo"));
  d.apply(cmd("undo"));
  EXPECT_EQ(d.history().redoSteps(), 2u);
  d.apply(cmd("rename_token", {{"index", 0}, {"name", "x"}}));
  EXPECT_FALSE(d.history().canRedo());
  EXPECT_EQ(refusal(d, cmd("redo")), "nothing to redo");
}

// ---- refusals change nothing --------------------------------------------------------------------

TEST(Document, ACommandThatCannotApplyChangesNothing) {
  TempDir tmp;
  Document d;
  d.apply(cmd("sentence", {{"text", "one step at a time"}}));
  d.apply(cmd("set", {{"field", "d_out"}, {"value", 4}}));
  d.apply(cmd("set_cell", {{"row", 2}, {"col", 1}, {"value", 0.75}}));
  d.apply(cmd("undo"));  // something to redo, too
  d.markSaved(tmp.path("saved.json"));
  ASSERT_FALSE(d.dirty());
  ASSERT_TRUE(d.history().canUndo());
  ASSERT_TRUE(d.history().canRedo());
  const std::vector<std::pair<Command, std::string>> bad = {
      {cmd("open", {{"path", tmp.path("none.json")}}), tmp.path("none.json") + ": cannot open"},
      {cmd("restore", {{"path", tmp.path("none.json")}}), tmp.path("none.json") + ": cannot open"},
      {cmd("preset", {{"name", "nope"}}), "preset: no preset 'nope'"},
      {cmd("sentence", {{"text", " "}}), "sentence: "},
      {cmd("sentence", {{"text", "a"}, {"seed", -1}}), "seed: "},
      {cmd("add_token", {{"at", 99}}), "tokens[99]: "},
      {cmd("remove_token", {{"index", 5}}), "tokens[5]: "},
      {cmd("rename_token", {{"index", 0}, {"name", ""}}), "tokens[0]: "},
      {cmd("move_token", {{"from", 0}, {"to", -1}}), "tokens[-1]: "},
      {cmd("set", {{"field", "num_heads"}, {"value", 3}}), "model.d_out: "},
      {cmd("set", {{"field", "variant"}, {"value", "bert"}}), "model.variant: "},
      {cmd("model", {{"fields", {{"batch_size", 0}}}}), "model.batch_size: "},
      {cmd("set_cell", {{"row", 0}, {"col", 0}, {"value", 1e300}}), "embeddings[0][0]: "},
      {cmd("set_cell", {{"row", 0}, {"col", 9}, {"value", 1}}), "embeddings[0][9]: "},
      {cmd("d_in", {{"value", 0}}), "d_in: "},
      {cmd("randomize", {{"seed", -1}}), "seed: "},
      {cmd("select_token", {{"index", 1}}), "not an edit of the workspace"},
      {cmd("view", {{"field", "theme"}, {"value", "dark"}}), "not an edit of the workspace"},
      {cmd("save", {{"path", "x.json"}}), "not an edit of the workspace"},
      {cmd("quit"), "not an edit of the workspace"},
  };
  for (const auto& [c, prefix] : bad) EXPECT_TRUE(refusedUnchanged(d, c, prefix));
  // Still usable afterwards: the redo step is the one that was there.
  d.apply(cmd("redo"));
  EXPECT_EQ(d.workspace().embeddings(2, 1), 0.75f);
  // A Command made without makeCommand, with an unknown name, is refused too.
  EXPECT_TRUE(refusedUnchanged(d, Command{"frobnicate", json::object(), "", -1}, "unknown command 'frobnicate'"));
}

// BUG (core/editing: token_table.cpp / document.cpp), disabled until fixed; run with
// --gtest_also_run_disabled_tests. A token name or sentence that is not valid UTF-8 is accepted,
// and then the workspace cannot be written: dumpWorkspace (save, autosave, PNG metadata) throws
// nlohmann's type_error 316 ("invalid UTF-8 byte"), not an InputError, which the app does not catch.
// JSON text cannot carry such strings, so it takes a Command made in code (or a UI that lets raw
// bytes through). Either refusal with an InputError or a workspace that saves would do.
TEST(Document, WhatIsAcceptedCanBeSaved) {
  for (const Command& c : {cmd("rename_token", {{"index", 0}, {"name", "\xff\xfe"}}),
                           cmd("add_token", {{"name", "caf\xc3"}}), cmd("sentence", {{"text", "caf\xc3 au lait"}})}) {
    SCOPED_TRACE(c.name);
    Document d;
    if (!refusal(d, c).empty()) continue;  // refused: fine
    EXPECT_NO_THROW(dumpWorkspace(d.workspace()));
  }
}

// ---- version, dirty, file ------------------------------------------------------------------------

TEST(Document, VersionDirtyAndFile) {
  TempDir tmp;
  Document d;
  std::uint64_t v = d.version();
  const auto changed = [&](const Command& c) {
    d.apply(c);
    EXPECT_GT(d.version(), v) << c.name;
    v = d.version();
    EXPECT_TRUE(d.dirty()) << c.name;
  };
  changed(cmd("set_cell", {{"row", 0}, {"col", 0}, {"value", 1}}));
  changed(cmd("add_token"));
  changed(cmd("undo"));
  changed(cmd("redo"));
  changed(cmd("set", {{"field", "seed"}, {"value", 3}}));

  // Saved: clean, the file absolute; the workspace and its version unchanged.
  const std::string dump = workspaceToJson(d.workspace()).dump();
  d.markSaved(tmp.path("saved.json"));
  EXPECT_FALSE(d.dirty());
  EXPECT_EQ(d.file(), tmp.path("saved.json"));
  EXPECT_EQ(workspaceToJson(d.workspace()).dump(), dump);
  EXPECT_TRUE(d.history().canUndo());  // saving keeps the history
  d.markSaved("relative_name.json");
  EXPECT_TRUE(fs::path(d.file()).is_absolute());
  EXPECT_EQ(d.file(), (fs::current_path() / "relative_name.json").string());

  changed(cmd("rename_token", {{"index", 0}, {"name", "Our"}}));
  EXPECT_FALSE(d.file().empty());  // an edit keeps the file
  // Undo back to what was saved: a change of the workspace, but nothing is unsaved any more.
  const auto reverted = [&](const Command& c) {
    d.apply(c);
    EXPECT_GT(d.version(), v) << c.name;
    v = d.version();
    EXPECT_FALSE(d.dirty()) << c.name;
  };
  reverted(cmd("undo"));
  changed(cmd("redo"));

  // open: the file, clean, a new history.
  const std::string file = tmp.write("w.json", kSixTokenFile);
  reverted(cmd("preset", {{"name", "causal"}}));  // a preset as it loads: nothing unsaved
  EXPECT_EQ(d.file(), "");
  d.apply(cmd("open", {{"path", file}}));
  EXPECT_GT(d.version(), v);
  v = d.version();
  EXPECT_FALSE(d.dirty());
  EXPECT_EQ(d.file(), file);
  EXPECT_FALSE(d.history().canUndo());
  // new: untitled, nothing unsaved yet, undoable back to the file's tokens.
  reverted(cmd("new"));
  EXPECT_EQ(d.file(), "");
  EXPECT_TRUE(d.history().canUndo());
  reverted(cmd("undo"));  // the file's contents again: clean
  EXPECT_EQ(d.workspace().tokens, (std::vector<std::string>{"a", "b", "c", "d", "e", "f"}));
  // reset (what restore does): the given file and mark, a new history.
  d.reset(bookExample(Variant::Causal), "/x/y.json", false);
  EXPECT_GT(d.version(), v);
  EXPECT_EQ(d.file(), "/x/y.json");
  EXPECT_FALSE(d.dirty());
  EXPECT_FALSE(d.history().canUndo());
  EXPECT_FALSE(d.history().canRedo());
}

// ---- gestures ---------------------------------------------------------------------------------------

TEST(Gesture, FiftyCellEditsOfOneDragAreOneUndoStep) {
  Document d;
  d.apply(cmd("remove_token", {{"index", 5}}));  // an earlier step, kept apart
  const std::size_t steps = d.history().undoSteps();
  const std::uint64_t v = d.version();
  for (int i = 1; i <= 50; ++i)
    d.apply(cmd("set_cell", {{"row", 1}, {"col", 2}, {"value", 0.66 + 0.01 * i}}, "drag cell 1,2"));
  EXPECT_EQ(d.version(), v + 50);  // every edit is a change the engine must see
  d.endGesture();
  EXPECT_EQ(d.history().undoSteps(), steps + 1);
  EXPECT_EQ(d.workspace().embeddings(1, 2), static_cast<float>(0.66 + 0.5));
  EXPECT_LT(d.history().bytes(), 4096u);  // a cell list, not the matrices
  d.apply(cmd("undo"));
  EXPECT_EQ(d.workspace().embeddings(1, 2), 0.66f);  // the value before the drag
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, test::bookInputs().topRows(5)));
  EXPECT_EQ(d.history().undoSteps(), steps);
  d.apply(cmd("redo"));
  EXPECT_EQ(d.workspace().embeddings(1, 2), static_cast<float>(0.66 + 0.5));
  d.apply(cmd("undo"));

  // After endGesture the same key starts a new step; another key too.
  d.apply(cmd("set_cell", {{"row", 0}, {"col", 0}, {"value", 1}}, "drag"));
  d.apply(cmd("set_cell", {{"row", 0}, {"col", 0}, {"value", 2}}, "drag"));
  d.endGesture();
  d.apply(cmd("set_cell", {{"row", 0}, {"col", 0}, {"value", 3}}, "drag"));
  d.apply(cmd("set_cell", {{"row", 0}, {"col", 1}, {"value", 4}}, "other"));
  EXPECT_EQ(d.history().undoSteps(), steps + 3);
  d.apply(cmd("undo"));
  d.apply(cmd("undo"));
  EXPECT_EQ(d.workspace().embeddings(0, 0), 2.0f);
  d.apply(cmd("undo"));
  EXPECT_EQ(d.workspace().embeddings(0, 0), 0.43f);
  // A refused edit inside a drag leaves the drag one step.
  d.apply(cmd("set", {{"field", "num_heads"}, {"value", 1}}, "heads"));
  EXPECT_NE(refusal(d, cmd("set", {{"field", "num_heads"}, {"value", 0}}, "heads")), "");
  d.apply(cmd("set", {{"field", "num_heads"}, {"value", 2}}, "heads"));  // back where it began
  d.apply(cmd("set", {{"field", "d_out"}, {"value", 4}}, "heads"));
  d.endGesture();
  EXPECT_EQ(d.history().undoSteps(), steps + 1);
  d.apply(cmd("undo"));
  EXPECT_EQ(modelJson(d), modelToJson(defaultConfig(Variant::MultiHead)));
}

// ---- fewer tokens after more ------------------------------------------------------------------------

TEST(FewerTokens, ASentenceOfTenWordsThenUndo) {
  Document d;
  d.apply(cmd("sentence", {{"text", "one two three four five six seven eight nine ten"}}));
  ASSERT_EQ(d.workspace().tokens.size(), 10u);
  ASSERT_TRUE(consistent(d));
  d.apply(cmd("undo"));
  EXPECT_EQ(d.workspace().tokens, kBookTokens);
  EXPECT_EQ(d.workspace().embeddings.rows(), 6);
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, test::bookInputs()));
  EXPECT_TRUE(consistent(d));
  d.apply(cmd("redo"));
  EXPECT_EQ(d.workspace().embeddings.rows(), 10);
  EXPECT_TRUE(consistent(d));
}

TEST(FewerTokens, TenTokensThenTheBookExampleThenUndo) {
  Document d;
  d.apply(cmd("sentence", {{"text", wordsSentence(10)}}));
  d.apply(cmd("d_in", {{"value", 5}}));
  const Matrix ten = d.workspace().embeddings;
  d.apply(cmd("book_example"));
  EXPECT_EQ(d.workspace().tokens, kBookTokens);
  EXPECT_TRUE(consistent(d));
  d.apply(cmd("undo"));
  EXPECT_EQ(d.workspace().tokens.size(), 10u);
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, ten));
  EXPECT_TRUE(consistent(d));
}

TEST(FewerTokens, Gpt2SizedThenASixTokenFile) {
  TempDir tmp;
  const std::string six = tmp.write("six.json", kSixTokenFile);
  // Built as a user would: a 1024-word sentence, d_in 768, GPT-2 small's 12 heads of 64.
  Document d;
  d.apply(cmd("sentence", {{"text", wordsSentence(1024, "tok")}}));
  d.apply(cmd("d_in", {{"value", 768}, {"seed", 1}}));
  d.apply(cmd("model", {{"fields", {{"d_out", 768}, {"num_heads", 12}}}}));
  d.apply(cmd("randomize", {{"seed", 5}}));
  ASSERT_EQ(d.workspace().embeddings.rows(), 1024);
  ASSERT_EQ(d.workspace().embeddings.cols(), 768);
  ASSERT_EQ(d.workspace().tokens.size(), 1024u);
  ASSERT_TRUE(consistent(d));
  d.apply(cmd("open", {{"path", six}}));
  EXPECT_EQ(d.workspace().tokens.size(), 6u);
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, sixTokenEmbeddings()));
  EXPECT_TRUE(consistent(d));

  // The preset, then the book's example, then undo and open again.
  d.apply(cmd("preset", {{"name", "gpt2-small"}}));
  ASSERT_EQ(d.workspace().tokens.size(), 1024u);
  EXPECT_EQ(d.workspace().tokens.back(), "t1024");
  EXPECT_EQ(d.workspace().embeddings.cols(), 768);
  EXPECT_EQ(d.workspace().model.num_heads, 12);
  EXPECT_TRUE(consistent(d));
  d.apply(cmd("book_example"));
  EXPECT_EQ(d.workspace().tokens, kBookTokens);
  EXPECT_EQ(d.workspace().model.d_out, 768);
  EXPECT_TRUE(consistent(d));
  d.apply(cmd("undo"));
  EXPECT_EQ(d.workspace().tokens.size(), 1024u);
  EXPECT_TRUE(consistent(d));
  d.apply(cmd("undo"));  // the preset
  EXPECT_EQ(d.workspace().tokens.size(), 6u);
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().embeddings, sixTokenEmbeddings()));
  d.apply(cmd("redo"));
  d.apply(cmd("open", {{"path", six}}));
  EXPECT_EQ(d.workspace().tokens.size(), 6u);
  EXPECT_TRUE(consistent(d));
}

// ---- memory ---------------------------------------------------------------------------------------------

TEST(Memory, AOneCellEditOfAGpt2SizedWorkspaceCostsBytes) {
  TempDir tmp;
  const std::string file = tmp.write("gpt2.json", R"({"format": "attnscope-workspace", "version": 1,
    "embeddings": {"random": "normal", "seed": 123, "rows": 1024, "cols": 768},
    "model": {"variant": "multihead", "d_out": 768, "num_heads": 12}})");
  Document d;
  d.apply(cmd("open", {{"path", file}}));
  ASSERT_EQ(d.workspace().embeddings.size(), 1024 * 768);
  const float old = d.workspace().embeddings(512, 300);
  d.apply(cmd("set_cell", {{"row", 512}, {"col", 300}, {"value", 0.5}}));
  EXPECT_LT(d.history().bytes(), 4096u);
  EXPECT_EQ(d.history().undoSteps(), 1u);
  d.apply(cmd("undo"));
  EXPECT_EQ(d.workspace().embeddings(512, 300), old);
  EXPECT_TRUE(d.workspace().random.has_value());  // the recipe comes back with the value
  d.apply(cmd("redo"));
  EXPECT_EQ(d.workspace().embeddings(512, 300), 0.5f);

  // On top of a history that already holds large steps, a cell adds bytes, not megabytes.
  d.apply(cmd("randomize", {{"seed", 3}}));
  const std::size_t before = d.history().bytes();
  EXPECT_GT(before, std::size_t{4} << 20);  // the randomize step holds both matrices (2 × 3 MiB)
  d.apply(cmd("set_cell", {{"row", 0}, {"col", 0}, {"value", 1}}));
  EXPECT_LT(d.history().bytes() - before, 4096u);
}

// ---- 3,000 random commands ------------------------------------------------------------------------------

// Cheap exact identity of a workspace (the JSON dump is slow for thousands of states).
std::uint64_t fingerprint(const Workspace& w) {
  std::uint64_t h = 1469598103934665603ull;
  const auto bytes = [&h](const void* p, std::size_t n) {
    const unsigned char* c = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ull;
  };
  const auto text = [&](const std::string& s) {
    const std::uint64_t n = s.size();
    bytes(&n, sizeof n);
    bytes(s.data(), s.size());
  };
  text(std::to_string(w.tokens.size()));
  for (const std::string& t : w.tokens) text(t);
  const std::int64_t shape[2] = {w.embeddings.rows(), w.embeddings.cols()};
  bytes(shape, sizeof shape);
  bytes(w.embeddings.data(), static_cast<std::size_t>(w.embeddings.size()) * sizeof(float));
  text(modelToJson(w.model).dump());
  text(w.random ? std::to_string(w.random->normal) + "/" + std::to_string(w.random->seed) + "/" +
                      std::to_string(w.random->rows) + "/" + std::to_string(w.random->cols)
                : "-");
  text(w.view.dump());
  text(workspaceToJson(w).value("parameters", json()).dump());  // the user's own parameters
  return h;
}

::testing::AssertionResult sameWorkspace(const Workspace& a, const Workspace& b) {
  if (a.tokens != b.tokens) return ::testing::AssertionFailure() << "tokens differ";
  if (auto e = test::bitwiseEqual(a.embeddings, b.embeddings); !e) return e;
  if (modelToJson(a.model).dump() != modelToJson(b.model).dump())
    return ::testing::AssertionFailure() << "models differ: " << modelToJson(a.model).dump() << " vs "
                                         << modelToJson(b.model).dump();
  if (a.random.has_value() != b.random.has_value()) return ::testing::AssertionFailure() << "random recipe differs";
  if (a.view != b.view) return ::testing::AssertionFailure() << "views differ";
  if (workspaceToJson(a).value("parameters", json()) != workspaceToJson(b).value("parameters", json()))
    return ::testing::AssertionFailure() << "parameters differ";
  return ::testing::AssertionSuccess();
}

class CommandStream {
 public:
  explicit CommandStream(const TempDir& tmp) {
    paths_ = {
        tmp.write("six.json", kSixTokenFile),
        tmp.write("random.json", R"({"format": "attnscope-workspace", "version": 1,
          "embeddings": {"random": "uniform", "seed": 3, "rows": 20, "cols": 8},
          "model": {"variant": "multihead", "d_out": 8, "num_heads": 4}})"),
        tmp.write("autosave.json", R"({"format": "attnscope-workspace", "version": 1,
          "tokens": ["x", "y", "z"], "embeddings": [[1, 2], [3, 4], [5, 6]], "model": {"variant": "simple"},
          "view": {"file": "/somewhere/lesson.json", "dirty": false}})"),
        tmp.write("weird_autosave.json", R"({"format": "attnscope-workspace", "version": 1,
          "embeddings": [[1, 2, 3]], "model": {"variant": "causal"}, "view": {"file": 5, "dirty": "yes"}})"),
        tmp.write("na\xc3\xafve \xe2\x98\x83.json", R"({"format": "attnscope-workspace", "version": 1,
          "tokens": ["\u00e9t\u00e9", "\u2603"], "embeddings": [[0.5], [-0.5]], "model": {"variant": "self_attention_v2"}})"),
        tmp.write("bad.json", "{\"format\": \"attnscope-workspace\", "),
        tmp.write("badmodel.json", R"({"format": "attnscope-workspace", "version": 1,
          "embeddings": [[1, 2, 3]], "model": {"variant": "multihead", "d_out": 3}})"),
        tmp.write("empty.json", ""),
        tmp.path("missing.json"),
        tmp.dir().string(),
        "",
        "/dev/null",
    };
    for (const std::string& n : presetNames())
      if (n != "gpt2-small" && n != "medium") presets_.push_back(n);
    for (const CommandInfo& c : commandTable())
      (c.target == CommandTarget::Document ? document_ : other_).push_back(c.name);
  }

  std::mt19937& rng() { return rng_; }
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <class T>
  const T& oneOf(const std::vector<T>& v) {
    return v[static_cast<std::size_t>(pick(0, static_cast<int>(v.size()) - 1))];
  }

  // A command of the stream: mostly a document command with plausible arguments, sometimes not.
  json next(int T, int d_in, bool may_open) {
    std::string name;
    const int kind = pick(0, 99);
    if (kind < 90) {
      name = oneOf(document_);
      // open and restore start a new history: a quarter as often, so the history grows long.
      while ((name == "open" || name == "restore") && !(may_open && chance(0.25))) name = oneOf(document_);
    } else if (kind < 95)
      name = oneOf(other_);
    else
      name = oneOf(std::vector<std::string>{"", "Undo", "frobnicate", "\xe2\x98\x83", "set "});
    json j = {{"do", name}};
    const CommandInfo* info = findCommand(name);
    if (info)
      for (const CommandArg& a : info->args) {
        if (!(a.required ? chance(0.97) : chance(0.5))) continue;
        j[a.name] = chance(0.05) ? anyValue(T) : value(name, a, T, d_in);
      }
    if (chance(0.03)) j[oneOf(std::vector<std::string>{"bogus", "gesture", "", "Index"})] = anyValue(T);
    return j;
  }

 private:
  json value(const std::string& command, const CommandArg& a, int T, int d_in) {
    const std::string arg = a.name;
    if (arg == "seed") return seedValue();
    if (arg == "path") return oneOf(paths_);
    if (command == "preset")
      return chance(0.8)
                 ? json(oneOf(presets_))
                 : json(oneOf(std::vector<std::string>{"nope", "", "gpt", "../presets/multihead", "MULTIHEAD"}));
    if (command == "sentence") return sentence();
    if (command == "workspace" && chance(0.85)) {  // a workspace object, sometimes a broken one
      json ws = json::parse(
          oneOf(std::vector<std::string>{kSixTokenFile, R"({"format": "attnscope-workspace", "version": 1,
          "tokens": ["x", "y", "z"], "embeddings": [[1, 2], [3, 4], [5, 6]], "model": {"variant": "causal", "dropout": 0.5}})"}));
      if (chance(0.2)) ws["model"]["d_out"] = oneOf(std::vector<json>{0, -3, "two", 1 << 20});
      return ws;
    }
    if (command == "paste_embeddings") return pasted(T, d_in);
    if (command == "paste_parameters") {  // a printed state_dict of one weight, d_in wide, 1 to 4 rows
      if (chance(0.15))
        return oneOf(std::vector<std::string>{"", "OrderedDict([])", "OrderedDict([('mask', tensor([[0.]]))])",
                                              "{'W_query': tensor([[1.]])}", "OrderedDict([('x', tensor([1.]))])"});
      std::string s = "OrderedDict([('" +
                      oneOf(std::vector<std::string>{"W_query.weight", "W_key.weight", "W_value.weight"}) +
                      "', tensor([";
      for (int i = pick(1, 4), r = 0; r < i; ++r) {
        s += r ? ", [" : "[";
        for (int j = 0; j < d_in; ++j) s += (j ? ", " : "") + std::to_string(pick(-9, 9));
        s += "]";
      }
      return s + "]))])";
    }
    if (command == "set_parameter" && arg == "name")
      return oneOf(std::vector<std::string>{"W_query.weight", "W_key.weight", "W_value.bias", "out_proj.weight",
                                            "heads.0.W_query.weight", "heads.1.W_value.weight", "W_query", "mask", ""});
    if (command == "set_parameter" && (arg == "row" || arg == "col")) return chance(0.9) ? json(pick(0, 3)) : index(T);
    if (command == "set_parameter" && arg == "value") return number();
    if (arg == "name" || arg == "text") return text();
    if (command == "d_in")
      return chance(0.85) ? json(pick(1, 12)) : oneOf(std::vector<json>{0, -1, 64, 200, 4097, 2147483647, 1LL << 40});
    if (command == "set" && arg == "field") return set_field_ = field();  // "field" comes before "value"
    if (command == "set") return fieldValue(set_field_);
    if (command == "model") {
      if (chance(0.1)) return anyValue(T);
      json f = json::object();
      for (int i = pick(0, 4); i > 0; --i) {
        const std::string k = field();
        f[k] = fieldValue(k);
      }
      return f;
    }
    if (command == "set_cell" && arg == "value") return number();
    if (command == "set_cell" && arg == "col") return index(d_in);
    if (a.type == ArgType::Int) return index(T);
    if (a.type == ArgType::Number) return number();
    if (a.type == ArgType::Bool) return chance(0.5);
    if (a.type == ArgType::String) return text();
    return anyValue(T);
  }

  json index(int n) {
    const int k = pick(0, 99);
    if (k < 80) return pick(0, std::max(0, n - 1));
    if (k < 92) return oneOf(std::vector<json>{0, n - 1, n, n + 1, -1, -2});
    return oneOf(std::vector<json>{2147483647, -2147483647 - 1, 2147483648LL, -2147483649LL, 1LL << 40,
                                   std::numeric_limits<std::uint64_t>::max(),
                                   std::numeric_limits<std::int64_t>::min()});
  }
  json seedValue() {
    return chance(0.8) ? json(pick(0, 1000))
                       : oneOf(std::vector<json>{0, 123, 4294967295LL, 4294967296LL, -1,
                                                 std::numeric_limits<std::int64_t>::min(),
                                                 std::numeric_limits<std::uint64_t>::max()});
  }
  json number() {
    if (chance(0.7)) return std::uniform_real_distribution<double>(-2, 2)(rng_);
    const double inf = std::numeric_limits<double>::infinity();
    return oneOf(std::vector<json>{0.0, -0.0, 1e-45, 1e-300, 3.4e38, 3.5e38, 1e300, -1e300, inf, -inf, std::nan(""), 7,
                                   -7, 1LL << 62, std::numeric_limits<std::uint64_t>::max()});
  }
  std::string text() {
    return oneOf(std::vector<std::string>{"", " ", "a", "cat", "t1", "Your", "na\xc3\xafve", "\xe2\x98\x83",
                                          "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", "\xf0\x9f\x99\x82", "a b", ".",
                                          std::string(300, 'x'), "tab\there", "quote\"back\\slash"});
  }
  // A pasted tensor: mostly a printed one of T ± 1 rows and d_in ± 1 columns, sometimes broken.
  std::string pasted(int T, int d_in) {
    if (chance(0.15))
      return oneOf(std::vector<std::string>{"", "tensor([[1., ...]])", "[[1, 2], [3]]", "tensor([[nan]])", "abc",
                                            "[[[1]]]", "tensor([[1e39]])"});
    const int rows = std::max(1, T + pick(-1, 1)), cols = std::max(1, d_in + pick(-1, 1));
    std::string s = "tensor([";
    for (int i = 0; i < rows; ++i) {
      s += i ? ",\n        [" : "[";
      for (int j = 0; j < cols; ++j) s += (j ? ", " : "") + std::to_string(pick(-99, 99) / 100.0).substr(0, 5);
      s += "]";
    }
    return s + "])";
  }
  std::string sentence() {
    const int k = pick(0, 99);
    if (k < 5) return oneOf(std::vector<std::string>{"", "   ", "\t\n", ".", "!?"});
    if (k < 6) return wordsSentence(4097);  // beyond the limit
    static const std::vector<std::string> words = {"Your",
                                                   "journey",
                                                   "starts",
                                                   "with",
                                                   "one",
                                                   "step",
                                                   "the",
                                                   "cat",
                                                   "sat,",
                                                   "on",
                                                   "mat.",
                                                   "na\xc3\xafve",
                                                   "\xe2\x98\x83",
                                                   "\xe6\x97\xa5\xe6\x9c\xac",
                                                   "\xf0\x9f\x99\x82",
                                                   "a",
                                                   "a",
                                                   "wait..."};
    std::string s;
    for (int i = pick(1, 16); i > 0; --i) s += oneOf(words) + (chance(0.2) ? "  " : " ");
    return s;
  }
  std::string field() {
    if (chance(0.05)) return oneOf(std::vector<std::string>{"", "heads", "d_in", "view", "VARIANT"});
    return oneOf(std::vector<std::string>{"variant", "d_out", "num_heads", "dropout", "seed", "training", "qkv_bias",
                                          "causal", "scale", "batch_size", "normalization"});
  }
  json fieldValue(const std::string& f) {
    if (chance(0.1)) return anyValue(8);
    if (f == "variant")
      return oneOf(std::vector<json>{"simple", "self_attention_v1", "self_attention_v2", "causal", "multihead_wrapper",
                                     "multihead", "gpt", ""});
    if (f == "d_out") return oneOf(std::vector<json>{1, 2, 3, 4, 6, 8, 12, 0, -1, 4097, 2147483648LL});
    if (f == "num_heads") return oneOf(std::vector<json>{1, 2, 3, 4, 0, -1, 65, 1000000});
    if (f == "dropout") return oneOf(std::vector<json>{0.0, 0.1, 0.5, 0.99, 1.0, -0.0, -0.1, 2, 1e300, std::nan("")});
    if (f == "seed") return seedValue();
    if (f == "batch_size") return oneOf(std::vector<json>{1, 2, 3, 8, 0, -1, 64, 65});
    if (f == "scale") return oneOf(std::vector<json>{"sqrt_dk", "none", "sqrt", ""});
    if (f == "normalization") return oneOf(std::vector<json>{"softmax", "sum", "max"});
    return chance(0.9) ? json(chance(0.5)) : anyValue(8);  // training, qkv_bias, causal
  }
  json anyValue(int T) {
    switch (pick(0, 8)) {
      case 0: return nullptr;
      case 1: return chance(0.5);
      case 2: return index(T);
      case 3: return number();
      case 4: return text();
      case 5: return json::array({1, "two", nullptr});
      case 6: return json::object({{"d_out", 4}});
      case 7: return json::array();
      default: return json::object();
    }
  }

  std::mt19937 rng_{1};
  std::vector<std::string> paths_, presets_, document_, other_;
  std::string set_field_ = "d_out";
};

TEST(RandomCommands, ThreeThousandApplyOrRefuseAndUndoWalksBackThroughStatesThatWere) {
  TempDir tmp;
  CommandStream stream(tmp);
  Document d;
  std::vector<std::uint64_t> seen = {fingerprint(d.workspace())};  // every state, in order
  int applied = 0, refused_parse = 0, refused_apply = 0;
  std::set<std::string> applied_names;
  for (int i = 0; i < 3000; ++i) {
    // No open or restore in the last 600: the final undo walk has a long history to go through.
    const json j = stream.next(static_cast<int>(d.workspace().tokens.size()),
                               static_cast<int>(d.workspace().embeddings.cols()), i < 2400);
    SCOPED_TRACE("command " + std::to_string(i) + ": " + j.dump(-1, ' ', false, json::error_handler_t::replace));
    Command c;
    try {
      c = parseCommand(j);
    } catch (const InputError&) {
      ++refused_parse;
      continue;
    } catch (const std::exception& e) {
      FAIL() << "parseCommand threw a non-InputError: " << e.what();
    }
    if (stream.chance(0.25)) c.gesture = stream.chance(0.5) ? "drag a" : "drag b";
    if (stream.chance(0.05)) d.endGesture();

    const Workspace before = d.workspace();
    const std::uint64_t version = d.version();
    const bool dirty = d.dirty();
    const std::string file = d.file();
    const std::size_t undo = d.history().undoSteps(), redo = d.history().redoSteps();
    bool ok = false;
    DocumentChange change = DocumentChange::Unchanged;
    try {
      change = d.apply(c);
      ok = true;
    } catch (const InputError& e) {
      ++refused_apply;
      ASSERT_NE(std::string(e.what()), "") << "an empty message";
    } catch (const std::exception& e) {
      FAIL() << "apply threw a non-InputError: " << e.what();
    } catch (...) {
      FAIL() << "apply threw something that is not an exception";
    }
    ASSERT_TRUE(consistent(d));
    if (ok) {
      ++applied;
      applied_names.insert(c.name);
      // The version moves exactly when the workspace changed (a no-op edit is no change), and
      // whenever the document is another one (open, restore: a new history, views start over),
      // even one with the same contents (the same autosave restored twice).
      if (change == DocumentChange::Replaced || !sameWorkspace(before, d.workspace()))
        ASSERT_GT(d.version(), version);
      else
        ASSERT_EQ(d.version(), version);
      seen.push_back(fingerprint(d.workspace()));
    } else {
      ASSERT_TRUE(sameWorkspace(before, d.workspace()));
      ASSERT_EQ(d.version(), version);
      ASSERT_EQ(d.dirty(), dirty);
      ASSERT_EQ(d.file(), file);
      ASSERT_EQ(d.history().undoSteps(), undo);
      ASSERT_EQ(d.history().redoSteps(), redo);
    }
  }
  std::printf(
      "  3000 commands: %d applied, %d refused when parsed, %d refused when applied; %zu undo steps, %zu bytes\n",
      applied, refused_parse, refused_apply, d.history().undoSteps(), d.history().bytes());
  // The stream exercised every document command and refused plenty.
  for (const CommandInfo& info : commandTable())
    if (info.target == CommandTarget::Document) {
      EXPECT_TRUE(applied_names.count(info.name)) << info.name << " never applied";
    }
  EXPECT_GT(refused_apply, 300);
  EXPECT_GT(applied, 1000);

  // Undo everything: each undo lands on a state that was, earlier than the last one reached.
  const Workspace final_state = d.workspace();
  const std::size_t redo_at_end = d.history().redoSteps();  // what the stream's own undos left
  std::vector<Workspace> walked = {final_state};
  std::size_t position = seen.size() - 1;
  ASSERT_EQ(seen[position], fingerprint(final_state));
  while (d.history().canUndo()) {
    ASSERT_NO_THROW(d.apply(makeCommand("undo")));
    ASSERT_TRUE(consistent(d));
    const std::uint64_t now = fingerprint(d.workspace());
    std::size_t found = position;
    while (found > 0 && seen[found - 1] != now) --found;
    ASSERT_GT(found, 0u) << "undo " << walked.size() << " reached a state that never was (or not in order)";
    position = found - 1;
    walked.push_back(d.workspace());
  }
  EXPECT_EQ(refusal(d, makeCommand("undo")), "nothing to undo");
  // Redo everything: back through the same states to the end.
  for (std::size_t k = walked.size() - 1; k > 0; --k) {
    ASSERT_NO_THROW(d.apply(makeCommand("redo")));
    ASSERT_TRUE(sameWorkspace(d.workspace(), walked[k - 1])) << "redo " << walked.size() - k;
  }
  EXPECT_EQ(d.history().redoSteps(), redo_at_end);
  EXPECT_TRUE(sameWorkspace(d.workspace(), final_state));
  std::printf("  undo walked back %zu steps and redo forward again\n", walked.size() - 1);
}

// A preset's note ("Half of the weights are dropped") describes the preset as it was: an edit of
// the model or the inputs drops it, an edit that changes nothing keeps it, undo brings it back.
TEST(PresetNote, GoesWithTheFirstRealEditAndComesBackWithUndo) {
  Document doc;
  doc.apply(cmd("preset", {{"name", "causal_dropout"}}));
  auto note = [&doc] {
    const json& v = doc.workspace().view;
    return v.is_object() && v.contains("preset") ? v["preset"].value("description", "") : std::string();
  };
  ASSERT_NE(note().find("Half of the weights are dropped"), std::string::npos) << note();
  doc.apply(cmd("set", {{"field", "dropout"}, {"value", 0.5}}));  // the preset's own value: no change
  EXPECT_FALSE(note().empty());
  doc.apply(cmd("set", {{"field", "dropout"}, {"value", 0.0}}));
  EXPECT_EQ(note(), "") << "the note still says half the weights are dropped with p = 0";
  doc.apply(cmd("undo"));
  EXPECT_NE(note().find("Half of the weights are dropped"), std::string::npos);
  doc.apply(cmd("set_cell", {{"row", 0}, {"col", 0}, {"value", 0.5}}));
  EXPECT_EQ(note(), "") << "an embedding edit keeps a note about the preset's numbers";
}

// The one command table (docs/DESIGN.md §3.2): every CommandId once, found by id and by name, and
// the flags the app dispatches on where they belong.
TEST(CommandTable, EveryIdOnceWithItsFlags) {
  std::set<int> ids;
  for (const CommandInfo& c : commandTable()) {
    EXPECT_TRUE(ids.insert(static_cast<int>(c.id)).second) << c.name << ": its id is in the table twice";
    EXPECT_EQ(&commandInfo(c.id), &c) << c.name;
    EXPECT_EQ(findCommand(c.name), &c) << c.name;
    if (c.has(kUndoable)) {
      EXPECT_EQ(c.target, CommandTarget::Document) << c.name << ": undoable but not an edit";
    }
    // The unsaved-changes prompt goes on with the command and "discard": true.
    if (c.has(kAsksFirst)) {
      bool discard = false;
      for (const CommandArg& a : c.args) discard = discard || std::string(a.name) == "discard";
      EXPECT_TRUE(discard) << c.name << " asks first but takes no `discard`";
    }
  }
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(CommandId::LearnClose) + 1) << "a CommandId without a table entry";
  for (CommandId id :
       {CommandId::Screenshot, CommandId::ExportTrace, CommandId::ExportMap, CommandId::Pin, CommandId::Swap})
    EXPECT_TRUE(commandInfo(id).has(kWaitsForResult)) << commandInfo(id).name;
  for (CommandId id : {CommandId::Open, CommandId::Preset, CommandId::New, CommandId::Quit, CommandId::LessonOpen})
    EXPECT_TRUE(commandInfo(id).has(kAsksFirst)) << commandInfo(id).name;
  EXPECT_TRUE(commandInfo(CommandId::Engine).has(kChangesExecutor));
  EXPECT_EQ(commandInfo(CommandId::Engine).target, CommandTarget::App);
  EXPECT_FALSE(commandInfo(CommandId::Undo).has(kUndoable));
  EXPECT_TRUE(commandInfo(CommandId::SetCell).has(kUndoable));
  EXPECT_EQ(makeCommand("set_cell", {{"row", 0}, {"col", 0}, {"value", 1}}).id(), CommandId::SetCell);
}

// The one bounded reader (formats/file_reading.h) every whole-file read goes through: what it
// refuses it refuses before reading, with one message naming the path; a pipe never blocks a read
// that wants a regular file, and one that writes more than the limit is cut off past it.
TEST(FileReading, RefusesWhatItCannotReadWhole) {
  TempDir tmp;
  const std::string small = tmp.write("small.txt", "0123456789");
  EXPECT_EQ(readFileWithin(small, 10), "0123456789");
  EXPECT_EQ(test::errorOf([&] { readFileWithin(small, 9); }), small + ": 10 bytes is larger than the limit of 9 bytes");
  const std::string missing = tmp.path("missing.json");
  EXPECT_EQ(test::errorOf([&] { readFileWithin(missing, 100); }), missing + ": cannot open the file (does it exist?)");
  EXPECT_EQ(test::errorOf([&] { readFileWithin("", 100); }), ": cannot open the file (does it exist?)");
  const std::string dir = tmp.path("");
  EXPECT_NE(test::errorOf([&] { readFileWithin(dir, 100); }).find(": is a directory, not a file"), std::string::npos);

  const std::string fifo = tmp.path("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // A regular file is wanted: refused at once (opening a FIFO without a writer would block).
  EXPECT_NE(test::errorOf([&] { readFileWithin(fifo, 100); }).find(fifo + ": is not a regular file"),
            std::string::npos);
  // Any readable file: what a writer sends, up to the limit …
  auto writer = [&](const std::string& text) {
    return std::thread([&fifo, text] {
      const int fd = ::open(fifo.c_str(), O_WRONLY);  // waits for the reader
      if (fd < 0) return;
      const ssize_t n = ::write(fd, text.data(), text.size());  // < PIPE_BUF: one piece, never a SIGPIPE
      (void)n;
      ::close(fd);
    });
  };
  std::thread w = writer("hello");
  EXPECT_EQ(readFileWithin(fifo, 100, FileKind::AnyReadable), "hello");
  w.join();
  // … and no further: 200 bytes against a limit of 100.
  w = writer(std::string(200, 'x'));
  EXPECT_EQ(test::errorOf([&] { readFileWithin(fifo, 100, FileKind::AnyReadable); }),
            fifo + ": larger than the limit of 100 bytes");
  w.join();
}

// A batch of different sequences: a cell edit changes element 1 (the table) and keeps the others;
// an edit of T, d_in or the batch size sets them aside in the same undo step, with a note; undo
// brings them back.
TEST(Document, ABatchOfSequencesIsSetAsideWhenItNoLongerFits) {
  Workspace ws = bookExample(Variant::MultiHead);  // batch 2, T = 6, d_in = 3
  ws.batch_sequences = {test::randomMatrix(6, 3, 9)};
  Document d(ws, "", false);
  d.apply(cmd("set_cell", {{"row", 0}, {"col", 0}, {"value", 0.5}}));
  ASSERT_EQ(d.workspace().batch_sequences.size(), 1u);
  EXPECT_TRUE(test::bitwiseEqual(d.workspace().batch_sequences[0], ws.batch_sequences[0]));
  for (const Command& c :
       {cmd("add_token"), cmd("d_in", {{"value", 4}}), cmd("set", {{"field", "batch_size"}, {"value", 3}})}) {
    Document e(ws, "", false);
    e.apply(c);
    EXPECT_TRUE(e.workspace().batch_sequences.empty()) << c.name;
    EXPECT_NE(e.note().find("set aside"), std::string::npos) << c.name << ": " << e.note();
    e.apply(cmd("undo"));
    ASSERT_EQ(e.workspace().batch_sequences.size(), 1u) << c.name;
    EXPECT_TRUE(test::bitwiseEqual(e.workspace().batch_sequences[0], ws.batch_sequences[0])) << c.name;
  }
}

// reload: the document's file as it is on disk now, one undo step, nothing unsaved after it; a
// document without a file, or a file that cannot be read as it stands, is refused and nothing changes.
TEST(Document, ReloadTakesTheFileAsItIsNow) {
  TempDir dir;
  const std::string path = dir.path("reload.json");
  Workspace first = bookExample(Variant::MultiHead);
  saveWorkspace(path, first);
  Document d(loadWorkspace(path), documentPath(path), false);
  EXPECT_TRUE(errorOf([&] { Document(first, "", false).apply(cmd("reload")); }).find("no file") != std::string::npos);
  Workspace second = first;
  second.tokens[0] = "Rewritten";
  second.model.seed = 7;
  saveWorkspace(path, second);
  EXPECT_TRUE(d.fileChangedOnDisk());
  d.apply(cmd("reload"));
  EXPECT_EQ(d.workspace().tokens[0], "Rewritten");
  EXPECT_EQ(d.workspace().model.seed, 7u);
  EXPECT_FALSE(d.dirty());
  EXPECT_FALSE(d.fileChangedOnDisk());
  std::ofstream(path) << "{\"format\": \"attnscope-workspace\", \"vers";  // half written
  EXPECT_FALSE(errorOf([&] { d.apply(cmd("reload")); }).empty());
  EXPECT_EQ(d.workspace().tokens[0], "Rewritten");
  d.apply(cmd("undo"));
  EXPECT_EQ(d.workspace().tokens[0], "Your");
  EXPECT_TRUE(d.dirty());  // the file holds something else now
}

}  // namespace
}  // namespace attnscope
