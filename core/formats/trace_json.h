// The trace as JSON (docs/DESIGN.md §2.5): what `attnscope-cli trace` prints. Matrices are arrays of rows,
// floats in their shortest float32 round-trip form, −∞ as null, masks as 0/1.
#pragma once
#include <ostream>

#include "engine/trace.h"
#include "formats/workspace_file.h"

namespace attnscope {

void writeTraceJson(std::ostream& out, const Workspace& ws, const Trace& trace);

}  // namespace attnscope
