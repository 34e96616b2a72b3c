// fuzz_workspace: workspace JSON (core/formats/workspace_file.h). Any text is either refused with an
// InputError or accepted; an accepted workspace is consistent (tokens = rows, the model
// validates, a random recipe makes exactly its embeddings), and saving it (dumpWorkspace) then
// loading the saved text gives the same workspace — tokens, embeddings bit for bit, model, view —
// whose own save is the same text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attnscope;
  const Limits limits = fuzz::workspaceLimits();
  const std::optional<Workspace> parsed = fuzz::parseOrRefuse(data, size, limits);
  if (!parsed) return 0;
  const Workspace& ws = *parsed;
  fuzz::checkConsistent(ws, limits, "parsed");
  fuzz::checkRoundTrip(ws, limits, "parse → dump → parse");
  return 0;
}
