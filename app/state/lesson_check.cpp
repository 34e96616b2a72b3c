#include "state/lesson_check.h"

#include <filesystem>

#include "engine/errors.h"
#include "state/ui_wake.h"
#include "state/view_state.h"

namespace attnscope {

Lesson loadCheckedLesson(const std::string& path, const Workspace& start, const LessonCheck& check) {
  Lesson lesson = loadLesson(path);
  try {
    rehearseLesson(
        lesson, start,
        [](const Command& c, const Workspace&) {
          if (c.id() != CommandId::View) return;
          ViewState scratch;  // the view command's own checks: the field and its value
          setViewField(scratch, c.text("field"), c.args.at("value"));
        },
        check);
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
  return lesson;
}

void LessonChecker::start(Command command, Workspace start_ws, const Limits& limits) {
  cancel();
  auto state = std::make_shared<State>();
  state->file = std::filesystem::path(command.text("path")).filename().string();
  state_ = state;
  thread_ = std::thread([state, command = std::move(command), start_ws = std::move(start_ws), limits]() mutable {
    Result r{command, std::nullopt, ""};
    try {
      LessonCheck check;
      check.cancel = &state->cancel;
      check.steps_done = &state->steps_done;
      check.limits = limits;
      r.lesson = loadCheckedLesson(command.text("path"), start_ws, check);
    } catch (const Cancelled&) {
      state->done = true;
      return;  // nobody waits for it
    } catch (const InputError& e) {
      r.error = e.what();
    } catch (const std::bad_alloc&) {
      r.error = command.text("path") + ": out of memory while checking the lesson";
    } catch (const std::exception& e) {
      r.error = command.text("path") + ": " + e.what();
    }
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      state->result = std::move(r);
    }
    state->done = true;
    wakeUi();  // the window may be asleep: the lesson opens (or says why not) at once
  });
}

void LessonChecker::cancel() {
  if (state_) state_->cancel = true;
  if (thread_.joinable()) thread_.join();
  state_.reset();
}

std::optional<LessonChecker::Result> LessonChecker::poll() {
  if (!state_ || !state_->done.load()) return std::nullopt;
  std::optional<Result> r;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    r = std::move(state_->result);
  }
  if (thread_.joinable()) thread_.join();
  state_.reset();
  return r;
}

}  // namespace attnscope
