// The file dialogs — open, save as, export the trace, save PyTorch code, export one map — as a
// small built-in browser (no portal or GTK needed, works under Xvfb), and the unsaved-changes
// prompt before quitting, opening, starting over or loading a preset. On OK they push the command
// that does the work (`open`, `save`, `export_trace`, …; the prompt pushes `unsaved` with the
// answer); they own only their own fields and the remembered settings.
#pragma once
#include <string>

#include "panels/panel.h"
#include "state/session_files.h"

namespace attnscope {

class FileDialogs {
 public:
  FileDialogs() : settings_(loadSettings()) {}
  // Opens a dialog: open, save_as, export_trace, save_pytorch, export_map (with stage, head, format).
  void begin(const std::string& which, const std::string& stage = "", int head = 0, const std::string& format = "csv");
  // The unsaved-changes prompt before `action` (quit, open, new, preset), `doing` it ("quitting").
  void askUnsaved(const std::string& action, const std::string& doing) {
    unsaved_action_ = action;
    unsaved_doing_ = doing;
  }
  void closeUnsaved() { unsaved_action_.clear(); }  // answered (by a script)
  bool saving() const { return which_ == "save_as"; }  // the Save as dialog is open
  void draw(const PanelContext& ctx);
  // A file was opened or saved: recent files and the last folder.
  void remember(const std::string& path) { rememberFile(settings_, path); }
  const Settings& settings() const { return settings_; }

 private:
  bool browse();  // the browser body; true when OK was pressed
  Settings settings_;
  std::string which_;  // the dialog open, "" for none
  std::string folder_, name_, stage_, format_ = "csv";
  int head_ = 0;
  int trace_format_ = 0;  // export the trace: JSON, CSV, .npy
  std::string unsaved_action_, unsaved_doing_;  // the prompt, "" for none
};

}  // namespace attnscope
