// Exports of matrices and traces: CSV and JSON text in shortest float32 decimals, and NumPy .npy
// (format 1.0, little-endian float32, C order) so notebooks can numpy.load what the app shows.
#include "formats/export.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>
#include <system_error>

#include "engine/errors.h"
#include "engine/stages.h"
#include "formats/atomic_file.h"
#include "formats/json_format.h"
#include "formats/spreadsheet_text.h"
#include "formats/trace_json.h"

namespace attnscope {

bool parseExportFormat(const std::string& id, ExportFormat* out) {
  if (id == "csv")
    *out = ExportFormat::Csv;
  else if (id == "json")
    *out = ExportFormat::Json;
  else if (id == "npy")
    *out = ExportFormat::Npy;
  else
    return false;
  return true;
}

const char* exportExtension(ExportFormat f) {
  switch (f) {
    case ExportFormat::Csv: return ".csv";
    case ExportFormat::Json: return ".json";
    case ExportFormat::Npy: return ".npy";
  }
  return "";
}

namespace {

// CSV cell: shortest round-trip decimal; to_chars already spells −∞ "-inf".
std::string csvNumber(float v) { return formatFloat(v); }

// JSON has no infinities or NaN: −∞ (the only one the engine produces) becomes null.
std::string jsonNumber(float v) { return std::isfinite(v) ? formatFloat(v) : "null"; }

void appendLittleEndian(std::string& out, float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
}

// NPY 1.0: magic, version, uint16 header length, a Python dict literal padded with spaces and
// ending in '\n' so that the data starts at a multiple of 64 bytes, then the raw values.
// An .npy header (format 1.0, '<f4', C order) of `shape` ("(2, 3)"), padded to 64 bytes.
std::string npyHeader(const std::string& shape, std::size_t floats) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  const std::size_t prefix = 6 + 2 + 2;
  const std::size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(dict.size() & 0xFF));
  out.push_back(static_cast<char>(dict.size() >> 8));
  out += dict;
  out.reserve(out.size() + 4 * floats);
  return out;
}

std::string npy(const Matrix& m, const std::string& shape) {
  std::string out = npyHeader(shape, static_cast<std::size_t>(m.size()));
  for (int i = 0; i < m.rows(); ++i)
    for (int j = 0; j < m.cols(); ++j) appendLittleEndian(out, m(i, j));
  return out;
}

std::string vectorCsv(const Matrix& v) {
  std::string out;
  for (Eigen::Index j = 0; j < v.size(); ++j) out += (j ? "," : "") + csvNumber(v(j));
  return out + "\n";
}

std::string vectorNpy(const Matrix& v) { return npy(v, "(" + std::to_string(v.size()) + ",)"); }

// A CSV field: quoted when it holds a comma, a quote, a line break or edge spaces (RFC 4180). A
// text a spreadsheet would take for a formula (a token "=HYPERLINK(…)") is marked as text first
// (markedCellText): nothing in a file is ever run.
std::string csvField(const std::string& text) {
  const std::string s = markedCellText(text);
  const bool quote = s.find_first_of(",\"\r\n") != std::string::npos ||
                     (!s.empty() && (s.front() == ' ' || s.back() == ' '));
  if (!quote) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

void makeFolder(const std::string& folder) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(folder, ec) && !fs::is_directory(folder, ec))
    throw InputError(folder + ": exists and is not a folder");
  fs::create_directories(folder, ec);
  if (ec) throw InputError(folder + ": cannot create the folder (" + ec.message() + ")");
}

std::string joinPath(const std::string& folder, const std::string& name) {
  return (std::filesystem::path(folder) / name).string();
}

// T labels, whatever the workspace holds (a trace's T is authoritative).
std::vector<std::string> tokensOf(const std::vector<std::string>& tokens, int T) {
  if (static_cast<int>(tokens.size()) == T) return tokens;
  std::vector<std::string> out;
  for (int i = 0; i < T; ++i) out.push_back("t" + std::to_string(i + 1));
  return out;
}

std::vector<std::string> dimLabels(Eigen::Index n, Eigen::Index first) {
  std::vector<std::string> out;
  for (Eigen::Index d = first; d < first + n; ++d) out.push_back("d" + std::to_string(d));
  return out;
}

CsvLabels tokenLabels(const std::vector<std::string>& tokens, Eigen::Index cols, bool square) {
  CsvLabels l;
  l.corner = square ? "query" : "token";
  l.rows = tokens;
  l.cols = square ? tokens : dimLabels(cols);
  return l;
}

std::string matrixCsv(const Matrix& m, const CsvLabels& labels) {
  if (static_cast<Eigen::Index>(labels.rows.size()) != m.rows() ||
      static_cast<Eigen::Index>(labels.cols.size()) != m.cols())
    throw InputError("CSV labels: " + std::to_string(labels.rows.size()) + " × " + std::to_string(labels.cols.size()) +
                     " labels for a " + std::to_string(m.rows()) + " × " + std::to_string(m.cols()) + " matrix");
  std::string out = csvField(labels.corner);
  for (const std::string& c : labels.cols) out += "," + csvField(c);
  out += "\n";
  for (int i = 0; i < m.rows(); ++i) {
    out += csvField(labels.rows[static_cast<std::size_t>(i)]);
    for (int j = 0; j < m.cols(); ++j) out += "," + csvNumber(m(i, j));
    out += "\n";
  }
  return out;
}

std::string statisticsCsv(const HeadStatistics& s, const std::vector<std::string>& tokens) {
  const std::vector<std::string> rows = tokensOf(tokens, s.rows());
  std::string out = "query,entropy,effective_tokens,max_weight,argmax,argmax_key,row_sum_after_dropout\n";
  for (int i = 0; i < s.rows(); ++i) {
    const int key = s.argmax[static_cast<std::size_t>(i)];
    out += csvField(rows[static_cast<std::size_t>(i)]) + "," + csvNumber(s.entropy(i)) + "," +
           csvNumber(s.effective_tokens(i)) + "," + csvNumber(s.max_weight(i)) + "," + std::to_string(key) + "," +
           csvField(rows[static_cast<std::size_t>(key)]) + "," + csvNumber(s.row_sum_after_dropout(i)) + "\n";
  }
  return out;
}

Matrix statisticsMatrix(const HeadStatistics& s) {
  Matrix m(s.rows(), 5);  // T × 5
  for (int i = 0; i < s.rows(); ++i)
    m.row(i) << s.entropy(i), s.effective_tokens(i), s.max_weight(i),
        static_cast<float>(s.argmax[static_cast<std::size_t>(i)]), s.row_sum_after_dropout(i);
  return m;
}

std::string statisticsSummaryCsv(const std::vector<HeadStatistics>& heads) {
  std::string out = "head,mean_entropy,mean_weight_previous_token,mean_weight_first_token\n";
  for (std::size_t h = 0; h < heads.size(); ++h)
    out += "head " + std::to_string(h + 1) + "," + csvNumber(heads[h].mean_entropy) + "," +
           (heads[h].has_previous ? csvNumber(heads[h].mean_previous) : "") + "," + csvNumber(heads[h].mean_first) +
           "\n";
  return out;
}

Matrix statisticsSummaryMatrix(const std::vector<HeadStatistics>& heads) {
  Matrix m(static_cast<Eigen::Index>(heads.size()), 3);  // heads × 3
  for (std::size_t h = 0; h < heads.size(); ++h)
    m.row(static_cast<Eigen::Index>(h)) << heads[h].mean_entropy,
        heads[h].has_previous ? heads[h].mean_previous : std::numeric_limits<float>::quiet_NaN(), heads[h].mean_first;
  return m;
}

std::string exportMap(const Trace& t, const HeadTrace& h, Stage s, const std::vector<std::string>& tokens,
                      ExportFormat f) {
  const Matrix m = stageValues(t, h, s);
  if (f != ExportFormat::Csv) return exportMatrix(m, f);
  if (stageInfo(s).parameter)  // a head's columns of W (X·W form): input dimensions down
    return matrixCsv(m, CsvLabels{"input", dimLabels(m.rows()), dimLabels(m.cols())});
  return matrixCsv(m, tokenLabels(tokensOf(tokens, t.tokens), m.cols(), stageInfo(s).square));
}

std::string mapFileStem(int batch, int head, Stage s) {
  return "b" + std::to_string(batch + 1) + "_h" + std::to_string(head + 1) + "_" + stageId(s);
}

const std::vector<std::string>& mapFileFormats() {
  static const std::vector<std::string> formats = {"csv", "json", "npy", "png", "svg", "pdf"};
  return formats;
}

namespace {

// Where a file name's extension starts (its dot), or npos: never in a folder part or a leading dot.
std::size_t extensionDot(const std::string& name) {
  const std::size_t slash = name.find_last_of('/');
  const std::size_t base = slash == std::string::npos ? 0 : slash + 1;
  const std::size_t dot = name.find_last_of('.');
  return dot == std::string::npos || dot <= base ? std::string::npos : dot;
}

}  // namespace

std::string withExtension(const std::string& name, const std::string& format) {
  const std::size_t dot = extensionDot(name);
  return (dot == std::string::npos ? name : name.substr(0, dot)) + "." + format;
}

namespace {
struct FileKind {
  const char* extension;
  const char* kind;
};
constexpr FileKind kFileKinds[] = {{"json", "a workspace"},  {"png", "a screenshot"},   {"svg", "a figure"},
                                   {"pdf", "a figure"},      {"csv", "a table"},        {"npy", "an array"},
                                   {"py", "a PyTorch script"}, {"pth", "a model"},      {"pt", "a model"},
                                   {"npz", "a model"},       {"safetensors", "a model"}};
}  // namespace

std::string extensionOf(const std::string& name) {
  const std::size_t dot = extensionDot(name);
  if (dot == std::string::npos) return "";
  std::string ext = name.substr(dot + 1);
  for (char& c : ext) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return ext;
}

std::string fileKindOf(const std::string& path) {
  const std::string ext = extensionOf(path);
  if (ext.empty()) return "";
  for (const FileKind& k : kFileKinds)
    if (ext == k.extension) return k.kind;
  return "";
}

std::string writtenKindRefusal(const std::string& path, const std::string& kind) {
  const std::string named = fileKindOf(path);
  if (named.empty() || named == kind) return "";
  std::string extensions;
  for (const FileKind& k : kFileKinds)
    if (kind == k.kind) extensions += std::string(extensions.empty() ? "." : " or .") + k.extension;
  return path + " is named as " + named + ": " + kind + " is saved as " + extensions;
}

bool mapFileFormat(std::string* name, const std::string& chosen, std::string* format, std::string* error) {
  const std::vector<std::string>& known = mapFileFormats();
  const std::size_t dot = extensionDot(*name);
  if (dot == std::string::npos) {
    *format = chosen;
    *name = withExtension(*name, chosen);
    return true;
  }
  const std::string ext = extensionOf(*name);
  if (std::find(known.begin(), known.end(), ext) != known.end()) {
    *format = ext;
    return true;
  }
  std::string list;
  for (std::size_t k = 0; k < known.size(); ++k)
    list += (k == 0 ? "." : k + 1 == known.size() ? " or ." : ", .") + known[k];
  *error = "'" + name->substr(dot) + "' is not a format a map is saved in: name the file " + list;
  return false;
}

std::string matrixCsv(const Matrix& m) {
  std::string out;
  for (int i = 0; i < m.rows(); ++i) {
    for (int j = 0; j < m.cols(); ++j) out += (j ? "," : "") + csvNumber(m(i, j));
    out += "\n";
  }
  return out;
}

std::string matrixJson(const Matrix& m) {
  std::string out = "[";
  for (int i = 0; i < m.rows(); ++i) {
    out += i ? ",\n  [" : "\n  [";
    for (int j = 0; j < m.cols(); ++j) out += (j ? ", " : "") + jsonNumber(m(i, j));
    out += "]";
  }
  return out + (m.rows() ? "\n]\n" : "]\n");
}

std::string arrayNpy(const float* data, const std::vector<std::int64_t>& shape) {
  std::string text = "(";
  std::size_t n = 1;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    text += (k ? ", " : "") + std::to_string(shape[k]);
    n *= static_cast<std::size_t>(shape[k]);
  }
  std::string out = npyHeader(text + (shape.size() == 1 ? ",)" : ")"), n);
  for (std::size_t i = 0; i < n; ++i) appendLittleEndian(out, data[i]);
  return out;
}

std::string matrixNpy(const Matrix& m) {
  return npy(m, "(" + std::to_string(m.rows()) + ", " + std::to_string(m.cols()) + ")");
}

std::string exportMatrix(const Matrix& m, ExportFormat f) {
  switch (f) {
    case ExportFormat::Csv: return matrixCsv(m);
    case ExportFormat::Json: return matrixJson(m);
    case ExportFormat::Npy: return matrixNpy(m);
  }
  return {};
}

int exportTrace(const Workspace& ws, const Trace& trace, const std::string& folder, ExportFormat f) {
  makeFolder(folder);
  if (f == ExportFormat::Json) {  // streamed into the file: a GPT-2 trace is never held as text too
    writeFileAtomically(joinPath(folder, "trace.json"), [&](std::ostream& out) { writeTraceJson(out, ws, trace); });
    return 1;
  }
  const std::string ext = exportExtension(f);
  int written = 0;
  auto write = [&](const std::string& name, const std::string& contents) {
    writeFileAtomically(joinPath(folder, name + ext), contents);
    ++written;
  };
  const std::vector<std::string> tokens = tokensOf(ws.tokens, trace.tokens);
  auto overTokens = [&](const Matrix& m) {  // the context and the output: tokens down, d0, d1, … across
    return f == ExportFormat::Csv ? matrixCsv(m, tokenLabels(tokens, m.cols(), false)) : exportMatrix(m, f);
  };
  for (std::size_t b = 0; b < trace.batches.size(); ++b) {
    const BatchTrace& bt = trace.batches[b];
    const std::string batch = "b" + std::to_string(b + 1);
    std::vector<HeadStatistics> statistics;
    for (std::size_t h = 0; h < bt.heads.size(); ++h) {
      const HeadTrace& ht = bt.heads[h];
      for (const StageInfo& stage : stageTable())  // masks as 0/1 floats; the weights come whole below
        if (!stage.parameter && stageHeld(trace, stage.stage))
          write(mapFileStem(static_cast<int>(b), static_cast<int>(h), stage.stage),
                exportMap(trace, ht, stage.stage, tokens, f));
      statistics.push_back(headStatistics(trace, ht));
      const std::string stem = "b" + std::to_string(b + 1) + "_h" + std::to_string(h + 1) + "_statistics";
      write(stem, f == ExportFormat::Csv ? statisticsCsv(statistics.back(), tokens)
                                         : exportMatrix(statisticsMatrix(statistics.back()), f));
    }
    if (!statistics.empty())
      write(batch + "_statistics", f == ExportFormat::Csv ? statisticsSummaryCsv(statistics)
                                                          : exportMatrix(statisticsSummaryMatrix(statistics), f));
    write(batch + "_context", overTokens(bt.context));
    write(batch + "_output", overTokens(bt.output));
  }
  forEachStateDictEntry(trace.model, *trace.parameters,
                        [&](const std::string& name, const Matrix& value, bool is_vector) {
                          const std::string contents = !is_vector               ? exportMatrix(value, f)
                                                       : f == ExportFormat::Csv ? vectorCsv(value)
                                                                                : vectorNpy(value);
                          write("param_" + name, contents);
                        });
  return written;
}

}  // namespace attnscope
