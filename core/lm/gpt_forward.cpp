// gptForward (lm/gpt_forward.h, docs/DESIGN.md §2.6). The attention of each block is the engine's
// computeTrace on the block's given MultiHeadAttention; this file does the rest of a GPT block.
//
// Shapes: T tokens, d width, F MLP width, V vocabulary, P logit positions.
#include "lm/gpt_forward.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <utility>

#include "engine/errors.h"
#include "engine/sum_in_double.h"
#include "engine/tensor.h"
#include "engine/thread_team.h"
#include "lm/head_logits.h"

namespace attnscope {

namespace {

// Rows per item of the LayerNorm loops: a short text still splits over every thread.
int rowBlock(int T, int threads) { return std::clamp((T + threads - 1) / threads, 16, 128); }

// [SECTION] The reference (serial, readable) ------------------------------------------------------

// One row of LayerNorm, the book's class: mean and biased variance over the row (in double),
// (x − mean) / √(var + eps) · scale + shift.
void layerNormRow(const float* x, int d, const LayerNormWeights& n, float eps, float* y) {
  const double mean = sumInDouble(d, [x](int i) { return static_cast<double>(x[i]); }) / d;
  const double sq = sumInDouble(d, [x, mean](int i) { return (x[i] - mean) * (x[i] - mean); });
  const float m = static_cast<float>(mean);
  const float inv = static_cast<float>(1.0 / std::sqrt(sq / d + eps));
  for (int i = 0; i < d; ++i) y[i] = (x[i] - m) * inv * n.scale[i] + n.shift[i];
}

// Logit positions up to which gptLogits streams the head row by row (above: a product).
constexpr int kStreamedPositions = 8;

// GELU, tanh form (GPT-2's gelu_new, the book's GELU): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
float geluTanh(float x) {
  const float k = 0.7978845608028654f;  // √(2/π)
  return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

// [SECTION] The fast path's pieces ----------------------------------------------------------------

// GELU over n floats in place, vectorized: Eigen's tanh (a rational approximation, within a few
// ulp of std::tanh).
void geluInPlace(float* v, std::ptrdiff_t n) {
  Eigen::Map<Eigen::ArrayXf> x(v, n);
  const float k = 0.7978845608028654f;
  x = 0.5f * x * (1.0f + (k * (x + 0.044715f * x.cube())).tanh());
}

// Rows [r0, r0 + n) of the MLP by the reference, added to x: x += proj(GELU(fc(h))), h = LN₂(x).
void mlpRowsReference(const GptBlock& b, const Matrix& h, Matrix& x, int r0, int n) {
  const Matrix f = ((h.middleRows(r0, n) * b.fc.weight.transpose()).rowwise() + b.fc.bias).unaryExpr(&geluTanh);
  x.middleRows(r0, n) += (f * b.proj.weight.transpose()).rowwise() + b.proj.bias;
}

// One item of a sliced product: rows [r0, r0 + n) of X through slice s of `layer`, into Y's columns
// of the slice (row stride ldy). Returns whether every output is finite.
bool applySlice(const SlicedLinear& layer, int s, int r0, int n, const float* X, int ldx, float* Y, int ldy) {
  return layer.apply(s, n, X + static_cast<std::size_t>(r0) * ldx, ldx, Y + static_cast<std::size_t>(r0) * ldy, ldy);
}

// A value beyond float32: the engine's message speaks of embeddings a user typed; here the file's
// weights (or a text that drives them) are at fault.
[[noreturn]] void overflow(const std::string& where) {
  throw ComputeError("the model's values overflow float32 in " + where +
                     ": these weights do not make a working model on this text");
}

// Rows [r0, end) of x += proj(GELU(fc(h))) on the packed slices, h = LN₂(x) (rows × d): items of
// (row block, output slice), so that a short text's threads each read a part of the weights, not
// all of them. f (rows × ldf) and y (rows × d) are scratch. Returns whether every output is finite.
bool mlpRowsFast(const GptBlock& b, const Matrix& h, Matrix& x, int r0, int end, float* f, int ldf, Matrix& y,
                 int threads) {
  const int d = static_cast<int>(x.cols());
  const int block_rows = std::min(end - r0, 128),
            blocks = (end - r0 + block_rows - 1) / block_rows;  // a panel serves 128
  const int fc_slices = static_cast<int>(b.fc_packed.slices.size());
  const int proj_slices = static_cast<int>(b.proj_packed.slices.size());
  std::atomic<bool> bad{false};
  forEachItem(threads, blocks * fc_slices, [&](int k) {
    const int first = r0 + k / fc_slices * block_rows, n = std::min(block_rows, end - first), s = k % fc_slices;
    if (!applySlice(b.fc_packed, s, first, n, h.data(), d, f, ldf)) bad = true;
    const SlicedLinear::Slice& slice = b.fc_packed.slices[s];
    const int w = slice.packed.outputs();
    for (int r = first; r < first + n; ++r) geluInPlace(f + static_cast<std::size_t>(r) * ldf + slice.first_output, w);
  });
  forEachItem(threads, blocks * proj_slices, [&](int k) {
    const int first = r0 + k / proj_slices * block_rows, n = std::min(block_rows, end - first), s = k % proj_slices;
    if (!applySlice(b.proj_packed, s, first, n, f, ldf, y.data(), d)) bad = true;
    const SlicedLinear::Slice& slice = b.proj_packed.slices[s];
    const int w = slice.packed.outputs();
    x.block(first, slice.first_output, n, w) += y.block(first, slice.first_output, n, w);
    for (int r = first; r < first + n; ++r)
      if (!allFinite(x.row(r).data() + slice.first_output, static_cast<std::size_t>(w))) bad = true;
  });
  return !bad;
}

// The last block's MLP of x's rows `rows` (their residual after its attention), gathered: what a
// pass that finishes every row computes for them, bit for bit (a row's products never depend on
// the rows beside it). Throws ComputeError on overflow.
void finishRows(const GptModel& model, Matrix& x, const std::vector<int>& rows, int threads) {
  if (rows.empty()) return;
  const GptConfig& c = model.config;
  const GptBlock& b = model.blocks.back();
  const int n = static_cast<int>(rows.size()), d = c.d_model, ldf = aliasFreeStride(c.mlp_width);
  Matrix h(n, d), xs(n, d), y(n, d);
  for (int i = 0; i < n; ++i) {
    xs.row(i) = x.row(rows[static_cast<std::size_t>(i)]);
    layerNormRow(xs.row(i).data(), d, b.norm2, c.layer_norm_eps, h.row(i).data());
  }
  std::vector<float> f(static_cast<std::size_t>(n) * ldf);
  if (!mlpRowsFast(b, h, xs, 0, n, f.data(), ldf, y, threads))
    overflow("block " + std::to_string(c.layers - 1) + "'s MLP");
  for (int i = 0; i < n; ++i) x.row(rows[static_cast<std::size_t>(i)]) = xs.row(i);
}

}  // namespace

void checkModelTokens(const GptModel& model, const std::vector<int>& ids, const Limits& limits) {
  const GptConfig& c = model.config;
  const std::size_t T = ids.size();
  if (T == 0) throw InputError("tokens: no tokens to run the model on");
  const int max_t = std::min(c.context_length, limits.max_tokens);
  if (T > static_cast<std::size_t>(max_t))
    throw InputError("tokens: " + std::to_string(T) + " tokens, more than the model's context of " +
                     std::to_string(max_t) + (max_t < c.context_length ? " (attnscope's limit)" : ""));
  for (std::size_t t = 0; t < T; ++t)
    if (ids[t] < 0 || ids[t] >= c.vocab_size)
      throw InputError("tokens: token " + std::to_string(t + 1) + " (counted from 1) is id " + std::to_string(ids[t]) +
                       ", outside the vocabulary (0 … " + std::to_string(c.vocab_size - 1) + ")");
}

GptResult gptForward(const GptModel& model, const std::vector<int>& ids, const GptRequest& request,
                     const ExecutionOptions& exec, const Limits& limits) {
  const GptConfig& c = model.config;
  const int T = static_cast<int>(ids.size()), d = c.d_model;
  checkModelTokens(model, ids, limits);
  for (int layer : request.map_layers)
    if (layer < 0 || layer >= c.layers)
      throw InputError("layer " + std::to_string(layer) + " does not exist: the model has " + std::to_string(c.layers) +
                       " layers (0 … " + std::to_string(c.layers - 1) + ")");
  GptResult result;
  result.logit_positions = request.logit_positions.empty() ? std::vector<int>{T - 1} : request.logit_positions;
  for (int p : result.logit_positions)
    if (p < 0 || p >= T)
      throw InputError("position " + std::to_string(p) + " does not exist: the text has " + std::to_string(T) +
                       " tokens");
  auto cancelled = [&] { return exec.cancel != nullptr && exec.cancel->load(std::memory_order_relaxed); };
  const int threads = exec.parallel ? resolveThreads(exec.threads) : 1;
  // Rows [0, q) are the prefix's (the fast path only): every step below runs on rows [q, T) — but
  // the attention of a layer that keeps maps, or of every layer with whole_attention, whose input
  // rows before q are the prefix's attention inputs.
  const GptPrefix* prefix = exec.fused ? request.prefix : nullptr;
  const int q = prefix != nullptr ? request.prefix_rows : 0;
  // The prefix's projections: the caller's (GptRequest::prefix_projections), or the prefix's own.
  const std::vector<KeptProjections>* earlier = request.prefix_projections != nullptr ? request.prefix_projections
                                                : prefix != nullptr                   ? &prefix->projections
                                                                                      : nullptr;
  const bool projected = prefix != nullptr && earlier != nullptr && static_cast<int>(earlier->size()) == c.layers &&
                         std::all_of(earlier->begin(), earlier->end(),
                                     [&](const KeptProjections& k) { return k.holds(q, 3 * d); });
  // Blocks to take over as this pass's own (their prefix rows kept when they are the prefix's).
  std::vector<KeptProjections>* taken = request.keep_projections && request.prefix_projections != nullptr &&
                                                static_cast<int>(request.prefix_projections->size()) == c.layers
                                            ? request.prefix_projections
                                            : nullptr;
  if (prefix != nullptr) {
    const bool same = q >= 1 && q < T && q <= static_cast<int>(prefix->ids.size()) &&
                      std::equal(ids.begin(), ids.begin() + q, prefix->ids.begin()) &&
                      static_cast<int>(prefix->attention_inputs.size()) == c.layers &&
                      (request.whole_attention || projected) && prefix->final_x.cols() == d;
    if (!same)
      throw InputError("prefix_rows " + std::to_string(q) + ": not the first rows of an earlier pass over these ids");
  }
  GptPrefix* kept = request.keep_prefix;
  if (kept != nullptr) {
    kept->ids = ids;
    kept->attention_inputs.assign(static_cast<std::size_t>(c.layers), Matrix());
    kept->projections.assign(request.keep_projections && exec.fused ? static_cast<std::size_t>(c.layers) : 0,
                             KeptProjections());
  }

  // x = tok_emb[ids] + pos_emb[0 … T).
  Matrix x(T, d);
  if (q > 0) x.topRows(q) = prefix->final_x.topRows(q);
  for (int t = q; t < T; ++t)
    for (int i = 0; i < d; ++i)
      x(t, i) = model.token_embedding.data[static_cast<std::size_t>(ids[t]) * d + i] +
                model.position_embedding.data[static_cast<std::size_t>(t) * d + i];

  // The rows the last block finishes (GptRequest::final_rows, the fast path): those asked for and
  // the logit positions, of them the prefix's only where the prefix left them unfinished.
  std::vector<std::uint8_t> finished(static_cast<std::size_t>(T), 1);
  if (q > 0 && !prefix->finished.empty()) std::copy_n(prefix->finished.begin(), q, finished.begin());
  const bool partial = exec.fused && c.mlp && !request.final_rows.empty();
  std::vector<int> finishing;  // sorted
  if (partial) {
    std::fill(finished.begin() + q, finished.end(), 0);
    std::vector<int> asked = request.final_rows;
    if (!request.no_logits) asked.insert(asked.end(), result.logit_positions.begin(), result.logit_positions.end());
    for (int r : asked) {
      if (r < 0 || r >= T)
        throw InputError("final row " + std::to_string(r) + " does not exist: the text has " + std::to_string(T) +
                         " tokens");
      if (!finished[static_cast<std::size_t>(r)]) finishing.push_back(r), finished[static_cast<std::size_t>(r)] = 1;
    }
    std::sort(finishing.begin(), finishing.end());
  } else if (q > 0) {  // every row: the prefix's unfinished ones too
    for (int r = 0; r < q; ++r)
      if (!finished[static_cast<std::size_t>(r)]) finishing.push_back(r), finished[static_cast<std::size_t>(r)] = 1;
  }

  const int rows = rowBlock(T - q, threads), blocks = (T - q + rows - 1) / rows;
  const auto rowsOf = [&](int k) { return std::pair{q + k * rows, std::min(T, q + (k + 1) * rows)}; };
  const int F = c.mlp_width;
  Matrix attention_input, h(T, d), y(T, d);
  const int ldf = aliasFreeStride(F);  // the MLP's hidden rows, X of its out_proj
  std::vector<float> f(exec.fused ? static_cast<std::size_t>(T) * ldf : 0);
  for (int layer = 0; layer < c.layers; ++layer) {
    if (cancelled()) throw Cancelled();
    const GptBlock& b = model.blocks[layer];
    // a = LN₁(x), written where the prefix keeps it (no copy); the attention of a (the chapter's
    // MultiHeadAttention) added to x.
    Matrix& a = kept != nullptr ? kept->attention_inputs[static_cast<std::size_t>(layer)] : attention_input;
    a.resize(T, d);
    if (q > 0) a.topRows(q) = prefix->attention_inputs[static_cast<std::size_t>(layer)].topRows(q);
    forEachItem(threads, blocks, [&](int k) {
      for (auto [r, end] = rowsOf(k); r < end; ++r)
        layerNormRow(x.row(r).data(), d, b.norm1, c.layer_norm_eps, a.row(r).data());
    });
    const bool maps = !request.no_maps &&
                      (request.map_layers.empty() || std::find(request.map_layers.begin(), request.map_layers.end(),
                                                               layer) != request.map_layers.end());
    TraceRequest traced = maps ? TraceRequest() : TraceRequest::only({});
    if (!maps && request.weight_rows)
      traced.weight_rows = [&request, layer](const WeightRows& rows) { request.weight_rows(layer, rows); };
    // A layer that keeps maps, or whose outputs are kept (whole_layer), is computed whole; with
    // whole_attention the prefix's rows are attended again from their projections when it kept
    // them, else computed whole too.
    if (!maps && q > 0 && layer != request.whole_layer && (!request.whole_attention || projected)) {
      traced.first_row = q;
      traced.earlier = &(*earlier)[static_cast<std::size_t>(layer)];
      traced.weights_before_first_row = request.whole_attention && request.weight_rows != nullptr;
    }
    if (kept != nullptr && !kept->projections.empty()) {
      traced.keep_projections = &kept->projections[static_cast<std::size_t>(layer)];
      traced.keep_room = request.keep_room;
      if (taken != nullptr) {  // no second block
        traced.reuse = &(*taken)[static_cast<std::size_t>(layer)];
        traced.reuse_rows = projected ? q : 0;
      }
    }
    Trace trace;
    try {
      trace = computeTrace(a, model.attention_config, b.attention, exec, traced, limits);
    } catch (const ComputeError&) {
      overflow("block " + std::to_string(layer) + "'s attention");
    }
    // x += the attention's output, by rows on every thread, and (with an MLP) h = LN₂(x) of each
    // row while it is in cache; finiteness is checked where x is last written.
    const Matrix& attention_output = trace.batches[0].output;
    std::atomic<bool> bad{false};
    forEachItem(threads, blocks, [&](int k) {
      for (auto [r, end] = rowsOf(k); r < end; ++r) {
        x.row(r) += attention_output.row(r);
        if (c.mlp)
          layerNormRow(x.row(r).data(), d, b.norm2, c.layer_norm_eps, h.row(r).data());
        else if (!allFinite(x.row(r).data(), static_cast<std::size_t>(d)))
          bad = true;
      }
    });
    if (request.on_layer) request.on_layer(layer, a, std::move(trace));
    if (!c.mlp) {  // an attention-only block
      if (bad) overflow("block " + std::to_string(layer) + "'s attention");
      continue;
    }
    // x += MLP(h): items of (row block, output slice), so that a short text's threads each read a
    // part of the weights, not all of them.
    if (!exec.fused) {
      if (b.fc.weight.size() == 0)
        throw InputError(
            "the reference path needs the MLP's weights, which this model was loaded without "
            "(GptLoadOptions::reference_mlp)");
      forEachItem(threads, blocks, [&](int k) {
        const auto [r0, end] = rowsOf(k);
        mlpRowsReference(b, h, x, r0, end - r0);
      });
    } else if (layer == c.layers - 1 && partial) {  // the rows asked for, and those the prefix left
      if (!allFinite(x.data() + static_cast<std::size_t>(q) * d, static_cast<std::size_t>(T - q) * d)) bad = true;
      if (!bad) finishRows(model, x, finishing, threads);
    } else if (!mlpRowsFast(b, h, x, q, T, f.data(), ldf, y, threads)) {
      bad = true;
    }
    if (bad ||
        (!exec.fused && !allFinite(x.data() + static_cast<std::size_t>(q) * d, static_cast<std::size_t>(T - q) * d)))
      overflow("block " + std::to_string(layer) + "'s MLP");
  }
  if (cancelled()) throw Cancelled();
  if (!partial && !finishing.empty()) finishRows(model, x, finishing, threads);  // the prefix's, for every row

  if (!request.no_logits) result.logits = gptLogits(model, x, result.logit_positions, exec);
  if (kept != nullptr) {
    kept->final_x = std::move(x);
    kept->finished = std::move(finished);
  }
  return result;
}

Matrix gptLogits(const GptModel& model, const Matrix& final_x, const std::vector<int>& positions,
                 const ExecutionOptions& exec) {
  const GptConfig& c = model.config;
  const int P = static_cast<int>(positions.size()), V = c.vocab_size, d = c.d_model;
  const int threads = exec.parallel ? resolveThreads(exec.threads) : 1;
  Matrix hf(P, d);
  for (int p = 0; p < P; ++p) {
    if (positions[p] < 0 || positions[p] >= final_x.rows())
      throw InputError("position " + std::to_string(positions[p]) + " does not exist: the text has " +
                       std::to_string(final_x.rows()) + " tokens");
    layerNormRow(final_x.row(positions[p]).data(), d, model.final_norm, c.layer_norm_eps, hf.row(p).data());
  }
  Matrix logits(P, V);
  const Eigen::Map<const Matrix> head(model.output_head.data, V, d);
  constexpr int kVocabBlock = 2048;
  forEachItem(threads, (V + kVocabBlock - 1) / kVocabBlock, [&](int k) {
    const int v0 = k * kVocabBlock, n = std::min(kVocabBlock, V - v0);
    if (P > kStreamedPositions) {
      logits.middleCols(v0, n).noalias() = hf * head.middleRows(v0, n).transpose();
      return;
    }
    // A few positions (the app asks for one or two): each row of the head read once, for every
    // position while it is in L1 (lm/head_logits.h). A product would first copy (pack) each block
    // of the head, which here costs more than the multiplications: GPT-2's 154 MB head, two
    // positions, 28 → 12 ms.
    headLogits(hf.data(), P, d, head.row(v0).data(), n, logits.data() + v0, logits.cols());
  });
  if (!logits.allFinite()) overflow("the output head");
  return logits;
}

Matrix gptLogits(const GptModel& model, const GptPrefix& pass, const std::vector<int>& positions,
                 const ExecutionOptions& exec) {
  const int T = static_cast<int>(pass.final_x.rows());
  const auto unfinished = [&](int p) {
    return p >= 0 && p < T && static_cast<std::size_t>(p) < pass.finished.size() && !pass.finished[p];
  };
  if (std::none_of(positions.begin(), positions.end(), unfinished))
    return gptLogits(model, pass.final_x, positions, exec);
  // The rows asked for, those unfinished finished here (the pass's own bits: it ran on the fast path).
  Matrix x(static_cast<Eigen::Index>(positions.size()), pass.final_x.cols());
  std::vector<int> rows(positions.size()), at;
  for (int i = 0; i < static_cast<int>(positions.size()); ++i) {
    const int p = positions[static_cast<std::size_t>(i)];
    if (p < 0 || p >= T)
      throw InputError("position " + std::to_string(p) + " does not exist: the text has " + std::to_string(T) +
                       " tokens");
    x.row(i) = pass.final_x.row(p);
    rows[static_cast<std::size_t>(i)] = i;
    if (unfinished(p)) at.push_back(i);
  }
  finishRows(model, x, at, exec.parallel ? resolveThreads(exec.threads) : 1);
  return gptLogits(model, x, rows, exec);
}

}  // namespace attnscope
