#include "formats/workspace.h"

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/errors.h"
#include "formats/json_format.h"
#include "formats/png_image.h"
#include "engine/torch_generator.h"

namespace attnscope {

using nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string& field, const std::string& why) {
  throw InputError(field + ": " + why);
}

const char* typeName(const json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  return v.type_name();
}

void rejectUnknown(const json& object, const std::string& where,
                   std::initializer_list<const char*> known) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (!ok) {
      std::string list;
      for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      fail(where.empty() ? it.key() : where + "." + it.key(),
           "unknown field (expected one of: " + list + ")");
    }
  }
}

std::int64_t getInt(const json& v, const std::string& field, std::int64_t lo, std::int64_t hi) {
  if (!v.is_number_integer() && !v.is_number_unsigned())
    fail(field, std::string("expected an integer, got ") + typeName(v));
  if (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)
                             : v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi)
    fail(field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                    ", got " + v.dump());
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

float getFloat(const json& v, const std::string& field) {
  if (!v.is_number()) fail(field, std::string("expected a number, got ") + typeName(v));
  // Finite once rounded to float32: FLT_MAX prints as 3.4028235e+38, a hair above it as a double,
  // and rounds down to it; from FLT_MAX + half an ulp on, a double rounds to ±∞ (and casting it is
  // undefined in C++), so that is checked before the cast.
  const double d = v.get<double>();
  if (!(std::fabs(d) < 3.4028235677973366e38)) fail(field, "not a finite float32 number: " + v.dump());
  const float f = static_cast<float>(d);
  return f;
}

}  // namespace

ModelConfig parseModel(const json& j) {
  if (!j.is_object()) fail("model", std::string("expected an object, got ") + typeName(j));
  rejectUnknown(j, "model",
                {"variant", "d_out", "num_heads", "dropout", "seed", "qkv_bias", "causal", "scale",
                 "training", "batch_size", "normalization"});
  if (!j.contains("variant")) fail("model.variant", "required (one of " + idList(variantNames()) + ")");
  Variant variant;
  const std::string id = getString(j["variant"], "model.variant");
  if (!parseVariant(id, &variant))
    fail("model.variant", "unknown variant '" + id + "' (one of " + idList(variantNames()) + ")");
  ModelConfig m = defaultConfig(variant);
  constexpr std::int64_t kBig = std::numeric_limits<int>::max();
  if (j.contains("d_out")) m.d_out = static_cast<int>(getInt(j["d_out"], "model.d_out", 0, kBig));
  if (j.contains("num_heads"))
    m.num_heads = static_cast<int>(getInt(j["num_heads"], "model.num_heads", 1, kBig));
  if (j.contains("dropout")) {
    if (!j["dropout"].is_number())
      fail("model.dropout", std::string("expected a number, got ") + typeName(j["dropout"]));
    m.dropout = j["dropout"].get<double>();
  }
  if (j.contains("seed"))
    m.seed = static_cast<std::uint32_t>(getInt(j["seed"], "model.seed", 0, 4294967295LL));
  if (j.contains("qkv_bias")) m.qkv_bias = getBool(j["qkv_bias"], "model.qkv_bias");
  if (j.contains("causal")) m.causal = getBool(j["causal"], "model.causal");
  if (j.contains("training")) m.training = getBool(j["training"], "model.training");
  if (j.contains("batch_size"))
    m.batch_size = static_cast<int>(getInt(j["batch_size"], "model.batch_size", 1, kBig));
  if (j.contains("scale")) {
    const std::string s = getString(j["scale"], "model.scale");
    if (!parseScale(s, &m.scale))
      fail("model.scale", "expected one of " + idList(scaleNames()) + ", got \"" + s + "\"");
  }
  if (j.contains("normalization")) {
    const std::string s = getString(j["normalization"], "model.normalization");
    if (!parseNormalization(s, &m.normalization))
      fail("model.normalization", "expected one of " + idList(normalizationNames()) + ", got \"" + s + "\"");
  }
  return m;
}

json modelToJson(const ModelConfig& m) {
  return {{"variant", variantId(m.variant)}, {"d_out", m.d_out},
          {"num_heads", m.num_heads},         {"dropout", m.dropout},
          {"seed", m.seed},                   {"qkv_bias", m.qkv_bias},
          {"causal", m.causal},               {"scale", scaleId(m.scale)},
          {"training", m.training},           {"batch_size", m.batch_size},
          {"normalization", normalizationId(m.normalization)}};
}

namespace {

RandomEmbeddings parseRandom(const json& j, const Limits& limits) {
  rejectUnknown(j, "embeddings", {"random", "seed", "rows", "cols"});
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
  return r;
}

Matrix parseMatrix(const json& j, const Limits& limits) {
  if (j.empty()) fail("embeddings", "need at least one row");
  if (j.size() > static_cast<std::size_t>(limits.max_tokens))
    fail("embeddings", std::to_string(j.size()) + " rows exceeds the limit of " +
                           std::to_string(limits.max_tokens) + " tokens");
  std::size_t cols = 0;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string row = "embeddings[" + std::to_string(i) + "]";
    if (!j[i].is_array())
      fail(row, std::string("expected an array of numbers, got ") + typeName(j[i]));
    if (i == 0) cols = j[i].size();
    if (j[i].empty()) fail(row, "need at least one value");
    if (j[i].size() != cols)
      fail(row, "has " + std::to_string(j[i].size()) + " values but row 0 has " +
                    std::to_string(cols) + " (rows must all have d_in values)");
  }
  if (cols > static_cast<std::size_t>(limits.max_dim))
    fail("embeddings", "d_in = " + std::to_string(cols) + " exceeds the limit of " +
                           std::to_string(limits.max_dim));
  Matrix x(static_cast<int>(j.size()), static_cast<int>(cols));
  for (std::size_t i = 0; i < j.size(); ++i)
    for (std::size_t c = 0; c < cols; ++c)
      x(i, c) = getFloat(j[i][c], "embeddings[" + std::to_string(i) + "][" + std::to_string(c) + "]");
  return x;
}

}  // namespace

std::shared_ptr<const ParameterValues> parseParameterValues(const json& j, const Limits& limits, const std::string& where) {
  if (!j.is_object())
    fail(where, std::string("expected an object of state_dict names and nested lists, got ") + typeName(j));
  auto values = std::make_shared<ParameterValues>();
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string field = where + "." + it.key();
    const json& v = it.value();
    if (!v.is_array() || v.empty())
      fail(field, std::string("expected a matrix (a list of rows) or a bias (a list of numbers), got ") +
                      (v.is_array() ? "an empty list" : typeName(v)));
    NamedTensor t;
    t.name = it.key();
    t.is_vector = !v[0].is_array();
    const std::size_t rows = t.is_vector ? 1 : v.size();
    const std::size_t cols = t.is_vector ? v.size() : v[0].size();
    if (rows > static_cast<std::size_t>(limits.max_dim) || cols > static_cast<std::size_t>(limits.max_dim))
      fail(field, std::to_string(rows) + " × " + std::to_string(cols) + " exceeds the limit of " +
                      std::to_string(limits.max_dim) + " in either dimension");
    if (!t.is_vector)
      for (std::size_t r = 0; r < rows; ++r) {
        const std::string row = field + "[" + std::to_string(r) + "]";
        if (!v[r].is_array()) fail(row, std::string("expected a row (a list of numbers), got ") + typeName(v[r]));
        if (v[r].empty()) fail(row, "need at least one value");
        if (v[r].size() != cols)
          fail(row, "has " + std::to_string(v[r].size()) + " values but row 0 has " + std::to_string(cols));
      }
    t.value.resize(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c)
        t.value(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) =
            t.is_vector ? getFloat(v[c], field + "[" + std::to_string(c) + "]")
                        : getFloat(v[r][c], field + "[" + std::to_string(r) + "][" + std::to_string(c) + "]");
    values->push_back(std::move(t));
  }
  if (values->empty()) return nullptr;
  return values;
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

Matrix makeRandomEmbeddings(const RandomEmbeddings& r) {
  TorchGenerator g(r.seed);
  Matrix x(r.rows, r.cols);
  if (r.normal)
    g.fillNormal(x.data(), x.size(), 0.0, 1.0);
  else
    g.fillUniform(x.data(), x.size(), 0.0, 1.0);
  return x;
}

Workspace bookExample(Variant variant) {
  Workspace ws;
  ws.tokens = {"Your", "journey", "starts", "with", "one", "step"};
  ws.embeddings.resize(6, 3);
  ws.embeddings << 0.43f, 0.15f, 0.89f,  // Your     (x^1)
      0.55f, 0.87f, 0.66f,               // journey  (x^2)
      0.57f, 0.85f, 0.64f,               // starts   (x^3)
      0.22f, 0.58f, 0.33f,               // with     (x^4)
      0.77f, 0.25f, 0.10f,               // one      (x^5)
      0.05f, 0.80f, 0.55f;               // step     (x^6)
  ws.model = defaultConfig(variant);
  if (variant == Variant::Simple) ws.model.d_out = 3;
  return ws;
}

Workspace parseWorkspace(const std::string& text, const Limits& limits) {
  if (static_cast<std::int64_t>(text.size()) > limits.max_file_bytes)
    fail("workspace", "larger than the limit of " + std::to_string(limits.max_file_bytes) + " bytes");
  if (parseBytes(static_cast<std::int64_t>(text.size())) > limits.max_memory_bytes)
    fail("workspace", "reading " + formatBytes(static_cast<double>(text.size())) + " of JSON takes about " +
                          formatBytes(static_cast<double>(parseBytes(static_cast<std::int64_t>(text.size())))) +
                          ", over the memory budget of " + formatBytes(static_cast<double>(limits.max_memory_bytes)));
  if (const std::string field = tooDeep(text, kMaxJsonDepth); !field.empty())
    fail(field, "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // syntax errors, and numbers beyond double (1e400)
    std::string what = e.what();
    const auto cut = what.find("] ");
    fail("workspace", "not valid JSON: " + (cut == std::string::npos ? what : what.substr(cut + 2)));
  }
  if (!j.is_object()) fail("workspace", std::string("expected a JSON object, got ") + typeName(j));
  rejectUnknown(j, "", {"format", "version", "tokens", "embeddings", "model", "parameters", "view"});
  if (!j.contains("format") || j["format"] != "attnscope-workspace")
    fail("format", "expected \"attnscope-workspace\"");
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
    ws.embeddings = parseMatrix(e, limits);
  } else {
    fail("embeddings", std::string("expected an array of rows or a {\"random\": …} object, got ") +
                           typeName(e));
  }
  const int T = static_cast<int>(ws.embeddings.rows()), d_in = static_cast<int>(ws.embeddings.cols());

  if (j.contains("tokens")) {
    const json& t = j["tokens"];
    if (!t.is_array()) fail("tokens", std::string("expected an array of strings, got ") + typeName(t));
    for (std::size_t i = 0; i < t.size(); ++i)
      ws.tokens.push_back(getString(t[i], "tokens[" + std::to_string(i) + "]"));
    if (static_cast<int>(ws.tokens.size()) != T)
      fail("tokens", std::to_string(ws.tokens.size()) + " tokens but the embeddings have " +
                         std::to_string(T) + " rows (one token per row)");
  } else {  // generated inputs need no names: t1 … tT
    for (int i = 0; i < T; ++i) ws.tokens.push_back("t" + std::to_string(i + 1));
  }

  if (!j.contains("model")) fail("model", "required (at least {\"variant\": …})");
  ws.model = parseModel(j["model"]);
  if (ws.model.variant == Variant::Simple && ws.model.d_out == 0) ws.model.d_out = d_in;
  if (j.contains("parameters")) ws.model.parameters = parseParameterValues(j["parameters"], limits);
  validateModel(ws.model, T, d_in, limits);  // the parameters' names and shapes too

  if (j.contains("view")) {
    if (!j["view"].is_object()) fail("view", std::string("expected an object, got ") + typeName(j["view"]));
    ws.view = j["view"];
  }
  return ws;
}

Workspace loadWorkspace(const std::string& path, const Limits& limits) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) fail(path, "cannot open the file (does it exist?)");
  if (S_ISDIR(st.st_mode)) fail(path, "is a directory, not a workspace file");
  if (!S_ISREG(st.st_mode)) fail(path, "not a regular file (a pipe or a device cannot be a workspace)");
  if (st.st_size > limits.max_file_bytes)
    fail(path, "larger than the limit of " + std::to_string(limits.max_file_bytes) + " bytes");
  if (parseBytes(st.st_size) > limits.max_memory_bytes)
    fail(path, "reading a file of " + formatBytes(static_cast<double>(st.st_size)) + " takes about " +
                   formatBytes(static_cast<double>(parseBytes(st.st_size))) + ", over the memory budget of " +
                   formatBytes(static_cast<double>(limits.max_memory_bytes)));
  std::string text;
  if (isPng(path)) {  // a screenshot: the workspace rides in its text chunk
    auto chunk = readPngText(path, kWorkspaceChunk, static_cast<std::size_t>(limits.max_file_bytes));
    if (!chunk) fail(path, "this PNG carries no attnscope workspace (was it saved by attnscope?)");
    text = std::move(*chunk);
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, "cannot open the file (is it readable?)");
    text.assign(static_cast<std::size_t>(st.st_size), '\0');
    in.read(text.data(), st.st_size);
    if (in.gcount() != st.st_size) fail(path, "cannot read the file");
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

json workspaceToJson(const Workspace& ws) {
  json j = json::object();
  j["format"] = "attnscope-workspace";
  j["version"] = 1;
  j["tokens"] = ws.tokens;
  if (ws.random) {
    j["embeddings"] = {{"random", ws.random->normal ? "normal" : "uniform"},
                       {"seed", ws.random->seed},
                       {"rows", ws.random->rows},
                       {"cols", ws.random->cols}};
  } else {
    json rows = json::array();
    for (int i = 0; i < ws.embeddings.rows(); ++i) {
      json row = json::array();
      for (int c = 0; c < ws.embeddings.cols(); ++c) row.push_back(tidyFloat(ws.embeddings(i, c)));
      rows.push_back(row);
    }
    j["embeddings"] = rows;
  }
  j["model"] = modelToJson(ws.model);
  if (ws.model.parameters && !ws.model.parameters->empty()) j["parameters"] = parameterValuesToJson(*ws.model.parameters);
  j["view"] = ws.view;
  return j;
}

std::string dumpWorkspace(const Workspace& ws) { return prettyJson(workspaceToJson(ws)); }

namespace {

// The umask, read without changing it (umask(2) can only set it, which would race with other
// threads creating files): /proc/self/status has it since Linux 4.7; 022 otherwise.
mode_t processUmask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
  return 022;
}

}  // namespace

// A temporary file beside the target (a short name, so a long target name still fits), written
// and fsynced, given the target's permissions, renamed over it, and the folder fsynced: after a
// crash or a full disk the file is the old one or the new one, never a mix. A symbolic link is
// followed: its target is replaced and the link stays.
void writeFileAtomically(const std::string& path, const std::string& contents) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path target = path;
  for (int hops = 0; hops < 40 && fs::is_symlink(target, ec); ++hops) {
    const fs::path link = fs::read_symlink(target, ec);
    if (ec) break;
    target = link.is_absolute() ? link : target.parent_path() / link;
  }
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::string tmp = (folder / ".attnscope-XXXXXX").string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) fail(path, std::string("cannot write (") + std::strerror(errno) + "); the previous file is unchanged");
  auto abandon = [&](const std::string& why) {
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(path, why + "; the previous file is unchanged");
  };
  struct stat st;
  mode_t mode;
  if (::stat(target.c_str(), &st) == 0) {
    mode = st.st_mode & 07777;  // keep the file's permissions …
    if (st.st_uid != ::geteuid() || st.st_gid != ::getegid())
      (void)::fchown(fd, st.st_uid, st.st_gid);  // … and owner, where allowed (root saving a user's file)
  } else {
    mode = 0666 & ~processUmask();  // what a plain new file would get
  }
  if (::fchmod(fd, mode) != 0) abandon(std::string("cannot set permissions (") + std::strerror(errno) + ")");
  const char* p = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) abandon(std::string("write failed (") + std::strerror(n < 0 ? errno : EIO) + ")");
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) abandon(std::string("write failed (") + std::strerror(errno) + ")");
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    fail(path, std::string("write failed (") + std::strerror(errno) + "); the previous file is unchanged");
  }
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(path, std::string("cannot replace the file (") + std::strerror(err) + "); the previous file is unchanged");
  }
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {  // the rename itself survives a crash
    ::fsync(dir);
    ::close(dir);
  }
}

void saveWorkspace(const std::string& path, const Workspace& ws) {
  writeFileAtomically(path, dumpWorkspace(ws));
}

}  // namespace attnscope
