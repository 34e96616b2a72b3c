#include "lessons/lesson.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "editing/document.h"
#include "engine/errors.h"
#include "engine/stages.h"
#include "formats/file_reading.h"
#include "formats/json_format.h"
#include "formats/json_reading.h"
#include "formats/presets.h"
#include "learn/train_task.h"
#include "lm/gpt_model.h"
#include "seed_classes.h"

namespace attnscope {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// The name a step's code uses for the seed classes the app ships (core/formats/pytorch/).
constexpr const char* kSeedClassesFile = "seed_classes.py";


const char* typeName(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "true or false";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::discarded: return "nothing";
    default: return "a number";
  }
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Refuses fields the format does not have: a typo ("comands") would otherwise be ignored silently.
void onlyFields(const json& object, const std::vector<std::string>& known, const std::string& where) {
  for (auto it = object.begin(); it != object.end(); ++it)
    if (std::find(known.begin(), known.end(), it.key()) == known.end())
      fail(where, "unknown field '" + it.key() + "' (expected one of: " + joined(known) + ")");
}

std::string text(const json& object, const char* field, const std::string& where, bool required) {
  if (!object.contains(field)) {
    if (required) fail(where + field, "required");
    return "";
  }
  const json& v = object[field];
  if (!v.is_string()) fail(where + field, std::string("expected a string, got ") + typeName(v));
  return v.get<std::string>();
}

int lineNumber(const json& v, const std::string& where) {
  if (!v.is_number_integer() && !v.is_number_unsigned())
    fail(where, std::string("expected a line number, got ") + (v.is_number() ? v.dump() : typeName(v)));
  if ((v.is_number_unsigned() && v.get<std::uint64_t>() > 10000000u) || v.get<std::int64_t>() < 1 ||
      v.get<std::int64_t>() > 10000000)
    fail(where, "expected a line number from 1, got " + v.dump());
  return static_cast<int>(v.get<std::int64_t>());
}

// A code file's text (formats/file_reading.h), its message under the field that names it.
std::string readCodeFile(const std::string& path, const std::string& where) {
  try {
    return readFileWithin(path, kMaxLessonCodeBytes);
  } catch (const InputError& e) {
    fail(where, e.what());
  }
}

std::vector<std::string> splitLines(const std::string& s) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    std::string line = s.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

// A file a lesson names (a step's code, an `open`): relative to the lesson's folder and inside it,
// links resolved — never an absolute path, a "..", or a link that leads out (a lesson once showed
// /etc/passwd in its code box). A lesson parsed without a folder reads no files.
std::string besideLesson(const std::string& path, const std::string& base_dir, const std::string& where) {
  const fs::path p(path);
  if (base_dir.empty())
    fail(where, "'" + path + "': a lesson read without its folder reads no files but " + kSeedClassesFile);
  if (p.is_absolute())
    fail(where, "'" + path + "' is an absolute path: a lesson names files beside it, relative to its folder");
  for (const fs::path& part : p)
    if (part == "..") fail(where, "'" + path + "' leaves the lesson's folder (\"..\"): a lesson names files beside it");
  std::error_code ec;
  const fs::path folder = fs::weakly_canonical(fs::path(base_dir), ec);
  const fs::path full = fs::weakly_canonical(fs::path(base_dir) / p, ec);
  const fs::path rel = full.lexically_relative(folder);
  if (ec || rel.empty() || *rel.begin() == "..")
    fail(where, "'" + path + "' leads out of the lesson's folder (a symbolic link to " + full.string() + ")");
  return (fs::path(base_dir) / p).lexically_normal().string();
}

// The commands a step may hold: edits of the workspace and of the view, and a training run with
// the step it shows (§3.9). Files, screenshots, quitting, other lessons and other models are the
// user's to ask for, not a lesson's; undo would make a step depend on what came before it.
bool trainsOrShowsRun(CommandId id) {
  return id == CommandId::Learn || id == CommandId::LearnTo || id == CommandId::LearnShow ||
         id == CommandId::SelectLayer;
}

void checkAllowed(const Command& c) {
  const CommandTarget target = c.info().target;
  if (target == CommandTarget::View) return;
  const CommandId id = c.id();
  if (target == CommandTarget::Document && id != CommandId::Undo && id != CommandId::Redo && id != CommandId::Restore)
    return;
  if (trainsOrShowsRun(id)) return;
  throw InputError(
      "not allowed in a lesson: a step may set up the workspace (preset, set, sentence, …), the "
      "view (select_token, view, …) and a training run (learn, learn_to, learn_show, select_layer) only");
}

// A step's run: its learn command's task, read as the app reads it, without files (a lesson's run
// trains on what the lesson says).
TrainTask lessonTask(const Command& c) {
  const json task = c.has("task") ? c.args["task"] : defaultTaskJson();
  if (task.is_object() && task.contains("tokenizer"))
    throw InputError("task.tokenizer: a lesson's run reads no files (its text task takes characters)");
  return parseTrainTask(task);
}

LessonCode parseCode(const json& j, const std::string& where, const std::string& base_dir,
                     std::map<std::string, std::vector<std::string>>& files) {
  if (!j.is_object())
    fail(where, std::string("expected an object {\"file\", \"lines\", \"highlight\"}, got ") + typeName(j));
  onlyFields(j, {"file", "lines", "highlight"}, where);
  LessonCode code;
  code.file = text(j, "file", where + ".", true);
  if (code.file.empty()) fail(where + ".file", "empty");
  if (!files.count(code.file)) {
    files[code.file] = code.file == kSeedClassesFile
                           ? splitLines(kSeedClassesPy)
                           : splitLines(
                                 readCodeFile(besideLesson(code.file, base_dir, where + ".file"), where + ".file"));
  }
  const std::vector<std::string>& lines = files[code.file];
  if (!j.contains("lines")) fail(where + ".lines", "required: [first, last]");
  const json& range = j["lines"];
  if (!range.is_array() || range.size() != 2)
    fail(where + ".lines",
         "expected [first, last], got " + (range.is_array() ? range.dump() : std::string(typeName(range))));
  code.first = lineNumber(range[0], where + ".lines");
  code.last = lineNumber(range[1], where + ".lines");
  if (code.last < code.first)
    fail(where + ".lines",
         "the last line " + std::to_string(code.last) + " comes before the first " + std::to_string(code.first));
  if (code.last > static_cast<int>(lines.size()))
    fail(where + ".lines", "line " + std::to_string(code.last) + " is past the end of " + code.file + " (" +
                               std::to_string(lines.size()) + " lines)");
  code.lines.assign(lines.begin() + (code.first - 1), lines.begin() + code.last);
  if (j.contains("highlight")) {
    const json& h = j["highlight"];
    if (!h.is_array()) fail(where + ".highlight", std::string("expected an array of line numbers, got ") + typeName(h));
    for (const json& v : h) {
      const int line = lineNumber(v, where + ".highlight");
      if (line < code.first || line > code.last)
        fail(where + ".highlight", "line " + std::to_string(line) + " is outside the lines shown (" +
                                       std::to_string(code.first) + "–" + std::to_string(code.last) + ")");
      if (std::find(code.highlight.begin(), code.highlight.end(), line) == code.highlight.end())
        code.highlight.push_back(line);
    }
    std::sort(code.highlight.begin(), code.highlight.end());
  }
  return code;
}

LessonStep parseStep(const json& j, int number, const std::string& base_dir, const std::vector<std::string>& known_maps,
                     std::map<std::string, std::vector<std::string>>& files) {
  const std::string where = "step " + std::to_string(number);
  if (!j.is_object()) fail(where, std::string("expected an object with title, text, commands, …, got ") + typeName(j));
  onlyFields(j, {"title", "text", "commands", "code", "maps", "prints"}, where);
  LessonStep step;
  step.title = text(j, "title", where + ": ", true);
  if (step.title.empty()) fail(where + ": title", "empty");
  step.text = text(j, "text", where + ": ", true);
  if (j.contains("prints") && j["prints"].is_array()) {  // one string a line, as a file shows it best
    const json& lines = j["prints"];
    for (std::size_t k = 0; k < lines.size(); ++k) {
      if (!lines[k].is_string())
        fail(where + ": prints", std::string("expected lines of text, got ") + typeName(lines[k]));
      step.prints += (k ? "\n" : "") + lines[k].get<std::string>();
    }
  } else {
    step.prints = text(j, "prints", where + ": ", false);
  }
  if (j.contains("commands")) {
    const json& list = j["commands"];
    if (!list.is_array())
      fail(where + ": commands", std::string("expected an array of commands, got ") + typeName(list));
    for (std::size_t i = 0; i < list.size(); ++i) {
      const json& item = list[i];
      const std::string name = item.is_object() && item.contains("do") && item["do"].is_string()
                                   ? " (" + item["do"].get<std::string>() + ")"
                                   : "";
      try {
        Command c = parseCommand(item);
        checkAllowed(c);
        if (c.id() == CommandId::Open) c.args["path"] = besideLesson(c.text("path"), base_dir, "path");
        step.commands.push_back(std::move(c));
      } catch (const InputError& e) {
        fail(where + ": command " + std::to_string(i + 1) + name, e.what());
      }
    }
  }
  if (j.contains("code")) step.code = parseCode(j["code"], where + ": code", base_dir, files);
  if (j.contains("maps")) {
    const json& maps = j["maps"];
    if (!maps.is_array()) fail(where + ": maps", std::string("expected an array of map names, got ") + typeName(maps));
    for (const json& m : maps) {
      if (!m.is_string())
        fail(where + ": maps", std::string("expected map names, got ") + (m.is_number() ? m.dump() : typeName(m)));
      const std::string id = m.get<std::string>();
      if (std::find(known_maps.begin(), known_maps.end(), id) == known_maps.end())
        fail(where + ": maps", "unknown map '" + id + "' (one of: " + joined(known_maps) + ")");
      if (std::find(step.maps.begin(), step.maps.end(), id) != step.maps.end())
        fail(where + ": maps", "'" + id + "' is named twice");
      step.maps.push_back(id);
    }
  }
  return step;
}

// `index` of a selection command, as the app checks it.
void checkIndex(const Command& c, int count, const char* what, const char* minus_one = nullptr) {
  if (c.has("index")) indexArgument(c, count, what, minus_one);
}

}  // namespace

const std::vector<std::string>& lessonMapIds() {
  static const std::vector<std::string> ids = [] {
    std::vector<std::string> out;
    for (const StageInfo& s : stageTable())  // every head's maps …
      if (s.heatmap) out.push_back(s.id);
    for (const ModuleMapInfo& m : moduleMapTable()) out.push_back(m.id);  // … and the module's
    return out;
  }();
  return ids;
}

Lesson parseLesson(const std::string& text_in, const std::string& base_dir,
                   const std::vector<std::string>& known_maps) {
  // Depth and memory bounded while parsing (formats/json_reading.h).
  json j = readJson(text_in, "lesson", Limits{}.max_memory_bytes);
  if (!j.is_object())
    fail("lesson", std::string("expected an object {\"format\": \"attnscope-lesson\", …}, got ") + typeName(j));
  onlyFields(j, {"format", "version", "title", "steps"}, "lesson");
  if (!j.contains("format") || j["format"] != "attnscope-lesson")
    fail("format",
         "expected \"attnscope-lesson\"" + (j.contains("format") ? ", got " + j["format"].dump() : std::string()));
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<std::int64_t>() != 1)
    fail("version", "expected 1" + (j.contains("version") ? ", got " + j["version"].dump() : std::string()));
  Lesson lesson;
  lesson.title = text(j, "title", "", true);
  if (lesson.title.empty()) fail("title", "empty");
  if (!j.contains("steps")) fail("steps", "required: an array of steps");
  const json& steps = j["steps"];
  if (!steps.is_array()) fail("steps", std::string("expected an array of steps, got ") + typeName(steps));
  if (steps.empty()) fail("steps", "a lesson needs at least one step");
  if (steps.size() > static_cast<std::size_t>(kMaxLessonSteps))
    fail("steps", std::to_string(steps.size()) + " steps, more than the limit of " + std::to_string(kMaxLessonSteps));
  std::map<std::string, std::vector<std::string>> files;  // code files, read once
  for (std::size_t i = 0; i < steps.size(); ++i)
    lesson.steps.push_back(parseStep(steps[i], static_cast<int>(i + 1), base_dir, known_maps, files));
  return lesson;
}

Lesson loadLesson(const std::string& path, const std::vector<std::string>& known_maps) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec).lexically_normal();
  const std::string text = readFileWithin(path, kMaxLessonBytes);
  try {
    Lesson lesson = parseLesson(text, absolute.parent_path().string(), known_maps);
    lesson.path = absolute.string();
    return lesson;
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
}

void rehearseLesson(const Lesson& lesson, const Workspace& start, const LessonViewCheck& check_view,
                    const LessonCheck& check) {
  Document doc(start, "", false, check.limits, 0);  // no undo: one workspace at a time
  for (std::size_t s = 0; s < lesson.steps.size(); ++s) {
    const LessonStep& step = lesson.steps[s];
    if (check.steps_done) check.steps_done->store(static_cast<int>(s));
    std::optional<TrainTask> run;  // the step's run, from its learn command on (each step sets itself up)
    for (std::size_t i = 0; i < step.commands.size(); ++i) {
      const Command& c = step.commands[i];
      if (check.cancel && check.cancel->load()) throw Cancelled();
      if (std::chrono::steady_clock::now() > check.deadline)
        throw InputError("the lesson takes too long to check (it got to step " + std::to_string(s + 1) + " of " +
                         std::to_string(lesson.steps.size()) +
                         " in the time allowed): it asks for more work than "
                         "a lesson should; fewer or smaller steps open");
      try {
        if (c.info().target == CommandTarget::Document) {
          if (run) throw InputError("the step trains a run: the chapter's workspace waits beside it unchanged");
          doc.apply(c);
          continue;
        }
        if (c.id() == CommandId::Learn) {
          run = lessonTask(c);
          continue;
        }
        if (trainsOrShowsRun(c.id()) && !run)
          throw InputError("no run to show: the step's own learn command comes first (each step sets itself up)");
        const Workspace& ws = doc.workspace();
        // With a run, the views show its model on the probe: seq_len tokens, `heads` heads a layer.
        const int T = run ? run->seq_len : static_cast<int>(ws.tokens.size());
        const int heads = run ? run->heads : headCount(ws.model);
        switch (c.id()) {
          case CommandId::SelectToken: checkIndex(c, T, "token"); break;
          case CommandId::SelectKey: checkIndex(c, T, "token", "none"); break;
          case CommandId::SelectHead: checkIndex(c, heads, "head", "all heads"); break;
          case CommandId::SelectBatch:
            if (run) throw InputError("a run's model reads one sequence, its probe");
            checkIndex(c, ws.model.batch_size, "batch element");
            break;
          case CommandId::LearnTo:
          case CommandId::LearnShow: checkRunStep(*run, c.integer("step"), c.id() == CommandId::LearnShow); continue;
          case CommandId::SelectLayer:
            checkLayerAndHead(c.integer("layer"), c.has("head") ? c.integer("head") : -1, run->layers, heads);
            continue;
          case CommandId::View:  // a selection through the view command, as the app checks it
            checkViewSelection(c, heads, T, run ? 1 : ws.model.batch_size);
            break;
          default: break;
        }
        if (check_view) check_view(c, ws);
      } catch (const InputError& e) {
        fail("step " + std::to_string(s + 1) + ": command " + std::to_string(i + 1) + " (" + c.name + ")", e.what());
      }
    }
  }
}

void checkLessonStep(const Lesson& lesson, int number) {
  const int n = static_cast<int>(lesson.steps.size());
  if (number < 1 || number > n)
    fail("step", "the lesson has " + std::to_string(n) +
                     (n == 1 ? " step (1)" : " steps (1–" + std::to_string(n) + ")") + ", got " +
                     std::to_string(number));
}

std::string lessonsFolder() { return (fs::path(assetsDir()) / "lessons").lexically_normal().string(); }

std::vector<LessonInfo> lessonCatalog() {
  std::vector<LessonInfo> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(lessonsFolder(), ec)) {
    if (entry.path().extension() != ".json") continue;
    LessonInfo info{entry.path().lexically_normal().string(), entry.path().stem().string()};
    try {  // only the title: the whole lesson is checked when it is opened
      const json j = readJson(readFileWithin(info.path, kMaxLessonBytes), info.path, Limits{}.max_memory_bytes);
      if (j.is_object() && j.contains("title") && j["title"].is_string() && !j["title"].get<std::string>().empty())
        info.title = j["title"].get<std::string>();
    } catch (const std::exception&) {
      // listed by its file name; opening it says what is wrong
    }
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(), [](const LessonInfo& a, const LessonInfo& b) { return a.path < b.path; });
  return out;
}

}  // namespace attnscope
