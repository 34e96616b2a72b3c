// computeTrace: one forward pass of the chapter's modules with the intermediates a TraceRequest
// asks for (docs/DESIGN.md §2.3). This file decides what the pass computes — the trace's sizes, the
// parameters, the dropout draws, which path (the reference's blocks or the fast path's kernels),
// which batch elements and heads, in which buffers; attention_schedule.cpp runs it on the thread
// team, attention_fast.cpp holds its steps, attention_reference.cpp is what they compute.
#include "engine/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/attention_pass.h"
#include "engine/attention_reference.h"
#include "engine/errors.h"
#include "engine/gemm.h"
#include "engine/thread_team.h"
#include "engine/torch_generator.h"

namespace attnscope {

bool TraceRequest::keeps(int b) const {
  return all_batches || std::find(batches.begin(), batches.end(), b) != batches.end();
}

bool TraceRequest::keepsHead(int b, int h) const {
  return keeps(b) && (heads.empty() || std::find(heads.begin(), heads.end(), h) != heads.end());
}

int resolveThreads(int threads) { return threads > 0 ? threads : availableProcessors(); }

namespace {

// The pass on parameters drawn from m.seed (`given` null) or given (a trained model's block), on
// `inputs`: one matrix every element reads, or one per element.
Trace computeTraceOn(const std::vector<const Matrix*>& inputs, const ModelConfig& m, const GivenModule* given,
                     const ExecutionOptions& exec, const TraceRequest& request, const Limits& limits) {
  if (inputs.empty() || (inputs.size() != 1 && static_cast<int>(inputs.size()) != m.batch_size))
    throw InputError("batch_sequences: " + std::to_string(inputs.size()) + " sequences for a batch of " +
                     std::to_string(m.batch_size) + " (one per element, or one for all)");
  const Matrix& x = *inputs[0];
  checkForwardInputs(x, m, limits);
  for (std::size_t b = 1; b < inputs.size(); ++b) {
    const Matrix& e = *inputs[b];
    if (e.rows() != x.rows() || e.cols() != x.cols())
      throw InputError("batch_sequences[" + std::to_string(b - 1) + "]: " + std::to_string(e.rows()) + " × " +
                       std::to_string(e.cols()) + ", but the batch's sequences are T × d_in = " +
                       std::to_string(x.rows()) + " × " + std::to_string(x.cols()));
    if (!allFinite(e.data(), static_cast<std::size_t>(e.size())))
      throw InputError("batch_sequences[" + std::to_string(b - 1) + "]: every value must be a finite number");
  }
  const bool one_input = inputs.size() == 1;
  const int T = static_cast<int>(x.rows()), d_in = static_cast<int>(x.cols());
  for (int b : request.batches)
    if (b < 0 || b >= m.batch_size)
      throw InputError("batch " + std::to_string(b) + " does not exist: batch_size is " + std::to_string(m.batch_size));

  for (int h : request.heads)
    if (h < 0 || h >= headCount(m))
      throw InputError("head " + std::to_string(h) + " does not exist: the model has " + std::to_string(headCount(m)) +
                       " heads");

  Trace t;
  t.model = m;
  t.tokens = T;
  t.d_in = d_in;
  t.heads = headCount(m);
  t.head_width = headWidth(m, d_in);
  t.scale_divisor = m.scale == Scale::SqrtDk ? static_cast<float>(std::sqrt(t.head_width)) : 1.0f;

  // Parameters, then dropout draws: the order of torch.manual_seed; Module(...); module(batch).
  // A given module draws nothing: it runs without dropout (checked by the caller).
  // (A given module's parameters held packed alone are unpacked below, if they are needed.)
  DrawnParameters drawn = given != nullptr ? DrawnParameters{given->parameters, TorchGenerator(0)}
                                           : drawParameters(m, d_in);
  t.parameters = drawn.parameters;
  TorchGenerator& generator = drawn.generator;
  // Buffers of the calling thread, reused across calls (a GPT-2 edit allocates no scratch; a pass
  // that keeps its projections hands its qkv over, TraceRequest::keep_projections).
  thread_local FloatBuffer qkv;  // every element written before it is read: left uninitialized
  thread_local std::vector<std::uint64_t> keep_words;
  pass::Work w;
  w.xs = inputs;
  w.trace = &t;
  w.qkv = &qkv;
  w.groups = m.variant == Variant::MultiHeadWrapper ? m.num_heads : 1;
  t.dropout_active = hasDropout(m.variant) && m.training && m.dropout > 0;
  // The dropout draws are one stream, so one thread's work, and a large share of a training forward
  // (docs/engine-measurements.md): they are the first item of the pass, beside the projections on
  // the other threads, which need no draw. Only the attention tasks read them, and wait for them.
  std::size_t draws = 0;
  if (t.dropout_active) {
    t.dropout_scale = TorchGenerator::dropoutScale(m.dropout);
    draws = static_cast<std::size_t>(m.batch_size) * t.heads * T * T;
    keep_words.assign((draws + 63) / 64, 0);
    w.keep.words = keep_words.data();
  }
  // keep_words is the calling thread's (thread_local): the draws, on whichever thread, write
  // through this pointer, never through the name. They are the first item of the pass (below).
  std::uint64_t* const keep_bits = keep_words.data();
  // torch.manual_seed(dropout_seed) before the forward replaces the generator for its dropout.
  if (m.dropout_seed) generator = TorchGenerator(*m.dropout_seed);
  pass::PassPlan plan;
  plan.draws = draws;
  plan.draw_dropout = [&] {
    if (draws == 0) return;
    if (m.dropout_rng == DropoutStream::Default) {  // one stream of draws, the calls one after another
      generator.fillDropoutKeepBits(keep_bits, draws, m.dropout);
      return;
    }
    // With MKL each call of dropout seeds its own stream with one draw: the wrapper calls it once
    // per head (over B × T × T), the others once (over B × H × T × T), in the order of
    // attention_fast.cpp's dropoutOffset.
    const std::size_t calls = m.variant == Variant::MultiHeadWrapper ? static_cast<std::size_t>(t.heads) : 1;
    for (std::size_t c = 0; c < calls; ++c)
      generator.fillDropoutKeepBitsMkl(keep_bits, c * (draws / calls), draws / calls, m.dropout);
  };

  const int B = m.batch_size, H = t.heads, G = w.groups, hw = t.head_width;
  // The fused kernel computes softmax attention; 'simple' with ÷ row sum and the tril route stay on
  // the reference.
  const bool fused = exec.fused && m.normalization == Normalization::Softmax && !trilRoute(m);
  plan.fused = fused;
  // Every element's inputs are the same X: one projection serves all (unless the comparison with
  // torch, which projects each element, asks otherwise). Without dropout whole elements are equal.
  w.shared_projection = fused && exec.share_identical && one_input;
  std::shared_ptr<const PackedModule> packed;
  if (fused && hasProjections(m.variant))
    packed = given != nullptr ? (gemmBackend() == GemmBackend::Packed ? given->packed : nullptr)
                              : pass::packedWeights(t.parameters, m);
  // A given module held packed alone: its parameters in torch's layout when a path multiplies
  // them so, or a view reads them from the trace (a kept element); a streamed layer of a trained
  // model's pass needs neither (unpacking GPT-2's 9.4 MB a layer would cost a pass ~2 ms a layer).
  if (given != nullptr && t.parameters == nullptr) {
    bool kept = false;
    for (int b = 0; b < m.batch_size && !kept; ++b) kept = request.keeps(b);
    if (packed == nullptr || kept) t.parameters = given->weights(m);
  }
  w.packed = packed.get();
  w.head_major = KeptProjections::headMajor(t.head_width, w.packed != nullptr);
  const bool share_elements = fused && exec.share_identical && !t.dropout_active && one_input;

  // Which elements are computed, and how; the rest copy `source`'s outputs.
  std::vector<int>& computed = plan.computed;
  int source = -1;
  for (int b = 0; b < B; ++b)
    if (request.keeps(b) && source < 0) source = b;
  for (int b = 0; b < B; ++b) {
    if (share_elements && !request.keeps(b) && b != (source < 0 ? 0 : source)) continue;
    if (!request.outputs && !request.keeps(b)) continue;  // maps only: the kept elements
    computed.push_back(b);
  }
  if (source < 0 && !computed.empty()) source = computed.front();

  // Heads of untraced elements keep only their context; on the reference path their T × T rows
  // pass through a per-thread scratch block, on the fused path they never exist.
  std::vector<std::vector<HeadTrace>> heads(B);
  t.batches.resize(B);
  for (int b = 0; b < B; ++b) {
    if (request.keeps(b) || !fused) {
      heads[b].resize(H);
      for (int h = 0; h < H; ++h) {
        heads[b][h].index = h;
        if (request.keepsHead(b, h)) pass::allocateHead(heads[b][h], T, T, hw, true, t.dropout_active, trilRoute(m));
        if (request.keepsHead(b, h) || !fused) heads[b][h].context.resize(T, hw);
      }
    }
    if (!request.outputs) continue;
    t.batches[b].context.resize(T, contextWidth(m, d_in));
    t.batches[b].output.resize(T, outputWidth(m, d_in));
  }
  const int projections = w.shared_projection ? 1 : B;
  const int width = 3 * m.d_out;
  const int q = request.first_row;
  const KeptProjections* e = request.earlier;
  if (q != 0) {
    std::string why;
    if (q < 0 || q >= T)
      why = "it is not one of the " + std::to_string(T) + " rows";
    else if (!fused || !hasProjections(m.variant) || !w.shared_projection || G != 1 || t.dropout_active)
      why = "only the fast path's pass of one projection without dropout starts after row 0";
    else if (e == nullptr || !e->holds(q, width) || e->head_major != w.head_major)
      why = "no earlier pass's projections of those rows in this layout";
    for (int b = 0; b < B && why.empty(); ++b)
      for (int h = 0; h < H && why.empty(); ++h)
        if (request.keepsHead(b, h)) why = "a kept head needs every row";
    if (why.empty() && request.weights_before_first_row && !request.weight_rows)
      why = "the earlier rows' weights go to weight_rows, which is not set";
    if (!why.empty()) throw InputError("first_row " + std::to_string(q) + ": " + why);
  }
  // The pass's [Q | K | V] block: an earlier pass's taken over (TraceRequest::reuse), its first
  // rows kept in place; else the calling thread's own, with room for a few more rows when it is
  // kept (a text typed at its end grows a token at a time).
  const bool keeps_block = request.keep_projections != nullptr && hasProjections(m.variant) && projections * G == 1;
  KeptProjections* reuse = keeps_block ? request.reuse : nullptr;
  int kept_rows = 0;  // rows of `reuse` kept (the same inputs' projections)
  // (The fast path's rows alone: the reference projects with other sums, other last bits.)
  if (reuse != nullptr && fused && reuse->holds(0, width) && reuse->head_major == w.head_major)
    kept_rows = std::clamp(std::min(reuse->rows, request.reuse_rows), 0, T);
  if (q != 0 && reuse != nullptr && e == reuse && kept_rows < q)
    throw InputError("first_row " + std::to_string(q) + ": reuse_rows keeps " + std::to_string(kept_rows) +
                     " rows of the earlier projections");
  const std::size_t room = static_cast<std::size_t>(std::max(T, request.keep_room)) * width;
  if (reuse != nullptr) {
    qkv.clear();
    qkv.swap(reuse->qkv);
    try {
      pass::layOutRows(qkv, reuse->tokens, T, kept_rows, width, t.head_width, w.head_major, room);
    } catch (...) {  // the block as it was, where it was
      reuse->qkv.swap(qkv);
      throw;
    }
    *reuse = KeptProjections();
    w.projected_rows = kept_rows;
  } else if (hasProjections(m.variant)) {
    if (keeps_block) qkv.reserve(room);
    qkv.resize(static_cast<std::size_t>(projections) * G * T * width);
  }
  // The rows an earlier pass computed, where they are not in place already: the one projection's
  // [Q | K | V] block of theirs copied in this pass's layout (head-major blocks lie T · w floats
  // apart, T being each pass's own).
  if (q != 0 && !(reuse != nullptr && e == reuse)) {
    if (w.head_major) {
      for (int c = 0; c < width / hw; ++c)
        std::copy_n(e->qkv.data() + static_cast<std::size_t>(c) * e->tokens * hw, static_cast<std::size_t>(q) * hw,
                    qkv.data() + static_cast<std::size_t>(c) * T * hw);
    } else {
      std::copy_n(e->qkv.data(), static_cast<std::size_t>(q) * width, qkv.data());
    }
  }

  // The draws, the projections, the attention and the outputs, on exec's threads; the fast path's
  // key tiles packed once for the pass, in the calling thread's memory (as qkv). A block taken over
  // goes back where it came from if the pass does not complete, its rows kept still there.
  thread_local pass::PackedKeyTiles key_tiles;
  try {
    if (fused) pass::prepareKeyTiles(w, key_tiles);
    pass::runPass(w, plan, exec, request, heads);
    if (w.overflow) throwOverflow();
  } catch (...) {
    if (reuse != nullptr) {
      reuse->qkv.swap(qkv);
      reuse->tokens = T;
      reuse->rows = kept_rows;
      reuse->width = width;
      reuse->head_major = w.head_major;
    }
    throw;
  }
  if (keeps_block) {
    KeptProjections& k = *request.keep_projections;
    k.tokens = k.rows = T;
    k.width = width;
    k.head_major = w.head_major;
    // The pass's own block (exactly T · width here), not a copy: GPT-2 small's 66 MB a pass at 600
    // tokens; the next pass takes another from the allocator's kept memory.
    k.qkv.clear();
    k.qkv.swap(qkv);
  }
  if (q != 0)
    for (BatchTrace& bt : t.batches) {
      if (bt.context.rows() > 0) bt.context.topRows(q).setZero();
      if (bt.output.rows() > 0) bt.output.topRows(q).setZero();
    }
  for (int b = 0; b < B; ++b) {
    if (request.outputs && std::find(computed.begin(), computed.end(), b) == computed.end()) {
      t.batches[b].context = t.batches[source].context;
      t.batches[b].output = t.batches[source].output;
    }
    if (request.keeps(b)) t.batches[b].heads = std::move(heads[b]);
  }
  return t;
}

}  // namespace

Trace computeTrace(const Matrix& x, const ModelConfig& m, const ExecutionOptions& exec, const TraceRequest& request,
                   const Limits& limits) {
  return computeTraceOn({&x}, m, nullptr, exec, request, limits);
}

Trace computeTrace(const std::vector<const Matrix*>& inputs, const ModelConfig& m, const ExecutionOptions& exec,
                   const TraceRequest& request, const Limits& limits) {
  return computeTraceOn(inputs, m, nullptr, exec, request, limits);
}

Trace computeTrace(const Matrix& x, const ModelConfig& m, const GivenModule& module, const ExecutionOptions& exec,
                   const TraceRequest& request, const Limits& limits) {
  if (module.parameters == nullptr && module.packed == nullptr) throw InputError("the module has no parameters");
  if (hasDropout(m.variant) && m.training && m.dropout > 0)
    throw InputError("model.dropout: a given module runs without dropout (eval mode)");
  const int d_in = static_cast<int>(x.cols());
  if (module.parameters == nullptr) {  // held packed alone: the panels' shapes
    const int groups = m.variant == Variant::MultiHeadWrapper ? m.num_heads : 1;
    const int width = m.variant == Variant::MultiHeadWrapper ? m.d_out / std::max(m.num_heads, 1) : m.d_out;
    const PackedModule& p = *module.packed;
    const auto shape = [](const SlicedLinear& l) {
      return std::to_string(l.outputs) + " × " +
             std::to_string(l.slices.empty() ? 0 : l.slices.front().packed.inputs());
    };
    const auto wrong = [](const SlicedLinear& l, int out, int in) {
      return l.outputs != out || l.slices.empty() || l.slices.front().packed.inputs() != in;
    };
    bool bad = static_cast<int>(p.qkv.size()) != groups;
    for (std::size_t g = 0; g < p.qkv.size() && !bad; ++g) bad = wrong(p.qkv[g], 3 * width, d_in);
    if (bad)
      throw InputError("parameters: the packed W_query, W_key, W_value are not " + std::to_string(groups) + " × " +
                       std::to_string(3 * width) + " × " + std::to_string(d_in) +
                       (p.qkv.empty() ? std::string() : " (the first: " + shape(p.qkv.front()) + ")"));
    if (hasOutProj(m.variant) && wrong(p.out_proj, m.d_out, m.d_out))
      throw InputError("parameters.out_proj.weight: expected " + std::to_string(m.d_out) + " × " +
                       std::to_string(m.d_out) + ", got " + shape(p.out_proj) + " packed");
    return computeTraceOn({&x}, m, &module, exec, request, limits);
  }
  // The given parameters must be the module's own shapes, as load_state_dict insists.
  const Parameters& p = *module.parameters;
  const std::vector<ParameterShape> shapes = parameterShapes(m, d_in);
  std::size_t i = 0;
  forEachStateDictEntry(m, p, [&](const std::string& name, const Matrix& value, bool) {
    const ParameterShape* s = i < shapes.size() ? &shapes[i] : nullptr;
    ++i;
    if (s == nullptr || name != s->name)
      throw InputError("parameters." + name + ": not a parameter of a " + seedClassName(m.variant) + " of width " +
                       std::to_string(d_in));
    if (value.rows() != s->rows || value.cols() != s->cols)
      throw InputError("parameters." + name + ": expected " + s->dims + " = " + std::to_string(s->rows) + " × " +
                       std::to_string(s->cols) + ", got " + std::to_string(value.rows()) + " × " +
                       std::to_string(value.cols()));
  });
  if (i != shapes.size()) throw InputError("parameters." + shapes[i].name + ": missing");
  return computeTraceOn({&x}, m, &module, exec, request, limits);
}

}  // namespace attnscope
