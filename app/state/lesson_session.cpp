#include "state/lesson_session.h"

namespace attnscope {

void LessonSession::begin(Lesson lesson, const ViewState& before) {
  if (!lesson_) before_ = before;
  lesson_ = std::move(lesson);
  step_ = 0;
  ++serial_;
}

ViewState LessonSession::close(const ViewState& now) {
  ViewState v = now;
  v.presentation = before_.presentation;
  v.show_model = before_.show_model;
  v.show_inputs = before_.show_inputs;
  v.show_inspector = before_.show_inspector;
  v.show_status = before_.show_status;
  v.show = before_.show;
  v.tab = before_.tab;
  v.colormap = before_.colormap;
  v.diverging_for_signed = before_.diverging_for_signed;
  v.shared_scale = before_.shared_scale;
  v.weights_fixed = before_.weights_fixed;
  v.highlight.clear();
  lesson_.reset();
  step_ = 0;
  return v;
}

}  // namespace attnscope
