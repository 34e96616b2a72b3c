// The open lesson (docs/DESIGN.md §3.7): which lesson, which step, and the view to come back to
// when it closes. The controller changes it (lesson_open, lesson_step, …); the lesson panel draws it.
#pragma once
#include <cstdint>
#include <optional>

#include "lessons/lesson.h"
#include "state/view_state.h"

namespace attnscope {

class LessonSession {
 public:
  bool open() const { return lesson_.has_value(); }
  const Lesson& lesson() const { return *lesson_; }  // only while open()
  int step() const { return step_; }                 // the step shown, 1-based; 0 = none yet
  const LessonStep& current() const { return lesson_->steps[static_cast<std::size_t>(step_ - 1)]; }
  // Counts the lessons begun: a panel tells a new lesson from the one it drew.
  std::uint64_t serial() const { return serial_; }

  // Shows `lesson` from now on, at no step yet; `before` is the view to come back to when it
  // closes (kept from the first lesson when one replaces another).
  void begin(Lesson lesson, const ViewState& before);
  void setStep(int number) { step_ = number; }
  // Closes the lesson; returns the view as it was before it — panels, columns, tab, colours — with
  // what belongs to the room (text size, theme, screenshot settings) and the selection as `now`.
  ViewState close(const ViewState& now);

 private:
  std::optional<Lesson> lesson_;
  int step_ = 0;
  ViewState before_;
  std::uint64_t serial_ = 0;
};

}  // namespace attnscope
