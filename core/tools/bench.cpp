#include "tools/bench.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <numeric>

namespace attnscope {

namespace {

nlohmann::json timeRuns(int repeat, const std::function<void()>& run) {
  run();  // warm-up: page in the memory, spin up the thread pool
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  return {{"min", ms.front()},
          {"median", ms[ms.size() / 2]},
          {"mean", std::accumulate(ms.begin(), ms.end(), 0.0) / ms.size()},
          {"runs", ms.size()}};
}

nlohmann::json timePath(const Workspace& ws, const ExecutionOptions& exec, int repeat) {
  TraceRequest outputs_only;
  outputs_only.all_batches = false;
  return {{"forward_ms", timeRuns(repeat, [&] { computeTrace(ws.embeddings, ws.model, exec, outputs_only); })},
          {"trace_ms", timeRuns(repeat, [&] { computeTrace(ws.embeddings, ws.model, exec); })}};
}

}  // namespace

nlohmann::json benchWorkspace(const Workspace& ws, const BenchOptions& o) {
  const ModelConfig& m = ws.model;
  nlohmann::json j = {{"variant", variantId(m.variant)},
                      {"tokens", ws.embeddings.rows()},
                      {"d_in", ws.embeddings.cols()},
                      {"d_out", m.d_out},
                      {"num_heads", m.num_heads},
                      {"batch_size", m.batch_size},
                      {"repeat", o.repeat}};
  j["serial"] = timePath(ws, {false, 1}, o.repeat);
  if (openmpAvailable()) {
    j["openmp"] = timePath(ws, {true, o.threads}, o.repeat);
    j["openmp"]["threads"] = resolveThreads(o.threads);
  }
  return j;
}

}  // namespace attnscope
