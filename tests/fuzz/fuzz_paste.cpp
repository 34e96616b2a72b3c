// fuzz_paste: pasted text (Edit › Paste embeddings and Paste parameters: the `paste_embeddings` and
// `paste_parameters` commands, core/editing/document.h, formats/import_workspace.h). The input is
// the clipboard's text, pasted both ways into a Document on each of five starting documents — the
// book's example as multi-head attention, as the wrapper, as SelfAttention_v1, multi-head with one
// parameter of the user's own, and multi-head with token names a CSV must quote (a line break, a
// comma, quotes, spaces at the ends, a carriage return) — with small limits (T ≤ 64, d ≤ 64). Checked:
//   - a refused paste (InputError, a message) changes nothing: workspace, version(), the unsaved
//     mark and the history (its undo and redo steps and bytes);
//   - an accepted one is one edit (version() moves, one undo step more, no redo) or Unchanged (then
//     the workspace is the same); the workspace is consistent (tokens = rows, the model validates,
//     finite values within the limits) and dumpWorkspace → parseWorkspace gives it back exactly
//     (tokens byte for byte, embeddings and parameters bitwise, model, view) and the same text again;
//   - paste_embeddings put in exactly the matrix the text reads as (parseEmbeddingsText, source
//     "clipboard"), named by the text's names, else the table's when there are as many rows, else
//     t1 … tT; the model stays (none of the starting documents is `simple`); the random recipe goes.
//     The workspace's CSV export (matrixCsv with its tokens, as maps are exported) reads back to
//     the same names and bits when no name reads as a number (only words make a name column);
//   - paste_parameters changed only parameters and what they say of the module (d_out, num_heads,
//     qkv_bias; DESIGN §2.4): each pasted tensor bitwise as the text reads it (parseParametersText),
//     the parameters the document had and the text did not name as they were, no others; tokens,
//     embeddings and the rest of the model (the step, seed, training/eval mode …) as they were;
//   - undo gives the document before, redo the one after.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "editing/document.h"
#include "editing/paste.h"
#include "formats/export.h"
#include "formats/import_workspace.h"
#include "formats/tensor_import.h"
#include "fuzz_common.h"

namespace {

using namespace attnscope;
using fuzz::finding;

struct Start {
  const char* name;
  Workspace ws;
};

const std::vector<Start>& starts() {
  static const std::vector<Start> all = [] {
    std::vector<Start> out;
    out.push_back({"multihead", bookExample(Variant::MultiHead)});
    out.push_back({"wrapper", bookExample(Variant::MultiHeadWrapper)});
    out.push_back({"v1", bookExample(Variant::SelfAttentionV1)});
    Document own(bookExample(Variant::MultiHead), "", false, fuzz::smallLimits());
    own.apply(makeCommand("set_parameter", {{"name", "W_query.weight"}, {"row", 1}, {"col", 2}, {"value", 0.625}}));
    out.push_back({"multihead with its own W_query.weight", own.workspace()});
    // Names a CSV export must quote; a paste of as many rows keeps them.
    Workspace quoted = bookExample(Variant::MultiHead);
    quoted.tokens = {"Your", "two\nlines", "jour,ney", "say \"hi\"", " padded ", "cr\r"};
    out.push_back({"multihead with names a CSV quotes", quoted});
    return out;
  }();
  return all;
}

const NamedTensor* findTensor(const std::shared_ptr<const ParameterValues>& p, const std::string& name) {
  if (!p) return nullptr;
  for (const NamedTensor& t : *p)
    if (t.name == name) return &t;
  return nullptr;
}

bool sameTensor(const NamedTensor& a, const NamedTensor& b) {
  return a.name == b.name && a.is_vector == b.is_vector && fuzz::sameBits(a.value, b.value);
}

// Parameters equal bitwise, name by name (fuzz::checkSame compares them as JSON numbers).
void checkSameParameters(const Workspace& a, const Workspace& b, const std::string& at) {
  const std::size_t na = a.model.parameters ? a.model.parameters->size() : 0;
  const std::size_t nb = b.model.parameters ? b.model.parameters->size() : 0;
  FUZZ_CHECK(na == nb, at + ": " + std::to_string(na) + " parameters vs " + std::to_string(nb));
  if (na == 0) return;
  for (const NamedTensor& t : *a.model.parameters) {
    const NamedTensor* other = findTensor(b.model.parameters, t.name);
    FUZZ_CHECK(other && sameTensor(t, *other), at + ": parameter " + t.name + " differs");
  }
}

// Saved and loaded again, the workspace is the same, parameters bit for bit too, and saved again
// the same text (fuzz::checkRoundTrip, and the parameters compared as floats).
void checkSaves(const Workspace& ws, const Limits& limits, const std::string& at) {
  std::string saved;
  Workspace again;
  try {
    saved = dumpWorkspace(ws);
    again = parseWorkspace(saved, fuzz::reloadLimits(limits));
  } catch (const std::exception& e) {
    finding(at + ": the workspace does not save and load: " + e.what() + "\n--- saved:\n" + saved.substr(0, 4000));
  }
  fuzz::checkSame(ws, again, at.c_str());
  checkSameParameters(ws, again, at);
  FUZZ_CHECK(dumpWorkspace(again) == saved, at + ": saving the reloaded workspace gives another text");
}

ModelConfig withoutParameters(ModelConfig m) {
  m.parameters.reset();
  return m;
}

// The model but what pasted parameters may say of it: their shapes and names.
ModelConfig withoutShape(ModelConfig m) {
  m = withoutParameters(m);
  m.d_out = 0;
  m.num_heads = 0;
  m.qkv_bias = false;
  return m;
}

// `now` is `before` in every part a document holds: tokens, embeddings and parameters bitwise, the
// random recipe, the rest of the model, the view. (fuzz::checkSame compares their JSON as well,
// which costs more than the paste: refusals are most inputs, and they are checked with this.)
void checkUnchanged(const Workspace& before, const Workspace& now, const std::string& at) {
  FUZZ_CHECK(now.tokens == before.tokens, at + ": the tokens changed");
  FUZZ_CHECK(fuzz::sameBits(now.embeddings, before.embeddings), at + ": the embeddings changed");
  FUZZ_CHECK(now.random.has_value() == before.random.has_value() &&
                 (!now.random ||
                  (now.random->normal == before.random->normal && now.random->seed == before.random->seed &&
                   now.random->rows == before.random->rows && now.random->cols == before.random->cols)),
             at + ": the random recipe changed");
  FUZZ_CHECK(modelToJson(withoutParameters(now.model)) == modelToJson(withoutParameters(before.model)),
             at + ": the model changed: " + modelToJson(withoutParameters(before.model)).dump() + " → " +
                 modelToJson(withoutParameters(now.model)).dump());
  checkSameParameters(before, now, at);
  FUZZ_CHECK(now.view == before.view, at + ": the view changed");
}

// A name the CSV reader may take for a number (then the names are no column of their own): what
// strtod reads whole, and NaN/infinity spellings. Wider than the reader's own test on purpose.
bool mayReadAsNumber(const std::string& name) {
  if (name.empty()) return false;
  for (const char* begin : {name.c_str(), name.c_str() + (name[0] == '+' ? 1 : 0)}) {  // "+-1" too
    char* end = nullptr;
    std::strtod(begin, &end);
    if (end != begin && end == name.c_str() + name.size()) return true;
  }
  std::string bare;
  for (char c : name)
    if (c != '+' && c != '-') bare += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return bare == "nan" || bare == "inf" || bare == "infinity";
}

void checkEmbeddingsPaste(const Workspace& before, const Workspace& after, const std::string& text,
                          const Limits& limits, const std::string& at) {
  ImportedEmbeddings expected;
  try {
    expected = parseEmbeddingsText(text, "clipboard", limits);
  } catch (const std::exception& e) {
    finding(at + ": accepted, but the text does not read as embeddings: " + e.what());
  }
  FUZZ_CHECK(fuzz::sameBits(after.embeddings, expected.values), at + ": the embeddings are not the text's (" +
                                                                    fuzz::shape(after.embeddings) + " vs " +
                                                                    fuzz::shape(expected.values) + ")");
  const std::size_t T = static_cast<std::size_t>(expected.values.rows());
  std::vector<std::string> names = expected.tokens;
  if (names.empty() && before.tokens.size() == T) names = before.tokens;
  if (names.empty())
    for (std::size_t i = 0; i < T; ++i) names.push_back("t" + std::to_string(i + 1));
  FUZZ_CHECK(after.tokens == names, at + ": the tokens are not named as the text, the table or t1 … tT say");
  FUZZ_CHECK(!after.random, at + ": the random recipe stayed");
  FUZZ_CHECK(modelToJson(after.model) == modelToJson(before.model),
             at + ": the model changed: " + modelToJson(before.model).dump() + " → " + modelToJson(after.model).dump());

  for (const std::string& name : after.tokens)
    if (mayReadAsNumber(name)) return;
  const Matrix& x = after.embeddings;
  const std::string csv = matrixCsv(x, tokenLabels(after.tokens, x.cols(), false));
  ImportedEmbeddings back;
  try {
    back = parseEmbeddingsText(csv, "export.csv", fuzz::reloadLimits(limits));
  } catch (const InputError& e) {
    finding(at + ": the workspace's CSV export does not read back: " + e.what() + "\n--- CSV:\n" + csv.substr(0, 2000));
  }
  FUZZ_CHECK(fuzz::sameBits(back.values, x), at + ": the CSV export reads back as other numbers (" +
                                                 fuzz::shape(back.values) + " for " + fuzz::shape(x) + ")\n--- CSV:\n" +
                                                 csv.substr(0, 2000));
  FUZZ_CHECK(back.tokens == after.tokens, at + ": the CSV export reads back with other names (" +
                                              (back.tokens.empty() ? std::string("none") : back.tokens[0]) +
                                              ")\n--- CSV:\n" + csv.substr(0, 2000));
}

void checkParametersPaste(const Workspace& before, const Workspace& after, const std::string& text,
                          const Limits& limits, const std::string& at) {
  ImportedParameters pasted;
  try {
    pasted = parseParametersText(text, "clipboard", limits);
  } catch (const std::exception& e) {
    finding(at + ": accepted, but the text does not read as parameters: " + e.what());
  }
  FUZZ_CHECK(after.tokens == before.tokens && fuzz::sameBits(after.embeddings, before.embeddings),
             at + ": pasting parameters changed the tokens or embeddings");
  FUZZ_CHECK(modelToJson(withoutShape(after.model)) == modelToJson(withoutShape(before.model)),
             at + ": pasting parameters changed the model beyond its shape: " +
                 modelToJson(withoutParameters(before.model)).dump() + " → " +
                 modelToJson(withoutParameters(after.model)).dump());
  std::size_t expected_count = 0;
  for (const NamedTensor& t : pasted.values) {
    const NamedTensor* now = findTensor(after.model.parameters, t.name);
    FUZZ_CHECK(now, at + ": pasted " + t.name + " is not among the parameters");
    FUZZ_CHECK(fuzz::sameBits(now->value, t.value), at + ": pasted " + t.name + " holds other values (" +
                                                        fuzz::shape(now->value) + " for " + fuzz::shape(t.value) + ")");
  }
  if (before.model.parameters)
    for (const NamedTensor& t : *before.model.parameters) {
      bool named = false;
      for (const NamedTensor& p : pasted.values) named = named || p.name == t.name;
      if (named) continue;
      ++expected_count;
      const NamedTensor* now = findTensor(after.model.parameters, t.name);
      FUZZ_CHECK(now && sameTensor(*now, t), at + ": " + t.name + " was not pasted, yet it changed or went");
    }
  for (const NamedTensor& t : pasted.values) {
    bool first = true;  // a name given twice counts once
    for (const NamedTensor& p : pasted.values) {
      if (&p == &t) break;
      first = first && p.name != t.name;
    }
    if (first) ++expected_count;
  }
  const std::size_t count = after.model.parameters ? after.model.parameters->size() : 0;
  FUZZ_CHECK(count == expected_count, at + ": " + std::to_string(count) + " parameters after the paste, expected " +
                                          std::to_string(expected_count));
}

void pasteInto(const Start& start, const char* command, const std::string& text, const Limits& limits) {
  const std::string at = std::string(command) + " into " + start.name;
  Document doc(start.ws, "", false, limits);
  const Workspace before = doc.workspace();
  const std::uint64_t version = doc.version();
  const std::size_t undo_steps = doc.history().undoSteps(), redo_steps = doc.history().redoSteps();
  const std::size_t history_bytes = doc.history().bytes();
  const bool dirty = doc.dirty();
  DocumentChange change;
  try {
    change = doc.apply(makeCommand(command, {{"text", text}}));
  } catch (const InputError& e) {
    FUZZ_CHECK(*e.what() != '\0', at + ": refused without a message");
    checkUnchanged(before, doc.workspace(), at + " (refused)");
    FUZZ_CHECK(doc.version() == version, at + ": refused, yet the version moved");
    FUZZ_CHECK(doc.dirty() == dirty, at + ": refused, yet the unsaved mark changed");
    FUZZ_CHECK(doc.history().undoSteps() == undo_steps && doc.history().redoSteps() == redo_steps &&
                   doc.history().bytes() == history_bytes,
               at + ": refused, yet the history changed");
    return;
  } catch (const std::exception& e) {
    fuzz::unexpected(at.c_str(), e);
  }
  const Workspace after = doc.workspace();
  if (change == DocumentChange::Unchanged) {
    checkUnchanged(before, after, at + " (unchanged)");
    FUZZ_CHECK(doc.version() == version, at + ": unchanged, yet the version moved");
    FUZZ_CHECK(doc.dirty() == dirty, at + ": unchanged, yet the unsaved mark changed");
    FUZZ_CHECK(doc.history().undoSteps() == undo_steps && doc.history().redoSteps() == redo_steps &&
                   doc.history().bytes() == history_bytes,
               at + ": unchanged, yet the history changed");
    return;
  }
  FUZZ_CHECK(change == DocumentChange::Edited, at + ": a paste replaced the document");
  FUZZ_CHECK(doc.version() > version, at + ": changed, yet the version stayed");
  FUZZ_CHECK(doc.history().undoSteps() == undo_steps + 1 && doc.history().redoSteps() == 0,
             at + ": not one undo step more (" + std::to_string(undo_steps) + " → " +
                 std::to_string(doc.history().undoSteps()) + ")");
  FUZZ_CHECK(doc.dirty(), at + ": changed, yet not marked unsaved");
  fuzz::checkConsistent(after, limits, at.c_str());
  checkSaves(after, limits, at + ": save and load");
  if (std::string(command) == "paste_embeddings")
    checkEmbeddingsPaste(before, after, text, limits, at);
  else
    checkParametersPaste(before, after, text, limits, at);

  doc.apply(makeCommand("undo"));
  fuzz::checkSame(before, doc.workspace(), (at + ": undone").c_str());
  checkSameParameters(before, doc.workspace(), at + ": undone");
  FUZZ_CHECK(doc.dirty() == dirty, at + ": undone, yet the unsaved mark differs");
  doc.apply(makeCommand("redo"));
  fuzz::checkSame(after, doc.workspace(), (at + ": redone").c_str());
  checkSameParameters(after, doc.workspace(), at + ": redone");
  FUZZ_CHECK(doc.dirty(), at + ": redone, yet not marked unsaved");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Limits limits = fuzz::smallLimits();
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const Start& start : starts())
    for (const char* command : {"paste_embeddings", "paste_parameters"}) pasteInto(start, command, text, limits);
  return 0;
}
