// fuzz_workspace: workspace JSON (core/formats/workspace.h). Any text is either refused with an
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
  const std::string text(reinterpret_cast<const char*>(data), size);
  const Limits limits = fuzz::workspaceLimits();
  Workspace ws;
  try {
    ws = parseWorkspace(text, limits);
  } catch (const InputError&) {
    return 0;
  } catch (const std::exception& e) {
    fuzz::unexpected("parseWorkspace", e);
  }
  fuzz::checkConsistent(ws, limits, "parsed");
  fuzz::checkRoundTrip(ws, limits, "parse → dump → parse");
  return 0;
}
