// fuzz_lesson: lesson files (core/lessons/lesson.h, docs/DESIGN.md §3.7). The input is a lesson's
// text, parsed with a folder of the fuzzer's own as the lesson's folder — a temporary folder made
// once per process that holds a few small code files, a workspace, a symbolic link inside it and
// links that lead out, beside files outside it that must never be read — then rehearsed on the
// book's example with small limits (T ≤ 64, d ≤ 64) and a deadline of one second, so one input
// stays far under libFuzzer's 10 s. Checked:
//   - a refusal is one InputError naming where: "step N: FIELD: …" (N from 1; FIELD one of the
//     step's: title, text, commands, command K, code, code.file, code.lines, code.highlight, maps,
//     prints), or a top-level field (lesson, format, version, title, steps, or the member nested
//     too deep); the rehearsal's is "step N: command K (NAME): …" for that step's K-th command,
//     or the deadline's "the lesson takes too long to check …";
//   - an accepted lesson has a title, 1 … 1000 steps, each with a title; commands a lesson may hold
//     (view commands, document commands but undo, redo and restore); maps among lessonMapIds(), each
//     once; code lines 1 ≤ first ≤ last ≤ the file's lines, equal to the file's lines as written here
//     (seed_classes.py: the source tree's), highlights sorted, once each, within [first, last];
//   - no file outside the lesson's folder is ever named: a code.file or an `open` path is relative,
//     without "..", and resolves (links followed) to one of the files written into the folder —
//     "/etc/passwd", "../outside.py" or a link out is refused (their targets exist, so reading one
//     would succeed and be seen);
//   - every workspace the rehearsal shows to the view check is consistent and within the limits.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_common.h"
#include "lessons/lesson.h"

namespace {

namespace fs = std::filesystem;
using attnscope::fuzz::finding;

// The rehearsal's limits: the engine targets' sizes, and workspace files and memory to match.
attnscope::Limits lessonLimits() {
  attnscope::Limits l = attnscope::fuzz::smallLimits();
  l.max_workspace_bytes = std::int64_t{1} << 20;
  l.max_memory_bytes = std::int64_t{256} << 20;
  return l;
}
// The rehearsal's deadline: one second while fuzzing (libFuzzer's timeout is 10 s); replayed in the
// test suite, where a corpus lesson must be rehearsed whole on a busy sanitizer build, 60 s.
#ifdef ATTNSCOPE_FUZZ_REPLAY
constexpr double kDeadlineSeconds = 60.0;
#else
constexpr double kDeadlineSeconds = 1.0;
#endif

// The code files of the lesson's folder, as lines (what a step's code must show), by the path the
// folder's links resolve to.
struct LessonFolder {
  fs::path root;  // the temporary folder: outside files, and the lesson's folder "lesson"
  fs::path base;  // root/lesson, what parseLesson gets
  fs::path canonical_base;
  std::map<std::string, std::vector<std::string>> code;  // canonical path → lines
};

void writeFile(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) finding("cannot write " + p.string());
}

// Lines written with `ending` after each, the last one with `last_ending`.
std::string joinLines(const std::vector<std::string>& lines, const std::string& ending, bool last_ending) {
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) out += lines[i] + (i + 1 < lines.size() || last_ending ? ending : "");
  return out;
}

// Folders of earlier processes that ended without cleaning up (a finding aborts): their process is gone.
void removeStaleFolders(const fs::path& tmp) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(tmp, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string prefix = "attnscope-fuzz-lesson-";
    if (name.rfind(prefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) fs::remove_all(entry.path(), ec);
  }
}

const LessonFolder& lessonFolder() {
  static LessonFolder* folder = [] {
    std::error_code ec;
    const fs::path tmp = fs::temp_directory_path(ec);
    removeStaleFolders(tmp);
    std::string pattern = (tmp / ("attnscope-fuzz-lesson-" + std::to_string(getpid()) + "-XXXXXX")).string();
    if (!mkdtemp(pattern.data())) finding("mkdtemp failed for " + pattern);
    auto* f = new LessonFolder;
    f->root = pattern;
    f->base = f->root / "lesson";
    fs::create_directories(f->base / "sub");
    fs::create_directories(f->base / "folder.py");  // a folder where a file is expected
    // Outside the lesson's folder: files a lesson must never show, though they can be read.
    writeFile(f->root / "outside.py", "outside = 'never shown by a lesson'\n");
    writeFile(f->root / "outside.json", attnscope::dumpWorkspace(attnscope::bookExample()));
    // Inside it: code files (LF with a last line end, CRLF without one, empty), a workspace for `open`.
    const std::vector<std::string> code = {"import torch",
                                           "",
                                           "class Tiny(torch.nn.Module):",
                                           "    def __init__(self, d_in, d_out):",
                                           "        super().__init__()",
                                           "        self.W = torch.nn.Linear(d_in, d_out)",
                                           "",
                                           "    def forward(self, x):",
                                           "        return self.W(x)  # ünïcode"};
    const std::vector<std::string> model = {"x = torch.rand(6, 3)", "  m = Tiny(3, 2)", "print(m(x))"};
    writeFile(f->base / "code.py", joinLines(code, "\n", true));
    writeFile(f->base / "sub" / "model.py", joinLines(model, "\r\n", false));
    writeFile(f->base / "empty.py", "");
    attnscope::Workspace ws = attnscope::bookExample(attnscope::Variant::Causal);
    ws.tokens[0] = "opened";
    const std::string ws_text = attnscope::dumpWorkspace(ws);
    writeFile(f->base / "ws.json", ws_text);
    // Links: one to a file inside, two to files outside, one to the folder above.
    for (const auto& [target, link] : {std::pair<const char*, const char*>{"code.py", "alias.py"},
                                       {"../outside.py", "link-out.py"},
                                       {"../outside.json", "link-out.json"},
                                       {"..", "up"}}) {
      fs::create_symlink(target, f->base / link, ec);
      if (ec) finding("cannot make the link " + (f->base / link).string() + ": " + ec.message());
    }
    f->canonical_base = fs::canonical(f->base);
    f->code[fs::canonical(f->base / "code.py").string()] = code;
    f->code[fs::canonical(f->base / "sub" / "model.py").string()] = model;
    f->code[fs::canonical(f->base / "empty.py").string()] = {};
    std::vector<std::string> ws_lines;  // a step may show it as code too
    std::istringstream ws_in(ws_text);
    for (std::string line; std::getline(ws_in, line);) ws_lines.push_back(line);
    f->code[fs::canonical(f->base / "ws.json").string()] = ws_lines;
    std::atexit([] {
      std::error_code ignored;
      fs::remove_all(lessonFolder().root, ignored);
    });
    return f;
  }();
  return *folder;
}

// The seed classes' lines, read from the source tree (not through the parser).
const std::vector<std::string>& seedClassLines() {
  static const std::vector<std::string> lines = [] {
    std::ifstream in(ATTNSCOPE_FUZZ_SEED_CLASSES, std::ios::binary);
    if (!in) finding(std::string("cannot read ") + ATTNSCOPE_FUZZ_SEED_CLASSES);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }();
  return lines;
}

// Whether `path` (absolute) resolves, links followed, inside the lesson's folder.
bool insideFolder(const fs::path& path, const LessonFolder& f) {
  std::error_code ec;
  const fs::path full = fs::weakly_canonical(path, ec);
  if (ec) return false;
  const fs::path rel = full.lexically_relative(f.canonical_base);
  return !rel.empty() && *rel.begin() != "..";
}

bool startsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// "123" at s[at…]: the number (≥ 1, no leading 0) and where it ends; 0 when there is none.
long numberAt(const std::string& s, std::size_t at, std::size_t* end) {
  std::size_t k = at;
  while (k < s.size() && k - at < 9 && s[k] >= '0' && s[k] <= '9') ++k;
  if (k == at || s[at] == '0') return 0;
  *end = k;
  return std::strtol(s.substr(at, k - at).c_str(), nullptr, 10);
}

// A parse refusal names the step and the field, or a top-level field.
void checkParseMessage(const std::string& m) {
  FUZZ_CHECK(!m.empty(), "an empty message");
  if (m.find(": nested deeper than ") != std::string::npos) return;  // readJson's depth limit, per member
  if (!startsWith(m, "step ")) {
    for (const char* field : {"lesson: ", "format: ", "version: ", "title: ", "steps: "})
      if (startsWith(m, field)) return;
    finding("a refusal that names no step nor field: " + m);
  }
  std::size_t end = 0;
  const long step = numberAt(m, 5, &end);
  FUZZ_CHECK(step >= 1 && step <= attnscope::kMaxLessonSteps && m.compare(end, 2, ": ") == 0,
             "a refusal that names no step from 1: " + m);
  const std::string rest = m.substr(end + 2);
  for (const char* field : {"expected an object", "unknown field '", "title: ", "text: ", "prints: ", "commands: ",
                            "code: ", "code.file: ", "code.lines: ", "code.highlight: ", "maps: "})
    if (startsWith(rest, field)) return;
  if (startsWith(rest, "command ")) {
    std::size_t k = 0;
    const long command = numberAt(rest, 8, &k);
    if (command >= 1 && (rest.compare(k, 2, ": ") == 0 || rest.compare(k, 2, " (") == 0)) return;
  }
  finding("a refusal of step " + std::to_string(step) + " that names no field of it: " + m);
}

// What an accepted lesson holds.
void checkLesson(const attnscope::Lesson& lesson, const LessonFolder& f) {
  using namespace attnscope;
  FUZZ_CHECK(!lesson.title.empty(), "an accepted lesson without a title");
  FUZZ_CHECK(lesson.path.empty(), "a lesson parsed from text has a path: " + lesson.path);
  FUZZ_CHECK(!lesson.steps.empty() && lesson.steps.size() <= static_cast<std::size_t>(kMaxLessonSteps),
             std::to_string(lesson.steps.size()) + " steps accepted");
  const std::vector<std::string>& known_maps = lessonMapIds();
  for (std::size_t s = 0; s < lesson.steps.size(); ++s) {
    const LessonStep& step = lesson.steps[s];
    const std::string at = "step " + std::to_string(s + 1) + ": ";
    FUZZ_CHECK(!step.title.empty(), at + "accepted without a title");
    for (const Command& c : step.commands) {
      const CommandTarget target = c.info().target;
      // The workspace's and the view's commands, and a training run's (docs/DESIGN.md §3.9).
      const bool run = c.name == "learn" || c.name == "learn_to" || c.name == "learn_show" || c.name == "select_layer";
      FUZZ_CHECK(target == CommandTarget::View || run ||
                     (target == CommandTarget::Document && c.name != "undo" && c.name != "redo" && c.name != "restore"),
                 at + "a lesson may not hold '" + c.name + "'");
      if (c.name == "open") {
        FUZZ_CHECK(c.has("path") && c.args["path"].is_string(), at + "open without a path");
        const fs::path path = c.args["path"].get<std::string>();
        FUZZ_CHECK(path.is_absolute() && insideFolder(path, f),
                   at + "open of a file outside the lesson's folder accepted: " + path.string());
      }
    }
    for (std::size_t i = 0; i < step.maps.size(); ++i) {
      FUZZ_CHECK(std::find(known_maps.begin(), known_maps.end(), step.maps[i]) != known_maps.end(),
                 at + "unknown map accepted: " + step.maps[i]);
      FUZZ_CHECK(std::find(step.maps.begin(), step.maps.begin() + static_cast<std::ptrdiff_t>(i), step.maps[i]) ==
                     step.maps.begin() + static_cast<std::ptrdiff_t>(i),
                 at + "map named twice: " + step.maps[i]);
    }
    if (!step.code) continue;
    const LessonCode& code = *step.code;
    const std::vector<std::string>* file = nullptr;
    if (code.file == "seed_classes.py") {
      file = &seedClassLines();
    } else {
      const fs::path named = code.file;
      FUZZ_CHECK(!named.empty() && !named.is_absolute(), at + "code.file accepted as an absolute path: " + code.file);
      for (const fs::path& part : named) FUZZ_CHECK(part != "..", at + "code.file with '..' accepted: " + code.file);
      FUZZ_CHECK(insideFolder(f.base / named, f), at + "code.file outside the lesson's folder accepted: " + code.file);
      std::error_code ec;
      const auto known = f.code.find(fs::weakly_canonical(f.base / named, ec).string());
      FUZZ_CHECK(!ec && known != f.code.end(), at + "code.file names no file written into the folder: " + code.file);
      file = &known->second;
    }
    FUZZ_CHECK(code.first >= 1 && code.first <= code.last && code.last <= static_cast<int>(file->size()),
               at + "code.lines [" + std::to_string(code.first) + ", " + std::to_string(code.last) + "] of " +
                   std::to_string(file->size()) + " lines accepted");
    const std::vector<std::string> expected(file->begin() + (code.first - 1), file->begin() + code.last);
    FUZZ_CHECK(code.lines == expected, at + "the code lines are not those of " + code.file);
    for (std::size_t i = 0; i < code.highlight.size(); ++i) {
      FUZZ_CHECK(code.highlight[i] >= code.first && code.highlight[i] <= code.last,
                 at + "highlight " + std::to_string(code.highlight[i]) + " outside the lines shown");
      FUZZ_CHECK(i == 0 || code.highlight[i - 1] < code.highlight[i], at + "highlights not sorted once each");
    }
  }
}

// A rehearsal's refusal names the step and the command it stopped at, or the deadline.
void checkRehearsalMessage(const attnscope::Lesson& lesson, const std::string& m) {
  if (startsWith(m, "the lesson takes too long to check (it got to step ")) return;
  FUZZ_CHECK(startsWith(m, "step "), "a rehearsal refusal that names no step: " + m);
  std::size_t end = 0;
  const long step = numberAt(m, 5, &end);
  FUZZ_CHECK(step >= 1 && static_cast<std::size_t>(step) <= lesson.steps.size() &&
                 m.compare(end, 10, ": command ") == 0,
             "a rehearsal refusal that names no step of the lesson (" + std::to_string(lesson.steps.size()) +
                 " steps): " + m);
  std::size_t k = 0;
  const long command = numberAt(m, end + 10, &k);
  const std::vector<attnscope::Command>& commands = lesson.steps[static_cast<std::size_t>(step - 1)].commands;
  FUZZ_CHECK(command >= 1 && static_cast<std::size_t>(command) <= commands.size(),
             "a rehearsal refusal that names no command of step " + std::to_string(step) + ": " + m);
  const std::string named = " (" + commands[static_cast<std::size_t>(command - 1)].name + "): ";
  FUZZ_CHECK(m.compare(k, named.size(), named) == 0, "a rehearsal refusal that misnames its command: " + m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attnscope;
  const LessonFolder& folder = lessonFolder();
  const std::string text(reinterpret_cast<const char*>(data), size);
  Lesson lesson;
  try {
    lesson = parseLesson(text, folder.base.string());
  } catch (const InputError& e) {
    checkParseMessage(e.what());
    return 0;
  } catch (const std::exception& e) {
    fuzz::unexpected("parseLesson", e);
  }
  checkLesson(lesson, folder);

  LessonCheck check;
  check.limits = lessonLimits();
  check.deadline = lessonDeadline(kDeadlineSeconds);
  const auto view_check = [&](const Command& c, const Workspace& ws) {
    fuzz::checkConsistent(ws, check.limits, ("the rehearsal's workspace at " + c.name).c_str());
  };
  try {
    rehearseLesson(lesson, bookExample(), view_check, check);
  } catch (const InputError& e) {
    checkRehearsalMessage(lesson, e.what());
  } catch (const std::exception& e) {
    fuzz::unexpected("rehearseLesson", e);
  }
  return 0;
}
