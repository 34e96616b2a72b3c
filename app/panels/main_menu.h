// The menu bar: File (new, open, save, exports, presets, screenshots, quit), Edit (undo, redo),
// View (text size, full screen, panels, theme, colours, columns), Help. Every item pushes a command.
#pragma once
#include <string>
#include <vector>

#include "formats/presets.h"
#include "lessons/lesson.h"
#include "panels/panel.h"
#include "widgets/kept_text.h"

namespace attnscope {

class MainMenu {
 public:
  MainMenu() : presets_(presetCatalog()), lessons_(lessonCatalog()) {}
  // `fullscreen`: the window covers a monitor (View › Full screen is checked); `lesson_open`: a
  // lesson is open (File › Close lesson).
  void draw(const PanelContext& ctx, const std::vector<std::string>& recent, bool fullscreen = false,
            bool lesson_open = false);

 private:
  std::vector<PresetInfo> presets_;  // read once: the assets do not change while running
  std::vector<LessonInfo> lessons_;  // assets/lessons, likewise
  bool show_help_ = false;
  std::string screenshot_dir_;  // the folder field being typed
  KeptField screenshot_dir_field_;
};

}  // namespace attnscope
