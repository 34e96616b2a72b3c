// The file dialogs — open, save as, export the trace, save PyTorch code, save one map — as a
// small built-in browser (no portal or GTK needed, works under Xvfb), and the unsaved-changes
// prompts (state/controller.h's Prompts: before quitting, opening, starting over or loading a preset;
// the last session's recovery), and the changed-on-disk prompt before a save. On OK they push the command
// that does the work (`open`, `save`, `export_trace`, …; a map as CSV, JSON or .npy is
// `export_map`, as PNG, SVG or PDF `screenshot` of that map; the prompt pushes `unsaved` with the
// answer); they own only their own fields and the remembered settings.
//
// The browser lists folders and files (the files the dialog can use are selectable, the others
// shown dimmed), and starts in the last folder used — else the home folder, never the folder the
// program was started from. The lesson browser (.json lessons) keeps its own folder: the shipped
// assets/lessons the first time, then the folder of the last lesson opened through it. Saving a map, the extension
// follows the chosen format and the format follows a typed extension (formats/export.h, mapFileFormat); an extension
// that is no format is one message, and nothing is written. The layout dump's state holds "file_dialog" (tests).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "panels/panel.h"
#include "state/controller.h"
#include "state/session_files.h"
#include "widgets/kept_text.h"

namespace attnscope {

class FileDialogs {
 public:
  FileDialogs() : settings_(loadSettings()) {}
  // Opens a dialog: open, open_lesson, save_as, export_trace, save_pytorch, export_map (with stage,
  // head and the format first chosen: csv, json, npy, png, svg or pdf). An unknown one is refused.
  void begin(const std::string& which, const std::string& stage = "", int head = 0, const std::string& format = "csv");
  // The file changed on disk since it was opened or saved (another program wrote it): Overwrite
  // (`save` with `overwrite`), Save as…, or Cancel.
  void askOverwrite(const std::string& path) { overwrite_path_ = path; }
  bool saving() const { return which_ == "save_as" || !overwrite_path_.empty(); }  // a save is being asked about
  bool open() const { return !which_.empty() || !overwrite_path_.empty(); }        // a dialog or that prompt is up
  // The dialog open, and the controller's prompts (the unsaved-changes prompt, the recovery offer).
  void draw(const PanelContext& ctx, const Prompts& prompts);
  // A file was opened or saved: recent files and the last folder.
  void remember(const std::string& path) { settings_ = rememberFile(path); }
  // A model the user opened was read (off the UI thread, so after the dialog closed): `why` it could
  // not be opened, or "". One last chosen in the Open model dialog and refused brings the dialog
  // back as it was — folder, name, heads — saying why, so the user mends the choice there rather
  // than browsing again: true. False for one opened, or one this dialog did not choose (a recent
  // file, --model).
  bool modelRead(const std::string& path, const std::string& why);
  const Settings& settings() const { return settings_; }

 private:
  bool browse();                               // the browser body; true when OK was pressed
  bool usable(const std::string& file) const;  // a file this dialog can open or write over
  void typed();                                // the name changed: the format follows its extension
  Settings settings_;
  std::string which_;  // the dialog open, "" for none
  std::string folder_, name_, stage_, format_ = "csv";
  KeptField folder_field_, name_field_;  // their fields: an emoji or a byte that is no UTF-8 in a path kept
  int head_ = 0;
  bool name_wanted_ = false;         // export_map: the name is made once the shown batch element is known
  std::string message_;              // why OK does not go on (an extension that is no format); "" for none
  std::vector<std::string> listed_;  // the files listed in the last frame (the layout dump)
  int trace_format_ = 0;             // export the trace: JSON, CSV, .npy
  float list_height_ = 0;            // the file list's height as the last frame fitted it (0: not yet)
  bool recentre_ = false;            // the dialog reached past the window's edge in the last frame
  int model_heads_ = 0;              // open a model: its heads when it has no config.json (0: d / 64)
  struct ModelChoice {               // the model_open this dialog pushed, until it is opened or refused
    std::string path, folder, name;
  };
  std::optional<ModelChoice> model_chosen_;
  std::string overwrite_path_;       // the changed-on-disk prompt's file, "" for none
  // A prompt answered in this frame, its command not applied yet: not opened again meanwhile.
  bool unsaved_answered_ = false, recovery_answered_ = false;
};

}  // namespace attnscope
