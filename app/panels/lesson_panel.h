// The lesson panel (docs/DESIGN.md §3.7): while a lesson is open it takes the right-hand column
// (in place of the inspector) and shows the current step — its title, "step k of n", the
// explanation, the notebook's code lines with the step's lines marked, what the notebook prints,
// the maps it is about — with Back and Next. It draws the controller's LessonSession (which lesson,
// which step); the controller applies a step's commands (`lesson_open`, `lesson_step`,
// `lesson_next`, `lesson_back`, `lesson_close`), and the buttons push those commands.
#pragma once
#include <imgui.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "panels/panel.h"
#include "state/lesson_session.h"

namespace attnscope {

class LessonPanel {
 public:
  explicit LessonPanel(const LessonSession& session) : session_(session) {}

  void draw(const PanelContext& ctx, ImVec2 pos, ImVec2 size);
  // The step shown is laid out as it will stay: drawn, and its boxes' sizes the last frame's (they
  // follow the rest of the step measured the frame before, so a new step takes a frame or two).
  // Screenshots wait for it, whatever else made the frames before them.
  bool layoutSettled() const {
    return session_.step() == 0 ||
           (drawn_serial_ == session_.serial() && drawn_step_ == session_.step() && fit_settled_);
  }
  // The layout dump's state: lesson_step (1-based, 0 = none), lesson_maps, lesson_steps, …
  void recordState(nlohmann::json& state) const;

 private:
  const LessonSession& session_;
  std::uint64_t drawn_serial_ = 0;  // the lesson drawn last frame (LessonSession::serial) …
  int drawn_step_ = 0;              // … and its step: a new one starts scrolled to the top
  float rest_h_ = 0;                // the step's body but its two boxes, px, as drawn last frame
  // The sizes the step's code and print-out are drawn at, and what they were worked out for.
  struct BoxFit {
    const void* step = nullptr;  // the LessonStep
    float body_w = 0, font = 0, room = 0, rest_h = 0;
    float code_px = 0, prints_px = 0;
    bool sameAs(const BoxFit& o) const {
      return step == o.step && body_w == o.body_w && font == o.font && room == o.room && rest_h == o.rest_h;
    }
  } box_fit_;
  bool fit_settled_ = false;  // the last frame drew the boxes at the frame before's sizes
  int prints_wrapped_ = 0;    // rows its wrapping added (layout dump)
  float body_overflow_ = 0;   // how far the step's body scrolls, px (layout dump; 0: shown whole)
  bool text_in_view_ = true;  // the step's words on screen whole, in the last frame
  bool more_below_ = false;   // the body scrolls on below the column's edge, in the last frame
  bool text_fits_ = true;     // … not taller than the column
};

}  // namespace attnscope
