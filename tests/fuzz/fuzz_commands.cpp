// fuzz_commands: command lists and the document (core/editing/command.h, document.h). The input
// is a --commands file: parseCommandList refuses it with an InputError or gives commands, which
// are applied in order to a Document on the book's example (small limits: T ≤ 64, d ≤ 64). As the
// app does, consecutive edits of the same cell or model field form one gesture (one undo step).
// `open` and `restore` read only the seed files of tests/fuzz/corpus: the file name of their path
// is looked up in corpus/fuzz_workspace/ (corpus/fuzz_png/ for *.png), so the fuzzer can open
// workspaces with a random recipe or a PNG, never another file. `preset` runs as it is, since
// only the names of assets/presets resolve. After every command:
//   - a refused command (InputError) left the workspace and version() as they were;
//   - "unchanged" means unchanged; an edit bumps version();
//   - the workspace is consistent (tokens = rows, validateModel passes, a random recipe makes
//     exactly its embeddings), and saving and loading it gives the same workspace.
// At the end, what the list left undone is redone; then every step is undone — which must give
// back the book's example, or the last file opened — and redone, which must give back the last
// workspace.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "editing/document.h"
#include "fuzz_common.h"

namespace {

// Which gesture a command belongs to: the app gives one drag of a cell or a slider one name.
std::string gestureOf(const attnscope::Command& c) {
  if (c.name == "set_cell" && c.has("row") && c.has("col"))
    return "cell:" + c.args["row"].dump() + ":" + c.args["col"].dump();
  if (c.name == "set" && c.has("field")) return "set:" + c.args["field"].dump();
  return "";
}

// `open` and `restore` of the seed files only (ATTNSCOPE_FUZZ_CORPUS: tests/fuzz/corpus). Returns
// false for a path that names no file (the command is skipped).
bool confinePath(attnscope::Command& c) {
  if (!c.has("path") || !c.args["path"].is_string()) return true;  // apply refuses it
  const std::filesystem::path name = std::filesystem::path(c.args["path"].get<std::string>()).filename();
  if (name.empty() || name == "." || name == "..") return false;
  const char* folder = name.extension() == ".png" ? "fuzz_png" : "fuzz_workspace";
  c.args["path"] = (std::filesystem::path(ATTNSCOPE_FUZZ_CORPUS) / folder / name).string();
  return true;
}

void checkDocument(const attnscope::Document& doc, const attnscope::Limits& limits, const std::string& where) {
  attnscope::fuzz::checkConsistent(doc.workspace(), limits, where.c_str());
  attnscope::fuzz::checkRoundTrip(doc.workspace(), limits, where.c_str());
}

std::size_t redoAll(attnscope::Document& doc, const attnscope::Limits& limits, const std::string& what) {
  std::size_t redone = 0;
  while (doc.history().canRedo()) {
    try {
      doc.apply(attnscope::makeCommand("redo"));
    } catch (const std::exception& e) {
      attnscope::fuzz::finding(what + ": redo with canRedo() true threw: " + e.what());
    }
    ++redone;
    checkDocument(doc, limits, what + " " + std::to_string(redone));
  }
  return redone;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attnscope;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<Command> commands;
  try {
    commands = parseCommandList(text);
  } catch (const InputError&) {
    return 0;
  } catch (const std::exception& e) {
    fuzz::unexpected("parseCommandList", e);
  }

  const Limits limits = fuzz::smallLimits();
  Workspace initial = bookExample();  // what undoing every step gives back
  Document doc(initial, "", false, limits);
  std::size_t most_history = 0;
  std::string open_gesture;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    Command c = commands[i];
    const bool opens = c.name == "open" || c.name == "restore";
    if (opens && !confinePath(c)) continue;
    const std::string where = "command " + std::to_string(i) + " " + commandToJson(c).dump();
    c.gesture = gestureOf(c);
    if (c.gesture != open_gesture) doc.endGesture();
    open_gesture = c.gesture;

    const Workspace before = doc.workspace();
    const std::uint64_t version = doc.version();
    try {
      const DocumentChange change = doc.apply(c);
      if (change == DocumentChange::Unchanged) {
        fuzz::checkSame(before, doc.workspace(), (where + " (unchanged)").c_str());
        FUZZ_CHECK(doc.version() == version, where + ": unchanged, yet the version moved");
      } else {
        FUZZ_CHECK(doc.version() > version, where + ": changed, yet the version stayed");
      }
    } catch (const InputError&) {
      fuzz::checkSame(before, doc.workspace(), (where + " (refused)").c_str());
      FUZZ_CHECK(doc.version() == version, where + ": refused, yet the version moved");
    } catch (const std::exception& e) {
      fuzz::unexpected(where.c_str(), e);
    }
    checkDocument(doc, limits, where);
    if (opens && doc.version() != version) {  // another document, with a history of its own
      FUZZ_CHECK(!doc.history().canUndo() && !doc.history().canRedo(), where + ": opened, yet there is a history");
      initial = doc.workspace();
      most_history = 0;
    }
    if (doc.history().bytes() > most_history) most_history = doc.history().bytes();
  }

  // Redo what the list left undone, then undo everything, then redo everything. History may
  // drop the oldest steps past its budget; with these limits a step is a few KiB, so that only
  // happens for huge inputs: then the book's example is not expected back.
  const bool complete = most_history < History::kDefaultBudget / 2;
  redoAll(doc, limits, "redo what the list left undone");
  const Workspace last = doc.workspace();
  std::size_t undone = 0;
  while (doc.history().canUndo()) {
    try {
      doc.apply(makeCommand("undo"));
    } catch (const std::exception& e) {
      fuzz::finding(std::string("undo with canUndo() true threw: ") + e.what());
    }
    ++undone;
    checkDocument(doc, limits, "undo " + std::to_string(undone));
  }
  if (complete)
    fuzz::checkSame(initial, doc.workspace(), "after undoing every step (vs the book's example or the file opened)");
  const std::size_t redone = redoAll(doc, limits, "redo");
  FUZZ_CHECK(redone == undone, std::to_string(undone) + " steps undone but " + std::to_string(redone) + " redone");
  fuzz::checkSame(last, doc.workspace(), "after redoing every step (vs the last workspace)");
  return 0;
}
