#include "formats/import_workspace.h"

#include <fstream>
#include <iostream>
#include <sys/stat.h>

#include "engine/errors.h"
#include "engine/parameters.h"
#include "formats/json_reading.h"
#include "formats/npy.h"
#include "editing/parameter_edits.h"
#include "editing/token_table.h"
#include "formats/tensor_import.h"

namespace attnscope {

namespace {

std::string str(long long v) { return std::to_string(v); }

// Standard input, at most limits.max_file_bytes of it.
std::string readStdin(const Limits& limits) {
  std::string bytes;
  char buffer[65536];
  while (std::cin) {
    std::cin.read(buffer, sizeof buffer);
    bytes.append(buffer, static_cast<std::size_t>(std::cin.gcount()));
    if (static_cast<std::int64_t>(bytes.size()) > limits.max_file_bytes)
      throw InputError("stdin: larger than the limit of " + str(limits.max_file_bytes) + " bytes");
  }
  return bytes;
}


bool isBuffer(const std::string& name) {
  return name == "mask" || (name.size() > 5 && name.compare(name.size() - 5, 5, ".mask") == 0);
}

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// "FILE:LINE:COLUMN" of a byte offset in text.
std::string placeOf(const std::string& path, const std::string& text, std::size_t byte) {
  int line = 1, col = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++col;
    }
  }
  return path + ":" + str(line) + ":" + str(col);
}

}  // namespace

ImportedParameters readParametersFile(const std::string& path, const Limits& limits) {
  const std::string bytes = readFileWithinLimit(path, limits);
  ImportedParameters out;
  auto add = [&](NamedTensor t) {
    if (isBuffer(t.name)) out.buffers.push_back(t.name);
    else out.values.push_back(std::move(t));
  };
  if (looksLikeNpy(bytes))
    throw InputError(path + ": a .npy file holds one array; save the whole state_dict with "
                            "np.savez(path, **{k: v.numpy() for k, v in m.state_dict().items()})");
  if (looksLikeZip(bytes)) {
    NpyLimits nl;
    nl.max_bytes = limits.max_file_bytes;
    nl.max_elements = static_cast<std::int64_t>(limits.max_dim) * limits.max_dim;
    for (NamedArray& a : parseNpz(bytes, path, nl)) {
      const std::size_t dims = a.array.shape.size();
      if (isBuffer(a.name)) {
        out.buffers.push_back(a.name);
        continue;
      }
      if (dims != 1 && dims != 2)
        throw InputError(path + "[" + a.name + "]: a " + str(static_cast<long long>(dims)) +
                         "-D array: a parameter is a matrix (a weight) or a vector (a bias)");
      if (a.array.values.empty()) throw InputError(path + "[" + a.name + "]: empty: no values");
      NamedTensor t;
      t.name = a.name;
      t.is_vector = dims == 1;
      if (a.array.rows() > limits.max_dim || a.array.cols() > limits.max_dim)
        throw InputError(path + "[" + a.name + "]: larger than the limit of " + str(limits.max_dim) + " in either dimension");
      t.value.resize(static_cast<Eigen::Index>(a.array.rows()), static_cast<Eigen::Index>(a.array.cols()));
      std::copy(a.array.values.begin(), a.array.values.end(), t.value.data());
      add(std::move(t));
    }
    if (out.values.empty()) throw InputError(path + ": no parameters in it" + (out.buffers.empty() ? "" : " (only buffers)"));
    return out;
  }
  return parseParametersText(bytes, path, limits);
}

ImportedParameters parseParametersText(const std::string& bytes, const std::string& path, const Limits& limits) {
  ImportedParameters out;
  auto add = [&](NamedTensor t) {
    if (isBuffer(t.name)) out.buffers.push_back(t.name);
    else out.values.push_back(std::move(t));
  };
  if (looksLikeStateDict(bytes)) {  // print(m.state_dict())
    for (NamedTensor& t : parseStateDictText(bytes, path, limits)) add(std::move(t));
    if (out.values.empty()) throw InputError(path + ": no parameters in it (only buffers)");
    return out;
  }
  // JSON: an object of name → nested lists, or a workspace (its "parameters"). The tensors are read
  // straight into floats, the depth and the rest's memory bounded (formats/json_reading.h).
  JsonWithNumbers doc;
  try {
    doc = readJsonWithNumbers(bytes, path, limits, NumberArrays::ParameterObject);
  } catch (const JsonSyntaxError& e) {
    throw InputError(placeOf(path, bytes, e.byte > 0 ? e.byte - 1 : 0) + ": not a .npz of a state_dict, nor valid JSON" + e.why.substr(e.why.find(':')));
  } catch (const InputError& e) {  // a tensor's entry, the depth or the budget
    const std::string what = e.what();
    throw InputError(what.rfind(path + ": ", 0) == 0 ? what : path + ": " + what);
  }
  nlohmann::json j = std::move(doc.tree);
  if (j.is_object() && j.contains("format") && j["format"] == "attnscope-workspace") {
    if (!j.contains("parameters")) throw InputError(path + ": this workspace has no \"parameters\"");
    j = std::move(j["parameters"]);  // moved: a copy of a deep value would recurse
  }
  std::shared_ptr<const ParameterValues> values;
  try {
    if (j.is_object())
      for (auto it = j.begin(); it != j.end();) {
        if (isBuffer(it.key())) {
          out.buffers.push_back(it.key());
          it = j.erase(it);
        } else {
          ++it;
        }
      }
    values = parseParameterValues(j, doc.arrays, limits);
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
  if (!values) throw InputError(path + ": no parameters in it" + (out.buffers.empty() ? "" : " (only buffers)"));
  for (const NamedTensor& t : *values) out.values.push_back(t);
  return out;
}

ModelConfig modelForParameters(const ImportedParameters& p, std::optional<Variant> variant, std::optional<int> num_heads,
                               std::vector<std::string>* notes) {
  bool heads = false, out_proj = false, bare = false, bias = false;
  int max_head = -1;
  for (const NamedTensor& t : p.values) {
    if (t.name.rfind("heads.", 0) == 0) {
      heads = true;
      const std::size_t dot = t.name.find('.', 6);
      try {
        if (dot != std::string::npos) max_head = std::max(max_head, std::stoi(t.name.substr(6, dot - 6)));
      } catch (const std::exception&) {
      }
    }
    if (t.name.rfind("out_proj.", 0) == 0) out_proj = true;
    for (const char* w : {"W_query", "W_key", "W_value"}) {
      if (t.name == w) bare = true;
      if (endsWith(t.name, std::string(w) + ".bias")) bias = true;
    }
  }
  Variant v;
  if (variant) {
    v = *variant;
  } else if (heads) {
    v = Variant::MultiHeadWrapper;
  } else if (out_proj) {
    v = Variant::MultiHead;
  } else if (bare) {
    v = Variant::SelfAttentionV1;
  } else {
    bool mask = false;
    for (const std::string& b : p.buffers) mask = mask || b == "mask";
    v = mask ? Variant::Causal : Variant::SelfAttentionV2;
    if (notes && !mask)
      notes->push_back("no causal mask among the parameters: SelfAttention_v2 (give --variant causal for CausalAttention)");
  }
  ModelConfig m = defaultConfig(v);
  // d_out from the first projection found, else out_proj, else a bias.
  int d_out = -1;
  const std::string prefix = v == Variant::MultiHeadWrapper ? "heads.0." : "";
  for (const NamedTensor& t : p.values) {
    for (const char* w : {"W_query", "W_key", "W_value"}) {
      if (d_out < 0 && v == Variant::SelfAttentionV1 && t.name == prefix + w && !t.is_vector) d_out = static_cast<int>(t.value.cols());
      if (d_out < 0 && t.name == prefix + w + ".weight" && !t.is_vector) d_out = static_cast<int>(t.value.rows());
    }
  }
  for (const NamedTensor& t : p.values) {
    if (d_out < 0 && t.name == "out_proj.weight" && !t.is_vector) d_out = static_cast<int>(t.value.rows());
    if (d_out < 0 && t.is_vector) d_out = static_cast<int>(t.value.cols());
  }
  if (d_out > 0 && v != Variant::Simple) m.d_out = d_out;
  m.qkv_bias = bias && hasLinearLayers(v);
  if (num_heads) {
    m.num_heads = *num_heads;
  } else if (v == Variant::MultiHeadWrapper && max_head >= 0) {
    m.num_heads = max_head + 1;
  } else if (v == Variant::MultiHead && m.d_out % m.num_heads != 0) {
    throw InputError("--num-heads: the parameters have d_out = " + str(m.d_out) + ", not divisible by " +
                     str(m.num_heads) + " heads (the default): give --num-heads (a divisor of " + str(m.d_out) + ")");
  } else if (v == Variant::MultiHead && notes) {
    notes->push_back("num_heads = " + str(m.num_heads) + " (the default; the weights do not say how MultiHeadAttention "
                     "splits d_out = " + str(m.d_out) + " into heads: give --num-heads to choose)");
  }
  return m;
}

ImportResult importWorkspace(const ImportRequest& request, const Limits& limits) {
  if (request.embeddings.empty()) throw InputError("--embeddings: give a file (or - for standard input)");
  const ImportedEmbeddings e = request.embeddings == "-"
                                   ? parseEmbeddingsBytes(readStdin(limits), "stdin", limits, request.array)
                                   : readEmbeddingsFile(request.embeddings, limits, request.array);
  const int T = static_cast<int>(e.values.rows()), d_in = static_cast<int>(e.values.cols());
  ImportResult result;
  Workspace& ws = result.workspace;
  ws.embeddings = e.values;

  // Names: --tokens when their count matches, else the file's own (a CSV's first column), else t1 … tT.
  if (request.tokens) {
    const std::vector<std::string> given = splitNames(*request.tokens);
    ws.tokens = tokenNames(given, T);
    if (static_cast<int>(given.size()) != T)
      result.notes.push_back("--tokens: " + str(static_cast<long long>(given.size())) +
                             (given.size() == 1 ? " name" : " names") + " for " + str(T) +
                             (T == 1 ? " row" : " rows") + ": the tokens are named t1 … t" + str(T) + " instead");
  } else {
    ws.tokens = tokenNames(e.tokens, T);
  }

  if (request.parameters.empty()) {
    const Variant variant = request.variant.value_or(Variant::MultiHead);
    ws.model = defaultConfig(variant);
    if (variant == Variant::Simple) ws.model.d_out = d_in;
    if (request.num_heads) ws.model.num_heads = *request.num_heads;
  } else {
    const ImportedParameters p = readParametersFile(request.parameters, limits);
    ws.model = modelForParameters(p, request.variant, request.num_heads, &result.notes);
    ws.model.parameters = std::make_shared<const ParameterValues>(p.values);
  }
  if (request.seed) ws.model.seed = *request.seed;
  try {
    validateWorkspace(ws, limits);  // as a loaded file is: what is printed opens again
  } catch (const InputError& e) {
    // A parameter that does not fit: say which file, and what the embeddings are.
    const std::string what = e.what();
    if (what.rfind("parameters", 0) == 0)
      throw InputError(request.parameters + ": " + what + " (the embeddings have " + str(T) + (T == 1 ? " row" : " rows") +
                       " of d_in = " + str(d_in) + ")");
    throw;
  }
  return result;
}

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

std::string pasteEmbeddings(Workspace& ws, const std::string& text, const Limits& limits) {
  ImportedEmbeddings e = parseEmbeddingsText(text, "clipboard", limits);
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
      throw InputError("the pasted embeddings have d_in = " + str(d_in) + ", your parameters are for d_in = " +
                       str(d_in_before) + " (" + what + "): paste " + str(d_in_before) +
                       " columns, or Weights › Back to the seeded initialization first");
    throw;
  }
  std::string note = "Pasted " + str(T) + " × " + str(d_in) + " embeddings (" + formatWords(e.format) + ")";
  if (own) note += "; tokens named as in the text";
  else if (kept) note += "; the " + str(T) + " token names kept";
  else note += "; tokens named t1 … t" + str(T) + " (" + str(T) + (T == 1 ? " row" : " rows") + " for " + str(before) +
               (before == 1 ? " token" : " tokens") + ")";
  return note;
}

std::string pasteParameters(Workspace& ws, const std::string& text, const Limits& limits) {
  const ImportedParameters p = parseParametersText(text, "clipboard", limits);
  try {
    setParameterTensors(ws, p.values);
  } catch (const InputError& e) {  // say whose module the tensors do not fit
    throw InputError("clipboard: " + std::string(e.what()) + " (this step's module is " + seedClassName(ws.model.variant) + " with d_in = " +
                     str(ws.embeddings.cols()) + ", d_out = " + str(ws.model.d_out) + ")");
  }
  std::string names;
  for (const NamedTensor& t : p.values) names += (names.empty() ? "" : ", ") + t.name;
  std::string note = "Pasted " + str(static_cast<long long>(p.values.size())) +
                     (p.values.size() == 1 ? " parameter (" : " parameters (") + names + ")";
  if (!p.buffers.empty()) note += "; the buffer" + std::string(p.buffers.size() == 1 ? " " : "s ") + p.buffers[0] +
                                  (p.buffers.size() > 1 ? ", …" : "") + " left out (not a parameter)";
  return note;
}

}  // namespace attnscope
