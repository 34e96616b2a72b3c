#include "engine/attention.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <list>
#include <mutex>
#include <string>
#include <utility>

#include "engine/attention_reference.h"
#include "engine/errors.h"
#include "engine/gemm.h"
#include "engine/packed_linear.h"
#include "engine/recent_cache.h"
#include "engine/thread_team.h"
#include "engine/tile_kernels.h"
#include "engine/torch_generator.h"


namespace attnscope {

namespace {

constexpr int kRowBlock = kReferenceRowBlock;  // rows per task of the reference blocks (both paths)
constexpr int kProjBlock = 256;  // rows per projection task of the fast path
// Rows per output (out_proj) task of the fast path: the last tasks of a pass, small enough that a
// thread done early takes over some of the other's.
constexpr int kOutBlock = 64;
// Rows per projection task while the dropout draws run beside them (below): small enough that the
// other threads' projections balance the one thread that draws.
constexpr int kProjBlockBesideDraws = 64;
constexpr int kQueryBlock = 128;  // query rows per task of the fused kernel
// Key columns per tile of the fused kernel: every query row of a block reads the whole tile of K,
// which must stay in L1 — 128 keys of a 64-wide head take 32 KiB (256 took 64 KiB, and GPT-2's
// forward ran 20 % slower than with 128).
constexpr int kKeyTile = 128;

float negInf() { return -std::numeric_limits<float>::infinity(); }

using Stride = Eigen::OuterStride<>;
using ConstBlock = Eigen::Map<const Matrix, Eigen::Unaligned, Stride>;
using Block = Eigen::Map<Matrix, Eigen::Unaligned, Stride>;

// Where dropout draw (b, h, i, j) falls in torch's stream: multihead draws one (B, H, T, T)
// tensor; the wrapper's heads each draw their own (B, T, T) tensor, head after head.
std::size_t dropoutOffset(const Trace& t, int b, int h) {
  const std::size_t tt = static_cast<std::size_t>(t.tokens) * t.tokens;
  const std::size_t B = t.model.batch_size, H = t.heads;
  if (t.model.variant == Variant::MultiHeadWrapper) return (h * B + b) * tt;
  return (b * H + h) * tt;
}

// Dropout draws as bits, in torch's order: draw i is kept iff bit i % 64 of word i / 64 is set.
struct KeepBits {
  const std::uint64_t* words = nullptr;  // null: no dropout, everything kept
  bool operator()(std::size_t i) const { return words == nullptr || (words[i >> 6] >> (i & 63)) & 1; }
};

// The fast path's linear layers on packed weights (packed_linear.h): per projection group the
// stacked [W_query; W_key; W_value] (3·d_out × d_in, so that one product writes a group's
// [Q | K | V] rows), and out_proj. Empty where the model has no such layer.
struct PackedWeights {
  std::vector<PackedLinear> qkv;  // one per group
  PackedLinear out_proj;          // multihead only
};

PackedLinear packStacked(const std::vector<const Linear*>& layers) {
  const int in = static_cast<int>(layers.front()->weight.cols());
  int out = 0;
  for (const Linear* l : layers) out += static_cast<int>(l->weight.rows());
  Matrix w(out, in);
  RowVector b = RowVector::Zero(out);
  const bool biased = layers.front()->bias.size() > 0;
  int row = 0;
  for (const Linear* l : layers) {
    const int rows = static_cast<int>(l->weight.rows());
    w.middleRows(row, rows) = l->weight;
    if (biased) b.segment(row, rows) = l->bias;
    row += rows;
  }
  return PackedLinear(w.data(), out, in, in, biased ? b.data() : nullptr);
}

// The packed weights of `p`, packed on first use and kept for the last few parameter sets (the
// parameters' own cache keeps as many, engine/parameters.h): an edit of the inputs packs nothing.
// Null unless gemm.h's backend is Packed: the fast path then multiplies on that backend.
// Thread-safe.
std::shared_ptr<const PackedWeights> packedWeights(const std::shared_ptr<const Parameters>& p,
                                                   const ModelConfig& m) {
  if (gemmBackend() != GemmBackend::Packed) return nullptr;
  // Keyed by the parameters' owner: a weak pointer never matches a later set at the same address.
  // As many as the parameters' own cache keeps, within the same bytes.
  static RecentCache<std::weak_ptr<const Parameters>, std::shared_ptr<const PackedWeights>> recent(
      4, std::size_t{64} << 20);
  const auto same = [&](const std::weak_ptr<const Parameters>& k) { return !k.owner_before(p) && !p.owner_before(k); };
  if (auto hit = recent.find(same)) return *hit;
  auto packed = std::make_shared<PackedWeights>();
  for (std::size_t g = 0; g < p->query.size(); ++g)
    packed->qkv.push_back(packStacked({&p->query[g], &p->key[g], &p->value[g]}));
  if (hasOutProj(m.variant)) {
    const Linear& o = p->out_proj;
    packed->out_proj = PackedLinear(o.weight.data(), static_cast<int>(o.weight.rows()),
                                    static_cast<int>(o.weight.cols()), static_cast<int>(o.weight.cols()),
                                    o.bias.size() > 0 ? o.bias.data() : nullptr);
  }
  recent.insert(p, packed, parameterBytes(*p));  // the panels hold about what they pack
  return packed;
}

// Everything one task needs to read; each task writes only its own rows.
// Q, K and V of one projection group fill one block of T × 3·d_out floats, `qkvBlock(p, g)` for
// projection element p (one per batch element, or a single one shared by all, since every
// element's inputs are the same X) and group g (the wrapper's heads, else 1). Row-major [Q | K | V]
// rows on the reference path; on the fast path, when a head is whole panels of the packed product
// (w a multiple of 32), head-major: Q of head 0 (T × w, dense), Q of head 1, …, then the keys, then
// the values. In the row-major layout a head's rows lie 3·d_out floats apart, a stride that maps a
// key tile onto a sixteenth of the L1 cache's sets, so the fused kernel copied each V tile first
// (GPT-2's 3 MB of copies a pass); dense, the kernels read K and V where they lie.
struct Work {
  const Matrix* x;                 // T × d_in
  Trace* trace;
  std::vector<float>* qkv;         // projection elements × groups × T × 3·d_out (qkvBlock)
  KeepBits keep;                   // dropout draws in torch's order
  const PackedWeights* packed = nullptr;  // the fast path's packed layers (gemm.h's Packed backend)
  std::atomic<bool> overflow{false};
  int groups = 1;                  // projection groups (heads for the wrapper, else 1)
  bool shared_projection = false;  // one projection element serves every batch element
  bool head_major = false;         // the fast path's head-major layout of the projections
  // The projection element batch element b reads.
  int projectionElement(int b) const { return shared_projection ? 0 : b; }
  // The projection group of head h: its own for the wrapper's heads, else the one of every head.
  int groupOf(int h) const { return groups > 1 ? h : 0; }
  float* qkvBlock(int b, int g) const {
    return qkv->data() + static_cast<std::size_t>(projectionElement(b) * groups + g) * trace->tokens * 3 *
                             trace->model.d_out;
  }
  // The layout of a block, in PackedLinear's terms: column c (of the 3·d_out of [Q | K | V]) of
  // row r lies at qkvBlock + r · qkvLd() + qkvColumns().offset(c).
  int qkvLd() const { return head_major ? trace->head_width : 3 * trace->model.d_out; }
  OutputBlocks qkvColumns() const {
    if (!head_major) return OutputBlocks();
    return OutputBlocks{trace->head_width, static_cast<std::ptrdiff_t>(trace->tokens) * trace->head_width};
  }
};

// Projection of rows [r0, r0+n) of batch element b, group g: Q, K, V = X W_qᵀ, X W_kᵀ, X W_vᵀ, by
// the reference's block (attention_reference.h). Row-major [Q | K | V] (the reference path never
// lays them out head-major).
void projectRows(Work& w, int b, int g, int r0, int n) {
  const Parameters& p = *w.trace->parameters;
  const int T = w.trace->tokens, d = w.trace->model.d_out, ld = w.qkvLd();
  float* base = w.qkvBlock(b, g);
  linearForward(*w.x, p.query[g], r0, n, Block(base, T, d, Stride(ld)));
  linearForward(*w.x, p.key[g], r0, n, Block(base + d, T, d, Stride(ld)));
  linearForward(*w.x, p.value[g], r0, n, Block(base + 2 * d, T, d, Stride(ld)));
}

// The fast path's projection of the same rows: the same products on the fastest GEMM (gemm.h), in
// the block's layout (Work::qkvColumns; head-major only with the packed product).
void projectRowsFast(Work& w, int b, int g, int r0, int n) {
  const Parameters& p = *w.trace->parameters;
  const int d = w.trace->model.d_out, d_in = w.trace->d_in, ld = w.qkvLd();
  float* rows = w.qkvBlock(b, g) + static_cast<std::size_t>(r0) * ld;
  const float* x = w.x->data() + static_cast<std::size_t>(r0) * d_in;
  if (w.packed != nullptr) {
    w.packed->qkv[g].apply(n, x, d_in, rows, ld, Isa::Auto, PackedLinear::kAllOutputs, w.qkvColumns());
    return;
  }
  int part = 0;
  for (const Linear* l : {&p.query[g], &p.key[g], &p.value[g]}) {
    float* y = rows + part++ * d;
    gemmABt(n, d, d_in, x, d_in, l->weight.data(), d_in, 0.0f, y, ld);
    if (l->bias.size() > 0) Block(y, n, d, Stride(ld)).rowwise() += l->bias;
  }
}

// Q, K, V of head h of batch element b: T × w blocks with row stride `ld`.
struct HeadInputs {
  const float *q, *k, *v;
  int ld;
  ConstBlock Q(int T, int w) const { return ConstBlock(q, T, w, Stride(ld)); }
  ConstBlock K(int T, int w) const { return ConstBlock(k, T, w, Stride(ld)); }
  ConstBlock V(int T, int w) const { return ConstBlock(v, T, w, Stride(ld)); }
};
HeadInputs headInputs(const Work& w, int b, int h) {
  const Trace& t = *w.trace;
  if (t.model.variant == Variant::Simple) {  // 'simple' attends with the inputs: Q = K = V = X
    const float* x = w.x->data();
    return {x, x, x, t.d_in};
  }
  const int g = w.groupOf(h), d = t.model.d_out;
  const int first = (h - g) * t.head_width;  // the head's first column in its group (a group of one: 0)
  const float* block = w.qkvBlock(b, g);
  const OutputBlocks columns = w.qkvColumns();
  return {block + columns.offset(first), block + columns.offset(d + first), block + columns.offset(2 * d + first),
          w.qkvLd()};
}

// Attention rows [r0, r0+n) of batch element b, head h by the reference's block (attentionForward,
// attention_reference.h): the scores and weights rows (and the keep mask, with dropout) go to
// `maps` at row o (the whole head when it is traced, o = r0; a row-block scratch otherwise,
// o = 0), the context rows to `context` (T × w). The keep bits of the rows become `maps`' dropout
// mask rows first, which the block reads.
void attendRows(Work& w, int b, int h, int r0, int n, HeadTrace& maps, int o, Matrix& context) {
  const Trace& t = *w.trace;
  const int T = t.tokens, hw = t.head_width;
  const HeadInputs in = headInputs(w, b, h);
  const ConstBlock Q = in.Q(T, hw), K = in.K(T, hw), V = in.V(T, hw);
  if (maps.queries.rows() > 0) {  // traced: keep this head's slices of Q, K, V
    maps.queries.middleRows(r0, n) = Q.middleRows(r0, n);
    maps.keys.middleRows(r0, n) = K.middleRows(r0, n);
    maps.values.middleRows(r0, n) = V.middleRows(r0, n);
  }
  if (maps.dropout_mask.size() > 0) {
    const std::size_t keep0 = dropoutOffset(t, b, h);
    for (int i = r0; i < r0 + n; ++i)
      for (int j = 0; j < T; ++j) maps.dropout_mask(o + i - r0, j) = w.keep(keep0 + static_cast<std::size_t>(i) * T + j);
  }
  if (!attentionForward(t.model, t.scale_divisor, t.dropout_scale, Q, K, V, r0, n, maps, o, context))
    w.overflow = true;
}

// The traced rows on the fast path: the stored stages of attendRows (scores, weights, the keep
// mask), with row-wise vector operations (Eigen's exp, vectorized sums) instead of scalar loops,
// and P·V over the unmasked keys only. Softmax normalization only (the fast path's condition).
// Tested against attendRows.
void attendRowsTraced(Work& w, int b, int h, int r0, int n, HeadTrace& head) {
  const Trace& t = *w.trace;
  const int T = t.tokens, hw = t.head_width;
  const bool causal = t.model.causal, scaled = t.model.scale == Scale::SqrtDk;
  const bool dropout = w.keep.words != nullptr;
  const HeadInputs in = headInputs(w, b, h);
  const ConstBlock Q = in.Q(T, hw), K = in.K(T, hw), V = in.V(T, hw);
  head.queries.middleRows(r0, n) = Q.middleRows(r0, n);
  head.keys.middleRows(r0, n) = K.middleRows(r0, n);
  head.values.middleRows(r0, n) = V.middleRows(r0, n);
  gemmABt(n, T, hw, in.q + static_cast<std::size_t>(r0) * in.ld, in.ld, in.k, in.ld, 0.0f,
          head.scores.data() + static_cast<std::size_t>(r0) * T, T);

  // Per-thread rows, reused: the scaled scores of one row, and with dropout the rows' dropped
  // weights for P·V (without dropout they are the weights themselves).
  thread_local std::vector<float, Eigen::aligned_allocator<float>> scaled_buf, dropped_buf;
  scaled_buf.resize(T);
  if (dropout) dropped_buf.resize(static_cast<std::size_t>(n) * T);
  const std::size_t keep0 = dropoutOffset(t, b, h);
  bool finite = true;
  for (int i = r0; i < r0 + n; ++i) {
    const int valid = causal ? i + 1 : T;  // unmasked keys of row i
    auto s = head.scores.row(i).array();
    Eigen::Map<Eigen::ArrayXf> sc(scaled_buf.data(), T);
    auto wt = head.weights.row(i).array();
    if (scaled)
      sc = s.transpose() / t.scale_divisor;
    else
      sc = s.transpose();
    if (!sc.allFinite()) finite = false;
    const float row_max = sc.head(valid).maxCoeff();
    wt.head(valid) = (sc.head(valid) - row_max).exp().transpose();
    wt.tail(T - valid).setZero();
    wt.head(valid) *= static_cast<float>(1.0 / wt.head(valid).template cast<double>().sum());
    if (dropout) {
      auto dm = head.dropout_mask.row(i);
      float* dw = dropped_buf.data() + static_cast<std::size_t>(i - r0) * T;
      const std::size_t row_keep = keep0 + static_cast<std::size_t>(i) * T;
      for (int j = 0; j < T; ++j) {
        const bool kept = w.keep(row_keep + j);
        dm(j) = kept;
        dw[j] = kept ? wt(j) * t.dropout_scale : 0.0f;
      }
    }
  }
  const int keys = causal ? r0 + n : T;  // the rows' weights are 0 beyond their last unmasked key
  const float* P = dropout ? dropped_buf.data() : head.weights.data() + static_cast<std::size_t>(r0) * T;
  gemmAB(n, hw, keys, P, T, in.v, in.ld, 0.0f, head.context.data() + static_cast<std::size_t>(r0) * hw, hw);
  if (!finite || !head.context.middleRows(r0, n).allFinite()) w.overflow = true;
}

// The fused kernel (flash attention): context rows [r0, r0+n) of head h of element b, written to
// `ctx` (row stride ldc), without ever holding a T × T map. Same maths as attendRows with softmax
// normalization: per key tile of kKeyTile columns, S = Q Kᵀ, the causal mask on the tiles that
// cross the diagonal (tiles wholly above it are skipped, and inside a crossing tile the
// micro-kernels' register blocks above the diagonal too), an online softmax whose exponent holds
// the ÷ √d_k (p = 2^((s − m)·log₂e/√d_k) with m the running max of the raw scores, and the sum l;
// earlier partial sums are rescaled by 2^((m_old − m_new)·log₂e/√d_k) when m grows), dropout from
// the keep bits (l counts every weight, P·V only the kept ones), then
// ctx = (Σ kept p·V) · (1/(1 − p)) / l. Shapes: Q n × w, K and V T × w, tiles n × kKeyTile.
// The products and the softmax rows are the micro-kernels of tile_kernels.h, chosen once per
// process for the CPU: a small head's products are too short for a GEMM's packing to pay.
void attendRowsFused(Work& w, int b, int h, int r0, int n, float* ctx, int ldc) {
  const Trace& t = *w.trace;
  const int T = t.tokens, hw = t.head_width;
  const bool causal = t.model.causal;
  const float log2_scale = log2Scale(t.scale_divisor);
  const HeadInputs in = headInputs(w, b, h);
  const std::size_t keep0 = dropoutOffset(t, b, h);
  const TileKernels& kernels = activeTileKernels();

  // Per-thread buffers, reused across calls: no allocation once they have grown. The kernels' sums
  // run from each row's start with unaligned loads, so their order, hence the bits, does not
  // depend on where a thread's buffer lies; the alignment only spares split cache lines.
  thread_local std::vector<float, Eigen::aligned_allocator<float>> s_buf, acc_buf, k_buf, v_buf;
  thread_local std::vector<float> m_buf, l_buf;
  thread_local std::vector<SoftmaxRowResult> rows;
  s_buf.resize(static_cast<std::size_t>(n) * kKeyTile);
  rows.resize(n);
  // In the row-major layout (Work) each key tile's rows of V (and of K for the scalar kernels) are
  // copied side by side: in place they lie 3·d_out floats apart (3 KiB for medium, 9 KiB for
  // GPT-2), a stride that maps a tile onto a sixteenth of the L1 cache's sets, and the kernels,
  // which read a tile's rows once per register block of rows, found them in L2 instead (the
  // scores' dot products took 2.5× as long). The SIMD scores read K once, to pack it
  // (tile_kernels.cpp), and need no copy; head-major rows are dense and need none either.
  const bool copy_tiles = in.ld != hw, copy_keys = copy_tiles && kernels.isa == Isa::Scalar;
  if (copy_tiles) v_buf.resize(static_cast<std::size_t>(kKeyTile) * hw);
  if (copy_keys) k_buf.resize(static_cast<std::size_t>(kKeyTile) * hw);
  acc_buf.assign(static_cast<std::size_t>(n) * hw, 0.0f);
  m_buf.assign(n, negInf());
  l_buf.assign(n, 0.0f);
  float* S = s_buf.data();
  float* acc = acc_buf.data();
  const float* q = in.q + static_cast<std::size_t>(r0) * in.ld;
  bool finite = true;

  const int key_end = causal ? r0 + n : T;  // keys after the last query row are all masked
  for (int j0 = 0; j0 < key_end; j0 += kKeyTile) {
    const int nk = std::min(kKeyTile, key_end - j0);
    const int key_limit = causal ? r0 - j0 + 1 : nk;  // row r's unmasked keys: j < r + key_limit
    const float* k = in.k + static_cast<std::size_t>(j0) * in.ld;
    const float* v = in.v + static_cast<std::size_t>(j0) * in.ld;
    int ldk = in.ld, ldv = in.ld;
    // Rows of a few dozen floats: a loop the compiler vectorizes inline, not a memcpy call per row.
    const auto copy_rows = [&](const float* from, float* to) {
      for (int j = 0; j < nk; ++j)
        for (int c = 0; c < hw; ++c) to[static_cast<std::size_t>(j) * hw + c] = from[static_cast<std::size_t>(j) * in.ld + c];
    };
    if (copy_tiles) copy_rows(v, v_buf.data()), v = v_buf.data(), ldv = hw;
    if (copy_keys) copy_rows(k, k_buf.data()), k = k_buf.data(), ldk = hw;
    kernels.scores(n, nk, hw, q, in.ld, k, ldk, S, kKeyTile, key_limit);
    kernels.softmaxRows(S, kKeyTile, n, nk, key_limit, log2_scale, m_buf.data(), w.keep.words,
                        keep0 + static_cast<std::size_t>(r0) * T + j0, T, rows.data());
    for (int r = 0; r < n; ++r) {
      if (r + key_limit <= 0) continue;  // no unmasked key in this tile
      const SoftmaxRowResult& row = rows[r];
      if (!row.finite) finite = false;
      // 2^((m_old − m_new)·log2_scale): 0 on the row's first tile (m_old = −∞, l and acc still 0),
      // exactly 1 while the max stays.
      const float m_old = m_buf[r];
      m_buf[r] = row.max;
      if (m_old == negInf()) {
        l_buf[r] = row.sum;
      } else if (row.max == m_old) {
        l_buf[r] += row.sum;
      } else {
        const float correction = std::exp2((m_old - row.max) * log2_scale);
        l_buf[r] = l_buf[r] * correction + row.sum;
        float* a = acc + static_cast<std::size_t>(r) * hw;
        for (int c = 0; c < hw; ++c) a[c] *= correction;
      }
    }
    kernels.accumulate(n, nk, hw, S, kKeyTile, v, ldv, acc, hw, key_limit);
  }
  for (int r = 0; r < n; ++r) {
    const float factor = t.dropout_scale / l_buf[r];
    float* out = ctx + static_cast<std::size_t>(r) * ldc;
    const float* a = acc + static_cast<std::size_t>(r) * hw;
    for (int c = 0; c < hw; ++c) out[c] = a[c] * factor;
    if (!allFinite(out, hw)) finite = false;
  }
  if (!finite) w.overflow = true;
}

// Sizes a head's matrices: `rows` rows of the T × T maps (T for a traced head, a row block for
// scratch), the keep mask only with dropout, and T × w for Q, K, V (traced only).
void allocateHead(HeadTrace& h, int rows, int T, int hw, bool traced, bool dropout, bool tril = false) {
  if (traced)
    for (Matrix* m : {&h.queries, &h.keys, &h.values}) m->resize(T, hw);
  h.scores.resize(rows, T);
  h.weights.resize(rows, T);
  h.unmasked_weights.resize(traced && tril ? rows : 0, traced && tril ? T : 0);
  h.dropout_mask.resize(dropout ? rows : 0, dropout ? T : 0);
}

// Concatenated context rows and the output: out_proj(context) for multihead, context otherwise.
// `heads` holds the heads' contexts (traced heads and the reference loops); the fused kernel
// writes its heads straight into the element's context.
void outputRows(Work& w, int b, int r0, int n, const std::vector<HeadTrace>* heads, bool fast) {
  Trace& t = *w.trace;
  BatchTrace& bt = t.batches[b];
  if (heads != nullptr)  // heads without a context of their own were written in place (fused)
    for (int h = 0; h < t.heads; ++h)
      if ((*heads)[h].context.rows() > 0)
        bt.context.block(r0, h * t.head_width, n, t.head_width) = (*heads)[h].context.middleRows(r0, n);
  const int out_w = static_cast<int>(bt.output.cols()), ctx_w = static_cast<int>(bt.context.cols());
  if (!hasOutProj(t.model.variant)) {
    bt.output.middleRows(r0, n) = bt.context.middleRows(r0, n);
  } else if (fast && w.packed != nullptr) {
    if (!w.packed->out_proj.apply(n, bt.context.data() + static_cast<std::size_t>(r0) * ctx_w, ctx_w,
                                  bt.output.data() + static_cast<std::size_t>(r0) * out_w, out_w))
      w.overflow = true;
    return;
  } else if (fast) {
    const Linear& l = t.parameters->out_proj;
    gemmABt(n, out_w, ctx_w, bt.context.data() + static_cast<std::size_t>(r0) * ctx_w, ctx_w,
            l.weight.data(), ctx_w, 0.0f, bt.output.data() + static_cast<std::size_t>(r0) * out_w, out_w);
    bt.output.middleRows(r0, n).rowwise() += l.bias;
  } else {
    linearForward(bt.context, t.parameters->out_proj, r0, n,
                  Block(bt.output.data(), bt.output.rows(), out_w, Stride(out_w)));
  }
  if (!allFinite(bt.output.data() + static_cast<std::size_t>(r0) * out_w, static_cast<std::size_t>(n) * out_w))
    w.overflow = true;
}

// One unit of the attention loop. Traced heads and the reference path take row blocks of
// kRowBlock through attendRows; the fused path takes query blocks of kQueryBlock.
struct AttentionTask {
  enum Kind { Traced, Scratch, Fused } kind;
  int b, h, r0, n;
  int keys;        // the keys it reads: [0, keys)
  long long cost;  // multiply-adds, to hand out the heaviest first (the causal triangle's bottom)
};

// Runs one attention task: traced heads and the reference path by row blocks, untraced heads of the
// fast path by the fused kernel, straight into the element's context.
void attend(Work& w, const AttentionTask& a, std::vector<std::vector<HeadTrace>>& heads, Trace& t, bool fused) {
  const int T = t.tokens, hw = t.head_width;
  if (a.kind == AttentionTask::Traced) {
    HeadTrace& head = heads[a.b][a.h];
    if (fused)
      attendRowsTraced(w, a.b, a.h, a.r0, a.n, head);
    else
      attendRows(w, a.b, a.h, a.r0, a.n, head, a.r0, head.context);
  } else if (a.kind == AttentionTask::Scratch) {
    thread_local HeadTrace scratch;
    allocateHead(scratch, kRowBlock, T, hw, false, t.dropout_active);
    attendRows(w, a.b, a.h, a.r0, a.n, scratch, 0, heads[a.b][a.h].context);
  } else {
    Matrix& ctx = t.batches[a.b].context;
    attendRowsFused(w, a.b, a.h, a.r0, a.n, ctx.data() + static_cast<std::size_t>(a.r0) * ctx.cols() + a.h * hw,
                    static_cast<int>(ctx.cols()));
  }
}

}  // namespace

bool TraceRequest::keeps(int b) const {
  return all_batches || std::find(batches.begin(), batches.end(), b) != batches.end();
}

bool TraceRequest::keepsHead(int b, int h) const {
  return keeps(b) && (heads.empty() || std::find(heads.begin(), heads.end(), h) != heads.end());
}

int resolveThreads(int threads) { return threads > 0 ? threads : availableProcessors(); }

Trace computeTrace(const Matrix& x, const ModelConfig& m, const ExecutionOptions& exec,
                   const TraceRequest& request, const Limits& limits) {
  checkForwardInputs(x, m, limits);
  const int T = static_cast<int>(x.rows()), d_in = static_cast<int>(x.cols());
  for (int b : request.batches)
    if (b < 0 || b >= m.batch_size)
      throw InputError("batch " + std::to_string(b) + " does not exist: batch_size is " +
                       std::to_string(m.batch_size));

  for (int h : request.heads)
    if (h < 0 || h >= headCount(m))
      throw InputError("head " + std::to_string(h) + " does not exist: the model has " +
                       std::to_string(headCount(m)) + " heads");

  Trace t;
  t.model = m;
  t.tokens = T;
  t.d_in = d_in;
  t.heads = headCount(m);
  t.head_width = headWidth(m, d_in);
  t.scale_divisor = m.scale == Scale::SqrtDk ? static_cast<float>(std::sqrt(t.head_width)) : 1.0f;

  // Parameters, then dropout draws: the order of torch.manual_seed; Module(...); module(batch).
  DrawnParameters drawn = drawParameters(m, d_in);
  t.parameters = drawn.parameters;
  TorchGenerator& generator = drawn.generator;
  // Buffers of the calling thread, reused across calls (a GPT-2 edit allocates no scratch).
  thread_local std::vector<float> qkv;
  thread_local std::vector<std::uint64_t> keep_words;
  Work w;
  w.x = &x;
  w.trace = &t;
  w.qkv = &qkv;
  w.groups = m.variant == Variant::MultiHeadWrapper ? m.num_heads : 1;
  t.dropout_active = hasDropout(m.variant) && m.training && m.dropout > 0;
  // The dropout draws are one stream, so one thread's work (medium's 1 M draws: 0.5 ms, a quarter
  // of its training forward): they are the first item of the pass, beside the projections on the
  // other threads, which need no draw. Only the attention tasks read them, and wait for them.
  std::size_t draws = 0;
  if (t.dropout_active) {
    t.dropout_scale = TorchGenerator::dropoutScale(m.dropout);
    draws = static_cast<std::size_t>(m.batch_size) * t.heads * T * T;
    keep_words.assign((draws + 63) / 64, 0);
    w.keep.words = keep_words.data();
  }
  // keep_words is the calling thread's (thread_local): the draws, on whichever thread, write through
  // this pointer, never through the name. They are the first item of the pass (below).
  std::uint64_t* const keep_bits = keep_words.data();
  // torch.manual_seed(dropout_seed) before the forward replaces the generator for its dropout.
  if (m.dropout_seed) generator = TorchGenerator(*m.dropout_seed);
  const auto drawDropout = [&] {
    if (draws == 0) return;
    if (m.dropout_rng == DropoutStream::Default) {  // one stream of draws, the calls one after another
      generator.fillDropoutKeepBits(keep_bits, draws, m.dropout);
      return;
    }
    // With MKL each call of dropout seeds its own stream with one draw: the wrapper calls it once
    // per head (over B × T × T), the others once (over B × H × T × T), in dropoutOffset's order.
    const std::size_t calls = m.variant == Variant::MultiHeadWrapper ? static_cast<std::size_t>(t.heads) : 1;
    for (std::size_t c = 0; c < calls; ++c)
      generator.fillDropoutKeepBitsMkl(keep_bits, c * (draws / calls), draws / calls, m.dropout);
  };

  const int B = m.batch_size, H = t.heads, G = w.groups, hw = t.head_width;
  // The fused kernel computes softmax attention; 'simple' with ÷ row sum and the tril route stay on
  // the reference.
  const bool fused = exec.fused && m.normalization == Normalization::Softmax && !trilRoute(m);
  // Every element's inputs are the same X: one projection serves all (unless the comparison with
  // torch, which projects each element, asks otherwise). Without dropout whole elements are equal.
  w.shared_projection = fused && exec.share_identical;
  std::shared_ptr<const PackedWeights> packed;
  if (fused && hasProjections(m.variant)) packed = packedWeights(t.parameters, m);
  w.packed = packed.get();
  w.head_major = w.packed != nullptr && t.head_width % PackedLinear::kPanel == 0;
  const bool share_elements = fused && exec.share_identical && !t.dropout_active;

  // Which elements are computed, and how; the rest copy `source`'s outputs.
  std::vector<int> computed;
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
        if (request.keepsHead(b, h)) allocateHead(heads[b][h], T, T, hw, true, t.dropout_active, trilRoute(m));
        if (request.keepsHead(b, h) || !fused) heads[b][h].context.resize(T, hw);
      }
    }
    if (!request.outputs) continue;
    t.batches[b].context.resize(T, contextWidth(m, d_in));
    t.batches[b].output.resize(T, outputWidth(m, d_in));
  }
  const int projections = w.shared_projection ? 1 : B;
  if (hasProjections(m.variant)) qkv.resize(static_cast<std::size_t>(projections) * G * T * 3 * m.d_out);

  // Tiny configs (the book's 6 tokens) cost less than waking a thread team, which can stall for
  // milliseconds on a busy machine: they run on one thread. The kernels and results are the same.
  const long long work = static_cast<long long>(B) * H * T * T * std::max(hw, 1);
  const bool parallel = exec.parallel && work >= exec.min_parallel_work;
  const int threads = parallel ? resolveThreads(exec.threads) : 1;

  // The pass is one loop of items (runGraph), each started once its inputs are written:
  // the dropout draws, then the projection blocks, the attention tasks (each needs the draws and the
  // projection blocks of its element and group up to its last key), the output blocks (each needs
  // every attention task over its rows). No thread waits at the end of a stage while an item of the
  // next could run: with B = 2 on two threads each runs its own element from start to end (medium
  // eval: the threads spent 4.6 % of the pass waiting between three loops). Every item goes first
  // to the thread whose cache holds its inputs: a projection block to the home of its [Q | K | V]
  // block, an attention task and an output block to the home of the projection block they read.
  const auto homeOf = [&](int b, int g) { return (w.projectionElement(b) * G + g) % threads; };
  const bool beside_draws = draws > 0 && threads > 1 && hasProjections(m.variant);
  const int proj_block = !fused ? kRowBlock : beside_draws ? kProjBlockBesideDraws : kProjBlock;
  const int proj_blocks = (T + proj_block - 1) / proj_block;
  const int proj_items = hasProjections(m.variant) ? projections * G * proj_blocks : 0;  // (p·G + g)·blocks + blk

  std::vector<AttentionTask> tasks;
  for (int b : computed)
    for (int h = 0; h < H; ++h) {
      const bool traced = request.keepsHead(b, h);
      if (!traced && !request.outputs) continue;
      const int block = traced || !fused ? kRowBlock : kQueryBlock;
      const auto kind = traced ? AttentionTask::Traced : fused ? AttentionTask::Fused : AttentionTask::Scratch;
      for (int r0 = 0; r0 < T; r0 += block) {
        const int n = std::min(block, T - r0);
        // Only the fused kernel skips the keys above the diagonal; the others store or read them.
        const int keys = kind == AttentionTask::Fused && m.causal ? r0 + n : T;
        tasks.push_back({kind, b, h, r0, n, keys, static_cast<long long>(keys) * n});
      }
    }
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const AttentionTask& a, const AttentionTask& b) { return a.cost > b.cost; });

  const int out_block = fused ? kOutBlock : kRowBlock;
  const int out_blocks = (T + out_block - 1) / out_block;
  const int computed_count = request.outputs ? static_cast<int>(computed.size()) : 0;
  std::vector<int> slot_of(B, -1);  // an element's place in `computed`
  for (int c = 0; c < static_cast<int>(computed.size()); ++c) slot_of[computed[c]] = c;

  // Item order: [draws] projections attention outputs; a list order in which each is ready.
  const int first_proj = draws > 0 ? 1 : 0, first_task = first_proj + proj_items;
  const int first_out = first_task + static_cast<int>(tasks.size());
  const int items = first_out + computed_count * out_blocks;  // output i = c · out_blocks + blk
  std::atomic<bool> keep_ready{draws == 0};  // the draws are in keep_bits
  const std::unique_ptr<std::atomic<bool>[]> projected(new std::atomic<bool>[std::max(proj_items, 1)]);
  for (int i = 0; i < proj_items; ++i) projected[i].store(false, std::memory_order_relaxed);
  // Attention tasks still to finish over each output block (c · out_blocks + blk).
  const std::unique_ptr<std::atomic<int>[]> unfinished(new std::atomic<int>[std::max(computed_count * out_blocks, 1)]);
  for (int i = 0; i < computed_count * out_blocks; ++i) unfinished[i].store(0, std::memory_order_relaxed);
  // Adds `change` to the count of every output block task a writes rows of.
  const auto countTowardOutputs = [&](const AttentionTask& a, int change) {
    if (computed_count == 0) return;
    for (int blk = a.r0 / out_block; blk <= (a.r0 + a.n - 1) / out_block; ++blk)
      unfinished[slot_of[a.b] * out_blocks + blk].fetch_add(change, std::memory_order_acq_rel);
  };
  for (const AttentionTask& a : tasks) countTowardOutputs(a, 1);
  // Projection item j = (p · G + g) · proj_blocks + blk, of element p (or the shared one), group g.
  const auto projectionItem = [&](int p, int g, int blk) { return (p * G + g) * proj_blocks + blk; };
  const auto projectionOf = [&](int j) {  // {p, g, r0}
    return std::array<int, 3>{j / (G * proj_blocks), j / proj_blocks % G, j % proj_blocks * proj_block};
  };
  const auto cancelled = [&] { return exec.cancel != nullptr && exec.cancel->load(std::memory_order_relaxed); };

  TaskGraph pass;
  pass.count = items;
  pass.home = [&](int i) {
    if (i < first_proj) return threads - 1;  // the draws, beside the projections of the others
    if (i < first_task) {
      const auto [p, g, r0] = projectionOf(i - first_proj);
      return homeOf(p, g);
    }
    if (i < first_out) return homeOf(tasks[i - first_task].b, w.groupOf(tasks[i - first_task].h));
    return homeOf(computed[(i - first_out) / out_blocks], 0);
  };
  pass.stage = [&](int i) { return i < first_task ? 0 : i < first_out ? 1 : 2; };
  pass.ready = [&](int i) {
    if (i < first_task) return true;
    if (i < first_out) {
      const AttentionTask& a = tasks[i - first_task];
      if (!keep_ready.load(std::memory_order_acquire)) return false;
      if (proj_items == 0) return true;
      const int p = w.projectionElement(a.b), g = w.groupOf(a.h);
      for (int blk = 0; blk * proj_block < a.keys; ++blk)
        if (!projected[projectionItem(p, g, blk)].load(std::memory_order_acquire)) return false;
      return true;
    }
    return unfinished[i - first_out].load(std::memory_order_acquire) == 0;
  };
  pass.run = [&](int i) {
    if (i < first_proj) {
      drawDropout();
      keep_ready.store(true, std::memory_order_release);
    } else if (i < first_task) {
      const auto [p, g, r0] = projectionOf(i - first_proj);
      if (!cancelled()) {
        const int n = std::min(proj_block, T - r0);
        if (fused)
          projectRowsFast(w, p, g, r0, n);
        else
          projectRows(w, p, g, r0, n);
      }
      projected[i - first_proj].store(true, std::memory_order_release);
    } else if (i < first_out) {
      const AttentionTask& a = tasks[i - first_task];
      if (!cancelled()) attend(w, a, heads, t, fused);
      countTowardOutputs(a, -1);
    } else if (!cancelled()) {
      const int j = i - first_out, b = computed[j / out_blocks], r0 = j % out_blocks * out_block;
      outputRows(w, b, r0, std::min(out_block, T - r0), heads[b].empty() ? nullptr : &heads[b], fused);
    }
  };
  runGraph(threads, pass);
  if (cancelled()) throw Cancelled();

  if (w.overflow) throwOverflow();
  for (int b = 0; b < B; ++b) {
    if (request.outputs && std::find(computed.begin(), computed.end(), b) == computed.end()) {
      t.batches[b].context = t.batches[source].context;
      t.batches[b].output = t.batches[source].output;
    }
    if (request.keeps(b)) t.batches[b].heads = std::move(heads[b]);
  }
  return t;
}

}  // namespace attnscope
