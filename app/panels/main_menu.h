// The menu bar: File (new, open, save, exports, presets, screenshots, quit), Edit (undo, redo),
// View (inspector, theme, colours, columns), Help. Every item pushes a command.
#pragma once
#include <string>
#include <vector>

#include "formats/presets.h"
#include "panels/panel.h"

namespace attnscope {

class MainMenu {
 public:
  MainMenu() : presets_(presetCatalog()) {}
  void draw(const PanelContext& ctx, const std::vector<std::string>& recent);

 private:
  std::vector<PresetInfo> presets_;  // read once: the assets do not change while running
  bool show_help_ = false;
  std::string screenshot_dir_;       // the folder field being typed
};

}  // namespace attnscope
