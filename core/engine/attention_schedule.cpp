// The pass of computeTrace as a task graph (thread_team.h's runGraph, docs/DESIGN.md §2.3 "Serial
// and parallel paths"): its items — the dropout draws, the projection blocks, the attention tasks,
// the output blocks —, which thread each goes to first, when each may start, and what it runs (the
// steps of attention_pass.h). One thread runs the items in list order: the serial path.
#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <vector>

#include "engine/attention_pass.h"
#include "engine/attention_reference.h"
#include "engine/errors.h"
#include "engine/thread_team.h"

namespace attnscope::pass {

namespace {

constexpr int kRowBlock = kReferenceRowBlock;  // rows per task of the reference blocks (both paths)
constexpr int kProjBlock = 256;                // rows per projection task of the fast path
// Rows per output (out_proj) task of the fast path: the last tasks of a pass, small enough that a
// thread done early takes over some of the other's.
constexpr int kOutBlock = 64;
// Rows per projection task while the dropout draws run beside them (below): small enough that the
// other threads' projections balance the one thread that draws.
constexpr int kProjBlockBesideDraws = 64;
constexpr int kQueryBlock = 128;  // query rows per task of the fused kernel
// Query rows per task of the streamed rows: their block of n × keys scores stays in L2 (64 rows
// of 1024 keys: 256 KiB).
constexpr int kStreamBlock = 64;
// One unit of the attention loop. Traced heads and the reference path take row blocks of kRowBlock
// (attendRowsReference, attendRowsTraced); the fused path takes query blocks of kQueryBlock, or of
// kStreamBlock when the request asks for the weights rows (attendRowsStreamed).
struct AttentionTask {
  enum Kind { Traced, Scratch, Fused, Streamed } kind;
  int b, h, r0, n;
  int keys;        // the keys it reads: [0, keys)
  long long cost;  // multiply-adds, to hand out the heaviest first (the causal triangle's bottom)
  bool weights_only = false;  // rows before first_row: their weights alone (TraceRequest::weights_before_first_row)
};

// Runs one attention task: traced heads and the reference path by row blocks, untraced heads of the
// fast path by the fused kernel (or streamed rows), straight into the element's context. Untraced
// heads hand their weights rows to request.weight_rows when it is set. A head with a context of its
// own (traced, or the reference path's) copies its rows into the element's context.
void attend(Work& w, const AttentionTask& a, std::vector<std::vector<HeadTrace>>& heads, Trace& t, bool fused,
            const TraceRequest& request) {
  const int T = t.tokens, hw = t.head_width;
  if (a.kind == AttentionTask::Traced || a.kind == AttentionTask::Scratch) {
    HeadTrace& head = heads[a.b][a.h];
    if (a.kind == AttentionTask::Scratch) {
      thread_local HeadTrace scratch;
      allocateHead(scratch, kRowBlock, T, hw, false, t.dropout_active);
      attendRowsReference(w, a.b, a.h, a.r0, a.n, scratch, 0, head.context);
      if (request.weight_rows) request.weight_rows(WeightRows{a.b, a.h, a.r0, a.n, T, scratch.weights.data(), T});
    } else if (fused) {
      attendRowsTraced(w, a.b, a.h, a.r0, a.n, head);
    } else {
      attendRowsReference(w, a.b, a.h, a.r0, a.n, head, a.r0, head.context);
    }
    Matrix& context = t.batches[a.b].context;
    if (context.rows() > 0) context.block(a.r0, a.h * hw, a.n, hw) = head.context.middleRows(a.r0, a.n);
  } else if (a.kind == AttentionTask::Streamed) {
    Matrix& ctx = t.batches[a.b].context;
    float* rows = a.weights_only ? nullptr : ctx.data() + static_cast<std::size_t>(a.r0) * ctx.cols() + a.h * hw;
    attendRowsStreamed(w, a.b, a.h, a.r0, a.n, rows, static_cast<int>(ctx.cols()), request.weight_rows);
  } else {
    Matrix& ctx = t.batches[a.b].context;
    attendRowsFused(w, a.b, a.h, a.r0, a.n, ctx.data() + static_cast<std::size_t>(a.r0) * ctx.cols() + a.h * hw,
                    static_cast<int>(ctx.cols()));
  }
}

}  // namespace

void runPass(Work& w, const PassPlan& plan, const ExecutionOptions& exec, const TraceRequest& request,
             std::vector<std::vector<HeadTrace>>& heads) {
  Trace& t = *w.trace;
  const ModelConfig& m = t.model;
  const int B = m.batch_size, H = t.heads, G = w.groups, T = t.tokens, hw = t.head_width;
  const bool fused = plan.fused;
  const std::vector<int>& computed = plan.computed;
  const std::size_t draws = plan.draws;
  const int projections = w.shared_projection ? 1 : B;
  // Rows before q are an earlier pass's (TraceRequest::first_row): every step starts at q.
  const int q = request.first_row, rows = T - q;
  // Rows whose projections the block holds already (Work::projected_rows) are not projected again.
  const int pq = std::clamp(w.projected_rows, q, T);

  // Tiny configs (the book's 6 tokens) cost less than waking a thread team, which can stall on a
  // busy machine: they run on one thread. The kernels and results are the same.
  const long long work = static_cast<long long>(B) * H * T * T * std::max(hw, 1);
  const bool parallel = exec.parallel && work >= exec.min_parallel_work;
  const int threads = parallel ? resolveThreads(exec.threads) : 1;

  // The pass is one loop of items (runGraph), each started once its inputs are written: the dropout
  // draws, then the projection blocks, the attention tasks (each needs the draws and the projection
  // blocks of its element and group up to its last key), the output blocks (each needs every
  // attention task over its rows). No thread waits at the end of a stage while an item of the next
  // could run: with B = 2 on two threads each runs its own element from start to end (three loops,
  // one per stage, kept the threads waiting: docs/engine-measurements.md). Every item goes first to
  // the thread whose cache holds its inputs: a projection block to the home of its [Q | K | V]
  // block, an attention task and an output block to the home of the projection block they read.
  const auto homeOf = [&](int b, int g) { return (w.projectionElement(b) * G + g) % threads; };
  const bool beside_draws = draws > 0 && threads > 1 && hasProjections(m.variant);
  const int proj_block = !fused ? kRowBlock : beside_draws ? kProjBlockBesideDraws : kProjBlock;
  const int proj_blocks = (T - pq + proj_block - 1) / proj_block;
  // A block's projection and an output block are items of a column slice each on the packed product
  // (PackedModule): a short text's threads then each read a part of the weights.
  const int proj_slices = projectionSlices(w, fused), out_slices = outputSlices(w, fused);
  const int proj_units = hasProjections(m.variant) ? projections * G * proj_blocks : 0;  // (p·G + g)·blocks + blk
  const int proj_items = proj_units * proj_slices;                                       // unit · slices + slice

  std::vector<AttentionTask> tasks;
  for (int b : computed)
    for (int h = 0; h < H; ++h) {
      const bool traced = request.keepsHead(b, h);
      if (!traced && !request.outputs) continue;
      const bool streamed = !traced && fused && request.weight_rows;
      const int block = traced || !fused ? kRowBlock : streamed ? kStreamBlock : kQueryBlock;
      const auto kind = traced     ? AttentionTask::Traced
                        : streamed ? AttentionTask::Streamed
                        : fused    ? AttentionTask::Fused
                                   : AttentionTask::Scratch;
      // Streamed rows before q (weights_before_first_row) end at q: their tasks feed no output block.
      const int first = streamed && request.weights_before_first_row ? 0 : q;
      for (int r0 = first; r0 < T;) {
        const bool before = r0 < q;
        const int n = std::min(block, (before ? q : T) - r0);
        // Only the fused kernel and the streamed rows skip the keys above the diagonal; the others
        // store or read them.
        const bool skips = kind == AttentionTask::Fused || kind == AttentionTask::Streamed;
        const int keys = skips && m.causal ? r0 + n : T;
        tasks.push_back({kind, b, h, r0, n, keys, static_cast<long long>(keys) * n, before});
        r0 += n;
      }
    }
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const AttentionTask& a, const AttentionTask& b) { return a.cost > b.cost; });

  const int out_block = fused ? kOutBlock : kRowBlock;
  const int out_blocks = (rows + out_block - 1) / out_block;
  const int computed_count = request.outputs ? static_cast<int>(computed.size()) : 0;
  std::vector<int> slot_of(B, -1);  // an element's place in `computed`
  for (int c = 0; c < static_cast<int>(computed.size()); ++c) slot_of[computed[c]] = c;

  // Item order: [draws] projections attention outputs; a list order in which each is ready.
  const int first_proj = draws > 0 ? 1 : 0, first_task = first_proj + proj_items;
  const int first_out = first_task + static_cast<int>(tasks.size());
  // Output i = (c · out_blocks + blk) · out_slices + slice.
  const int items = first_out + computed_count * out_blocks * out_slices;
  std::atomic<bool> keep_ready{draws == 0};  // the draws are in keep_bits
  // Slices still to project of each projection block (p · G + g) · proj_blocks + blk.
  const std::unique_ptr<std::atomic<int>[]> unprojected(new std::atomic<int>[std::max(proj_units, 1)]);
  for (int i = 0; i < proj_units; ++i) unprojected[i].store(proj_slices, std::memory_order_relaxed);
  // Attention tasks still to finish over each output block (c · out_blocks + blk).
  const std::unique_ptr<std::atomic<int>[]> unfinished(new std::atomic<int>[std::max(computed_count * out_blocks, 1)]);
  for (int i = 0; i < computed_count * out_blocks; ++i) unfinished[i].store(0, std::memory_order_relaxed);
  // Adds `change` to the count of every output block task a writes rows of.
  const auto countTowardOutputs = [&](const AttentionTask& a, int change) {
    if (computed_count == 0 || a.weights_only) return;
    for (int blk = (a.r0 - q) / out_block; blk <= (a.r0 + a.n - 1 - q) / out_block; ++blk)
      unfinished[slot_of[a.b] * out_blocks + blk].fetch_add(change, std::memory_order_acq_rel);
  };
  for (const AttentionTask& a : tasks) countTowardOutputs(a, 1);
  // Projection block u = (p · G + g) · proj_blocks + blk, of element p (or the shared one), group g;
  // its slices are items u · proj_slices + slice.
  const auto projectionUnit = [&](int p, int g, int blk) { return (p * G + g) * proj_blocks + blk; };
  const auto projectionOf = [&](int j) {  // {p, g, r0, slice}
    const int u = j / proj_slices;
    return std::array<int, 4>{u / (G * proj_blocks), u / proj_blocks % G, pq + u % proj_blocks * proj_block,
                              j % proj_slices};
  };
  // Output item j: {element, r0, slice}.
  const auto outputOf = [&](int j) {
    const int unit = j / out_slices;
    return std::array<int, 3>{computed[unit / out_blocks], q + unit % out_blocks * out_block, j % out_slices};
  };
  const auto cancelled = [&] { return exec.cancel != nullptr && exec.cancel->load(std::memory_order_relaxed); };

  TaskGraph pass;
  pass.count = items;
  pass.home = [&](int i) {
    if (i < first_proj) return threads - 1;  // the draws, beside the projections of the others
    if (i < first_task) {                    // the slices of a block spread over the threads
      const auto [p, g, r0, slice] = projectionOf(i - first_proj);
      return (homeOf(p, g) + slice) % threads;
    }
    if (i < first_out) return homeOf(tasks[i - first_task].b, w.groupOf(tasks[i - first_task].h));
    const auto [b, r0, slice] = outputOf(i - first_out);
    return (homeOf(b, 0) + slice) % threads;
  };
  pass.stage = [&](int i) { return i < first_task ? 0 : i < first_out ? 1 : 2; };
  pass.ready = [&](int i) {
    if (i < first_task) return true;
    if (i < first_out) {
      const AttentionTask& a = tasks[i - first_task];
      if (!keep_ready.load(std::memory_order_acquire)) return false;
      if (proj_items == 0) return true;
      const int p = w.projectionElement(a.b), g = w.groupOf(a.h);
      for (int blk = 0; pq + blk * proj_block < a.keys; ++blk)
        if (unprojected[projectionUnit(p, g, blk)].load(std::memory_order_acquire) > 0) return false;
      return true;
    }
    return unfinished[(i - first_out) / out_slices].load(std::memory_order_acquire) == 0;
  };
  pass.run = [&](int i) {
    if (i < first_proj) {
      plan.draw_dropout();
      keep_ready.store(true, std::memory_order_release);
    } else if (i < first_task) {
      const auto [p, g, r0, slice] = projectionOf(i - first_proj);
      if (!cancelled()) {
        const int n = std::min(proj_block, T - r0);
        if (fused)
          projectRowsFast(w, p, g, slice, r0, n);
        else
          projectRowsReference(w, p, g, r0, n);
      }
      unprojected[(i - first_proj) / proj_slices].fetch_sub(1, std::memory_order_acq_rel);
    } else if (i < first_out) {
      const AttentionTask& a = tasks[i - first_task];
      if (!cancelled()) attend(w, a, heads, t, fused, request);
      countTowardOutputs(a, -1);
    } else if (!cancelled()) {
      const auto [b, r0, slice] = outputOf(i - first_out);
      outputRows(w, b, r0, std::min(out_block, T - r0), slice, fused);
    }
  };
  runGraph(threads, pass);
  if (cancelled()) throw Cancelled();
}

}  // namespace attnscope::pass
