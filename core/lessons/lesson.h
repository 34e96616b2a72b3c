// Lessons: a step-through of the chapter (docs/DESIGN.md §3.7). A lesson is a JSON file
//   {"format": "attnscope-lesson", "version": 1, "title": …, "steps": [step, …]}
// and each step sets up the app with the app's own commands (editing/command.h), names the
// notebook's code lines it explains, the maps those lines produce, what the notebook prints there
// and a few sentences in plain words. Parsing checks everything — commands against the command
// table, maps against the maps the heatmap grid knows, code lines against the file — and throws one
// InputError naming the step and the field ("step 3: maps: unknown map 'wieghts' …"), so a damaged
// lesson is refused whole, before anything is applied. No GL or ImGui here: the app's lesson panel
// (app/panels/lesson_panel.h) shows a Lesson and applies its steps.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "editing/command.h"
#include "formats/workspace_file.h"

namespace attnscope {

// The notebook's code a step explains: a range of lines of one file.
struct LessonCode {
  std::string file;                // as the lesson names it: "seed_classes.py" or a path relative to the lesson,
                                   // in its folder or below (no absolute path, no "..", no link out)
  int first = 1;                   // first line shown, 1-based
  int last = 1;                    // last line shown, inclusive
  std::vector<int> highlight;      // lines marked as the ones this step is about, within [first, last]
  std::vector<std::string> lines;  // the text of lines first … last, without line ends
};

// One step of a lesson.
struct LessonStep {
  std::string title;               // "Causal attention: masking the future"
  std::string text;                // 2–4 sentences in plain words
  std::vector<Command> commands;   // set up the app for this step, applied in order
  std::optional<LessonCode> code;  // the notebook's lines for this step, if any
  std::vector<std::string> maps;   // heatmap ids to highlight (the others are dimmed); empty: none dimmed
  std::string prints;              // what the notebook prints here, as it prints it (a string, or in the file
                                   // an array of lines joined with "\n"); may be empty
};

struct Lesson {
  std::string title;              // shown above every step
  std::string path;               // the file it was read from (absolute); empty when parsed from text
  std::vector<LessonStep> steps;  // at least one
};

// The map ids a step's "maps" may name: the grid's columns — the heatmap stages of every head
// (stageTable) and the module's maps (moduleMapTable, engine/stages.h). A map the grid learns to
// draw is one more entry in those tables.
const std::vector<std::string>& lessonMapIds();

// Limits of a lesson file: generous for a chapter, small enough that no file can exhaust memory.
constexpr long long kMaxLessonBytes = 4 << 20;      // the lesson file
constexpr long long kMaxLessonCodeBytes = 1 << 20;  // a code file it names
constexpr int kMaxLessonSteps = 1000;

// Parses a lesson. `base_dir` resolves relative code files and `open` paths (the lesson's folder);
// `known_maps` defaults to lessonMapIds(). Throws InputError: "step 3: maps: unknown map 'wieghts'
// (one of: scores, …)". Steps and the commands within a step are numbered from 1, as shown.
Lesson parseLesson(const std::string& text, const std::string& base_dir,
                   const std::vector<std::string>& known_maps = lessonMapIds());
// Reads and parses a lesson file; the message starts with the path.
Lesson loadLesson(const std::string& path, const std::vector<std::string>& known_maps = lessonMapIds());

// A lesson's view commands, checked beyond their arguments by the app (a view field's value).
using LessonViewCheck = std::function<void(const Command& c, const Workspace& ws)>;

// How long a lesson's check may take and what it may hold (docs/DESIGN.md §3.7): a lesson of 4 MiB
// can ask for hours of work (a thousand steps each loading GPT-2 and widening d_in), so the check
// stops at a deadline and refuses the lesson; the app runs it off the UI thread and may cancel it.
constexpr double kLessonCheckSeconds = 20;
inline std::chrono::steady_clock::time_point lessonDeadline(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}
struct LessonCheck {
  std::chrono::steady_clock::time_point deadline = lessonDeadline(kLessonCheckSeconds);
  const std::atomic<bool>* cancel = nullptr;  // set: the check throws Cancelled between commands
  std::atomic<int>* steps_done = nullptr;     // progress for the app to show; may be null
  Limits limits;                              // the document's (the app's budget)
};
// Applies every step's commands in order to a scratch document that starts as `start`, as Next
// would from the first step to the last, so a command that cannot apply (num_heads that does not
// divide d_out, a token index past the end) is found when the lesson is opened, not in the middle
// of a lecture. Throws InputError "step 4: command 2 (select_token): index: no token 7 …".
// Past the deadline: InputError "the lesson takes longer than 20 s to check (it got to step 40 of
// 832): …". The scratch document keeps no undo history, so the check holds one workspace at a time.
void rehearseLesson(const Lesson& lesson, const Workspace& start, const LessonViewCheck& check_view = {},
                    const LessonCheck& check = {});

// "step: the lesson has 11 steps (1–11), got 12" unless 1 ≤ number ≤ steps.
void checkLessonStep(const Lesson& lesson, int number);

// The lessons shipped in assets/lessons/, for File › Open lesson.
struct LessonInfo {
  std::string path;   // absolute path of the file
  std::string title;  // its "title", or its file name when it cannot be read
};
std::vector<LessonInfo> lessonCatalog();
// assets/lessons: where the shipped lessons are (the lesson browser's first folder).
std::string lessonsFolder();

}  // namespace attnscope
