// Checking a lesson off the UI thread (docs/DESIGN.md §3.7). Opening a lesson reads it and rehearses
// every step on a scratch document; a large lesson can take seconds (a bounded number: the check
// stops at its deadline), so the window keeps drawing meanwhile. One check at a time: starting
// another, or cancel(), stops the running one between two commands. What crosses threads is a copy
// of the start workspace going in and the checked Lesson (or one message) coming out.
#pragma once
#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "editing/command.h"
#include "lessons/lesson.h"
#include "state/off_thread.h"

namespace attnscope {

// Reads `path` and checks it whole before anything is applied: the file (core/lessons), then
// every step's commands in turn on a scratch copy of `start`, view fields included. Throws
// InputError naming the file, the step and the field.
// `check`: its deadline, cancel flag and limits (core/lessons/lesson.h). Runs on any thread.
Lesson loadCheckedLesson(const std::string& path, const Workspace& start, const LessonCheck& check = {});

class LessonChecker {
 public:
  struct Result {
    Command command;               // the lesson_open that asked
    std::optional<Lesson> lesson;  // checked whole, or …
    std::string error;             // … why not (names the file, the step and the field)
  };

  // Starts checking `command`'s lesson on a copy of `start` under `limits`; a running check stops.
  void start(Command command, Workspace start, const Limits& limits);
  void cancel() { job_.cancel(); }  // stops a running check; its result never comes
  bool busy() const { return job_.busy(); }
  // A finished check, once (then the checker is idle).
  std::optional<Result> poll() { return job_.poll(); }
  // Progress of the running check: the lesson's file name, and the step being rehearsed (0 before).
  std::string file() const { return progress_ ? progress_->file : ""; }
  int step() const { return progress_ ? progress_->steps_done.load() : 0; }

 private:
  struct Progress {
    std::string file;
    std::atomic<int> steps_done{0};
  };
  std::shared_ptr<Progress> progress_;
  OffThread<Result> job_;  // last: stopped before the progress it writes goes
};

}  // namespace attnscope
