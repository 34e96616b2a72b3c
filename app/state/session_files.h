// What the app keeps between runs, in $XDG_STATE_HOME/attnscope (or ~/.local/state/attnscope):
// settings.json (recent files, the last folder) and autosave.json (the workspace being edited,
// written a moment after each change and offered again at the next start).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "editing/document.h"
#include "state/view_state.h"

namespace attnscope {

// The folder, created on demand.
std::string stateFolder();
// $HOME when it is a folder, else "/": where file browsers start when nothing was used yet.
std::string homeFolder();

struct Settings {
  std::vector<std::string> recent;  // newest first, at most 10
  std::string last_folder;          // where the file browser opens; by default the home folder
  std::string lesson_folder;        // where the lesson browser opens; by default the shipped lessons
};
Settings loadSettings();  // what cannot be read keeps its default
void saveSettings(const Settings& s);
void rememberFile(Settings& s, const std::string& path);

class Autosave {
 public:
  explicit Autosave(bool enabled) : enabled_(enabled) {}
  // Writes the document (with the view, its file name and unsaved mark) if it or the view changed
  // and the last write is older than a moment.
  void update(const Document& doc, const ViewState& view, double now);
  // The autosave file, or "" when there is none (or autosaving is off).
  std::string pending() const;

 private:
  bool enabled_;
  std::uint64_t written_version_ = 0;  // the document version last written …
  std::string written_view_;           // … and the view (small, compared as text)
  double last_write_ = -1;
};

// What to do at start with the last session's autosave, so that nothing of the user's work is
// ever overwritten by a fresh session:
// - started without a file: restore it;
// - started with --open FILE: restore it if it is FILE's, unsaved, and newer than FILE (as editors
//   recover swap files); else, if it holds unsaved work of another document, move it aside first.
struct Recovery {
  std::string restore;  // the autosave to restore with the `restore` command, or ""
  std::string note;     // what happened, for the user ("" for nothing worth saying)
};
Recovery planRecovery(const Autosave& autosave, const std::string& open_path);
// Writes a document with unsaved changes that is about to be replaced (by opening another file)
// to the state folder as unsaved-NAME-YYYYmmdd-HHMMSS.json, with its file name and view; returns
// the path, or "" if it could not be written.
std::string keepUnsaved(const Document& doc, const ViewState& view);
// Renames a state file the app cannot use to NAME-kept-YYYYmmdd-HHMMSS.json beside it, so the
// next write cannot destroy it; returns the new path ("" if it could not be moved).
std::string moveAside(const std::string& path);

}  // namespace attnscope
