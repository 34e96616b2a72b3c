// The workspace file (docs/DESIGN.md §2.4): the one file format of the app and the CLI — reading,
// validating and writing the Workspace of model/workspace.h. Loading validates everything and names
// the field at fault.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/model_config.h"
#include "engine/tensor.h"
#include "formats/json_reading.h"
#include "model/workspace.h"

namespace attnscope {

struct NumberArray;  // formats/json_reading.h

// Parse and validate; throws InputError with one message naming the field.
Workspace parseWorkspace(const std::string& text, const Limits& limits = {});
// The same from a tree whose numbers were read already (formats/json_reading.h): "embeddings",
// "parameters.NAME" and "batch_sequences[k]" in doc.arrays stand for those members, which the
// tree holds as empty arrays (a channel message's float32 tensors, editing/channel_message.h).
Workspace parseWorkspace(JsonWithNumbers doc, const Limits& limits);
Workspace loadWorkspace(const std::string& path, const Limits& limits = {});

// What saving a workspace writes at most and what reading that file back holds at most: its text,
// its numbers as floats (a vector that grows may hold twice its values) and the rest as a tree
// (formats/json_reading.h). Upper bounds from the sizes alone (a float's shortest decimal is at
// most 15 characters), cheap enough for every edit.
struct FileCost {
  std::int64_t text_bytes = 0;
  std::int64_t read_bytes = 0;
};
FileCost fileCost(const Workspace& ws);

// Everything a loaded file is checked for, on a workspace in memory: token names one per row and
// UTF-8 text ("tokens[3]: …"), the model (validateModel), and that its file could be read again —
// within max_file_bytes and the memory budget — so whatever is accepted can be saved and opened
// again. Throws InputError naming the field.
void validateWorkspace(const Workspace& ws, const Limits& limits);

// The "model" object: parsed with the variant's defaults for missing fields, throwing InputError
// naming the field ("model.d_out: …"); printed with every field.
ModelConfig parseModel(const nlohmann::json& model);
nlohmann::json modelToJson(const ModelConfig& m);

// The top-level "parameters" object: state_dict names → a matrix (a list of rows) or a bias (a list
// of numbers), each value finite as float32, sizes within limits.max_dim. Throws InputError naming
// the entry ("parameters.W_query.weight[1]: …"); names and shapes are validateModel's to check.
// Null for an empty object. `where` names the object in messages.
std::shared_ptr<const ParameterValues> parseParameterValues(const nlohmann::json& j, const Limits& limits = {},
                                                            const std::string& where = "parameters");
// The same, its tensors already read by readJsonWithNumbers into `arrays` ("parameters.NAME").
std::shared_ptr<const ParameterValues> parseParameterValues(const nlohmann::json& j,
                                                            const std::map<std::string, NumberArray>& arrays,
                                                            const Limits& limits = {});
nlohmann::json parameterValuesToJson(const ParameterValues& values);

// The normalized document: every model field present, the same embedding form as loaded.
nlohmann::json workspaceToJson(const Workspace& ws);
std::string dumpWorkspace(const Workspace& ws);
void writeWorkspace(std::ostream& out, const Workspace& ws);

// Writes atomically (formats/atomic_file.h): a failed write leaves the old file intact. Throws
// InputError naming the path on failure.
void saveWorkspace(const std::string& path, const Workspace& ws);

// The view's "trained_model" (docs/DESIGN.md §3.1 "A trained model in a workspace"), read as
// model_open's arguments: "path" (a string; without one, an InputError — nothing to open), and of
// "num_heads", "layer", "head" (integers), "prepend_eot" (a boolean) and "ids" (token ids, integers
// ≥ 0) those that are well formed. A field present but malformed is left out of `args` and named in
// `left_out`, so a damaged entry still opens the model, at its first text or layer, and says so.
// "draft" (an autosave's: the text typed into the model's field and not applied, a string of at most
// kMostDraftBytes) is no argument of model_open: it goes back into the field.
struct SavedModelOpening {
  nlohmann::json args;
  std::string draft;
  std::vector<std::string> left_out;
};
constexpr std::size_t kMostDraftBytes = std::size_t{1} << 20;  // GPT-2's whole context is ~5 KB of text
SavedModelOpening readSavedModel(const nlohmann::json& entry);
// Whether an autosave's view holds work a session would lose: unsaved ("dirty", true when absent
// or malformed), or a model's text typed and not applied (its trained_model's "draft").
bool holdsUnsavedWork(const nlohmann::json& view);

}  // namespace attnscope
