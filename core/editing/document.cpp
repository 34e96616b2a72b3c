#include "editing/document.h"

#include <cmath>
#include <filesystem>
#include <functional>

#include "editing/token_table.h"
#include "engine/errors.h"
#include "formats/png_image.h"
#include "formats/presets.h"

namespace attnscope {

namespace {

constexpr std::uint32_t kDefaultInputSeed = 123;  // the inputs panel's seed when none is given

std::uint32_t seedArg(const Command& c) {
  if (!c.has("seed")) return kDefaultInputSeed;
  const nlohmann::json& v = c.args["seed"];
  if (v.is_number_unsigned() ? v.get<std::uint64_t>() > 4294967295ULL : v.get<std::int64_t>() < 0 ||
                                                                             v.get<std::int64_t>() > 4294967295LL)
    throw InputError("seed: must be between 0 and 4294967295, got " + v.dump());
  return static_cast<std::uint32_t>(v.get<std::int64_t>());
}

int tokenCount(const Workspace& ws) { return static_cast<int>(ws.embeddings.rows()); }

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
  ws.model = parseModel(model);
  if (ws.model.variant == Variant::Simple && ws.model.d_out == 0) ws.model.d_out = static_cast<int>(ws.embeddings.cols());
}

Document::Document(Workspace ws, std::string file, bool dirty, Limits limits)
    : ws_(std::move(ws)), saved_(ws_), file_(std::move(file)), dirty_(dirty), limits_(limits) {}

DocumentChange Document::edit(const std::function<void(Workspace&)>& change, const std::string& gesture) {
  Workspace next = ws_;
  change(next);
  validateModel(next.model, tokenCount(next), static_cast<int>(next.embeddings.cols()), limits_);
  if (equalWorkspaces(ws_, next)) return DocumentChange::Unchanged;
  history_.record(ws_, next, gesture);
  ws_ = std::move(next);
  dirty_ = true;
  bump();
  return DocumentChange::Edited;
}

DocumentChange Document::apply(const Command& c) {
  const std::string& n = c.name;
  if (c.info().target != CommandTarget::Document) throw InputError("not an edit of the workspace");

  if (n == "open") {  // another document: a new history, as any editor opens a file
    const std::string path = c.text("path");
    Workspace ws = loadWorkspace(path, limits_);
    const bool png = isPng(path);
    reset(std::move(ws), png ? "" : documentPath(path), false);  // a PNG opens untitled
    return DocumentChange::Replaced;
  }
  if (n == "restore") {  // the autosave knows which file it belonged to and whether it was saved
    Workspace ws = loadWorkspace(c.text("path"), limits_);
    const nlohmann::json& v = ws.view;
    const std::string file = fileNameOf(v);
    const bool dirty = !v.contains("dirty") || !v["dirty"].is_boolean() || v["dirty"].get<bool>();
    reset(std::move(ws), file, dirty);
    return DocumentChange::Replaced;
  }
  if (n == "preset" || n == "new") {  // undoable, and untitled until saved
    Workspace ws = n == "new" ? bookExample(ws_.model.variant) : loadWorkspace(presetPath(c.text("name")), limits_);
    if (edit([&ws](Workspace& w) { w = ws; }, "") == DocumentChange::Unchanged) return DocumentChange::Unchanged;
    file_.clear();
    return DocumentChange::Replaced;
  }
  if (n == "undo" || n == "redo") {
    Workspace next = ws_;
    if (!(n == "undo" ? history_.undo(next) : history_.redo(next)))
      throw InputError(n == "undo" ? "nothing to undo" : "nothing to redo");
    ws_ = std::move(next);
    dirty_ = !equalWorkspaces(ws_, saved_);  // back where it was saved: nothing unsaved
    bump();
    return DocumentChange::Edited;
  }
  const std::string& g = c.gesture;
  if (n == "sentence") {
    const std::uint32_t seed = seedArg(c);
    return edit([&](Workspace& w) { setSentence(w, c.text("text"), seed, limits_); }, g);
  }
  if (n == "add_token") {
    const int at = c.has("at") ? c.integer("at") : tokenCount(ws_);
    const std::uint32_t seed = c.has("seed") ? seedArg(c) : kDefaultInputSeed + static_cast<std::uint32_t>(at);
    const std::string name = c.has("name") ? c.text("name") : "";
    return edit([&](Workspace& w) { insertToken(w, at, name, seed, limits_); }, g);
  }
  if (n == "remove_token") return edit([&](Workspace& w) { removeToken(w, c.integer("index")); }, g);
  if (n == "rename_token")
    return edit([&](Workspace& w) { renameToken(w, c.integer("index"), c.text("name")); }, g);
  if (n == "move_token")
    return edit([&](Workspace& w) { moveToken(w, c.integer("from"), c.integer("to")); }, g);
  if (n == "set") {
    const std::string field = c.text("field");
    return edit([&](Workspace& w) { setModelFields(w, nlohmann::json{{field, c.args["value"]}}); }, g);
  }
  if (n == "model") return edit([&](Workspace& w) { setModelFields(w, c.args["fields"]); }, g);
  if (n == "set_cell") {
    const double v = c.number("value");
    if (std::fabs(v) >= 3.4028235677973366e38)  // rounds to ±∞ as a float32 (and casting is undefined)
      throw InputError("embeddings[" + std::to_string(c.integer("row")) + "][" + std::to_string(c.integer("col")) +
                       "]: not a finite number as float32: " + c.args["value"].dump());
    return edit([&](Workspace& w) { setEmbedding(w, c.integer("row"), c.integer("col"), static_cast<float>(v)); }, g);
  }
  if (n == "d_in") {
    const std::uint32_t seed = seedArg(c);
    return edit([&](Workspace& w) { setInputWidth(w, c.integer("value"), seed, limits_); }, g);
  }
  if (n == "randomize") {
    const std::uint32_t seed = seedArg(c);
    return edit([&](Workspace& w) { randomizeEmbeddings(w, seed); }, g);
  }
  if (n == "book_example") return edit([](Workspace& w) { resetToBookExample(w); }, g);
  throw InputError("'" + n + "' is not an edit of the workspace");
}

void Document::reset(Workspace ws, std::string file, bool dirty) {
  validateModel(ws.model, tokenCount(ws), static_cast<int>(ws.embeddings.cols()), limits_);
  ws_ = std::move(ws);
  saved_ = ws_;
  file_ = std::move(file);
  dirty_ = dirty;
  history_.clear();
  bump();
}

void Document::markSaved(const std::string& path) {
  saved_ = ws_;
  file_ = documentPath(path);
  dirty_ = false;
}

}  // namespace attnscope
