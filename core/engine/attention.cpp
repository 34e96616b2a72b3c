#include "engine/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "engine/errors.h"
#include "engine/torch_generator.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace attnscope {

namespace {

constexpr int kRowBlock = 32;  // rows per task: the unit of work of both paths

float negInf() { return -std::numeric_limits<float>::infinity(); }

// y = x Wᵀ + b for the rows [r0, r0+n) of x. x: T × in, W: out × in → y: T × out.
void linearRows(const Matrix& x, const Linear& l, int r0, int n, Matrix& y) {
  y.middleRows(r0, n).noalias() = x.middleRows(r0, n) * l.weight.transpose();
  if (l.bias.size() > 0) y.middleRows(r0, n).rowwise() += l.bias;
}

// Where dropout draw (b, h, i, j) falls in torch's stream: multihead draws one (B, H, T, T)
// tensor; the wrapper's heads each draw their own (B, T, T) tensor, head after head.
std::size_t dropoutOffset(const Trace& t, int b, int h) {
  const std::size_t tt = static_cast<std::size_t>(t.tokens) * t.tokens;
  const std::size_t B = t.model.batch_size, H = t.heads;
  if (t.model.variant == Variant::MultiHeadWrapper) return (h * B + b) * tt;
  return (b * H + h) * tt;
}

// Everything one task needs to read; each task writes only its own rows.
struct Work {
  const Matrix* x;                 // T × d_in
  Trace* trace;
  std::vector<Matrix> q, k, v;     // per batch element × projection group: T × d_out
  std::vector<std::uint8_t> keep;  // dropout draws in torch's order (empty: no dropout)
  std::atomic<bool> overflow{false};
  int groups = 1;                  // projection groups (heads for the wrapper, else 1)
};

// Projection of rows [r0, r0+n) of batch element b, group g: Q, K, V = X W_qᵀ, X W_kᵀ, X W_vᵀ.
void projectRows(Work& w, int b, int g, int r0, int n) {
  const Parameters& p = w.trace->parameters;
  const int i = b * w.groups + g;
  linearRows(*w.x, p.query[g], r0, n, w.q[i]);
  linearRows(*w.x, p.key[g], r0, n, w.k[i]);
  linearRows(*w.x, p.value[g], r0, n, w.v[i]);
}

// The columns of head h inside its group's Q/K/V (multihead splits d_out into heads).
struct HeadView {
  int index, col;
};
HeadView headView(const Work& w, int b, int h) {
  const Trace& t = *w.trace;
  if (t.model.variant == Variant::MultiHeadWrapper) return {b * w.groups + h, 0};
  return {b * w.groups, h * t.head_width};
}

// Attention rows [r0, r0+n) of batch element b, head h. Shapes: Q, K, V are T × w.
// scores = Q Kᵀ; scaled = scores ÷ √d_k; masked = −∞ above the diagonal; weights = softmax
// rows (stable: the row max is subtracted); dropout keeps u < 1 − p and scales by 1/(1 − p);
// context = dropped weights · V. The T × T rows go to `out` at row o (the whole head when it is
// traced, o = r0; a row-block scratch otherwise, o = 0); the context rows always go to `head`.
void attendRows(Work& w, int b, int h, int r0, int n, HeadTrace& out, int o, HeadTrace& head) {
  const Trace& t = *w.trace;
  const int T = t.tokens, hw = t.head_width;
  const bool simple = t.model.variant == Variant::Simple;
  const HeadView hv = headView(w, b, h);
  // 'simple' attends with the inputs themselves: Q = K = V = X.
  const int col = simple ? 0 : hv.col;
  const auto Q = (simple ? *w.x : std::as_const(w.q[hv.index])).middleCols(col, hw);
  const auto K = (simple ? *w.x : std::as_const(w.k[hv.index])).middleCols(col, hw);
  const auto V = (simple ? *w.x : std::as_const(w.v[hv.index])).middleCols(col, hw);

  if (&out == &head) {  // traced: keep this head's slices of Q, K, V
    out.queries.middleRows(r0, n) = Q.middleRows(r0, n);
    out.keys.middleRows(r0, n) = K.middleRows(r0, n);
    out.values.middleRows(r0, n) = V.middleRows(r0, n);
  }
  out.scores.middleRows(o, n).noalias() = Q.middleRows(r0, n) * K.transpose();

  const std::uint8_t* keep =
      w.keep.empty() ? nullptr : w.keep.data() + dropoutOffset(t, b, h);
  bool finite = true;
  for (int i = r0, oi = o; i < r0 + n; ++i, ++oi) {
    float row_max = negInf();
    for (int j = 0; j < T; ++j) {
      const float s = out.scores(oi, j);
      const float scaled = t.model.scale == Scale::SqrtDk ? s / t.scale_divisor : s;
      const bool masked = t.model.causal && j > i;
      finite = finite && std::isfinite(scaled);
      out.scaled_scores(oi, j) = scaled;
      out.mask(oi, j) = masked;
      out.masked_scores(oi, j) = masked ? negInf() : scaled;
      if (!masked) row_max = std::max(row_max, scaled);
    }
    if (t.model.normalization == Normalization::Sum) {  // simple's "÷ row sum" alternative
      double sum = 0;
      for (int j = 0; j < T; ++j) sum += out.masked_scores(oi, j);
      const float fsum = static_cast<float>(sum);
      finite = finite && fsum != 0.0f && std::isfinite(fsum);
      for (int j = 0; j < T; ++j) out.weights(oi, j) = out.masked_scores(oi, j) / fsum;
    } else {
      double sum = 0;
      for (int j = 0; j < T; ++j) {
        const float e = out.mask(oi, j) ? 0.0f : std::exp(out.masked_scores(oi, j) - row_max);
        out.weights(oi, j) = e;
        sum += e;
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (int j = 0; j < T; ++j) out.weights(oi, j) *= inv;
    }
    for (int j = 0; j < T; ++j) {
      const bool kept = keep == nullptr || keep[static_cast<std::size_t>(i) * T + j];
      const float wt = out.weights(oi, j);
      out.dropout_mask(oi, j) = kept;
      out.dropped_weights(oi, j) = keep == nullptr ? wt : (kept ? wt * t.dropout_scale : 0.0f);
    }
  }
  head.context.middleRows(r0, n).noalias() = out.dropped_weights.middleRows(o, n) * V;
  if (!finite || !head.context.middleRows(r0, n).allFinite()) w.overflow = true;
}

// Sizes a head's matrices: `rows` rows of the T × T maps (T for a traced head, a row block for
// scratch), and T × w for Q, K, V (traced only).
void allocateHead(HeadTrace& h, int rows, int T, int hw, bool traced) {
  if (traced)
    for (Matrix* m : {&h.queries, &h.keys, &h.values}) m->resize(T, hw);
  for (Matrix* m : {&h.scores, &h.scaled_scores, &h.masked_scores, &h.weights, &h.dropped_weights})
    m->resize(rows, T);
  h.mask.resize(rows, T);
  h.dropout_mask.resize(rows, T);
}

// Concatenated context rows and the output: out_proj(context) for multihead, context otherwise.
void outputRows(Work& w, int b, int r0, int n, const std::vector<HeadTrace>& heads) {
  Trace& t = *w.trace;
  BatchTrace& bt = t.batches[b];
  for (int h = 0; h < t.heads; ++h)
    bt.context.block(r0, h * t.head_width, n, t.head_width) = heads[h].context.middleRows(r0, n);
  if (hasOutProj(t.model.variant))
    linearRows(bt.context, t.parameters.out_proj, r0, n, bt.output);
  else
    bt.output.middleRows(r0, n) = bt.context.middleRows(r0, n);
  if (!bt.output.middleRows(r0, n).allFinite()) w.overflow = true;
}

}  // namespace

bool TraceRequest::keeps(int b) const {
  return all_batches || std::find(batches.begin(), batches.end(), b) != batches.end();
}

bool openmpAvailable() {
#ifdef _OPENMP
  return true;
#else
  return false;
#endif
}

int resolveThreads(int threads) {
#ifdef _OPENMP
  return threads > 0 ? threads : omp_get_num_procs();
#else
  (void)threads;
  return 1;
#endif
}

Trace computeTrace(const Matrix& x, const ModelConfig& m, const ExecutionOptions& exec,
                   const TraceRequest& request, const Limits& limits) {
  const int T = static_cast<int>(x.rows()), d_in = static_cast<int>(x.cols());
  if (T < 1 || d_in < 1) throw InputError("embeddings: need at least one token and one column");
  validateModel(m, T, d_in, limits);
  if (!x.allFinite()) throw InputError("embeddings: every value must be a finite number");
  for (int b : request.batches)
    if (b < 0 || b >= m.batch_size)
      throw InputError("batch " + std::to_string(b) + " does not exist: batch_size is " +
                       std::to_string(m.batch_size));

  Trace t;
  t.model = m;
  t.tokens = T;
  t.d_in = d_in;
  t.heads = headCount(m);
  t.head_width = headWidth(m, d_in);
  t.scale_divisor = m.scale == Scale::SqrtDk ? static_cast<float>(std::sqrt(t.head_width)) : 1.0f;

  // Parameters, then dropout draws: the order of torch.manual_seed; Module(...); module(batch).
  TorchGenerator generator(m.seed);
  t.parameters = initParameters(m, d_in, generator);
  Work w;
  w.x = &x;
  w.trace = &t;
  w.groups = m.variant == Variant::MultiHeadWrapper ? m.num_heads : 1;
  t.dropout_active = hasDropout(m.variant) && m.training && m.dropout > 0;
  if (t.dropout_active) {
    t.dropout_scale = TorchGenerator::dropoutScale(m.dropout);
    w.keep.resize(static_cast<std::size_t>(m.batch_size) * t.heads * T * T);
    generator.fillDropoutKeep(w.keep.data(), w.keep.size(), m.dropout);
  }

  const int B = m.batch_size, H = t.heads, G = w.groups;
  const int blocks = (T + kRowBlock - 1) / kRowBlock;
  auto rows = [&](int blk) { return std::min(kRowBlock, T - blk * kRowBlock); };

  // Heads of untraced batch elements keep only their context; their T × T rows pass through a
  // per-thread scratch block, so memory grows with the traced elements alone.
  std::vector<std::vector<HeadTrace>> heads(B, std::vector<HeadTrace>(H));
  t.batches.resize(B);
  for (int b = 0; b < B; ++b) {
    for (HeadTrace& h : heads[b]) {
      if (request.keeps(b)) allocateHead(h, T, T, t.head_width, true);
      h.context.resize(T, t.head_width);
    }
    t.batches[b].context.resize(T, contextWidth(m, d_in));
    t.batches[b].output.resize(T, outputWidth(m, d_in));
  }
  if (hasProjections(m.variant)) {
    for (auto* v : {&w.q, &w.k, &w.v}) v->assign(B * G, Matrix(T, m.d_out));
  }
  // Tiny configs (the book's 6 tokens) cost less than waking a thread team, which can stall for
  // milliseconds on a busy machine: they run on one thread. The kernels and results are the same.
  const long long work = static_cast<long long>(B) * H * T * T * std::max(t.head_width, 1);
  const bool parallel = exec.parallel && work >= exec.min_parallel_work;
  const int threads = parallel ? resolveThreads(exec.threads) : 1;
  (void)threads;  // unused without OpenMP

  if (hasProjections(m.variant)) {
#pragma omp parallel for collapse(3) schedule(static) num_threads(threads) if (parallel)
    for (int b = 0; b < B; ++b)
      for (int g = 0; g < G; ++g)
        for (int blk = 0; blk < blocks; ++blk) projectRows(w, b, g, blk * kRowBlock, rows(blk));
  }

#pragma omp parallel for collapse(3) schedule(dynamic) num_threads(threads) if (parallel)
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int blk = 0; blk < blocks; ++blk) {
        HeadTrace& head = heads[b][h];
        if (request.keeps(b)) {
          attendRows(w, b, h, blk * kRowBlock, rows(blk), head, blk * kRowBlock, head);
        } else {
          thread_local HeadTrace scratch;
          allocateHead(scratch, kRowBlock, T, t.head_width, false);
          attendRows(w, b, h, blk * kRowBlock, rows(blk), scratch, 0, head);
        }
      }

#pragma omp parallel for collapse(2) schedule(static) num_threads(threads) if (parallel)
  for (int b = 0; b < B; ++b)
    for (int blk = 0; blk < blocks; ++blk) outputRows(w, b, blk * kRowBlock, rows(blk), heads[b]);

  if (w.overflow)
    throw ComputeError(
        "the scores or outputs overflow float32 (or a row sums to 0 with sum normalization): "
        "use smaller embedding values");
  for (int b = 0; b < B; ++b)
    if (request.keeps(b)) t.batches[b].heads = std::move(heads[b]);
  return t;
}

}  // namespace attnscope
