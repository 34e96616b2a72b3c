// What the app keeps between runs, in $XDG_STATE_HOME/attnscope (or ~/.local/state/attnscope;
// stateFolder(), formats/temporary_files.h): settings.json (recent files, the last folders) and
// each running instance's autosave (the workspace being edited, written a moment after each change
// and offered again at the next start) — docs/DESIGN.md §3.5.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "editing/document.h"
#include "state/off_thread.h"
#include "formats/temporary_files.h"
#include "state/view_state.h"

namespace attnscope {

// $HOME when it is a folder, else "/": where file browsers start when nothing was used yet.
std::string homeFolder();

struct Settings {
  std::vector<std::string> recent;  // newest first, at most 10
  std::string last_folder;          // where the file browser opens; by default the home folder
  std::string lesson_folder;        // where the lesson browser opens; by default the shipped lessons
};
Settings loadSettings();  // what cannot be read keeps its default
// Reads the settings as they are on disk, changes them and writes them back, under a lock: two
// instances never lose each other's recent files. Returns the settings as written.
Settings updateSettings(const std::function<void(Settings&)>& change);
Settings rememberFile(const std::string& path);  // a file opened or saved: recent files, last folder

// One running interactive app per slot of the state folder, held by an flock on
// instance-N.lock for the process's life (a crash releases it): slot 1 autosaves to autosave.json,
// slot N to autosave-N.json, so two instances never overwrite each other's autosave. Slot 0: no
// slot could be taken (the folder cannot be written), autosave.json is used and its failures said.
class InstanceSlot {
 public:
  static InstanceSlot take();
  InstanceSlot(InstanceSlot&& o) noexcept : number_(o.number_), fd_(o.fd_) { o.fd_ = -1; }
  InstanceSlot& operator=(InstanceSlot&&) = delete;
  ~InstanceSlot();
  int number() const { return number_; }
  std::string autosavePath() const;
  // The autosaves of other slots that no running instance holds (a second instance that crashed or
  // quit): those with unsaved work are kept aside as autosave-kept-DATE.json, the others removed.
  // Returns what the user should hear, or "".
  std::string collectOrphans() const;

 private:
  InstanceSlot(int number, int fd) : number_(number), fd_(fd) {}
  int number_ = 0;
  int fd_ = -1;
};
constexpr int kMaxInstances = 16;

class Autosave {
 public:
  explicit Autosave(std::string path = "") : path_(std::move(path)) {}  // "": autosaving is off
  // Writes the document (with the view, its file name, stamp and unsaved mark) if it or the view
  // changed and the last write is older than a moment — on a thread of its own (a GPT-2-sized
  // workspace is 35 MB of text: 240 ms that held the window and the notebook's reply), from a copy
  // taken here, one write at a time; the next is taken once it is done. `trained_model`: the open
  // model's (ModelSession::saved), kept in the view as "trained_model" when not null; `unsaved`:
  // the unsaved mark, the document's or the model's text (Controller::unsaved).
  void update(const Document& doc, const ViewState& view, double now, const nlohmann::json& trained_model,
              bool unsaved);
  // The autosave file, or "" when there is none (or autosaving is off).
  std::string pending() const;
  // A change of state the user must hear of, once: autosaving stopped working (a full or read-only
  // state folder) or works again; nullopt otherwise. `second` is whether it is an error.
  std::optional<std::pair<std::string, bool>> takeMessage() { return std::exchange(message_, std::nullopt); }

 private:
  struct Written {  // what the writing thread did
    std::uint64_t version = 0;
    std::string view_text;
    std::string error;  // empty: written
    double seconds = 0;  // how long it took
  };
  std::string path_;
  std::uint64_t written_version_ = 0;  // the document version last written …
  std::string written_view_;           // … and the view (small, compared as text)
  double last_write_ = -1;
  double gap_ = 0.5;  // the least time between writes: 10 × the last write's (a large workspace's
                      // 240 ms of text were a core's every half second beside the engine)
  // The write in progress (a pointer: the Autosave itself is replaced when the path changes).
  std::shared_ptr<OffThread<Written>> writing_ = std::make_shared<OffThread<Written>>();
  bool failing_ = false;
  std::optional<std::pair<std::string, bool>> message_;
};

// What to do at start with the last session's autosave, so that nothing of the user's work is
// ever overwritten by a fresh session:
// - started without a file: restore it;
// - started with --open FILE: restore it if it is FILE's, unsaved, and newer than FILE (as editors
//   recover swap files); else, if it holds unsaved work of another document, move it aside first.
// Only the autosave's header (its view, written first) is read.
struct Recovery {
  std::string restore;  // the autosave to restore with the `restore` command, or ""
  std::string offer;    // unsaved changes to the file asked for, newer than it: kept here and offered, or ""
  std::string note;     // what happened, for the user ("" for nothing worth saying)
};
Recovery planRecovery(const Autosave& autosave, const std::string& open_path);
// Writes a document with unsaved changes that is about to be replaced (by opening another file)
// to the state folder as unsaved-NAME-YYYYmmdd-HHMMSS.json (-2, -3, … when that name is taken: never
// over another), with its file name and view; returns the path, or "" if it could not be written.
std::string keepUnsaved(const Document& doc, const ViewState& view, const nlohmann::json& trained_model = nullptr);
// Renames a state file the app cannot use to NAME-kept-YYYYmmdd-HHMMSS.json beside it (-2, -3, …
// if taken; the rename never replaces a file), so the next write cannot destroy it; returns the new
// path ("" if it could not be moved).
std::string moveAside(const std::string& path);
// The view of an autosave as written there (file name, unsaved mark, stamp), read from its first
// members; an empty object when it has none or cannot be read.
nlohmann::json autosaveView(const std::string& path);

}  // namespace attnscope
