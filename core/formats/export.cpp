// Exports of matrices and traces: CSV and JSON text in shortest float32 decimals, and NumPy .npy
// (format 1.0, little-endian float32, C order) so notebooks can numpy.load what the app shows.
#include "formats/export.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <system_error>

#include "engine/errors.h"
#include "engine/stages.h"
#include "formats/json_format.h"
#include "formats/trace_json.h"

namespace attnscope {

bool parseExportFormat(const std::string& id, ExportFormat* out) {
  if (id == "csv") *out = ExportFormat::Csv;
  else if (id == "json") *out = ExportFormat::Json;
  else if (id == "npy") *out = ExportFormat::Npy;
  else return false;
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
std::string npy(const Matrix& m, const std::string& shape) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  const std::size_t prefix = 6 + 2 + 2;
  const std::size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(dict.size() & 0xFF));
  out.push_back(static_cast<char>(dict.size() >> 8));
  out += dict;
  out.reserve(out.size() + 4 * static_cast<std::size_t>(m.size()));
  for (int i = 0; i < m.rows(); ++i)
    for (int j = 0; j < m.cols(); ++j) appendLittleEndian(out, m(i, j));
  return out;
}

std::string vectorCsv(const Matrix& v) {
  std::string out;
  for (Eigen::Index j = 0; j < v.size(); ++j) out += (j ? "," : "") + csvNumber(v(j));
  return out + "\n";
}

std::string vectorNpy(const Matrix& v) {
  return npy(v, "(" + std::to_string(v.size()) + ",)");
}

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

}  // namespace

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
  if (f == ExportFormat::Json) {
    std::ostringstream text;
    writeTraceJson(text, ws, trace);
    writeFileAtomically(joinPath(folder, "trace.json"), text.str());
    return 1;
  }
  const std::string ext = exportExtension(f);
  int written = 0;
  auto write = [&](const std::string& name, const std::string& contents) {
    writeFileAtomically(joinPath(folder, name + ext), contents);
    ++written;
  };
  for (std::size_t b = 0; b < trace.batches.size(); ++b) {
    const BatchTrace& bt = trace.batches[b];
    const std::string batch = "b" + std::to_string(b);
    for (std::size_t h = 0; h < bt.heads.size(); ++h) {
      const HeadTrace& ht = bt.heads[h];
      const std::string head = batch + "_h" + std::to_string(h) + "_";
      for (const StageInfo& stage : stageTable())  // masks as 0/1 floats; weights come whole below
        if (!stage.parameter) write(head + stage.id, exportMatrix(stageValues(trace, ht, stage.stage), f));
    }
    write(batch + "_context", exportMatrix(bt.context, f));
    write(batch + "_output", exportMatrix(bt.output, f));
  }
  for (const NamedTensor& p : stateDict(trace.model, *trace.parameters)) {
    const std::string contents = !p.is_vector            ? exportMatrix(p.value, f)
                                 : f == ExportFormat::Csv ? vectorCsv(p.value)
                                                          : vectorNpy(p.value);
    write("param_" + p.name, contents);
  }
  return written;
}

}  // namespace attnscope
