#include "formats/import_workspace.h"

#include <sys/stat.h>
#include <algorithm>
#include <fstream>
#include <iostream>

#include "engine/errors.h"
#include "engine/parameters.h"
#include "formats/file_reading.h"
#include "formats/json_reading.h"
#include "formats/npy.h"
#include "formats/tensor_import.h"

namespace attnscope {

namespace {


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

const char* const kProjections[] = {"W_query", "W_key", "W_value"};

// "heads.3.W_query.weight" → 3, with "W_query.weight" in *local; another name → -1 and itself.
int headOf(const std::string& name, std::string* local) {
  *local = name;
  if (name.rfind("heads.", 0) != 0) return -1;
  const std::size_t dot = name.find('.', 6);
  if (dot == std::string::npos || dot == 6 || dot - 6 > 6) return -1;
  for (std::size_t k = 6; k < dot; ++k)
    if (name[k] < '0' || name[k] > '9') return -1;
  *local = name.substr(dot + 1);
  return std::stoi(name.substr(6, dot - 6));
}

}  // namespace

int headsNamed(const ParameterValues& values) {
  int heads = 0;
  std::string local;
  for (const NamedTensor& t : values) heads = std::max(heads, headOf(t.name, &local) + 1);
  return heads;
}

// d_out as the shapes say it for the class `v` (-1: none says): a projection's rows (its columns
// for SelfAttention_v1: x @ W), else out_proj's, else a bias's length.
int dOutOf(const ParameterValues& values, Variant v) {
  std::string local;
  for (const NamedTensor& t : values) {
    headOf(t.name, &local);
    if (t.is_vector) continue;
    for (const char* w : kProjections) {
      if (v == Variant::SelfAttentionV1 && local == w) return static_cast<int>(t.value.cols());
      if (local == std::string(w) + ".weight") return static_cast<int>(t.value.rows());
    }
  }
  for (const NamedTensor& t : values)
    if (t.name == "out_proj.weight" && !t.is_vector) return static_cast<int>(t.value.rows());
  for (const NamedTensor& t : values)
    if (t.is_vector) return static_cast<int>(t.value.cols());
  return -1;
}

// A bias of W_query, W_key or W_value among them (of any head).
bool hasQkvBias(const ParameterValues& values) {
  std::string local;
  for (const NamedTensor& t : values) {
    headOf(t.name, &local);
    for (const char* w : kProjections)
      if (local == std::string(w) + ".bias") return true;
  }
  return false;
}

// Whether they name every W_query, W_key and W_value of the class (of each of `heads` heads for the
// wrapper): a whole state_dict, so biases it lacks are biases the module lacks.
bool namesEveryProjection(const ParameterValues& values, Variant v, int heads) {
  for (int h = 0; h < (v == Variant::MultiHeadWrapper ? heads : 1); ++h)
    for (const char* w : kProjections) {
      const std::string name = (v == Variant::MultiHeadWrapper ? "heads." + str(h) + "." : std::string()) + w +
                               (v == Variant::SelfAttentionV1 ? "" : ".weight");
      bool found = false;
      for (const NamedTensor& t : values) found = found || t.name == name;
      if (!found) return false;
    }
  return true;
}

// The head counts MultiHeadAttention can split d_out into: "1, 2, 3 or 6".
std::string divisorWords(int d_out, int max_heads) {
  std::vector<int> all;
  for (int h = 1; h <= std::min(d_out, max_heads); ++h)
    if (d_out % h == 0) all.push_back(h);
  std::string words;
  for (std::size_t k = 0; k < all.size(); ++k)
    words += (k == 0 ? "" : k + 1 == all.size() ? " or " : ", ") + str(all[k]);
  return words;
}

ImportedParameters readParametersFile(const std::string& path, const Limits& limits) {
  const std::string bytes = readFileWithin(path, limits.max_file_bytes, FileKind::AnyReadable);
  ImportedParameters out;
  auto add = [&](NamedTensor t) {
    if (isBuffer(t.name))
      out.buffers.push_back(t.name);
    else
      out.values.push_back(std::move(t));
  };
  if (looksLikeNpy(bytes))
    throw InputError(path +
                     ": a .npy file holds one array; save the whole state_dict with "
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
        throw InputError(path + "[" + a.name + "]: larger than the limit of " + str(limits.max_dim) +
                         " in either dimension");
      t.value.resize(static_cast<Eigen::Index>(a.array.rows()), static_cast<Eigen::Index>(a.array.cols()));
      std::copy(a.array.values.begin(), a.array.values.end(), t.value.data());
      add(std::move(t));
    }
    if (out.values.empty())
      throw InputError(path + ": no parameters in it" + (out.buffers.empty() ? "" : " (only buffers)"));
    return out;
  }
  return parseParametersText(bytes, path, limits);
}

ImportedParameters parseParametersText(const std::string& bytes, const std::string& path, const Limits& limits) {
  ImportedParameters out;
  auto add = [&](NamedTensor t) {
    if (isBuffer(t.name))
      out.buffers.push_back(t.name);
    else
      out.values.push_back(std::move(t));
  };
  if (looksLikeStateDict(bytes)) {  // print(m.state_dict())
    for (NamedTensor& t : parseStateDictText(bytes, path, limits, &out.rounded_to)) add(std::move(t));
    if (out.values.empty()) throw InputError(path + ": no parameters in it (only buffers)");
    return out;
  }
  // JSON: an object of name → nested lists, or a workspace (its "parameters"). The tensors are read
  // straight into floats, the depth and the rest's memory bounded (formats/json_reading.h).
  JsonWithNumbers doc;
  try {
    doc = readJsonWithNumbers(bytes, path, limits, NumberArrays::ParameterObject);
  } catch (const JsonSyntaxError& e) {
    throw InputError(placeOf(path, bytes, e.byte > 0 ? e.byte - 1 : 0) +
                     ": not a .npz of a state_dict, nor valid JSON" + e.why.substr(e.why.find(':')));
  } catch (const InputError& e) {  // a tensor's entry, the depth or the budget
    const std::string what = e.what();
    throw InputError(what.rfind(path + ": ", 0) == 0 ? what : path + ": " + what);
  }
  nlohmann::json j = std::move(doc.tree);
  if (j.is_object() && j.contains("format") && j["format"] == "attnscope-workspace") {
    if (!j.contains("parameters")) throw InputError(path + ": this workspace has no \"parameters\"");
    if (j.contains("model")) {  // what the names cannot say: num_heads, the mode
      try {
        out.model = parseModel(j["model"]);
      } catch (const InputError& e) {
        throw InputError(path + ": " + e.what());
      }
    }
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

ModelConfig modelForParameters(const ImportedParameters& p, std::optional<Variant> variant,
                               std::optional<int> num_heads, std::vector<std::string>* notes) {
  // A workspace says its whole module, heads and mode included: taken as it is, the flags over it.
  if (p.model && (!variant || *variant == p.model->variant)) {
    ModelConfig m = *p.model;
    m.parameters.reset();
    if (num_heads) m.num_heads = *num_heads;
    return m;
  }
  bool heads = false, out_proj = false, bare = false;
  for (const NamedTensor& t : p.values) {
    heads = heads || t.name.rfind("heads.", 0) == 0;
    out_proj = out_proj || t.name.rfind("out_proj.", 0) == 0;
    for (const char* w : kProjections) bare = bare || t.name == w;
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
      notes->push_back(
          "no causal mask among the parameters: SelfAttention_v2 (give --variant causal for CausalAttention)");
  }
  ModelConfig m = defaultConfig(v);
  if (p.model) m.training = p.model->training;  // the mode the file says, whatever the class
  const int d_out = dOutOf(p.values, v);
  if (d_out > 0 && v != Variant::Simple) m.d_out = d_out;
  m.qkv_bias = hasQkvBias(p.values) && hasLinearLayers(v);
  const int named = headsNamed(p.values);
  if (num_heads) {
    m.num_heads = *num_heads;
  } else if (v == Variant::MultiHeadWrapper && named > 0) {
    m.num_heads = named;
  } else if (v == Variant::MultiHead) {
    // Its weights are the same for any split of d_out: a count taken by default gave a 3-head
    // module's output off by 0.027. Only d_out = 1 leaves one choice.
    if (m.d_out != 1)
      throw InputError("--num-heads: MultiHeadAttention's weights do not say how it splits d_out = " + str(m.d_out) +
                       " into heads: give --num-heads as your module was built (" +
                       divisorWords(m.d_out, Limits{}.max_heads) + ")");
    m.num_heads = 1;
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
  if (e.rounded_to > 0)
    result.notes.push_back((request.embeddings == "-" ? std::string("stdin") : request.embeddings) + ": " +
                           roundedPrintNote(e.rounded_to));

  // Names: --tokens when their count matches, else the file's own (a CSV's first column), else t1 … tT.
  if (request.tokens) {
    const std::vector<std::string> given = splitNames(*request.tokens);
    ws.tokens = tokenNames(given, T);
    if (static_cast<int>(given.size()) != T)
      result.notes.push_back("--tokens: " + str(static_cast<long long>(given.size())) +
                             (given.size() == 1 ? " name" : " names") + " for " + str(T) + (T == 1 ? " row" : " rows") +
                             ": the tokens are named t1 … t" + str(T) + " instead");
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
    if (p.rounded_to > 0) result.notes.push_back(request.parameters + ": " + roundedPrintNote(p.rounded_to));
  }
  if (request.seed) ws.model.seed = *request.seed;
  if (request.training) ws.model.training = *request.training;
  try {
    validateWorkspace(ws, limits);  // as a loaded file is: what is printed opens again
  } catch (const InputError& e) {
    // A parameter that does not fit: say which file, and what the embeddings are.
    const std::string what = e.what();
    if (what.rfind("parameters", 0) == 0)
      throw InputError(request.parameters + ": " + what + " (the embeddings have " + str(T) +
                       (T == 1 ? " row" : " rows") + " of d_in = " + str(d_in) + ")");
    throw;
  }
  return result;
}

}  // namespace attnscope
