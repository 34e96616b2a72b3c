// Document: the workspace being edited (docs/DESIGN.md §3.1). It is private: the one way to change
// it is apply(Command) — edit a copy, validate it as a loaded file would be, commit, record one
// undo step. A command that cannot apply throws InputError and changes nothing. Every change bumps
// version(), which is what the engine's snapshots are stamped with.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "editing/command.h"
#include "editing/history.h"
#include "formats/atomic_file.h"
#include "formats/workspace_file.h"

namespace attnscope {

// How applying a command changed the document.
enum class DocumentChange {
  Unchanged,  // it applied but changed nothing (a drag that set the value it had)
  Edited,     // an edit, undo or redo of the same document
  Replaced,   // another workspace: open, preset, new — views reset what belongs to the old one
};

class Document {
 public:
  // `history_bytes`: the undo history's budget (0: no undo, as a lesson's rehearsal needs none).
  explicit Document(Workspace ws = bookExample(), std::string file = "", bool dirty = false, Limits limits = {},
                    std::size_t history_bytes = History::kDefaultBudget);

  const Workspace& workspace() const { return ws_; }
  std::uint64_t version() const { return version_; }
  const std::string& file() const { return file_; }  // absolute path; empty = untitled
  bool dirty() const { return dirty_; }              // edits since it was opened or saved
  const History& history() const { return history_; }
  const Limits& limits() const { return limits_; }
  // Other limits from now on (the app's, while a result is pinned): the workspace must fit them,
  // else InputError and nothing changes.
  void setLimits(const Limits& limits);
  // What the last apply() changed beyond what the command said, for the user to see: num_heads
  // moved to fit a new d_out, a step's notebook seed replacing the user's. Empty when nothing.
  const std::string& note() const { return note_; }

  // Applies a command whose target is CommandTarget::Document. Throws InputError (the reason,
  // naming the argument or field) and leaves everything as it was.
  DocumentChange apply(const Command& c);
  // A drag or a typed value ended: the next edit starts a new undo step.
  void endGesture() { history_.endGesture(); }

  // Start over with another workspace and a new history (restoring an autosave).
  void reset(Workspace ws, std::string file, bool dirty);
  // The document was written to `path`: it is now its file, with no unsaved changes.
  void markSaved(const std::string& path);
  // Whether the document's file changed on disk since it was opened or saved here: another program
  // wrote it (or replaced it). A file that is gone has not changed: saving writes it again.
  bool fileChangedOnDisk() const;
  // The file's stamp when it was opened or saved (for the autosave), exists = false if none.
  FileStamp fileStamp() const { return file_ == stamped_file_ ? file_stamp_ : FileStamp{}; }

 private:
  // Applies `change` to a copy, validates, commits, records the step under `gesture`.
  // `untitled`: the edit replaces the workspace and leaves the document untitled (preset, New);
  // the step remembers the file name, so undo brings it back.
  DocumentChange edit(const std::function<void(Workspace&)>& change, const std::string& gesture, bool untitled = false);
  // An edit of the inputs or the model: edit(), and the preset's note is dropped (it described
  // the preset as it was).
  DocumentChange editContent(const std::function<void(Workspace&)>& change, const std::string& gesture);
  // `set` and `model`: the fields, num_heads fitted to a new d_out, and the note saying so.
  DocumentChange editModel(const nlohmann::json& fields, const std::string& gesture);
  void bump() { ++version_; }

  Workspace ws_;
  Workspace saved_;                  // as last opened or saved: undoing back to it clears the unsaved mark
  std::optional<Workspace> loaded_;  // the last preset or New as it loaded: nothing to save either
  std::string file_;
  std::string stamped_file_;  // the file whose stamp was taken when it was opened or saved …
  FileStamp file_stamp_;      // … and that stamp (formats/atomic_file.h)
  bool dirty_ = false;
  History history_;
  Limits limits_;
  std::uint64_t version_ = 1;
  std::string note_;
  // The num_heads the user chose while a d_out that it does not divide has moved it (0: none);
  // it comes back once d_out allows. Forgotten when num_heads or the step is set, on undo and on
  // another workspace.
  int wanted_heads_ = 0;
};

// The document's name for a file: absolute and normalized ("/a/./b/../c.json" → "/a/c.json"), so
// two spellings of one file compare equal.
std::string documentPath(const std::string& path);

// A file name in JSON, which cannot carry bytes that are not UTF-8: "file" holds it readable (bad
// bytes shown as U+FFFD) and, only when it has such bytes, "file_hex" holds every byte.
void putFileName(nlohmann::json& view, const std::string& path);
std::string fileNameOf(const nlohmann::json& view);  // "" when there is none
// The file's stamp as it was when the document was opened or saved ("file_stamp"), so a restored
// autosave still notices that another program wrote the file since.
void putFileStamp(nlohmann::json& view, const FileStamp& stamp);
FileStamp fileStampOf(const nlohmann::json& view);  // exists = false when there is none

// Sets model fields from a JSON object {"d_out": 4, …}, parsed as a workspace's "model" is (the
// same names, types and messages). Switching `variant` starts from that step's notebook settings
// (its seed, widths and batch), then applies the other given fields.
void setModelFields(Workspace& ws, const nlohmann::json& fields);

}  // namespace attnscope
