// Exports of matrices and traces for notebooks and slides: CSV, JSON and NumPy .npy.
#pragma once
#include <string>

#include "engine/tensor.h"
#include "engine/trace.h"
#include "formats/workspace.h"

namespace attnscope {

enum class ExportFormat { Csv, Json, Npy };
bool parseExportFormat(const std::string& id, ExportFormat* out);  // "csv", "json", "npy"
const char* exportExtension(ExportFormat f);                         // ".csv", …

// One matrix: CSV (rows of comma-separated shortest float32 decimals, "-inf" for −∞), JSON (an
// array of rows, −∞ as null) or .npy (format 1.0, '<f4', C order, shape (rows, cols)).
std::string matrixCsv(const Matrix& m);
std::string matrixJson(const Matrix& m);
std::string matrixNpy(const Matrix& m);
std::string exportMatrix(const Matrix& m, ExportFormat f);

// The whole trace into `folder` (created if needed): JSON as `attnscope-cli trace` prints it
// (trace.json); CSV or .npy as one file per matrix, named b{batch}_h{head}_{stage}.{ext} plus
// b{batch}_context, b{batch}_output and parameter files (param_{state_dict name}.{ext}).
// Writes each file atomically; throws InputError naming the path on failure. Returns the number
// of files written.
int exportTrace(const Workspace& ws, const Trace& trace, const std::string& folder, ExportFormat f);

}  // namespace attnscope
