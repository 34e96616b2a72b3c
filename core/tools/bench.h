// Timing of the forward pass (outputs only) and of the full trace, for `attnscope-cli bench`.
#pragma once
#include <nlohmann/json.hpp>

#include "engine/attention.h"
#include "formats/workspace.h"

namespace attnscope {

struct BenchOptions {
  int repeat = 5;       // timed runs per measurement (after one warm-up run)
  int threads = 0;      // OpenMP threads; 0 = one per core
};

// {"tokens", "d_in", …, "serial": {"forward_ms": {…}, "trace_ms": {…}}, "openmp": {…}}
nlohmann::json benchWorkspace(const Workspace& ws, const BenchOptions& options);

}  // namespace attnscope
