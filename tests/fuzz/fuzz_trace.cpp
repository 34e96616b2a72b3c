// fuzz_trace: the engine (core/engine/attention.h). The input is a workspace (parsed with small
// limits: T ≤ 64, d ≤ 64, 8 heads, batch 4, 2^16 attention cells); an accepted one goes through
// computeTrace on the serial path. InputError and ComputeError are the engine's refusals; a trace
// it returns has the documented shapes and holds no NaN or infinity except the −∞ of
// masked_scores and scaled_scores where the mask is set (docs/DESIGN.md §2.3), checked on the reference loops; the fast
// path's traced heads have the same masks. Computed again with only batch element 0
// traced on the reference loops (the others through scratch rows), the outputs are the same bit for
// bit; on the fast path (the fused kernel for the others, as for GPT-2) they are finite and shaped
// alike, or the call is refused with a ComputeError. Every traced head's statistics hold no NaN,
// report the first largest weight, and for softmax rows an entropy within [0, ln keys] and row sums
// after dropout within [0, 1/(1 − p)].
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/attention.h"
#include "engine/head_statistics.h"
#include "engine/stages.h"
#include "fuzz_common.h"

namespace {

using attnscope::ByteMatrix;
using attnscope::Matrix;

void checkShape(const Matrix& m, Eigen::Index rows, Eigen::Index cols, const std::string& what) {
  FUZZ_CHECK(m.rows() == rows && m.cols() == cols, what + " is " + attnscope::fuzz::shape(m) + ", expected " +
                                                       std::to_string(rows) + " x " + std::to_string(cols));
}

void checkFinite(const Matrix& m, Eigen::Index rows, Eigen::Index cols, const std::string& what) {
  checkShape(m, rows, cols, what);
  FUZZ_CHECK(m.allFinite(), what + " has a NaN or an infinity");
}

std::string cell(const std::string& what, Eigen::Index i, Eigen::Index j) {
  return what + "(" + std::to_string(i) + ", " + std::to_string(j) + ")";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attnscope;
  const Limits limits = fuzz::smallLimits();
  const std::optional<Workspace> parsed = fuzz::parseOrRefuse(data, size, limits);
  if (!parsed) return 0;
  const Workspace& ws = *parsed;
  const ModelConfig& m = ws.model;
  ExecutionOptions reference;  // the readable loops: the invariants below are checked on them
  reference.fused = false;
  Trace t;
  try {
    t = computeTrace(inputsOf(ws), m, reference, TraceRequest{}, limits);
  } catch (const InputError&) {
    return 0;
  } catch (const ComputeError&) {
    return 0;
  } catch (const std::exception& e) {
    fuzz::unexpected("computeTrace", e);
  }

  const int T = static_cast<int>(ws.embeddings.rows()), d_in = static_cast<int>(ws.embeddings.cols());
  const int H = headCount(m), w = headWidth(m, d_in);
  FUZZ_CHECK(t.tokens == T && t.d_in == d_in, "trace sizes");
  FUZZ_CHECK(t.heads == H && t.head_width == w,
             "trace heads " + std::to_string(t.heads) + " x " + std::to_string(t.head_width));
  FUZZ_CHECK(static_cast<int>(t.batches.size()) == m.batch_size, "batch count");
  FUZZ_CHECK(std::isfinite(t.scale_divisor) && t.scale_divisor > 0, "scale_divisor");
  // p = 1 drops every weight, as torch's dropout does: the kept ones' scale is then 0, not 1/0.
  FUZZ_CHECK(std::isfinite(t.dropout_scale) && (t.dropout_scale >= 1 || (m.dropout >= 1 && t.dropout_scale == 0)),
             "dropout_scale");
  const bool softmax = m.normalization == Normalization::Softmax;

  for (std::size_t b = 0; b < t.batches.size(); ++b) {
    const BatchTrace& bt = t.batches[b];
    const std::string where = "batch " + std::to_string(b);
    checkFinite(bt.context, T, contextWidth(m, d_in), where + " context");
    checkFinite(bt.output, T, outputWidth(m, d_in), where + " output");
    FUZZ_CHECK(static_cast<int>(bt.heads.size()) == H, where + ": " + std::to_string(bt.heads.size()) + " heads");
    for (int h = 0; h < H; ++h) {
      const HeadTrace& ht = bt.heads[static_cast<std::size_t>(h)];
      const std::string at = where + " head " + std::to_string(h) + " ";
      // The stages the trace derives from what it stores, as every reader sees them.
      FUZZ_CHECK((ht.dropout_mask.size() > 0) == t.dropout_active, at + "a keep mask is stored iff dropout acts");
      const Matrix scaled_scores = stageValues(t, ht, Stage::ScaledScores), mask = stageValues(t, ht, Stage::Mask),
                   masked_scores = stageValues(t, ht, Stage::MaskedScores),
                   dropout_mask = stageValues(t, ht, Stage::DropoutMask),
                   dropped_weights = stageValues(t, ht, Stage::DroppedWeights);
      checkFinite(ht.queries, T, w, at + "queries");
      checkFinite(ht.keys, T, w, at + "keys");
      checkFinite(ht.values, T, w, at + "values");
      checkFinite(ht.scores, T, T, at + "scores");
      checkShape(scaled_scores, T, T, at + "scaled_scores");
      checkShape(masked_scores, T, T, at + "masked_scores");
      checkFinite(ht.weights, T, T, at + "weights");
      checkFinite(dropped_weights, T, T, at + "dropped_weights");
      checkFinite(ht.context, T, w, at + "context");
      FUZZ_CHECK(mask.rows() == T && mask.cols() == T, at + "mask shape");
      FUZZ_CHECK(dropout_mask.rows() == T && dropout_mask.cols() == T, at + "dropout_mask shape");
      FUZZ_CHECK(ht.context == bt.context.middleCols(static_cast<Eigen::Index>(h) * w, w),
                 at + "context is not its slice of the concatenated context");
      for (int i = 0; i < T; ++i) {
        double row_sum = 0;
        for (int j = 0; j < T; ++j) {
          const bool masked = mask(i, j) != 0;
          FUZZ_CHECK(mask(i, j) <= 1, cell(at + "mask", i, j) + " is not 0 or 1");
          FUZZ_CHECK(masked == (m.causal && j > i), cell(at + "mask", i, j) + " is not the causal mask");
          const float ms = masked_scores(i, j);
          if (masked && trilRoute(m)) {  // the weights are masked (× tril), not the scores
            FUZZ_CHECK(ms == ht.scores(i, j),
                       cell(at + "masked_scores", i, j) + " differs from the score (tril route)");
            FUZZ_CHECK(std::isfinite(scaled_scores(i, j)), cell(at + "scaled_scores", i, j) + " is not finite");
            FUZZ_CHECK(ht.weights(i, j) == 0.0f, cell(at + "weights", i, j) + " is masked but not 0");
            FUZZ_CHECK(StageMap(t, ht, Stage::TrilWeights)(i, j) == 0.0f && StageMap(t, ht, Stage::Tril)(i, j) == 0.0f,
                       cell(at + "tril_weights", i, j) + " is masked but not 0");
          } else if (masked) {
            FUZZ_CHECK(std::isinf(ms) && ms < 0, cell(at + "masked_scores", i, j) + " is masked but not −∞");
            FUZZ_CHECK(std::isinf(scaled_scores(i, j)) && scaled_scores(i, j) < 0,
                       cell(at + "scaled_scores", i, j) + " is masked but not −∞");
            FUZZ_CHECK(ht.weights(i, j) == 0.0f, cell(at + "weights", i, j) + " is masked but not 0");
          } else {
            // The notebook's order: the raw score is masked, then scaled.
            FUZZ_CHECK(ms == ht.scores(i, j), cell(at + "masked_scores", i, j) + " differs from the score");
            FUZZ_CHECK(std::isfinite(scaled_scores(i, j)), cell(at + "scaled_scores", i, j) + " is not finite");
          }
          const float wt = ht.weights(i, j);
          if (softmax) FUZZ_CHECK(wt >= 0.0f && wt <= 1.0f + 1e-5f, cell(at + "weights", i, j) + " outside [0, 1]");
          row_sum += wt;
          FUZZ_CHECK(dropout_mask(i, j) <= 1, cell(at + "dropout_mask", i, j) + " is not 0 or 1");
          if (!t.dropout_active) {
            FUZZ_CHECK(dropout_mask(i, j) == 1, cell(at + "dropout_mask", i, j) + " drops without dropout");
            FUZZ_CHECK(dropped_weights(i, j) == wt, cell(at + "dropped_weights", i, j) + " differs without dropout");
          } else if (dropout_mask(i, j) == 0) {
            FUZZ_CHECK(dropped_weights(i, j) == 0.0f, cell(at + "dropped_weights", i, j) + " is dropped but not 0");
          } else {
            FUZZ_CHECK(dropped_weights(i, j) == wt * t.dropout_scale,
                       cell(at + "dropped_weights", i, j) + " is not weight × 1/(1 − p)");
          }
        }
        if (softmax)
          FUZZ_CHECK(std::fabs(row_sum - 1.0) <= 1e-4,
                     at + "weights row " + std::to_string(i) + " sums to " + std::to_string(row_sum));
      }
      // The head statistics (engine/head_statistics.h): never NaN; for softmax rows an entropy
      // between 0 and ln(keys seen), the largest weight at its key and no larger one before it,
      // row sums after dropout between 0 and 1/(1 − p).
      const HeadStatistics st = headStatistics(t, ht);
      FUZZ_CHECK(st.rows() == T, at + "statistics rows");
      for (int i = 0; i < T; ++i) {
        const std::string row = at + "statistics row " + std::to_string(i) + ": ";
        const int key = st.argmax[static_cast<std::size_t>(i)];
        FUZZ_CHECK(!std::isnan(st.entropy(i)) && !std::isnan(st.effective_tokens(i)) &&
                       !std::isnan(st.row_sum_after_dropout(i)),
                   row + "NaN");
        FUZZ_CHECK(key >= 0 && key < T && st.max_weight(i) == ht.weights(i, key),
                   row + "argmax " + std::to_string(key));
        for (int j = 0; j < T; ++j)
          FUZZ_CHECK(j < key ? ht.weights(i, j) < st.max_weight(i) : ht.weights(i, j) <= st.max_weight(i),
                     row + "not the first largest weight");
        if (!softmax) continue;
        const int seen = m.causal ? i + 1 : T;
        FUZZ_CHECK(st.entropy(i) >= 0 && st.entropy(i) <= std::log(static_cast<float>(seen)) + 1e-5f,
                   row + "entropy " + std::to_string(st.entropy(i)) + " outside [0, ln " + std::to_string(seen) + "]");
        FUZZ_CHECK(st.row_sum_after_dropout(i) >= 0 && st.row_sum_after_dropout(i) <= t.dropout_scale * (1 + 1e-4f),
                   row + "row sum after dropout " + std::to_string(st.row_sum_after_dropout(i)));
      }
    }
  }

  // Only batch element 0 traced: the others run through the per-thread scratch rows of the
  // reference loops. Same kernels on the same rows, so the same numbers, bit for bit.
  Trace partial;
  try {
    partial = computeTrace(inputsOf(ws), m, reference, TraceRequest::only({0}), limits);
  } catch (const std::exception& e) {
    fuzz::finding(std::string("computeTrace accepted the workspace with every batch element traced, but threw "
                              "with only element 0: ") +
                  e.what());
  }
  // The fast path: the other elements through the fused kernel (tiles, online softmax). Its sums
  // run in another order, so its numbers are only close; extreme inputs may overflow there first.
  try {
    const Trace fast = computeTrace(ws.embeddings, m, ExecutionOptions{}, TraceRequest::only({0}), limits);
    FUZZ_CHECK(fast.batches.size() == t.batches.size(), "batch count on the fast path");
    for (std::size_t b = 0; b < fast.batches.size(); ++b) {
      const std::string where = "fast path, batch " + std::to_string(b) + ": ";
      checkFinite(fast.batches[b].output, t.batches[b].output.rows(), t.batches[b].output.cols(), where + "output");
      checkFinite(fast.batches[b].context, t.batches[b].context.rows(), t.batches[b].context.cols(), where + "context");
    }
  } catch (const ComputeError&) {
  } catch (const std::exception& e) {
    fuzz::unexpected("computeTrace (fast path)", e);
  }
  // Every element traced on the fast path (row-wise vector operations): the same masks, bit for
  // bit, and maps with no NaN or infinity but the masked −∞.
  try {
    const Trace fast = computeTrace(ws.embeddings, m, ExecutionOptions{}, TraceRequest{}, limits);
    for (std::size_t b = 0; b < fast.batches.size(); ++b)
      for (std::size_t h = 0; h < fast.batches[b].heads.size(); ++h) {
        const HeadTrace &f = fast.batches[b].heads[h], &r = t.batches[b].heads[h];
        const std::string at = "fast path, batch " + std::to_string(b) + " head " + std::to_string(h) + ": ";
        FUZZ_CHECK(f.dropout_mask == r.dropout_mask, at + "the keep mask differs from the reference's");
        FUZZ_CHECK(f.weights.allFinite() && stageValues(fast, f, Stage::DroppedWeights).allFinite() &&
                       f.context.allFinite(),
                   at + "weights or context not finite");
      }
  } catch (const ComputeError&) {
  } catch (const std::exception& e) {
    fuzz::unexpected("computeTrace (fast path, every element traced)", e);
  }
  FUZZ_CHECK(partial.batches.size() == t.batches.size(), "batch count with element 0 traced");
  for (std::size_t b = 0; b < t.batches.size(); ++b) {
    const std::string where = "batch " + std::to_string(b) + " (only element 0 traced): ";
    FUZZ_CHECK(fuzz::sameBits(partial.batches[b].output, t.batches[b].output), where + "output differs");
    FUZZ_CHECK(fuzz::sameBits(partial.batches[b].context, t.batches[b].context), where + "context differs");
    FUZZ_CHECK(partial.batches[b].heads.size() == (b == 0 ? t.batches[b].heads.size() : 0),
               where + std::to_string(partial.batches[b].heads.size()) + " heads kept");
  }
  for (std::size_t h = 0; h < partial.batches[0].heads.size(); ++h) {
    const HeadTrace &p = partial.batches[0].heads[h], &f = t.batches[0].heads[h];
    FUZZ_CHECK(fuzz::sameBits(p.weights, f.weights) &&
                   fuzz::sameBits(stageValues(partial, p, Stage::DroppedWeights),
                                  stageValues(t, f, Stage::DroppedWeights)) &&
                   fuzz::sameBits(p.context, f.context) && p.dropout_mask == f.dropout_mask,
               "head " + std::to_string(h) + " of element 0 differs when only element 0 is traced");
  }
  return 0;
}
