#include "editing/paste.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "editing/parameter_edits.h"
#include "editing/token_table.h"
#include "engine/errors.h"
#include "engine/parameters.h"
#include "formats/import_workspace.h"
#include "formats/tensor_import.h"

namespace attnscope {

namespace {


// What a format is called in a sentence ("Pasted … (a printed torch tensor)").
std::string formatWords(const std::string& format) {
  if (format == "torch") return "a printed torch tensor";
  if (format == "numpy") return "a NumPy array";
  if (format == "lists") return "nested lists";
  if (format == "csv") return "CSV";
  if (format == "tsv") return "TSV";
  return "columns of numbers";
}

}  // namespace

std::string pasteEmbeddings(Workspace& ws, const std::string& text, const std::string& source, const Limits& limits) {
  ImportedEmbeddings e = parseEmbeddingsText(text, source, limits);
  const int T = static_cast<int>(e.values.rows()), d_in = static_cast<int>(e.values.cols());
  const int before = static_cast<int>(ws.tokens.size()), d_in_before = static_cast<int>(ws.embeddings.cols());
  // The names the text carries, else the table's own when the count matches, else t1 … tT.
  const bool own = !e.tokens.empty();
  std::vector<std::string> names = tokenNames(own ? e.tokens : ws.tokens, T);
  const bool kept = !own && T == before;
  try {
    replaceEmbeddings(ws, std::move(e.values), std::move(names), limits);
  } catch (const InputError& err) {
    const std::string what = err.what();
    if (what.rfind("parameters", 0) == 0 && d_in != d_in_before)  // the user's weights are for the old width
      throw InputError("the pasted embeddings have d_in = " + str(d_in) +
                       ", your parameters are for d_in = " + str(d_in_before) + " (" + what + "): paste " +
                       str(d_in_before) + " columns, or Weights › Back to the seeded initialization first");
    throw;
  }
  std::string note = "Pasted " + str(T) + " × " + str(d_in) + " embeddings (" + formatWords(e.format) + ")";
  if (own)
    note += "; tokens named as in the text";
  else if (kept)
    note += "; the " + str(T) + " token names kept";
  else
    note += "; tokens named t1 … t" + str(T) + " (" + str(T) + (T == 1 ? " row" : " rows") + " for " + str(before) +
            (before == 1 ? " token" : " tokens") + ")";
  if (e.rounded_to > 0) note += ". Note: " + roundedPrintNote(e.rounded_to);
  return note;
}

namespace {

// The module a paste makes of `current` (DESIGN §2.4): the step, seed, dropout and mode stay; d_out,
// qkv_bias and the wrapper's heads as the tensors say. Throws InputError (no source) when
// MultiHeadAttention's heads cannot be known.
ModelConfig modelForPaste(const ModelConfig& current, const ImportedParameters& p, const Limits& limits,
                          std::vector<std::string>* notes) {
  ModelConfig m = current;
  const Variant v = m.variant;
  if (!hasProjections(v)) return m;  // setParameterTensors says there is nothing to paste into
  const int named = headsNamed(p.values);
  if (v == Variant::MultiHeadWrapper && named > 0)  // a part of a state_dict may name fewer heads than there are
    m.num_heads = namesEveryProjection(p.values, v, named) ? named : std::max(m.num_heads, named);
  if (const int d_out = dOutOf(p.values, v); d_out > 0) m.d_out = d_out;
  if (hasLinearLayers(v)) {
    if (hasQkvBias(p.values))
      m.qkv_bias = true;
    else if (namesEveryProjection(p.values, v, m.num_heads))
      m.qkv_bias = false;
  }
  if (v != Variant::MultiHead) return m;
  if (p.model && p.model->variant == v) {  // a workspace says its heads
    m.num_heads = p.model->num_heads;
  } else if (m.d_out == 1) {
    m.num_heads = 1;
  } else if (m.d_out % m.num_heads != 0) {
    throw InputError("MultiHeadAttention's weights do not say how it splits d_out = " + str(m.d_out) +
                     " into heads, and num_heads = " + str(m.num_heads) + " does not divide it: set d_out to " +
                     str(m.d_out) + " and num_heads to your module's (" + divisorWords(m.d_out, limits.max_heads) +
                     ") in the Model panel first, then paste again");
  } else if (notes) {
    notes->push_back("num_heads = " + str(m.num_heads) +
                     " kept: the weights do not say how MultiHeadAttention splits d_out = " + str(m.d_out) +
                     " into heads (if yours has another num_heads, set it in the Model panel; the weights stay)");
  }
  return m;
}

}  // namespace

std::string pasteParameters(Workspace& ws, const std::string& text, const std::string& source, const Limits& limits) {
  const ImportedParameters p = parseParametersText(text, source, limits);
  std::vector<std::string> notes;
  Workspace next = ws;
  try {
    next.model = modelForPaste(ws.model, p, limits, &notes);
  } catch (const InputError& e) {
    throw InputError(source + ": " + e.what());
  }
  const ModelConfig& was = ws.model;
  const ModelConfig& now = next.model;
  std::string changed;  // what the tensors changed of the module, for the note
  if (now.d_out != was.d_out) changed += ", d_out " + str(was.d_out) + " → " + str(now.d_out);
  if (now.num_heads != was.num_heads) changed += ", num_heads " + str(was.num_heads) + " → " + str(now.num_heads);
  if (now.qkv_bias != was.qkv_bias) changed += std::string(", qkv_bias ") + (now.qkv_bias ? "on" : "off");
  if (!changed.empty()) notes.insert(notes.begin(), "as the tensors say: " + changed.substr(2));
  try {
    setParameterTensors(next, p.values);
  } catch (const InputError& e) {  // say whose module the tensors do not fit
    const std::string what = e.what();
    const int d_in = static_cast<int>(ws.embeddings.cols());
    std::string module = "this step's module is " + std::string(seedClassName(next.model.variant)) +
                         " with d_in = " + str(d_in);
    module += next.model.d_out == ws.model.d_out ? ", d_out = " + str(next.model.d_out)
                                                 : "; the pasted tensors say d_out = " + str(next.model.d_out);
    // A tensor of the user's own that the text does not name, made for the module as it was.
    std::string hint;
    if (what.rfind("parameters.", 0) == 0 &&
        isOwnParameter(ws.model, what.substr(11, what.find_first_of(":[ ") - 11))) {
      bool pasted = false;
      for (const NamedTensor& t : p.values) pasted = pasted || what.rfind("parameters." + t.name + ":", 0) == 0;
      if (!pasted)
        hint =
            "; your own parameters that the text does not name are for the module as it was: Weights › Back to the "
            "seeded initialization first (undo brings them back), or paste them too";
    }
    throw InputError(source + ": " + what + " (" + module + ")" + hint);
  }
  ws = std::move(next);
  std::string names;
  for (const NamedTensor& t : p.values) names += (names.empty() ? "" : ", ") + t.name;
  std::string note = "Pasted " + str(static_cast<long long>(p.values.size())) +
                     (p.values.size() == 1 ? " parameter (" : " parameters (") + names + ")";
  if (!p.buffers.empty())
    note += "; the buffer" + std::string(p.buffers.size() == 1 ? " " : "s ") + p.buffers[0] +
            (p.buffers.size() > 1 ? ", …" : "") + " left out (not a parameter)";
  for (const std::string& n : notes) note += "; " + n;
  if (p.rounded_to > 0) note += ". Note: " + roundedPrintNote(p.rounded_to);
  return note;
}

}  // namespace attnscope
