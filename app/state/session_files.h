// Files: the workspace on disk (open, save, save as, recent files, the last folder), the
// autosave that is restored at the next start, and a small file browser for paths.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "state/app_state.h"

namespace attnscope {

// $XDG_STATE_HOME/attnscope or ~/.local/state/attnscope (created on demand).
std::string stateFolder();

// Remembered between runs: recent files and the last folder (settings.json in stateFolder()).
struct Settings {
  std::vector<std::string> recent;  // newest first, at most 10
  std::string last_folder;          // where the file browser opens
};
Settings loadSettings();
void saveSettings(const Settings& s);
void rememberFile(Settings& s, const std::string& path);

// The autosave: the current workspace (with its view and the file it belongs to) written a
// moment after each change, atomically, and read back at start when no file is given.
class Autosave {
 public:
  explicit Autosave(bool enabled) : enabled_(enabled) {}
  // Writes if the state changed and the last write is older than a moment.
  void update(const AppState& app, double now);
  // The autosaved workspace, if any; sets `file` and `dirty` to what they were.
  bool restore(AppState& app) const;

 private:
  bool enabled_;
  std::uint64_t written_version_ = 0;  // the inputs' version last written …
  std::string written_view_;           // … and the view (small, compared as text)
  double last_write_ = -1;
};

// Open, save and save-as with dialogs; the quit prompt. Draw once per frame.
class FileUi {
 public:
  FileUi();
  void open();                                           // ask for a workspace (or PNG) to open
  void saveAs();                                         // ask where to save
  bool save(AppState& app, double now);                  // to app.file, or ask; true when saved
  void exportTrace();                                    // ask for a folder and a format
  void savePytorch();                                    // ask where to write the script
  void exportMatrix(const std::string& default_name, std::function<std::string(const std::string&)> write);
  bool openPath(AppState& app, const std::string& path, double now);
  void requestQuit(AppState& app, bool* quit_now);       // prompts when there are unsaved changes
  void draw(AppState& app, double now, bool* quit_now);  // the dialogs
  const Settings& settings() const { return settings_; }

 private:
  enum class Mode { None, Open, SaveAs, ExportTrace, SavePytorch, ExportMatrix };
  void begin(Mode mode, const std::string& name);
  bool browse();  // the browser body; true when OK was pressed
  Settings settings_;
  Mode mode_ = Mode::None;
  std::string folder_, name_, error_;
  int export_format_ = 0;
  bool confirm_quit_ = false;
  std::function<std::string(const std::string&)> write_matrix_;
};

}  // namespace attnscope
