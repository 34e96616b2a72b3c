#include "tools/bench.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>

#include <sys/resource.h>

#include "engine/gemm.h"
#include "lm/gpt_forward.h"
#include "lm/model_pass.h"

namespace attnscope {

namespace {

double millisecondsOf(const std::function<void()>& run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// This process's minor page faults so far: a pass that faults writes memory the process never
// touched (or gave back), which on a VM whose free pages go back to the host costs more than the
// writing (docs/DESIGN.md §4 "Benchmarks").
double minorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_minflt);
}

nlohmann::json summary(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return {{"min", values.front()},
          {"median", values[values.size() / 2]},
          {"mean", std::accumulate(values.begin(), values.end(), 0.0) / values.size()},
          {"max", values.back()},
          {"runs", values.size()}};
}

nlohmann::json timeRuns(int repeat, const std::function<void()>& run) {
  run();  // warm-up: page in the memory, spin up the thread pool
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) ms.push_back(millisecondsOf(run));
  return summary(ms);
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
  return timeRuns(repeat, [&] { computeTrace(inputsOf(ws), ws.model, exec, request); });
}

nlohmann::json timePath(const Workspace& ws, const ExecutionOptions& exec, int repeat) {
  return {{"forward_ms", timeForward(ws, exec, repeat)},
          {"trace_ms", timeRuns(repeat, [&] { computeTrace(inputsOf(ws), ws.model, exec); })}};
}

// The GEMM of the projections, T × 3·d_out × d_in ([Q | K | V] of one group at once); configs
// too small for a meaningful figure (the book's 6 × 6 × 3) measure 512 × 768 × 768 instead.
struct GemmShape {
  int m, n, k;
};
GemmShape gemmShapeOf(const ModelConfig& m, int tokens, int d_in) {
  const std::int64_t work = static_cast<std::int64_t>(tokens) * 3 * m.d_out * d_in;
  if (!hasProjections(m.variant) || work < (std::int64_t{1} << 24)) return {512, 768, 768};
  return {tokens, 3 * m.d_out, d_in};
}

nlohmann::json benchGemm(const GemmShape& g, int repeat) {
  nlohmann::json gflops = nlohmann::json::object();
  for (const GemmBackendName& b : gemmBackendNames())
    if (gemmBackendAvailable(b.value)) gflops[b.id] = measureGemmGflops(b.value, g.m, g.n, g.k, repeat);
  return {{"backend", gemmBackendId(gemmBackend())},
          {"shape", {{"m", g.m}, {"n", g.n}, {"k", g.k}}},
          {"threads", 1},
          {"gflops", gflops}};
}

// Our forward pass and the machine's GEMM speed in turns: each timed forward is followed by one
// run of the projections' GEMM on every thread at once, and each forward is set against the limit
// of its own moment. On a shared machine whose speed drifts by ±30 % within a minute, the
// ratios of neighbouring runs stay put where a ratio of medians taken a minute apart does not.
nlohmann::json pairedLimit(const Workspace& ws, const ExecutionOptions& exec, int threads, const GemmShape& g,
                           double gflop, int repeat) {
  const TraceRequest request = outputsOnly();
  const auto forward = [&] { computeTrace(inputsOf(ws), ws.model, exec, request); };
  ConcurrentGemm gemm(g.m, g.n, g.k, threads);
  forward();  // warm-up, both
  gemm.measureGflops();
  std::vector<double> forward_ms, gflops, limit_ms, ratios;
  for (int i = 0; i < repeat; ++i) {
    forward_ms.push_back(millisecondsOf(forward));
    gflops.push_back(gemm.measureGflops());
    limit_ms.push_back(gflop / gflops.back() * 1e3);
    ratios.push_back(forward_ms.back() / limit_ms.back());
  }
  return {{"threads", threads},
          {"forward_ms", summary(forward_ms)},
          {"gemm_gflops", summary(gflops)},
          {"limit_ms", summary(limit_ms)},
          {"forward_over_limit", summary(ratios)}};
}

}  // namespace

nlohmann::json forwardFlop(const ModelConfig& m, int tokens, int d_in) {
  const double T = tokens, d = d_in, B = m.batch_size, H = headCount(m), w = headWidth(m, d_in);
  const double groups = m.variant == Variant::MultiHeadWrapper ? m.num_heads : 1;
  double projections = 0;
  if (hasProjections(m.variant)) projections += groups * 3 * 2 * B * T * m.d_out * d;
  if (hasOutProj(m.variant)) projections += 2 * B * T * double(m.d_out) * m.d_out;
  const double cells = m.causal ? T * (T + 1) / 2 : T * T;  // query-key pairs per head
  const double attention = 2 * 2 * B * H * cells * w;       // Q·Kᵀ and P·V
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
  const GemmShape shape = gemmShapeOf(m, tokens, d_in);
  j["flop"] = forwardFlop(m, tokens, d_in);
  const double gflop = j["flop"]["gflop"].get<double>();
  // The parallel path's figures keep the key "openmp", the path's name when the keys were fixed
  // (scripts read them); it runs on the engine's thread team now (engine/thread_team.h).
  const int threads = resolveThreads(o.threads);
  const ExecutionOptions timed_exec = execOf(true, o.threads, true, false);
  if (o.forward_only) {
    j["openmp"] = {{"forward_ms", timeForward(ws, timed_exec, o.repeat)}, {"threads", threads}};
    j["paired_limit"] = pairedLimit(ws, timed_exec, threads, shape, gflop, o.repeat);
    return j;
  }
  // First the one-thread GEMM speed, while nothing of ours runs beside it.
  j["gemm"] = benchGemm(shape, o.gemm_repeat);

  j["serial"] = timePath(ws, execOf(false, 1, true, false), o.repeat);
  j["reference"] = {{"forward_ms", timeForward(ws, execOf(false, 1, false, false), o.repeat)}};
  j["openmp"] = timePath(ws, timed_exec, o.repeat);
  j["openmp"]["threads"] = threads;
  j["openmp_shared"] = {{"forward_ms", timeForward(ws, execOf(true, o.threads, true, true), o.repeat)},
                        {"threads", threads}};
  j["openmp_shared"]["openmp_over_shared"] = j["openmp"]["forward_ms"]["median"].get<double>() /
                                             j["openmp_shared"]["forward_ms"]["median"].get<double>();

  // The GEMM-bound limit: every flop at the backend's one-thread speed, on every thread.
  const double gflops = j["gemm"]["gflops"][gemmBackendId(gemmBackend())].get<double>();
  const double limit_ms = gflop / (threads * gflops) * 1e3;
  j["limit_ms"] = limit_ms;
  j["limit_threads"] = threads;
  j["forward_over_limit"] = j["openmp"]["forward_ms"]["median"].get<double>() / limit_ms;
  // And the limit of each run's moment, every thread's GEMM at once (pairedLimit).
  j["paired_limit"] = pairedLimit(ws, timed_exec, threads, shape, gflop, o.repeat);
  return j;
}

nlohmann::json benchModel(const GptModel& model, int tokens, const BenchOptions& o) {
  const GptConfig& c = model.config;
  const int T = std::min(tokens, c.context_length);
  std::mt19937 rng(1);
  std::vector<int> ids(T);
  for (int& id : ids) id = static_cast<int>(rng() % static_cast<unsigned>(c.vocab_size));
  // The least a pass must compute: every linear layer's products — but the last block's MLP, of
  // the last position alone (GptRequest::final_rows) — the causal triangle's Q·Kᵀ and P·V of
  // every head, and the head at the last position.
  const double d = c.d_model, F = c.mlp_width, L = c.layers, V = c.vocab_size, t = T;
  const double linear = L * 2 * t * 4 * d * d + ((L - 1) * t + 1) * 2 * 2 * d * F;
  const double attention = L * 2 * 2 * t * (t + 1) / 2 * d;
  const double head = 2 * d * V;
  const double gflop = (linear + attention + head) / 1e9;
  const int threads = resolveThreads(o.threads);
  ExecutionOptions exec;
  exec.parallel = true;
  exec.threads = o.threads;
  // What each mode computes: "view" what the app's model view computes for a new text (the model
  // view's pass: every head's weights, whole, reduced to its thumbnail and scores, the first
  // layer's every stage, and the logits at the last position); "maps" every stage of every head of
  // every layer kept (gptForward's traces); "fused" no weight ever whole (the fused kernel).
  const std::shared_ptr<const GptModel> shared(std::shared_ptr<const GptModel>(), &model);  // not owned
  // What the app's engine worker computes for a text: the pass streams every layer, then layer 0 is
  // traced from its attention input (into *kept), then the logits at the last position.
  const auto appPass = [&](const std::vector<int>& text, const ModelPass* previous, Trace* kept) {
    auto pass = runModelPass(shared, text, exec, {}, -1, nullptr, previous, {T - 1}, KeptLayer::Outputs);
    *kept = layerTrace(*pass, 0, exec, {});
    gptLogits(model, pass->forward, {T - 1}, exec);
    return pass;
  };
  const auto paired = [&](const std::string& mode) {
    GptRequest request;
    request.no_maps = mode == "fused";
    request.final_rows = {T - 1};
    Trace kept;
    const auto forward = [&] {
      if (mode != "view") {
        gptForward(model, ids, request, exec);
        return;
      }
      // The last pass's layer weights are held meanwhile, as the app's result on screen holds
      // them: not unpacked again.
      const std::shared_ptr<const Parameters> on_screen = kept.parameters;
      appPass(ids, nullptr, &kept);
    };
    ConcurrentGemm gemm(T, c.mlp_width, c.d_model, threads);
    // Two passes first: "view" holds one result while it computes the next, as the app's screen
    // does, so its heap reaches its steady size only in the second. A pass on memory the process
    // never touched times the kernel's page faults, not ours: on a VM whose free pages go back to
    // the host, GPT-2 at T = 1024 had taken 1.9× the limit in its first timed pass, 1.3× after.
    forward();
    forward();
    gemm.measureGflops();
    std::vector<double> forward_ms, gflops, limit_ms, ratios, faults;
    for (int i = 0; i < o.repeat; ++i) {
      const double faults_before = minorFaults();
      forward_ms.push_back(millisecondsOf(forward));
      faults.push_back(minorFaults() - faults_before);
      gflops.push_back(gemm.measureGflops());
      limit_ms.push_back(gflop / gflops.back() * 1e3);
      ratios.push_back(forward_ms.back() / limit_ms.back());
    }
    return nlohmann::json{{"forward_ms", summary(forward_ms)},
                          {"gemm_gflops", summary(gflops)},
                          {"limit_ms", summary(limit_ms)},
                          {"forward_over_limit", summary(ratios)},
                          {"minor_faults", summary(faults)}};
  };
  nlohmann::json j = {
      {"model",
       {{"layers", c.layers},
        {"heads", c.heads},
        {"d_model", c.d_model},
        {"mlp_width", c.mlp_width},
        {"vocab_size", c.vocab_size}}},
      {"tokens", T},
      {"threads", threads},
      {"repeat", o.repeat},
      {"outputs",
       "every head's attention weights (all layers) and the last position's logits (the last block's MLP "
       "of that position alone); view: reduced to the model view's thumbnails and scores, then layer 0 "
       "traced from its attention input (every stage), as the app computes it"},
      {"flop",
       {{"gflop", gflop},
        {"linear_gflop", linear / 1e9},
        {"attention_gflop", attention / 1e9},
        {"head_gflop", head / 1e9}}}};
  for (const char* mode : {"view", "maps", "fused"}) j[mode] = paired(mode);
  // The head alone, at the last position: its FLOPs are few (the limit's head_gflop) but the whole
  // head is read from memory each pass (lm/head_logits.h) — a floor of its own that the GEMM-bound
  // limit does not count (GPT-2: 154 MB, about 11 ms at 14 GB/s).
  {
    const Matrix final_x = Matrix::Random(T, c.d_model);
    const double bytes = V * d * sizeof(float);
    const nlohmann::json times = timeRuns(std::max(o.repeat, 3), [&] { gptLogits(model, final_x, {T - 1}, exec); });
    j["head"] = {{"forward_ms", times},
                 {"bytes_read", bytes},
                 {"gb_per_s", bytes / (times["median"].get<double>() * 1e-3) / 1e9}};
  }
  // The view's pass after an edit of one token of the text (runModelPass's `previous`,
  // reusablePrefix): the rows before it are the last pass's, the rest computed (past 64 tokens,
  // every row's attention), then the logits; the last token (typing at the end) and the middle
  // one, the edit alternating between two ids.
  if (T >= 2)
    for (const auto& [name, at] : {std::pair{"view_last_token", T - 1}, std::pair{"view_middle_token", T / 2}}) {
      Trace kept;
      std::shared_ptr<const ModelPass> previous = appPass(ids, nullptr, &kept);
      std::vector<int> edited = ids;
      std::vector<double> forward_ms;
      for (int i = 0; i < o.repeat; ++i) {
        edited[static_cast<std::size_t>(at)] = (ids[static_cast<std::size_t>(at)] + 1 + i % 2) % c.vocab_size;
        const std::shared_ptr<const Parameters> on_screen = kept.parameters;  // as above
        forward_ms.push_back(millisecondsOf([&] { previous = appPass(edited, previous.get(), &kept); }));
      }
      j[name] = {{"forward_ms", summary(forward_ms)},
                 {"reused_rows", previous->reused_rows},
                 {"whole_attention", previous->whole_attention},
                 {"reused_projections", previous->reused_projections}};
    }
  return j;
}

void forwardOnce(const Workspace& ws, bool reference) {
  computeTrace(inputsOf(ws), ws.model, execOf(false, 1, !reference, false), outputsOnly());
}

}  // namespace attnscope
