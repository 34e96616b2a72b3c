#include "editing/document.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include "editing/parameter_edits.h"
#include "editing/paste.h"
#include "editing/token_table.h"
#include "engine/errors.h"
#include "formats/import_workspace.h"
#include "formats/png_image.h"
#include "formats/presets.h"

namespace attnscope {

namespace {

constexpr std::uint32_t kDefaultInputSeed = 123;  // the inputs panel's seed when none is given

std::uint32_t seedArg(const Command& c) {
  if (!c.has("seed")) return kDefaultInputSeed;
  const nlohmann::json& v = c.args["seed"];
  if (v.is_number_unsigned() ? v.get<std::uint64_t>() > 4294967295ULL
                             : v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > 4294967295LL)
    throw InputError("seed: must be between 0 and 4294967295, got " + v.dump());
  return static_cast<std::uint32_t>(v.get<std::int64_t>());
}


// The count of heads nearest to `wanted` that divides d_out (the fewer heads on a tie: wider ones).
int nearestDivisor(int d_out, int wanted, int max_heads) {
  int best = 1;
  for (int h = 1; h <= std::min(d_out, max_heads); ++h)
    if (d_out % h == 0 && std::abs(h - wanted) < std::abs(best - wanted)) best = h;
  return best;
}

// "2b" of "2b · Trainable weights (SelfAttention_v2)": the step's number in the notebook.
std::string stepNumber(Variant v) {
  const std::string title = variantTitle(v);
  return title.substr(0, title.find(' '));
}

}  // namespace

std::string documentPath(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::absolute(path, ec);
  return (ec ? std::filesystem::path(path) : p).lexically_normal().string();
}

namespace {

bool validUtf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

}  // namespace

void putFileName(nlohmann::json& view, const std::string& path) {
  if (validUtf8(path)) {
    view["file"] = path;
    return;
  }
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : path) hex += {digits[c >> 4], digits[c & 15]};
  view["file"] = path;  // dumped with U+FFFD for the bad bytes
  view["file_hex"] = hex;
}

void putFileStamp(nlohmann::json& view, const FileStamp& stamp) {
  if (!stamp.exists) return;
  view["file_stamp"] = {{"device", stamp.device},
                        {"inode", stamp.inode},
                        {"size", stamp.size},
                        {"modified_ns", stamp.modified_ns}};
}

FileStamp fileStampOf(const nlohmann::json& view) {
  FileStamp s;
  if (!view.is_object() || !view.contains("file_stamp") || !view["file_stamp"].is_object()) return s;
  const nlohmann::json& j = view["file_stamp"];
  for (const char* key : {"device", "inode", "size"})
    if (!j.contains(key) || !j[key].is_number_unsigned()) return s;
  if (!j.contains("modified_ns") || !j["modified_ns"].is_number_integer()) return s;
  s.exists = true;
  s.device = j["device"].get<std::uint64_t>();
  s.inode = j["inode"].get<std::uint64_t>();
  s.size = j["size"].get<std::uint64_t>();
  s.modified_ns = j["modified_ns"].get<std::int64_t>();
  return s;
}

std::string fileNameOf(const nlohmann::json& view) {
  if (!view.is_object()) return "";
  if (view.contains("file_hex") && view["file_hex"].is_string()) {
    const std::string hex = view["file_hex"].get<std::string>();
    std::string out;
    auto nibble = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
    bool ok = hex.size() % 2 == 0;
    for (std::size_t i = 0; ok && i < hex.size(); i += 2) {
      const int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
      ok = hi >= 0 && lo >= 0;
      out.push_back(static_cast<char>(hi * 16 + lo));
    }
    if (ok) return out;
  }
  return view.contains("file") && view["file"].is_string() ? view["file"].get<std::string>() : "";
}

void setModelFields(Workspace& ws, const nlohmann::json& fields) {
  if (!fields.is_object()) throw InputError("fields: expected an object such as {\"d_out\": 4}");
  nlohmann::json model = modelToJson(ws.model);
  if (fields.contains("variant") && fields["variant"] != variantId(ws.model.variant)) {
    // Another step, as the notebook runs it: that step's own defaults.
    model = nlohmann::json{{"variant", fields["variant"]}};
    if (fields["variant"] == "simple" && !fields.contains("d_out")) model["d_out"] = ws.embeddings.cols();
  }
  for (auto it = fields.begin(); it != fields.end(); ++it) model[it.key()] = it.value();
  // The user's own parameters (not in the model's JSON) stay with their step: another step starts
  // from its seeded initialization. In the same step they stay, and validateModel refuses a change
  // they no longer fit (d_out, num_heads, qkv_bias), naming the tensor.
  const Variant before = ws.model.variant;
  std::shared_ptr<const ParameterValues> parameters = ws.model.parameters;
  ws.model = parseModel(model);
  if (ws.model.variant == before) ws.model.parameters = std::move(parameters);
  if (ws.model.variant == Variant::Simple && ws.model.d_out == 0)
    ws.model.d_out = static_cast<int>(ws.embeddings.cols());
}

Document::Document(Workspace ws, std::string file, bool dirty, Limits limits, std::size_t history_bytes)
    : ws_(std::move(ws)), saved_(ws_), file_(std::move(file)), dirty_(dirty), history_(history_bytes), limits_(limits) {
  stamped_file_ = file_;  // the file as it is now, just read by the caller
  file_stamp_ = attnscope::fileStamp(file_);
}

DocumentChange Document::edit(const std::function<void(Workspace&)>& change, const std::string& gesture,
                              bool untitled) {
  Workspace next = ws_;
  try {
    change(next);
    // A batch's own sequences no longer fit once T, d_in or the batch size changed: set aside as
    // part of this step (undo brings them back); element 1 is the table the user edits.
    if (!batchSequencesFit(next)) {
      next.batch_sequences.clear();
      note_ += (note_.empty() ? "" : "; ") +
               std::string(
                   "the batch's own sequences (elements 2 and on) no longer fit and are set aside: every "
                   "element reads the table now (Ctrl+Z brings them back)");
    }
    validateWorkspace(next, limits_);  // as a loaded file: names, model, and that its file opens again
  } catch (const InputError& e) {
    // A change of shape the user's own parameters no longer fit: say what to do about it.
    const std::string what = e.what();
    if (ws_.model.parameters && !ws_.model.parameters->empty() && what.rfind("parameters.", 0) == 0)
      throw InputError(what +
                       "; your own parameters are for this shape: Weights › Back to the seeded initialization "
                       "first (undo brings them back)");
    throw;
  }
  if (equalWorkspaces(ws_, next)) return DocumentChange::Unchanged;
  history_.record(ws_, next, gesture, untitled ? std::optional<std::array<std::string, 2>>({file_, ""}) : std::nullopt);
  if (untitled) file_.clear();
  ws_ = std::move(next);
  dirty_ = true;
  bump();
  return DocumentChange::Edited;
}

DocumentChange Document::editContent(const std::function<void(Workspace&)>& change, const std::string& gesture) {
  return edit(
      [&](Workspace& w) {
        change(w);
        // A preset's note describes the preset ("Half of the weights are dropped", "the output's
        // first row is [0.3190, 0.4858]"): once its inputs or model change it may be false. Undo
        // brings it back with the preset's state; an edit that changes nothing keeps it.
        if (w.view.is_object() && w.view.contains("preset") && !equalWorkspaces(w, ws_)) w.view.erase("preset");
      },
      gesture);
}

DocumentChange Document::editModel(const nlohmann::json& fields, const std::string& gesture) {
  const ModelConfig before = ws_.model;
  // A new d_out for multi-head attention moves num_heads to the nearest count that divides it
  // (the seed's assert), nearest to the count the user chose, which comes back as soon as d_out
  // allows: a drag from 2 to 14 passes 3, 5, 7 … and ends with 2 heads again. A num_heads that is
  // given is never changed: one that does not divide is refused.
  const bool fit = fields.is_object() && fields.contains("d_out") && !fields.contains("num_heads");
  int wanted = 0;
  const DocumentChange change = editContent(
      [&](Workspace& w) {
        setModelFields(w, fields);
        ModelConfig& m = w.model;
        if (!fit || m.variant != Variant::MultiHead || m.d_out < 1) return;
        wanted = m.variant == before.variant && wanted_heads_ > 0 ? wanted_heads_ : m.num_heads;
        m.num_heads = nearestDivisor(m.d_out, wanted, limits_.max_heads);
      },
      gesture);
  if (change == DocumentChange::Unchanged) return change;
  const ModelConfig& m = ws_.model;
  if (fields.contains("num_heads") || m.variant != before.variant) wanted_heads_ = 0;
  if (wanted > 0 && m.num_heads != wanted) {
    wanted_heads_ = wanted;
    const std::string w = std::to_string(wanted);  // short: the status bar shows it beside its own text
    note_ = "num_heads " + w + " → " + std::to_string(m.num_heads) + ": d_out " + std::to_string(m.d_out) +
            " is not divisible by " + w + " (back to " + w + " once it is)";
  } else if (wanted > 0) {
    wanted_heads_ = 0;
    if (before.num_heads != wanted && m.variant == before.variant)
      note_ = "num_heads back to " + std::to_string(wanted) + ": d_out " + std::to_string(m.d_out) +
              " is divisible by it";
  }
  if (m.variant != before.variant && before.parameters && !before.parameters->empty())
    note_ += (note_.empty() ? "" : "; ") + std::string("your parameters stay with step ") + stepNumber(before.variant) +
             ": step " + stepNumber(m.variant) + " starts from its seeded initialization (undo brings them back)";
  // Choosing a step runs it as the notebook does, with its seed (docs/DESIGN.md §3.2): say so when
  // that replaced the user's seed. 'simple' has no random parameters.
  if (m.variant != before.variant && m.seed != before.seed && m.variant != Variant::Simple && !fields.contains("seed"))
    note_ += (note_.empty() ? "" : "; ") + std::string("seed ") + std::to_string(m.seed) + " (was " +
             std::to_string(before.seed) + "): step " + stepNumber(m.variant) + " runs with the notebook's seed";
  return change;
}

DocumentChange Document::apply(const Command& c) {
  if (c.info().target != CommandTarget::Document) throw InputError("not an edit of the workspace");
  note_.clear();
  const std::string& g = c.gesture;
  using Id = CommandId;
  switch (c.id()) {
    case Id::Open: {  // another document: a new history, as any editor opens a file
      const std::string path = c.text("path");
      const FileStamp stamp = attnscope::fileStamp(path);  // before reading: a write while it is read is a change
      Workspace ws = loadWorkspace(path, limits_);
      // A PNG opens untitled, and so does a preset's file: Save asks for a name, never writing into
      // the app's own presets folder.
      const bool untitled = isPng(path) || isPresetFile(path);
      reset(std::move(ws), untitled ? "" : documentPath(path), false);
      stamped_file_ = file_;
      file_stamp_ = stamp;
      return DocumentChange::Replaced;
    }
    case Id::Restore: {  // the autosave knows which file it belonged to and whether it was saved
      Workspace ws = loadWorkspace(c.text("path"), limits_);
      const nlohmann::json& v = ws.view;
      std::string file = fileNameOf(v);
      if (isPresetFile(file)) file.clear();  // an older session's preset file: untitled, as it opens now
      const bool dirty = !v.contains("dirty") || !v["dirty"].is_boolean() || v["dirty"].get<bool>();
      const FileStamp stamp = fileStampOf(v);  // the file as the last session knew it
      reset(std::move(ws), file, dirty);
      stamped_file_ = file_;
      file_stamp_ = stamp.exists ? stamp : attnscope::fileStamp(file_);
      return DocumentChange::Replaced;
    }
    case Id::Preset:
    case Id::New: {  // undoable, and untitled until saved
      Workspace ws = c.id() == Id::New ? bookExample(ws_.model.variant)
                                       : loadWorkspace(presetPath(c.text("name")), limits_);
      if (edit([&ws](Workspace& w) { w = ws; }, "", true) == DocumentChange::Unchanged)
        return DocumentChange::Unchanged;
      // Nothing of the user's to save yet: switching presets, or stepping through a lesson, does
      // not ask about unsaved changes (the work left behind was asked about before, and stays in
      // Undo, as saved or unsaved as it was).
      loaded_ = ws_;
      dirty_ = false;
      wanted_heads_ = 0;
      return DocumentChange::Replaced;
    }
    case Id::Undo:
    case Id::Redo: {
      const bool undo = c.id() == Id::Undo;
      Workspace next = ws_;
      // Undoing a preset or New gives the document back its file name (redo: untitled again).
      if (!(undo ? history_.undo(next, &file_) : history_.redo(next, &file_)))
        throw InputError(undo ? "nothing to undo" : "nothing to redo");
      ws_ = std::move(next);
      // Back where it was saved, or at a preset as it loaded: nothing unsaved.
      dirty_ = !equalWorkspaces(ws_, saved_) && !(loaded_ && equalWorkspaces(ws_, *loaded_));
      wanted_heads_ = 0;  // the num_heads on screen is the one to keep now
      bump();
      return DocumentChange::Edited;
    }
    case Id::Sentence: {
      const std::uint32_t seed = seedArg(c);
      return editContent([&](Workspace& w) { setSentence(w, c.text("text"), seed, limits_); }, g);
    }
    case Id::AddToken: {
      const int at = c.has("at") ? c.integer("at") : tokenCount(ws_);
      const std::uint32_t seed = c.has("seed") ? seedArg(c) : kDefaultInputSeed + static_cast<std::uint32_t>(at);
      const std::string name = c.has("name") ? c.text("name") : "";
      return editContent([&](Workspace& w) { insertToken(w, at, name, seed, limits_); }, g);
    }
    case Id::RemoveToken: return editContent([&](Workspace& w) { removeToken(w, c.integer("index")); }, g);
    case Id::RenameToken:
      return editContent([&](Workspace& w) { renameToken(w, c.integer("index"), c.text("name")); }, g);
    case Id::MoveToken: return editContent([&](Workspace& w) { moveToken(w, c.integer("from"), c.integer("to")); }, g);
    case Id::Set: return editModel(nlohmann::json{{c.text("field"), c.args["value"]}}, g);
    case Id::Model: return editModel(c.args["fields"], g);
    case Id::SetCell: {
      const double v = c.number("value");
      if (std::fabs(v) >= 3.4028235677973366e38)  // rounds to ±∞ as a float32 (and casting is undefined)
        throw InputError("embeddings[" + std::to_string(c.integer("row")) + "][" + std::to_string(c.integer("col")) +
                         "]: not a finite number as float32: " + c.args["value"].dump());
      return editContent(
          [&](Workspace& w) { setEmbedding(w, c.integer("row"), c.integer("col"), static_cast<float>(v)); }, g);
    }
    case Id::DIn: {
      const std::uint32_t seed = seedArg(c);
      return editContent([&](Workspace& w) { setInputWidth(w, c.integer("value"), seed, limits_); }, g);
    }
    case Id::Randomize: {
      const std::uint32_t seed = seedArg(c);
      return editContent([&](Workspace& w) { randomizeEmbeddings(w, seed); }, g);
    }
    case Id::BookExample: return editContent([](Workspace& w) { resetToBookExample(w); }, g);
    case Id::Workspace: {  // checked whole as a file would be; the view (and so the file's notes) stays
      // Its numbers as a channel message's tensors brought them (Command::arrays), or in the JSON.
      const Workspace given = c.arrays ? parseWorkspace(JsonWithNumbers{c.args["json"], *c.arrays}, limits_)
                                       : parseWorkspace(c.args["json"].dump(), limits_);
      return editContent(
          [&given](Workspace& w) {
            nlohmann::json view = std::move(w.view);
            w = given;
            w.view = std::move(view);
          },
          g);
    }
    case Id::Reload: {  // the file as a notebook rewrote it: one undo step, then nothing unsaved
      if (file_.empty()) throw InputError("reload: this workspace has no file yet: save it first");
      const FileStamp stamp = attnscope::fileStamp(file_);  // before reading: a write while it is read is a change
      Workspace given = loadWorkspace(file_, limits_);
      const DocumentChange change = editContent(
          [&given](Workspace& w) {
            nlohmann::json view = std::move(w.view);
            w = std::move(given);
            w.view = std::move(view);
          },
          g);
      saved_ = ws_;
      dirty_ = false;
      stamped_file_ = file_;
      file_stamp_ = stamp;
      return change;
    }
    case Id::SetParameter: {
      const std::string name = c.text("name");
      const int row = c.integer("row"), col = c.integer("col");
      const double v = c.number("value");
      return editContent([&](Workspace& w) { setParameterValue(w, name, row, col, v); }, g);
    }
    case Id::ResetParameters: {
      if (!ws_.model.parameters || ws_.model.parameters->empty()) return DocumentChange::Unchanged;
      const DocumentChange change = editContent([](Workspace& w) { w.model.parameters.reset(); }, g);
      note_ = "Back to the seeded initialization: torch.manual_seed(" + std::to_string(ws_.model.seed) +
              ") and the constructor's draws (undo brings your values back)";
      return change;
    }
    case Id::PasteParameters:
    case Id::PasteEmbeddings: {  // the app puts the clipboard's text in when the command has none
      const bool parameters = c.id() == Id::PasteParameters;
      if (!c.has("text"))
        throw InputError(std::string("text: required (Edit › Paste ") + (parameters ? "parameters" : "embeddings") +
                         " reads the clipboard)");
      const auto paste = parameters ? pasteParameters : pasteEmbeddings;
      const std::string source = c.from_clipboard ? "clipboard" : "pasted text";  // where messages say the text was
      std::string pasted;                                                         // what was pasted, in words: the note
      const DocumentChange change =
          editContent([&](Workspace& w) { pasted = paste(w, c.text("text"), source, limits_); }, g);
      note_ = pasted;
      return change;
    }
    default: break;
  }
  throw InputError("'" + c.name + "' is not an edit of the workspace");
}

void Document::reset(Workspace ws, std::string file, bool dirty) {
  validateWorkspace(ws, limits_);
  ws_ = std::move(ws);
  saved_ = ws_;
  loaded_.reset();
  file_ = std::move(file);
  dirty_ = dirty;
  history_.clear();
  wanted_heads_ = 0;
  bump();
}

void Document::setLimits(const Limits& limits) {
  validateWorkspace(ws_, limits);
  limits_ = limits;
}

void Document::markSaved(const std::string& path) {
  saved_ = ws_;
  file_ = documentPath(path);
  dirty_ = false;
  stamped_file_ = file_;
  file_stamp_ = attnscope::fileStamp(file_);
}

bool Document::fileChangedOnDisk() const {
  if (file_.empty() || file_ != stamped_file_) return false;
  const FileStamp now = attnscope::fileStamp(file_);
  return now.exists && now != file_stamp_;
}

}  // namespace attnscope
