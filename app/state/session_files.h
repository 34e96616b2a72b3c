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

struct Settings {
  std::vector<std::string> recent;  // newest first, at most 10
  std::string last_folder;          // where the file browser opens
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
  // The autosave file to restore at start, or "" when there is none.
  std::string pending() const;

 private:
  bool enabled_;
  std::uint64_t written_version_ = 0;  // the document version last written …
  std::string written_view_;           // … and the view (small, compared as text)
  double last_write_ = -1;
};

}  // namespace attnscope
