// Exports of matrices and traces for notebooks: CSV, JSON and NumPy .npy (the figures of every map
// are display/stage_figures.h's). File names number batch elements and heads from 1, as the app
// says "head 1" (docs/DESIGN.md §2.5).
#pragma once
#include <string>
#include <vector>

#include "engine/head_statistics.h"
#include "engine/stages.h"
#include "engine/tensor.h"
#include "engine/trace.h"
#include "model/workspace.h"

namespace attnscope {

enum class ExportFormat { Csv, Json, Npy };
bool parseExportFormat(const std::string& id, ExportFormat* out);  // "csv", "json", "npy"
const char* exportExtension(ExportFormat f);                       // ".csv", …

// One matrix: CSV (rows of comma-separated shortest float32 decimals, "-inf" for −∞), JSON (an
// array of rows, −∞ as null) or .npy (format 1.0, '<f4', C order, shape (rows, cols)).
std::string matrixCsv(const Matrix& m);
std::string matrixJson(const Matrix& m);
std::string matrixNpy(const Matrix& m);
// Any C-order float32 array as .npy (format 1.0, '<f4'): a state_dict's tensors in an .npz.
std::string arrayNpy(const float* data, const std::vector<std::int64_t>& shape);
std::string exportMatrix(const Matrix& m, ExportFormat f);

// A CSV's header row and first column: what the rows and the columns are.
struct CsvLabels {
  std::string corner;             // the header's first cell, naming the rows: "query" or "token"
  std::vector<std::string> rows;  // the first column, one per row (query tokens)
  std::vector<std::string> cols;  // the header, one per column (key tokens, or d0, d1, …)
};
// The labels of a map over tokens: a T × T map has query tokens down and key tokens across
// (corner "query"); a T × w one has tokens down and d0, d1, … across (corner "token").
CsvLabels tokenLabels(const std::vector<std::string>& tokens, Eigen::Index cols, bool square);
// CSV with a header row and a first column; fields with commas, quotes or line breaks are quoted
// (RFC 4180). The numbers are matrixCsv's.
std::string matrixCsv(const Matrix& m, const CsvLabels& labels);

// One map of a head as a file's contents: CSV labelled with its tokens (a head's columns of
// W_query, W_key, W_value: "input" and d0, d1, … down, d0, d1, … across), JSON or .npy.
std::string exportMap(const Trace& t, const HeadTrace& h, Stage s, const std::vector<std::string>& tokens,
                      ExportFormat f);
// "b1_h2_weights": the file name (without extension) of a head's map; batch and head 0-based in,
// 1-based in the name.
std::string mapFileStem(int batch, int head, Stage s);

// The formats one map can be saved in, as the app's save dialog offers them: "csv", "json",
// "npy" (exportMap) and "png", "svg", "pdf" (a figure).
const std::vector<std::string>& mapFileFormats();
// The format a typed file name asks for, the extension winning over the format chosen before:
// "x.csv" is CSV whatever was chosen; a name without an extension gets the chosen one's
// (*name = "x.npy"). An extension that is not a format is refused: false, *error one sentence.
bool mapFileFormat(std::string* name, const std::string& chosen, std::string* format, std::string* error);
// A name's extension in lower case, without its dot ("csv" for "x.CSV"); "" for none (a dot in a
// folder's name or a leading one is no extension).
std::string extensionOf(const std::string& name);
// `name` with its extension replaced by (or, without one, extended with) `format`'s.
std::string withExtension(const std::string& name, const std::string& format);

// What attnscope keeps in a file of this name's extension (case aside), one table: "a workspace"
// (.json), "a screenshot" (.png), "a figure" (.svg, .pdf), "a table" (.csv), "an array" (.npy),
// "a PyTorch script" (.py), "a model" (.pth, .pt, .npz, .safetensors); "" for another extension
// or none. A writer refuses a name of another kind than it writes (writtenKindRefusal): `save`
// onto x.png had put JSON in a screenshot's place, `save_pytorch` onto x.json a script no
// attnscope opens.
std::string fileKindOf(const std::string& path);
// The refusal of writing `kind` (fileKindOf's words) under `path`, or "" when its extension is of
// that kind or of none: "x.png is named as a screenshot: a workspace is saved as .json".
std::string writtenKindRefusal(const std::string& path, const std::string& kind);

// A head's statistics (engine/head_statistics.h) as a table of its query rows. CSV: a header
// `query,entropy,effective_tokens,max_weight,argmax,argmax_key,row_sum_after_dropout` and one row
// per query token (argmax 0-based, argmax_key its token); .npy: T × 5 float32, the trace JSON's
// order (entropy, effective_tokens, max_weight, argmax, row_sum_after_dropout).
std::string statisticsCsv(const HeadStatistics& s, const std::vector<std::string>& tokens);
Matrix statisticsMatrix(const HeadStatistics& s);
// The per-head summaries of one batch element, a row per head: CSV `head,mean_entropy,
// mean_weight_previous_token,mean_weight_first_token` (heads "head 1", "head 2", …; the previous-token
// mean empty when T = 1); .npy: heads × 3 float32 (NaN where the CSV is empty).
std::string statisticsSummaryCsv(const std::vector<HeadStatistics>& heads);
Matrix statisticsSummaryMatrix(const std::vector<HeadStatistics>& heads);

// The whole trace into `folder` (created if needed): JSON as `attnscope-cli trace` prints it
// (trace.json); CSV or .npy as one file per matrix, named b{batch}_h{head}_{stage}.{ext} plus
// b{batch}_context, b{batch}_output (batch and head from 1) and parameter files
// (param_{state_dict name}.{ext}, torch's names), and the statistics: b{batch}_h{head}_statistics
// per head and b{batch}_statistics (the heads' summaries) per batch element with heads. CSV files of maps over tokens
// have a header row and a first column (tokenLabels); parameters are numbers only. Writes each file atomically; throws
// InputError naming the path on failure. Returns the number of files written.
int exportTrace(const Workspace& ws, const Trace& trace, const std::string& folder, ExportFormat f);

// The pieces exportTrace and the figures (display/stage_figures.h) share: the folder made (or
// refused when a file is there), a path in it, T token labels whatever the workspace holds (a
// trace's T is authoritative: t1 … tT otherwise), and d0, d1, … for n dimensions.
void makeFolder(const std::string& folder);
std::string joinPath(const std::string& folder, const std::string& name);
std::vector<std::string> tokensOf(const std::vector<std::string>& tokens, int T);
std::vector<std::string> dimLabels(Eigen::Index n, Eigen::Index first = 0);  // "d<first>" … "d<first + n − 1>"

}  // namespace attnscope
