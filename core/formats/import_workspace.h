// A workspace from numbers a notebook printed or saved (issue 13; docs/DESIGN.md §2.4, §2.5): the
// embeddings from a file (formats/tensor_import.h), token names, and a model — what
// `attnscope-cli import` prints and what the app's paste will build.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/model_config.h"
#include "formats/workspace.h"

namespace attnscope {

struct ImportRequest {
  std::string embeddings;                 // a file, or "-" for standard input
  std::string array;                      // the .npz entry to use ("": the only 2-D one)
  std::optional<std::string> tokens;      // names split at whitespace ("Your journey starts")
  std::optional<Variant> variant;         // default: multihead
  std::optional<std::uint32_t> seed;      // default: the variant's (§2.1)
  std::optional<int> num_heads;           // default: the variant's
};

struct ImportResult {
  Workspace workspace;             // validated
  std::vector<std::string> notes;  // what was decided for the user (e.g. tokens renamed t1 … tT)
};

// Reads, names and validates. Throws InputError: "FILE:LINE:COLUMN: why" for bad text,
// "FILE: why" for bad files, "model.…: why" or "--option: why" for settings.
ImportResult importWorkspace(const ImportRequest& request, const Limits& limits = {});

}  // namespace attnscope
