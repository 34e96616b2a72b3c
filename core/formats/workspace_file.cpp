#include "formats/workspace_file.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <sstream>

#include <cerrno>
#include <cstring>

#include "engine/errors.h"
#include "formats/atomic_file.h"
#include "formats/file_reading.h"
#include "formats/json_format.h"
#include "formats/json_reading.h"
#include "formats/png_image.h"
#include "formats/utf8.h"

namespace attnscope {

using nlohmann::json;

namespace {


const char* typeName(const json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  return v.type_name();
}

void rejectUnknown(const json& object, const std::string& where, std::initializer_list<const char*> known) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (!ok) {
      std::string list;
      for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      fail(where.empty() ? it.key() : where + "." + it.key(), "unknown field (expected one of: " + list + ")");
    }
  }
}

std::int64_t getInt(const json& v, const std::string& field, std::int64_t lo, std::int64_t hi) {
  if (!v.is_number_integer() && !v.is_number_unsigned())
    fail(field, std::string("expected an integer, got ") + typeName(v));
  // nlohmann reads every integer ≥ 0 as unsigned: that one is checked against both ends too.
  const bool out = v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi) ||
                                                (lo > 0 && v.get<std::uint64_t>() < static_cast<std::uint64_t>(lo))
                                          : v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi;
  if (out) fail(field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " + v.dump());
  return v.get<std::int64_t>();
}

bool getBool(const json& v, const std::string& field) {
  if (!v.is_boolean()) fail(field, std::string("expected true or false, got ") + typeName(v));
  return v.get<bool>();
}

std::string getString(const json& v, const std::string& field) {
  if (!v.is_string()) fail(field, std::string("expected a string, got ") + typeName(v));
  return v.get<std::string>();
}

// A model field whose value is one of a name table's ids ("model.scale": "sqrt_dk"); absent: unchanged.
template <class Table, class E>
void readId(const json& j, const char* key, const Table& table, E* out) {
  if (!j.contains(key)) return;
  const std::string field = std::string("model.") + key;
  const std::string s = getString(j[key], field);
  for (const auto& n : table)
    if (s == n.id) {
      *out = n.value;
      return;
    }
  fail(field, "expected one of " + idList(table) + ", got \"" + s + "\"");
}

}  // namespace

ModelConfig parseModel(const json& j) {
  if (!j.is_object()) fail("model", std::string("expected an object, got ") + typeName(j));
  rejectUnknown(j, "model",
                {"variant", "d_out", "num_heads", "dropout", "seed", "qkv_bias", "causal", "scale", "training",
                 "batch_size", "normalization", "dropout_rng", "dropout_seed", "draws_before", "causal_route"});
  if (!j.contains("variant")) fail("model.variant", "required (one of " + idList(variantNames()) + ")");
  Variant variant;
  const std::string id = getString(j["variant"], "model.variant");
  if (!parseVariant(id, &variant))
    fail("model.variant", "unknown variant '" + id + "' (one of " + idList(variantNames()) + ")");
  ModelConfig m = defaultConfig(variant);
  constexpr std::int64_t kBig = std::numeric_limits<int>::max();
  if (j.contains("d_out")) m.d_out = static_cast<int>(getInt(j["d_out"], "model.d_out", 0, kBig));
  if (j.contains("num_heads")) m.num_heads = static_cast<int>(getInt(j["num_heads"], "model.num_heads", 1, kBig));
  if (j.contains("dropout")) {
    if (!j["dropout"].is_number())
      fail("model.dropout", std::string("expected a number, got ") + typeName(j["dropout"]));
    m.dropout = j["dropout"].get<double>();
  }
  if (j.contains("seed")) m.seed = static_cast<std::uint32_t>(getInt(j["seed"], "model.seed", 0, 4294967295LL));
  if (j.contains("qkv_bias")) m.qkv_bias = getBool(j["qkv_bias"], "model.qkv_bias");
  if (j.contains("causal")) m.causal = getBool(j["causal"], "model.causal");
  if (j.contains("training")) m.training = getBool(j["training"], "model.training");
  if (j.contains("batch_size")) m.batch_size = static_cast<int>(getInt(j["batch_size"], "model.batch_size", 1, kBig));
  readId(j, "scale", scaleNames(), &m.scale);
  readId(j, "normalization", normalizationNames(), &m.normalization);
  readId(j, "causal_route", causalRouteNames(), &m.causal_route);
  readId(j, "dropout_rng", dropoutStreamNames(), &m.dropout_rng);
  if (j.contains("dropout_seed") && !j["dropout_seed"].is_null())
    m.dropout_seed = static_cast<std::uint32_t>(getInt(j["dropout_seed"], "model.dropout_seed", 0, 4294967295LL));
  if (j.contains("draws_before")) m.draws_before = getInt(j["draws_before"], "model.draws_before", 0, kBig);
  return m;
}

json modelToJson(const ModelConfig& m) {
  return {{"variant", variantId(m.variant)},
          {"d_out", m.d_out},
          {"num_heads", m.num_heads},
          {"dropout", m.dropout},
          {"seed", m.seed},
          {"qkv_bias", m.qkv_bias},
          {"causal", m.causal},
          {"scale", scaleId(m.scale)},
          {"training", m.training},
          {"batch_size", m.batch_size},
          {"normalization", normalizationId(m.normalization)},
          {"causal_route", causalRouteId(m.causal_route)},
          {"dropout_rng", dropoutStreamId(m.dropout_rng)},
          {"dropout_seed", m.dropout_seed ? json(*m.dropout_seed) : json()},
          {"draws_before", m.draws_before}};
}

namespace {

RandomEmbeddings parseRandom(const json& j, const Limits& limits) {
  rejectUnknown(j, "embeddings", {"random", "seed", "rows", "cols", "draws_before"});
  RandomEmbeddings r;
  const std::string kind = getString(j.value("random", json()), "embeddings.random");
  if (kind != "uniform" && kind != "normal")
    fail("embeddings.random", "expected \"uniform\" or \"normal\", got \"" + kind + "\"");
  r.normal = kind == "normal";
  for (const char* key : {"seed", "rows", "cols"})
    if (!j.contains(key)) fail(std::string("embeddings.") + key, "required");
  r.seed = static_cast<std::uint32_t>(getInt(j["seed"], "embeddings.seed", 0, 4294967295LL));
  r.rows = static_cast<int>(getInt(j["rows"], "embeddings.rows", 1, limits.max_tokens));
  r.cols = static_cast<int>(getInt(j["cols"], "embeddings.cols", 1, limits.max_dim));
  if (j.contains("draws_before"))
    r.draws_before = getInt(j["draws_before"], "embeddings.draws_before", 0, limits.max_draws_before);
  return r;
}

Matrix matrixOf(const NumberArray& a) {
  return Eigen::Map<const Matrix>(a.values.data(), static_cast<Eigen::Index>(a.row_count),
                                  static_cast<Eigen::Index>(a.col_count));
}

NamedTensor tensorOf(const std::string& name, const NumberArray& a) {
  NamedTensor t;
  t.name = name;
  t.is_vector = !a.rows;
  t.value = matrixOf(a);
  return t;
}

// The "parameters" object: each member read by the parser into `arrays` ("parameters.NAME"), or
// checked here (a member that is no array: a number, a string …).
std::shared_ptr<const ParameterValues> parametersOf(const json& j, const std::map<std::string, NumberArray>& arrays,
                                                    const Limits& limits, const std::string& where) {
  if (!j.is_object())
    fail(where, std::string("expected an object of state_dict names and nested lists, got ") + typeName(j));
  auto values = std::make_shared<ParameterValues>();
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string field = where + "." + it.key();
    const auto read = arrays.find(field);
    values->push_back(
        tensorOf(it.key(), read != arrays.end() ? read->second : numberArrayOf(it.value(), field, false, limits)));
  }
  if (values->empty()) return nullptr;
  return values;
}

}  // namespace

std::shared_ptr<const ParameterValues> parseParameterValues(const json& j, const Limits& limits,
                                                            const std::string& where) {
  return parametersOf(j, {}, limits, where);
}

std::shared_ptr<const ParameterValues> parseParameterValues(const json& j,
                                                            const std::map<std::string, NumberArray>& arrays,
                                                            const Limits& limits) {
  return parametersOf(j, arrays, limits, "parameters");
}

json parameterValuesToJson(const ParameterValues& values) {
  json out = json::object();
  for (const NamedTensor& t : values) {
    json rows = json::array();
    for (Eigen::Index r = 0; r < t.value.rows(); ++r) {
      json row = json::array();
      for (Eigen::Index c = 0; c < t.value.cols(); ++c) row.push_back(tidyFloat(t.value(r, c)));
      if (t.is_vector) {
        rows = std::move(row);
        break;
      }
      rows.push_back(std::move(row));
    }
    out[t.name] = std::move(rows);
  }
  return out;
}

FileCost fileCost(const Workspace& ws) {
  constexpr std::int64_t kFloatText = 17;  // "-1.17549435e-38, "
  std::int64_t floats = ws.random ? 0 : static_cast<std::int64_t>(ws.embeddings.size());
  std::int64_t rows = ws.random ? 0 : static_cast<std::int64_t>(ws.embeddings.rows());
  std::int64_t tree_floats = 0;  // the batch's own sequences are read through the tree
  for (const Matrix& m : ws.batch_sequences) {
    floats += static_cast<std::int64_t>(m.size());
    rows += static_cast<std::int64_t>(m.rows());
    tree_floats += static_cast<std::int64_t>(m.size());
  }
  std::int64_t names = 0;
  if (ws.model.parameters)
    for (const NamedTensor& t : *ws.model.parameters) {
      floats += static_cast<std::int64_t>(t.value.size());
      rows += static_cast<std::int64_t>(t.value.rows());
      names += 6 * static_cast<std::int64_t>(t.name.size()) + 16;
    }
  std::int64_t tokens = 0, token_tree = 0;
  for (const std::string& t : ws.tokens) {
    tokens += 6 * static_cast<std::int64_t>(t.size()) + 4;  // \u00XX escapes at worst, quotes, ", "
    token_tree += 32 + static_cast<std::int64_t>(t.size());
  }
  const std::int64_t view_text = static_cast<std::int64_t>(jsonText(ws.view, 2).size()) * 2;  // pretty-printed
  FileCost c;
  c.text_bytes = kFloatText * floats + 8 * rows + names + tokens + view_text + 1024;
  c.read_bytes = c.text_bytes + 8 * floats + 32 * tree_floats + token_tree + jsonTreeBytes(ws.view) + 4096;
  return c;
}

void validateWorkspace(const Workspace& ws, const Limits& limits) {
  const int T = static_cast<int>(ws.embeddings.rows());
  if (static_cast<int>(ws.tokens.size()) != T)
    fail("tokens", std::to_string(ws.tokens.size()) + " tokens but the embeddings have " + std::to_string(T) +
                       " rows (one token per row)");
  for (std::size_t i = 0; i < ws.tokens.size(); ++i)
    if (const std::size_t bad = firstNonUtf8(ws.tokens[i]); bad != std::string::npos) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(ws.tokens[i][bad]));
      fail("tokens[" + std::to_string(i) + "]", std::string("the name is not UTF-8 text (byte ") + byte + " at " +
                                                    std::to_string(bad) +
                                                    "): token names are text; give them as UTF-8");
    }
  validateModel(ws.model, T, static_cast<int>(ws.embeddings.cols()), limits);
  if (!ws.batch_sequences.empty()) {
    if (static_cast<int>(ws.batch_sequences.size()) != ws.model.batch_size - 1)
      fail("batch_sequences", std::to_string(ws.batch_sequences.size()) + " sequences, but model.batch_size " +
                                  std::to_string(ws.model.batch_size) + " needs " +
                                  std::to_string(ws.model.batch_size - 1) + " (one per element after the first)");
    for (std::size_t b = 0; b < ws.batch_sequences.size(); ++b)
      if (ws.batch_sequences[b].rows() != T || ws.batch_sequences[b].cols() != ws.embeddings.cols())
        fail("batch_sequences[" + std::to_string(b) + "]",
             std::to_string(ws.batch_sequences[b].rows()) + " × " + std::to_string(ws.batch_sequences[b].cols()) +
                 ", but every sequence of a batch is T × d_in = " + std::to_string(T) + " × " +
                 std::to_string(ws.embeddings.cols()) + " as the embeddings");
  }
  const FileCost cost = fileCost(ws);
  if (cost.text_bytes > limits.max_workspace_bytes)
    fail(ws.model.parameters && !ws.model.parameters->empty() ? "parameters" : "embeddings",
         "saved, this workspace would be a file of up to " + formatBytes(static_cast<double>(cost.text_bytes)) +
             ", over the limit of " + formatBytes(static_cast<double>(limits.max_workspace_bytes)) +
             " for a workspace file (fewer tokens or a smaller d_in fit)");
  if (cost.read_bytes > limits.max_memory_bytes)
    fail(ws.model.parameters && !ws.model.parameters->empty() ? "parameters" : "embeddings",
         "saved, this workspace would take up to " + formatBytes(static_cast<double>(cost.read_bytes)) +
             " to open again, over the memory budget of " + formatBytes(static_cast<double>(limits.max_memory_bytes)));
}

Workspace parseWorkspace(const std::string& text, const Limits& limits) {
  if (static_cast<std::int64_t>(text.size()) > limits.max_workspace_bytes)
    fail("workspace", "larger than the limit of " + formatBytes(static_cast<double>(limits.max_workspace_bytes)) +
                          " for a workspace");
  // The embeddings and parameters go straight into floats; what the rest holds is counted as it is
  // read, against the memory budget (formats/json_reading.h).
  return parseWorkspace(readJsonWithNumbers(text, "workspace", limits, NumberArrays::Workspace), limits);
}

Workspace parseWorkspace(JsonWithNumbers doc, const Limits& limits) {
  json& j = doc.tree;
  if (!j.is_object()) fail("workspace", std::string("expected a JSON object, got ") + typeName(j));
  // Another program's JSON (a tokenizer's vocab.json, a model's config.json) is said as such, not
  // by its first key: "!: unknown field".
  if (!j.empty() && !j.contains("format") && !j.contains("model") && !j.contains("tokens"))
    fail("workspace",
         "a JSON object with none of a workspace's fields (format, model, tokens, …): "
         "another program's file (a model's config.json or vocab.json?)");
  rejectUnknown(j, "", {"format", "version", "tokens", "embeddings", "batch_sequences", "model", "parameters", "view"});
  if (!j.contains("format") || j["format"] != "attnscope-workspace") fail("format", "expected \"attnscope-workspace\"");
  if (!j.contains("version")) fail("version", "required (1)");
  if (getInt(j["version"], "version", 0, std::numeric_limits<int>::max()) != 1)
    fail("version", "unsupported version " + j["version"].dump() + " (this attnscope reads 1)");

  Workspace ws;
  if (!j.contains("embeddings")) fail("embeddings", "required");
  const json& e = j["embeddings"];
  if (e.is_object()) {
    ws.random = parseRandom(e, limits);
    ws.embeddings = makeRandomEmbeddings(*ws.random);
  } else if (e.is_array()) {
    const auto read = doc.arrays.find("embeddings");
    ws.embeddings = matrixOf(read != doc.arrays.end() ? read->second : numberArrayOf(e, "embeddings", true, limits));
    doc.arrays.erase("embeddings");
  } else {
    fail("embeddings", std::string("expected an array of rows or a {\"random\": …} object, got ") + typeName(e));
  }
  const int T = static_cast<int>(ws.embeddings.rows()), d_in = static_cast<int>(ws.embeddings.cols());

  if (j.contains("tokens")) {
    const json& t = j["tokens"];
    if (!t.is_array()) fail("tokens", std::string("expected an array of strings, got ") + typeName(t));
    for (std::size_t i = 0; i < t.size(); ++i)
      ws.tokens.push_back(getString(t[i], "tokens[" + std::to_string(i) + "]"));
    if (static_cast<int>(ws.tokens.size()) != T)
      fail("tokens", std::to_string(ws.tokens.size()) + " tokens but the embeddings have " + std::to_string(T) +
                         " rows (one token per row)");
  } else {  // generated inputs need no names: t1 … tT
    for (int i = 0; i < T; ++i) ws.tokens.push_back("t" + std::to_string(i + 1));
  }

  if (j.contains("batch_sequences")) {  // batch elements 1 … B−1, each a sequence of its own
    const json& b = j["batch_sequences"];
    if (!b.is_array() || b.empty())
      fail("batch_sequences",
           "expected a list of sequences (each T × d_in, as the embeddings), one per batch "
           "element after the first");
    for (std::size_t k = 0; k < b.size(); ++k) {
      const std::string field = "batch_sequences[" + std::to_string(k) + "]";
      const auto given = doc.arrays.find(field);  // read already (a message's tensor), else in the tree
      ws.batch_sequences.push_back(
          matrixOf(given != doc.arrays.end() ? given->second : numberArrayOf(b[k], field, true, limits)));
    }
  }
  if (!j.contains("model")) fail("model", "required (at least {\"variant\": …})");
  ws.model = parseModel(j["model"]);
  // Without a batch size, a batch of sequences is as many elements as it holds.
  if (!ws.batch_sequences.empty() && !(j["model"].is_object() && j["model"].contains("batch_size")))
    ws.model.batch_size = static_cast<int>(ws.batch_sequences.size()) + 1;
  if (ws.model.variant == Variant::Simple && ws.model.d_out == 0) ws.model.d_out = d_in;
  if (j.contains("parameters")) ws.model.parameters = parametersOf(j["parameters"], doc.arrays, limits, "parameters");
  if (j.contains("view")) {
    if (!j["view"].is_object()) fail("view", std::string("expected an object, got ") + typeName(j["view"]));
    ws.view = std::move(j["view"]);
  }
  validateWorkspace(ws, limits);  // the parameters' names and shapes too
  return ws;
}

namespace {

// A model's file or folder given where a workspace goes (File › Open…, `attnscope FILE`, the CLI's
// WORKSPACE): said as such, and where it opens ("not valid JSON … last read: 'P'" said neither).
void refuseModelFiles(const std::string& path) {
  namespace fs = std::filesystem;
  const char* const opens =
      ", not a workspace: a model opens with File › Open model…, attnscope --model or "
      "attnscope-cli model-trace";
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (const char* name :
         {"model.safetensors", "pytorch_model.bin", "model.pth", "model.pt", "model.npz", "config.json"})
      if (fs::exists(fs::path(path) / name, ec))
        fail(path, std::string("a model's folder (it holds ") + name + ")" + opens);
    return;
  }
  if (!fs::is_regular_file(path, ec)) return;  // a FIFO is not opened here: the reading refuses it
  char head[9] = {};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  const std::size_t n = f ? std::fread(head, 1, sizeof head, f) : 0;
  if (f) std::fclose(f);
  if (n >= 4 && std::memcmp(head, "PK\x03\x04", 4) == 0)
    fail(path, std::string("a zip file (a model's .pth or .npz?)") + opens);
  // safetensors: an 8-byte little-endian header length (its high bytes 0), then the JSON header.
  if (n == 9 && head[6] == 0 && head[7] == 0 && head[8] == '{') fail(path, std::string("a safetensors file") + opens);
}

}  // namespace

Workspace loadWorkspace(const std::string& path, const Limits& limits) {
  refuseModelFiles(path);
  std::string text;
  if (isPng(path)) {  // a screenshot: the workspace rides in its text chunk
    // Its text is held whole, so within the memory budget too (a 2-MB PNG inflated to 512 MiB,
    // 1 GiB held, under --memory-budget 64).
    const std::int64_t most = std::min(limits.max_workspace_bytes, limits.max_memory_bytes);
    auto chunk = readPngText(path, kWorkspaceChunk, static_cast<std::size_t>(most));
    if (!chunk) fail(path, "this PNG carries no attnscope workspace (was it saved by attnscope?)");
    text = std::move(*chunk);
  } else {  // what it costs beyond its text is counted as it is parsed (parseWorkspace)
    text = readFileWithin(path, limits.max_workspace_bytes);
    // A PNG whose signature was damaged in transit (an FTP in text mode turns its \r\n into \n)
    // is no JSON either; say what it is rather than quote its first byte.
    if (text.rfind("\x89PNG", 0) == 0)
      fail(path, "a damaged PNG file (its first 8 bytes are not PNG's signature): no workspace can be read from it");
  }
  try {
    return parseWorkspace(text, limits);
  } catch (const InputError& e) {  // which file, as the lessons' messages say (path: workspace: …)
    throw InputError(path + ": " + e.what());
  }
}

namespace {

json randomToJson(const RandomEmbeddings& r) {
  json j = {{"random", r.normal ? "normal" : "uniform"}, {"seed", r.seed}, {"rows", r.rows}, {"cols", r.cols}};
  if (r.draws_before > 0) j["draws_before"] = r.draws_before;  // files without it stay as they were
  return j;
}

}  // namespace

json workspaceToJson(const Workspace& ws) {
  json j = json::object();
  j["format"] = "attnscope-workspace";
  j["version"] = 1;
  j["tokens"] = ws.tokens;
  if (ws.random) {
    j["embeddings"] = randomToJson(*ws.random);
  } else {
    json rows = json::array();
    for (int i = 0; i < ws.embeddings.rows(); ++i) {
      json row = json::array();
      for (int c = 0; c < ws.embeddings.cols(); ++c) row.push_back(tidyFloat(ws.embeddings(i, c)));
      rows.push_back(row);
    }
    j["embeddings"] = rows;
  }
  if (!ws.batch_sequences.empty()) {
    json batch = json::array();
    for (const Matrix& m : ws.batch_sequences) {
      json rows = json::array();
      for (int i = 0; i < m.rows(); ++i) {
        json row = json::array();
        for (int c = 0; c < m.cols(); ++c) row.push_back(tidyFloat(m(i, c)));
        rows.push_back(row);
      }
      batch.push_back(rows);
    }
    j["batch_sequences"] = batch;
  }
  j["model"] = modelToJson(ws.model);
  if (ws.model.parameters && !ws.model.parameters->empty())
    j["parameters"] = parameterValuesToJson(*ws.model.parameters);
  j["view"] = ws.view;
  return j;
}

namespace {

// A float as JSON that reads back as itself: its shortest decimal, and −0 as -0.0 (JSON readers
// take "-0" for the integer 0).
std::string jsonFloat(float v) { return v == 0 && std::signbit(v) ? "-0.0" : formatFloat(v); }

// Matrix rows as prettyJson writes an array of rows `depth` levels in, streamed: a GPT-2-sized
// workspace is never held as a tree and a text at once.
void writeRows(std::ostream& out, const Matrix& m, int depth) {
  const std::string pad(static_cast<std::size_t>(2 * (depth + 1)), ' ');
  out << "[\n";
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    out << pad << '[';
    for (Eigen::Index c = 0; c < m.cols(); ++c) out << (c ? ", " : "") << jsonFloat(m(r, c));
    out << (r + 1 < m.rows() ? "],\n" : "]\n");
  }
  out << std::string(static_cast<std::size_t>(2 * depth), ' ') << ']';
}

}  // namespace

// The normalized document, laid out as prettyJson lays out workspaceToJson(ws) (one member a line,
// matrix rows on one line), written as it goes; floats as their shortest float32 decimals. The small
// members come first — format, version, model, view, tokens — and the numbers last, so a reader of
// the header (a file manager sniffing its type in the first 4 KiB, the app reading an autosave's
// view) never reads the numbers.
void writeWorkspace(std::ostream& out, const Workspace& ws) {
  out << "{\n  \"format\": \"attnscope-workspace\",\n  \"version\": 1,\n  \"model\": "
      << prettyJsonAt(modelToJson(ws.model), 1) << ",\n  \"view\": " << prettyJsonAt(ws.view, 1)
      << ",\n  \"tokens\": " << prettyJsonAt(json(ws.tokens), 1) << ",\n  \"embeddings\": ";
  if (ws.random) {
    out << prettyJsonAt(randomToJson(*ws.random), 1);
  } else {
    writeRows(out, ws.embeddings, 1);
  }
  if (!ws.batch_sequences.empty()) {
    out << ",\n  \"batch_sequences\": [\n";
    for (std::size_t b = 0; b < ws.batch_sequences.size(); ++b) {
      out << "    ";
      writeRows(out, ws.batch_sequences[b], 2);
      out << (b + 1 < ws.batch_sequences.size() ? ",\n" : "\n");
    }
    out << "  ]";
  }
  if (ws.model.parameters && !ws.model.parameters->empty()) {
    std::vector<const NamedTensor*> sorted;  // by name, as a JSON object's members
    for (const NamedTensor& t : *ws.model.parameters) sorted.push_back(&t);
    std::sort(sorted.begin(), sorted.end(),
              [](const NamedTensor* a, const NamedTensor* b) { return a->name < b->name; });
    out << ",\n  \"parameters\": {\n";
    for (std::size_t k = 0; k < sorted.size(); ++k) {
      const NamedTensor& t = *sorted[k];
      out << "    " << jsonText(json(t.name)) << ": ";
      if (t.is_vector) {
        out << '[';
        for (Eigen::Index c = 0; c < t.value.size(); ++c) out << (c ? ", " : "") << jsonFloat(t.value.data()[c]);
        out << ']';
      } else {
        writeRows(out, t.value, 2);
      }
      out << (k + 1 < sorted.size() ? ",\n" : "\n");
    }
    out << "  }";
  }
  out << "\n}\n";
}

std::string dumpWorkspace(const Workspace& ws) {
  std::ostringstream out;
  writeWorkspace(out, ws);
  return out.str();
}

void saveWorkspace(const std::string& path, const Workspace& ws) {
  writeFileAtomically(path, [&ws](std::ostream& out) { writeWorkspace(out, ws); });
}

SavedModelOpening readSavedModel(const nlohmann::json& entry) {
  if (!entry.is_object() || !entry.contains("path") || !entry["path"].is_string() ||
      entry["path"].get_ref<const std::string&>().empty())
    throw InputError("the workspace's trained_model names no path: it was not opened");
  SavedModelOpening o;
  o.args = {{"path", entry["path"]}};
  constexpr std::int64_t kMostIds = std::int64_t{1} << 30;  // model_open's bound on a token id
  const auto id = [&](const nlohmann::json& v) {
    return v.is_number_integer() && v.get<std::int64_t>() >= 0 && v.get<std::int64_t>() <= kMostIds;
  };
  const auto keep = [&](const char* field, bool well_formed) {
    if (!entry.contains(field)) return;
    if (well_formed)
      o.args[field] = entry[field];
    else
      o.left_out.emplace_back(field);
  };
  for (const char* field : {"num_heads", "layer", "head"})
    keep(field, entry.contains(field) && entry[field].is_number_integer() &&
                    std::abs(entry[field].get<std::int64_t>()) <= kMostIds);
  keep("prepend_eot", entry.contains("prepend_eot") && entry["prepend_eot"].is_boolean());
  keep("ids",
       entry.contains("ids") && entry["ids"].is_array() && std::all_of(entry["ids"].begin(), entry["ids"].end(), id));
  if (entry.contains("draft")) {
    if (entry["draft"].is_string() && entry["draft"].get_ref<const std::string&>().size() <= kMostDraftBytes)
      o.draft = entry["draft"].get<std::string>();
    else
      o.left_out.emplace_back("draft");
  }
  return o;
}

bool holdsUnsavedWork(const nlohmann::json& view) {
  if (!view.is_object()) return true;
  const bool dirty = !view.contains("dirty") || !view["dirty"].is_boolean() || view["dirty"].get<bool>();
  const auto model = view.find("trained_model");
  return dirty || (model != view.end() && model->is_object() && model->contains("draft"));
}

}  // namespace attnscope
