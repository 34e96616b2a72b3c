// fuzz_workspace: workspace JSON (core/formats/workspace_file.h). Any text is either refused with an
// InputError or accepted; an accepted workspace is consistent (tokens = rows, the model
// validates, a random recipe makes exactly its embeddings), and saving it (dumpWorkspace) then
// loading the saved text gives the same workspace — tokens, embeddings bit for bit, model, view —
// whose own save is the same text. Its view's trained_model, if any, is either refused (no path) or
// read as model_open's arguments of the right types, every other field named as left out.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/errors.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attnscope;
  const Limits limits = fuzz::workspaceLimits();
  const std::optional<Workspace> parsed = fuzz::parseOrRefuse(data, size, limits);
  if (!parsed) return 0;
  const Workspace& ws = *parsed;
  fuzz::checkConsistent(ws, limits, "parsed");
  fuzz::checkRoundTrip(ws, limits, "parse → dump → parse");
  if (ws.view.contains("trained_model")) {
    const nlohmann::json& entry = ws.view["trained_model"];
    try {
      const SavedModelOpening o = readSavedModel(entry);
      FUZZ_CHECK(o.args["path"].is_string() && !o.args["path"].get<std::string>().empty(), "trained_model: path");
      for (const char* field : {"num_heads", "layer", "head"})
        FUZZ_CHECK(!o.args.contains(field) || o.args[field].is_number_integer(), std::string("trained_model: ") + field);
      FUZZ_CHECK(!o.args.contains("prepend_eot") || o.args["prepend_eot"].is_boolean(), "trained_model: prepend_eot");
      if (o.args.contains("ids"))
        for (const auto& id : o.args["ids"])
          FUZZ_CHECK(id.is_number_integer() && id.get<std::int64_t>() >= 0, "trained_model: ids " + id.dump());
      FUZZ_CHECK(o.draft.size() <= kMostDraftBytes, "trained_model: draft");
      FUZZ_CHECK(o.args.size() + o.left_out.size() <= 7, "trained_model: a field taken twice");
    } catch (const InputError&) {
      FUZZ_CHECK(!entry.is_object() || !entry.contains("path") || !entry["path"].is_string() ||
                     entry["path"].get<std::string>().empty(),
                 "trained_model refused with a path: " + entry.dump());
    }
  }
  return 0;
}
