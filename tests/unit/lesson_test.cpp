// Lesson files (core/lessons/lesson.h, docs/DESIGN.md §3.7): what a valid lesson gives — titles,
// commands as the command table parses them, the notebook's code lines cut from the seed classes
// or a file beside the lesson, the maps, the print-outs — and one message naming the step and the
// field for every way a lesson can be damaged. Then the rehearsal that finds a command that cannot
// apply before the lesson opens, and the chapter lesson the app ships.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/errors.h"
#include "engine/stages.h"
#include "formats/presets.h"
#include "formats/workspace_file.h"
#include "lessons/lesson.h"
#include "test_support.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using test::errorOf;

// A lesson document with `steps`, as text. (A vector: nlohmann reads a braced list of one object as
// that object, not as an array holding it.)
std::string lessonText(const std::vector<json>& steps) {
  json doc = {{"format", "attnscope-lesson"}, {"version", 1}, {"title", "T"}};
  doc["steps"] = json::array();
  for (const json& s : steps) doc["steps"].push_back(s);
  return doc.dump();
}

json minimalStep() { return {{"title", "One"}, {"text", "Words."}}; }

// The lines of the seed classes the app ships, read from the source tree (not through the parser).
std::vector<std::string> seedLines() {
  std::ifstream in(fs::path(ATTNSCOPE_SOURCE_DIR) / "core/formats/pytorch/seed_classes.py");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/attnscope-lesson-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name, const std::string& contents) const {
    const std::string p = (fs::path(path_) / name).string();
    std::ofstream(p, std::ios::binary) << contents;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(LessonParse, AValidLessonGivesEveryField) {
  const json steps = json::array({
      {{"title", "Scores"},
       {"text", "Dot products."},
       {"commands", {{{"do", "preset"}, {"name", "simple"}}, {{"do", "select_token"}, {"index", 1}}}},
       {"code", {{"file", "seed_classes.py"}, {"lines", {10, 19}}, {"highlight", {17, 11, 11}}}},
       {"maps", {"scores", "weights"}},
       {"prints", {"tensor([[0.9995, 0.9544],", "        [0.9544, 1.4950]])"}}},
      minimalStep(),
  });
  const Lesson l = parseLesson(lessonText(steps.get<std::vector<json>>()), "/somewhere");
  EXPECT_EQ(l.title, "T");
  EXPECT_EQ(l.path, "");
  ASSERT_EQ(l.steps.size(), 2u);
  const LessonStep& s = l.steps[0];
  EXPECT_EQ(s.title, "Scores");
  EXPECT_EQ(s.text, "Dot products.");
  ASSERT_EQ(s.commands.size(), 2u);
  EXPECT_EQ(s.commands[0].name, "preset");
  EXPECT_EQ(s.commands[0].text("name"), "simple");
  EXPECT_EQ(s.commands[1].integer("index"), 1);
  ASSERT_TRUE(s.code.has_value());
  EXPECT_EQ(s.code->file, "seed_classes.py");
  EXPECT_EQ(s.code->first, 10);
  EXPECT_EQ(s.code->last, 19);
  EXPECT_EQ(s.code->highlight, (std::vector<int>{11, 17}));  // sorted, once each
  const std::vector<std::string> seed = seedLines();
  ASSERT_GE(seed.size(), 19u);
  ASSERT_EQ(s.code->lines.size(), 10u);
  for (int k = 0; k < 10; ++k)
    EXPECT_EQ(s.code->lines[static_cast<std::size_t>(k)], seed[static_cast<std::size_t>(9 + k)]);
  EXPECT_EQ(s.code->lines[1], "    attn_scores = inputs @ inputs.T");
  EXPECT_EQ(s.maps, (std::vector<std::string>{"scores", "weights"}));
  EXPECT_EQ(s.prints, "tensor([[0.9995, 0.9544],\n        [0.9544, 1.4950]])");  // lines joined
  // Optional fields left out.
  const LessonStep& m = l.steps[1];
  EXPECT_TRUE(m.commands.empty());
  EXPECT_FALSE(m.code.has_value());
  EXPECT_TRUE(m.maps.empty());
  EXPECT_EQ(m.prints, "");
  // prints may also be one string.
  json one = minimalStep();
  one["prints"] = "tensor([0.4419, 0.6515, 0.5683])";
  EXPECT_EQ(parseLesson(lessonText({one}), "").steps[0].prints, "tensor([0.4419, 0.6515, 0.5683])");
}

TEST(LessonParse, MapsAreTheGridsHeatmapColumns) {
  std::vector<std::string> expected;
  for (const StageInfo& s : stageTable())
    if (s.heatmap) expected.push_back(s.id);
  for (const ModuleMapInfo& m : moduleMapTable()) expected.push_back(m.id);
  EXPECT_EQ(lessonMapIds(), expected);
  for (const char* id : {"scores", "masked_scores", "scaled_scores", "weights", "dropout_mask", "dropped_weights",
                         "context", "concat", "output"}) {
    json step = minimalStep();
    step["maps"] = {id};
    EXPECT_NO_THROW(parseLesson(lessonText({step}), "")) << id;
  }
  // Another list of known maps is one argument away.
  json step = minimalStep();
  step["maps"] = {"attention_lines"};
  EXPECT_EQ(errorOf([&] {
              parseLesson(lessonText({step}), "");
            }).rfind("step 1: maps: unknown map 'attention_lines'", 0),
            0u);
  EXPECT_NO_THROW(parseLesson(lessonText({step}), "", {"attention_lines", "weights"}));
}

TEST(LessonParse, DamagedLessonsNameTheStepAndTheField) {
  struct Case {
    std::string text;
    std::string message;  // the start of the message
  };
  auto withStep = [](const json& step) { return lessonText({minimalStep(), minimalStep(), step}); };
  json s;
  std::vector<Case> cases;
  cases.push_back({"{\"format\": \"attnscope-lesson\", \"version\": 1, \"title\": \"T\", \"steps\": [",
                   "lesson: not valid JSON: "});
  cases.push_back({"", "lesson: not valid JSON: "});
  cases.push_back({"[1, 2]", "lesson: expected an object"});
  cases.push_back(
      {json{{"format", "attnscope-workspace"}, {"version", 1}, {"title", "T"}, {"steps", {minimalStep()}}}.dump(),
       "format: expected \"attnscope-lesson\", got \"attnscope-workspace\""});
  cases.push_back(
      {json{{"format", "attnscope-lesson"}, {"version", 2}, {"title", "T"}, {"steps", {minimalStep()}}}.dump(),
       "version: expected 1, got 2"});
  cases.push_back(
      {json{{"format", "attnscope-lesson"}, {"version", 1}, {"steps", {minimalStep()}}}.dump(), "title: required"});
  cases.push_back({json{{"format", "attnscope-lesson"}, {"version", 1}, {"title", "T"}}.dump(), "steps: required"});
  cases.push_back({lessonText({}), "steps: a lesson needs at least one step"});
  cases.push_back(
      {json{{"format", "attnscope-lesson"}, {"version", 1}, {"title", "T"}, {"steps", {minimalStep()}}, {"author", "x"}}
           .dump(),
       "lesson: unknown field 'author' (expected one of: format, version, title, steps)"});
  cases.push_back({withStep(5), "step 3: expected an object"});
  s = minimalStep();
  s.erase("title");
  cases.push_back({withStep(s), "step 3: title: required"});
  s = minimalStep();
  s["text"] = 5;
  cases.push_back({withStep(s), "step 3: text: expected a string, got a number"});
  s = minimalStep();
  s["cmds"] = json::array();
  cases.push_back(
      {withStep(s), "step 3: unknown field 'cmds' (expected one of: title, text, commands, code, maps, prints)"});
  s = minimalStep();
  s["commands"] = {{{"do", "preset"}, {"name", "simple"}}, {{"do", "sett"}, {"field", "d_out"}}};
  cases.push_back({withStep(s), "step 3: command 2 (sett): unknown command 'sett'"});
  s = minimalStep();
  s["commands"] = {{{"do", "set"}, {"field", "d_out"}}};
  cases.push_back({withStep(s), "step 3: command 1 (set): value: required"});
  s = minimalStep();
  s["commands"] = {{{"do", "save"}, {"path", "/tmp/x.json"}}};
  cases.push_back({withStep(s), "step 3: command 1 (save): not allowed in a lesson"});
  s = minimalStep();
  s["commands"] = {{{"do", "undo"}}};
  cases.push_back({withStep(s), "step 3: command 1 (undo): not allowed in a lesson"});
  s = minimalStep();
  s["commands"] = {{{"do", "lesson_next"}}};
  cases.push_back({withStep(s), "step 3: command 1 (lesson_next): not allowed in a lesson"});
  s = minimalStep();
  s["commands"] = {{{"do", "quit"}, {"discard", true}}};
  cases.push_back({withStep(s), "step 3: command 1 (quit): not allowed in a lesson"});
  s = minimalStep();
  s["commands"] = {{{"do", "screenshot"}, {"path", "x.png"}}};
  cases.push_back({withStep(s), "step 3: command 1 (screenshot): not allowed in a lesson"});
  s = minimalStep();
  s["maps"] = {"scores", "wieghts"};
  cases.push_back({withStep(s), "step 3: maps: unknown map 'wieghts' (one of: "});
  s = minimalStep();
  s["maps"] = {"weights", "weights"};
  cases.push_back({withStep(s), "step 3: maps: 'weights' is named twice"});
  s = minimalStep();
  s["maps"] = "weights";
  cases.push_back({withStep(s), "step 3: maps: expected an array of map names, got a string"});
  s = minimalStep();
  s["code"] = {{"file", "seed_classes.py"}, {"lines", {140, 260}}};
  cases.push_back({withStep(s), "step 3: code.lines: line 260 is past the end of seed_classes.py ("});
  s = minimalStep();
  s["code"] = {{"file", "seed_classes.py"}, {"lines", {19, 10}}};
  cases.push_back({withStep(s), "step 3: code.lines: the last line 10 comes before the first 19"});
  s = minimalStep();
  s["code"] = {{"file", "seed_classes.py"}, {"lines", {0, 10}}};
  cases.push_back({withStep(s), "step 3: code.lines: expected a line number from 1, got 0"});
  s = minimalStep();
  s["code"] = {{"file", "seed_classes.py"}, {"lines", {10}}};
  cases.push_back({withStep(s), "step 3: code.lines: expected [first, last], got [10]"});
  s = minimalStep();
  s["code"] = {{"file", "seed_classes.py"}};
  cases.push_back({withStep(s), "step 3: code.lines: required"});
  s = minimalStep();
  s["code"] = {{"file", "seed_classes.py"}, {"lines", {10, 19}}, {"highlight", {20}}};
  cases.push_back({withStep(s), "step 3: code.highlight: line 20 is outside the lines shown (10–19)"});
  s = minimalStep();
  s["code"] = {{"file", "nowhere.py"}, {"lines", {1, 2}}};
  cases.push_back({withStep(s), "step 3: code.file: /base/nowhere.py: cannot open the file (does it exist?)"});
  s = minimalStep();
  s["code"] = {{"file", "seed_classes.py"}, {"lines", {1, 2}}, {"colour", "red"}};
  cases.push_back({withStep(s), "step 3: code: unknown field 'colour'"});
  s = minimalStep();
  s["prints"] = {"tensor(", 5};
  cases.push_back({withStep(s), "step 3: prints: expected lines of text, got a number"});
  cases.push_back({std::string(100, '[') + std::string(100, ']'), "lesson: nested deeper than 64 levels"});
  for (const Case& c : cases) {
    const std::string e = errorOf([&] { parseLesson(c.text, "/base"); });
    EXPECT_EQ(e.rfind(c.message, 0), 0u) << "message: " << e << "\nexpected it to start with: " << c.message
                                         << "\nlesson: " << c.text.substr(0, 300);
    EXPECT_EQ(e.find('\n'), std::string::npos) << "one line: " << e;
  }
}

TEST(LessonParse, FilesBesideTheLesson) {
  TempDir dir;
  dir.file("mine.py", "def f(x):\n    return x @ x.T\n\n# end\n");
  const std::string ws = dir.file("example.json", dumpWorkspace(bookExample(Variant::Causal)));
  json step = minimalStep();
  step["code"] = {{"file", "mine.py"}, {"lines", {1, 2}}, {"highlight", {2}}};
  step["commands"] = {{{"do", "open"}, {"path", "example.json"}}};
  const std::string path = dir.file("my lesson.json", lessonText({step}));
  const Lesson l = loadLesson(path);
  EXPECT_EQ(l.path, fs::path(path).lexically_normal().string());
  ASSERT_TRUE(l.steps[0].code.has_value());
  EXPECT_EQ(l.steps[0].code->lines, (std::vector<std::string>{"def f(x):", "    return x @ x.T"}));
  // A relative path in `open` is the lesson's neighbour, wherever the app was started.
  EXPECT_EQ(l.steps[0].commands[0].text("path"), fs::path(ws).lexically_normal().string());
  EXPECT_NO_THROW(rehearseLesson(l, bookExample()));
  // Errors from a file start with its path.
  const std::string bad = dir.file("bad.json", "{\"format\": ");
  EXPECT_EQ(errorOf([&] { loadLesson(bad); }).rfind(bad + ": lesson: not valid JSON", 0), 0u);
  EXPECT_EQ(errorOf([&] { loadLesson(dir.path()); }), dir.path() + ": is a directory, not a file");
  const std::string missing = dir.path() + "/missing.json";
  EXPECT_EQ(errorOf([&] { loadLesson(missing); }), missing + ": cannot open the file (does it exist?)");
}

// A lesson reads only files beside it (docs/DESIGN.md §3.7): its code files and the workspaces its
// steps open are relative paths in its folder or below. A lesson once showed /etc/passwd.
TEST(LessonParse, OnlyFilesBesideTheLesson) {
  TempDir outside;
  const std::string secret = outside.file("secret.py", "password = 'x'\n");
  const std::string secret_ws = outside.file("secret.json", dumpWorkspace(bookExample()));
  TempDir dir;
  fs::create_directories(fs::path(dir.path()) / "sub");
  dir.file("sub/ok.py", "x = 1\n");
  fs::create_symlink(secret, fs::path(dir.path()) / "link.py");
  fs::create_symlink(outside.path(), fs::path(dir.path()) / "out");
  ASSERT_EQ(::mkfifo((fs::path(dir.path()) / "pipe.py").c_str(), 0600), 0);
  auto codeError = [&](const std::string& file) {
    json step = minimalStep();
    step["code"] = {{"file", file}, {"lines", {1, 1}}};
    const std::string path = dir.file("l.json", lessonText({step}));
    return errorOf([&] { loadLesson(path); });
  };
  auto openError = [&](const std::string& file) {
    json step = minimalStep();
    step["commands"] = {{{"do", "open"}, {"path", file}}};
    const std::string path = dir.file("l.json", lessonText({step}));
    return errorOf([&] { loadLesson(path); });
  };
  const std::string lesson = dir.path() + "/l.json: step 1: ";
  EXPECT_EQ(codeError("/etc/passwd"),
            lesson +
                "code.file: '/etc/passwd' is an absolute path: a lesson names files beside it, relative to its folder");
  EXPECT_EQ(codeError(secret), lesson + "code.file: '" + secret +
                                   "' is an absolute path: a lesson names files beside it, relative to its folder");
  EXPECT_EQ(codeError("../x.py"),
            lesson + "code.file: '../x.py' leaves the lesson's folder (\"..\"): a lesson names files beside it");
  EXPECT_EQ(codeError("sub/../../x.py"),
            lesson + "code.file: 'sub/../../x.py' leaves the lesson's folder (\"..\"): a lesson names files beside it");
  EXPECT_EQ(codeError("link.py").rfind(lesson + "code.file: 'link.py' leads out of the lesson's folder", 0), 0u)
      << codeError("link.py");
  EXPECT_EQ(codeError("out/secret.py").rfind(lesson + "code.file: 'out/secret.py' leads out of the lesson's folder", 0),
            0u);
  EXPECT_NE(codeError("pipe.py").find("is not a regular file"), std::string::npos) << codeError("pipe.py");
  EXPECT_EQ(codeError("sub/ok.py"), "");
  EXPECT_EQ(openError("/etc/passwd").rfind(lesson + "command 1 (open): path: '/etc/passwd' is an absolute path", 0), 0u)
      << openError("/etc/passwd");
  EXPECT_EQ(openError("../" + fs::path(outside.path()).filename().string() + "/secret.json")
                .rfind(lesson + "command 1 (open): path: '../", 0),
            0u);
  EXPECT_EQ(openError("out/secret.json").rfind(lesson + "command 1 (open): path: 'out/secret.json' leads out", 0), 0u);
  // Without a folder (a lesson from text) no file is read but the shipped classes.
  json step = minimalStep();
  step["code"] = {{"file", "mine.py"}, {"lines", {1, 1}}};
  EXPECT_EQ(errorOf([&] { parseLesson(lessonText({step}), ""); }),
            "step 1: code.file: 'mine.py': a lesson read without its folder reads no files but seed_classes.py");
}

// The check stops at its deadline with one message, and at once when cancelled; it keeps no undo
// history (a thousand GPT-2-sized steps held 1.25 GB).
TEST(LessonRehearsal, BoundedByADeadlineAndCancellable) {
  std::vector<json> steps;
  for (int i = 0; i < 50; ++i) {
    json step = minimalStep();
    step["commands"] = {{{"do", "preset"}, {"name", i % 2 ? "gpt2-small" : "medium"}},
                        {{"do", "set"}, {"field", "seed"}, {"value", i}}};
    steps.push_back(step);
  }
  const Lesson lesson = parseLesson(lessonText(steps), "");
  LessonCheck past;
  past.deadline = std::chrono::steady_clock::now();
  EXPECT_EQ(
      errorOf([&] { rehearseLesson(lesson, bookExample(), {}, past); }),
      "the lesson takes too long to check (it got to step 1 of 50 in the time allowed): it asks for more work than "
      "a lesson should; fewer or smaller steps open");
  std::atomic<bool> cancel{true};
  LessonCheck cancelled;
  cancelled.cancel = &cancel;
  EXPECT_THROW(rehearseLesson(lesson, bookExample(), {}, cancelled), Cancelled);
  std::atomic<int> done{-1};
  LessonCheck watched;
  watched.steps_done = &done;
  EXPECT_NO_THROW(rehearseLesson(lesson, bookExample(), {}, watched));
  EXPECT_EQ(done.load(), 49);
  // The document's limits apply: a budget too small for GPT-2's maps refuses the lesson at step 2.
  LessonCheck small;
  small.limits.max_memory_bytes = 64 << 20;
  EXPECT_EQ(errorOf([&] { rehearseLesson(lesson, bookExample(), {}, small); }).rfind("step 2: command 1 (preset): ", 0),
            0u);
}

TEST(LessonRehearsal, FindsACommandThatCannotApplyBeforeAnythingRuns) {
  auto lessonWith = [](const json& commands) {
    json one = minimalStep(), two = minimalStep();
    one["commands"] = {{{"do", "preset"}, {"name", "multihead"}}};
    two["commands"] = commands;
    return parseLesson(lessonText({one, two}), "");
  };
  const Workspace start = bookExample();
  EXPECT_NO_THROW(rehearseLesson(lessonWith({{{"do", "set"}, {"field", "num_heads"}, {"value", 1}}}), start));
  struct Case {
    json commands;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{{{"do", "select_token"}, {"index", 6}}}, "step 2: command 1 (select_token): index: no token 6 (there are 6"},
      {{{{"do", "select_head"}, {"index", 0}}, {{"do", "select_head"}, {"index", 2}}},
       "step 2: command 2 (select_head): index: no head 2 (there are 2"},
      {{{{"do", "select_batch"}, {"index", 2}}}, "step 2: command 1 (select_batch): index: no batch element 2"},
      // The same selections through the view command, found when the lesson opens (not as an error
      // in the middle of a lecture, where the app refuses them too).
      {{{{"do", "view"}, {"field", "token"}, {"value", 40}}},
       "step 2: command 1 (view): view token: no token 40 (there are 6, numbered from 0)"},
      {{{{"do", "view"}, {"field", "head"}, {"value", 2}}},
       "step 2: command 1 (view): view head: no head 2 (there are 2, numbered from 0; −1 = all heads)"},
      {{{{"do", "view"}, {"field", "batch"}, {"value", 2}}},
       "step 2: command 1 (view): view batch: no batch element 2"},
      {{{{"do", "set"}, {"field", "num_heads"}, {"value", 3}}}, "step 2: command 1 (set): "},
      {{{{"do", "preset"}, {"name", "no_such_preset"}}}, "step 2: command 1 (preset): "},
      {{{{"do", "remove_token"}, {"index", 9}}}, "step 2: command 1 (remove_token): "},
  };
  for (const Case& c : cases) {
    const std::string e = errorOf([&] { rehearseLesson(lessonWith(c.commands), start); });
    EXPECT_EQ(e.rfind(c.message, 0), 0u) << e << "\nexpected: " << c.message;
  }
  // The app's own check of view fields is called for view commands, with the workspace of the moment.
  int checked = 0;
  const Lesson l = lessonWith({{{"do", "view"}, {"field", "columns"}, {"value", {"weights"}}}});
  rehearseLesson(l, start, [&](const Command& c, const Workspace& ws) {
    EXPECT_EQ(c.name, "view");
    EXPECT_EQ(ws.model.variant, Variant::MultiHead);
    ++checked;
  });
  EXPECT_EQ(checked, 1);
  const std::string e = errorOf([&] {
    rehearseLesson(l, start, [](const Command&, const Workspace&) { throw InputError("view.columns: nope"); });
  });
  EXPECT_EQ(e, "step 2: command 1 (view): view.columns: nope");
}

// A step may train a run (docs/DESIGN.md §3.9): its learn command first (each step sets itself up),
// then the step to show and the layer and head; checked against the run's task, not the chapter's
// workspace, which waits beside the run unchanged.
TEST(LessonRehearsal, StepsThatTrainARun) {
  const json learn = {{"do", "learn"}, {"task", {{"task", "induction"}, {"steps", 300}}}, {"keep", true}};
  auto lessonWith = [&](const json& commands) {
    json one = minimalStep();
    one["commands"] = commands;
    return parseLesson(lessonText({one}), "");
  };
  const Workspace start = bookExample();
  EXPECT_NO_THROW(rehearseLesson(lessonWith({learn,
                                             {{"do", "learn_to"}, {"step", 300}},
                                             {{"do", "select_layer"}, {"layer", 1}, {"head", 1}},
                                             {{"do", "select_token"}, {"index", 31}},
                                             {{"do", "learn_show"}, {"step", -1}},
                                             {{"do", "view"}, {"field", "tab"}, {"value", "learn"}}}),
                                 start));
  struct Case {
    json commands;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{{{"do", "learn_to"}, {"step", 10}}}, "step 1: command 1 (learn_to): no run to show: the step's own learn"},
      {{{{"do", "select_layer"}, {"layer", 0}}}, "step 1: command 1 (select_layer): no run to show"},
      {{learn, {{"do", "learn_to"}, {"step", 301}}}, "step 1: command 2 (learn_to): step: 301 is not a step of the run (0 … 300)"},
      {{learn, {{"do", "learn_show"}, {"step", -2}}}, "step 1: command 2 (learn_show): step: -2 is not a step"},
      {{learn, {{"do", "select_layer"}, {"layer", 2}}}, "step 1: command 2 (select_layer): layer: no layer 2 (the model has 2"},
      {{learn, {{"do", "select_layer"}, {"layer", 0}, {"head", 2}}}, "step 1: command 2 (select_layer): head: no head 2"},
      {{learn, {{"do", "select_token"}, {"index", 32}}}, "step 1: command 2 (select_token): index: no token 32 (there are 32"},
      {{learn, {{"do", "select_head"}, {"index", 2}}}, "step 1: command 2 (select_head): index: no head 2 (there are 2"},
      {{learn, {{"do", "select_batch"}, {"index", 0}}}, "step 1: command 2 (select_batch): a run's model reads one sequence"},
      {{learn, {{"do", "set"}, {"field", "num_heads"}, {"value", 1}}}, "step 1: command 2 (set): the step trains a run"},
      {{{{"do", "learn"}, {"task", {{"task", "induction"}, {"layers", 0}}}}}, "step 1: command 1 (learn): task.layers: 0 is outside"},
      {{{{"do", "learn"}, {"task", {{"task", "text"}, {"text", "abcabcabc"}, {"tokens", "gpt2"}, {"tokenizer", "/etc"}}}}},
       "step 1: command 1 (learn): task.tokenizer: a lesson's run reads no files"},
  };
  for (const Case& c : cases) {
    const std::string e = errorOf([&] { rehearseLesson(lessonWith(c.commands), start); });
    EXPECT_EQ(e.rfind(c.message, 0), 0u) << e << "\nexpected: " << c.message;
  }
  // What a lesson may not do with a run: save it, end it, open another model, change its text.
  for (const char* name : {"learn_save", "learn_close", "learn_play", "learn_step", "model_open", "text"}) {
    json c = {{"do", name}};
    if (std::string(name) == "learn_save" || std::string(name) == "model_open") c["path"] = "x";
    const std::string e = errorOf([&] { lessonWith({learn, c}); });
    EXPECT_NE(e.find("not allowed in a lesson"), std::string::npos) << name << ": " << e;
  }
}

// The lesson on learning the app ships: each step names its run and the step it shows, and the
// rehearsal takes it whole.
TEST(LearningLesson, EveryStepNamesItsRun) {
  const Lesson l = loadLesson((fs::path(assetsDir()) / "lessons" / "learning.json").string());
  ASSERT_GE(l.steps.size(), 5u);
  for (const LessonStep& s : l.steps) {
    SCOPED_TRACE(s.title);
    ASSERT_GE(s.commands.size(), 2u);
    EXPECT_EQ(s.commands[0].name, "learn");
    EXPECT_TRUE(s.commands[0].flag("keep"));
    EXPECT_EQ(s.commands[1].name, "learn_to");
  }
  EXPECT_NO_THROW(rehearseLesson(l, bookExample()));
}

TEST(LessonSteps, NumbersAreCheckedAgainstTheLesson) {
  const Lesson l = parseLesson(lessonText({minimalStep(), minimalStep(), minimalStep()}), "");
  for (int n : {1, 2, 3}) EXPECT_NO_THROW(checkLessonStep(l, n));
  EXPECT_EQ(errorOf([&] { checkLessonStep(l, 4); }), "step: the lesson has 3 steps (1–3), got 4");
  EXPECT_EQ(errorOf([&] { checkLessonStep(l, 0); }), "step: the lesson has 3 steps (1–3), got 0");
  const Lesson one = parseLesson(lessonText({minimalStep()}), "");
  EXPECT_EQ(errorOf([&] { checkLessonStep(one, 2); }), "step: the lesson has 1 step (1), got 2");
}

// The chapter lesson the app ships: at least one step per worked example of the notebooks, each
// setting itself up with a preset (so Back and --step N show the same picture as Next), naming
// code lines and maps, and checked whole by the rehearsal.
TEST(ChapterLesson, CoversTheNotebooksWorkedExamples) {
  const Lesson l = loadLesson((fs::path(assetsDir()) / "lessons" / "chapter3.json").string());
  ASSERT_GE(l.steps.size(), 9u);
  std::vector<std::string> presets;
  for (const LessonStep& s : l.steps) {
    SCOPED_TRACE(s.title);
    ASSERT_FALSE(s.commands.empty());
    EXPECT_EQ(s.commands[0].name, "preset") << "a step sets itself up from a preset";
    presets.push_back(s.commands[0].text("name"));
    ASSERT_TRUE(s.code.has_value());
    EXPECT_EQ(s.code->file, "notebook.py") << "the notebook's cells as written, not attnscope's classes";
    EXPECT_FALSE(s.code->highlight.empty());
    EXPECT_FALSE(s.maps.empty());
    EXPECT_FALSE(s.prints.empty());
    EXPECT_FALSE(s.text.empty());
  }
  for (const char* example : {"simple", "simple_sum", "self_attention_v1", "self_attention_v2", "causal",
                              "causal_dropout", "multihead_wrapper", "multihead", "gpt2-small"})
    EXPECT_NE(std::find(presets.begin(), presets.end(), example), presets.end()) << "no step for " << example;
  EXPECT_NO_THROW(rehearseLesson(l, bookExample()));
  const std::vector<LessonInfo> catalog = lessonCatalog();
  ASSERT_FALSE(catalog.empty());
  bool found = false;
  for (const LessonInfo& info : catalog)
    found = found || (info.title == l.title && fs::path(info.path).filename() == "chapter3.json");
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace attnscope
