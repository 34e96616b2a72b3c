#include "tools/bench.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <numeric>

#include "engine/gemm.h"

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

TraceRequest outputsOnly() {
  TraceRequest r;
  r.all_batches = false;
  return r;
}

// The execution options of each figure. Every one but openmp_shared computes all B elements.
ExecutionOptions execOf(bool parallel, int threads, bool fused, bool share_identical) {
  ExecutionOptions e;
  e.parallel = parallel;
  e.threads = parallel ? threads : 1;
  e.fused = fused;
  e.share_identical = share_identical;
  return e;
}

nlohmann::json timeForward(const Workspace& ws, const ExecutionOptions& exec, int repeat) {
  const TraceRequest request = outputsOnly();
  return timeRuns(repeat, [&] { computeTrace(ws.embeddings, ws.model, exec, request); });
}

nlohmann::json timePath(const Workspace& ws, const ExecutionOptions& exec, int repeat) {
  return {{"forward_ms", timeForward(ws, exec, repeat)},
          {"trace_ms", timeRuns(repeat, [&] { computeTrace(ws.embeddings, ws.model, exec); })}};
}

// The GEMM of the projections, T × 3·d_out × d_in ([Q | K | V] of one group at once); configs
// too small for a meaningful figure (the book's 6 × 6 × 3) measure 512 × 768 × 768 instead.
nlohmann::json benchGemm(const ModelConfig& m, int tokens, int d_in, int repeat) {
  int rows = tokens, n = 3 * m.d_out, k = d_in;
  const std::int64_t work = static_cast<std::int64_t>(rows) * n * k;
  if (!hasProjections(m.variant) || work < (std::int64_t{1} << 24)) {
    rows = 512;
    n = 768;
    k = 768;
  }
  nlohmann::json gflops = nlohmann::json::object();
  for (const GemmBackendName& b : gemmBackendNames())
    if (gemmBackendAvailable(b.value)) gflops[b.id] = measureGemmGflops(b.value, rows, n, k, repeat);
  return {{"backend", gemmBackendId(gemmBackend())},
          {"shape", {{"m", rows}, {"n", n}, {"k", k}}},
          {"threads", 1},
          {"gflops", gflops}};
}

}  // namespace

nlohmann::json forwardFlop(const ModelConfig& m, int tokens, int d_in) {
  const double T = tokens, d = d_in, B = m.batch_size, H = headCount(m), w = headWidth(m, d_in);
  const double groups = m.variant == Variant::MultiHeadWrapper ? m.num_heads : 1;
  double projections = 0;
  if (hasProjections(m.variant)) projections += groups * 3 * 2 * B * T * m.d_out * d;
  if (hasOutProj(m.variant)) projections += 2 * B * T * double(m.d_out) * m.d_out;
  const double cells = m.causal ? T * (T + 1) / 2 : T * T;  // query-key pairs per head
  const double attention = 2 * 2 * B * H * cells * w;      // Q·Kᵀ and P·V
  return {{"gflop", (projections + attention) / 1e9},
          {"projections_gflop", projections / 1e9},
          {"attention_gflop", attention / 1e9},
          {"causal_triangle", m.causal}};
}

nlohmann::json benchWorkspace(const Workspace& ws, const BenchOptions& o) {
  const ModelConfig& m = ws.model;
  const int tokens = static_cast<int>(ws.embeddings.rows()), d_in = static_cast<int>(ws.embeddings.cols());
  nlohmann::json j = {{"variant", variantId(m.variant)},
                      {"tokens", tokens},
                      {"d_in", d_in},
                      {"d_out", m.d_out},
                      {"num_heads", m.num_heads},
                      {"batch_size", m.batch_size},
                      {"training", m.training},
                      {"dropout", m.dropout},
                      {"repeat", o.repeat}};
  // First the one-thread GEMM speed, while nothing of ours runs beside it.
  j["gemm"] = benchGemm(m, tokens, d_in, o.gemm_repeat);

  j["serial"] = timePath(ws, execOf(false, 1, true, false), o.repeat);
  j["reference"] = {{"forward_ms", timeForward(ws, execOf(false, 1, false, false), o.repeat)}};
  int threads = 1;
  const char* timed = "serial";
  if (openmpAvailable()) {
    threads = resolveThreads(o.threads);
    timed = "openmp";
    j["openmp"] = timePath(ws, execOf(true, o.threads, true, false), o.repeat);
    j["openmp"]["threads"] = threads;
    j["openmp_shared"] = {{"forward_ms", timeForward(ws, execOf(true, o.threads, true, true), o.repeat)},
                          {"threads", threads}};
    j["openmp_shared"]["openmp_over_shared"] =
        j["openmp"]["forward_ms"]["median"].get<double>() /
        j["openmp_shared"]["forward_ms"]["median"].get<double>();
  }

  // The GEMM-bound limit: every flop at the backend's one-thread speed, on every thread.
  j["flop"] = forwardFlop(m, tokens, d_in);
  const double gflops = j["gemm"]["gflops"][gemmBackendId(gemmBackend())].get<double>();
  const double limit_ms = j["flop"]["gflop"].get<double>() / (threads * gflops) * 1e3;
  j["limit_ms"] = limit_ms;
  j["limit_threads"] = threads;
  j["forward_over_limit"] = j[timed]["forward_ms"]["median"].get<double>() / limit_ms;
  return j;
}

void forwardOnce(const Workspace& ws, bool reference) {
  computeTrace(ws.embeddings, ws.model, execOf(false, 1, !reference, false), outputsOnly());
}

}  // namespace attnscope
