#include "formats/import_workspace.h"

#include <iostream>

#include "engine/errors.h"
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

}  // namespace

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

  const Variant variant = request.variant.value_or(Variant::MultiHead);
  ws.model = defaultConfig(variant);
  if (variant == Variant::Simple) ws.model.d_out = d_in;
  if (request.seed) ws.model.seed = *request.seed;
  if (request.num_heads) ws.model.num_heads = *request.num_heads;
  validateModel(ws.model, T, d_in, limits);
  return result;
}

}  // namespace attnscope
