#include "state/lesson_check.h"

#include <filesystem>

#include "engine/errors.h"
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
  auto progress = std::make_shared<Progress>();
  progress->file = std::filesystem::path(command.text("path")).filename().string();
  progress_ = progress;
  job_.start([progress, command = std::move(command), start_ws = std::move(start_ws),
              limits](const std::atomic<bool>& cancelled) {
    Result r{command, std::nullopt, ""};
    try {
      LessonCheck check;
      check.cancel = &cancelled;
      check.steps_done = &progress->steps_done;
      check.limits = limits;
      r.lesson = loadCheckedLesson(command.text("path"), start_ws, check);
    } catch (const Cancelled&) {
      r.error = "cancelled";  // cancel() drops it: nobody waits for it
    } catch (const InputError& e) {
      r.error = e.what();
    } catch (const std::bad_alloc&) {
      r.error = command.text("path") + ": out of memory while checking the lesson";
    } catch (const std::exception& e) {
      r.error = command.text("path") + ": " + e.what();
    }
    return r;
  });
}

}  // namespace attnscope
