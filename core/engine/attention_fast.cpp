// The steps of computeTrace's pass on its buffers (attention_pass.h): the fast path's kernels —
// the projections on packed weights, traced heads with row-wise vector operations, the fused
// kernel over key tiles (tile_kernels.h), the outputs — and the reference path's, which run the
// reference's blocks (attention_reference.h) on the same buffers. docs/DESIGN.md §2.3 "The fast
// path" is their contract; unit.reference_forward and unit.fused test them against the reference.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "engine/attention_pass.h"
#include "engine/attention_reference.h"
#include "engine/gemm.h"
#include "engine/recent_cache.h"
#include "engine/tile_kernels.h"

namespace attnscope::pass {

namespace {

// Key columns per tile of the fused kernel: every query row of a block reads the whole tile of K,
// which must stay in L1 — 128 keys of a 64-wide head take 32 KiB; 256 would take 64 KiB, and were
// slower (docs/engine-measurements.md).
constexpr int kKeyTile = 128;
// Key tiles of one head of T tokens (the last one partial): PackedKeyTiles' slots per head.
int keyTilesPerHead(int T) { return (T + kKeyTile - 1) / kKeyTile; }

float negInf() { return -std::numeric_limits<float>::infinity(); }

// Where dropout draw (b, h, i, j) falls in torch's stream: multihead draws one (B, H, T, T)
// tensor; the wrapper's heads each draw their own (B, T, T) tensor, head after head.
std::size_t dropoutOffset(const Trace& t, int b, int h) {
  const std::size_t tt = static_cast<std::size_t>(t.tokens) * t.tokens;
  const std::size_t B = t.model.batch_size, H = t.heads;
  if (t.model.variant == Variant::MultiHeadWrapper) return (h * B + b) * tt;
  return (b * H + h) * tt;
}

// A group's stacked [W_query; W_key; W_value] (bias the same, or null) packed in slices of whole
// heads of width hw (and whole panels).
SlicedLinear packStacked(const WeightView& stacked, const float* bias, int hw) {
  return packSliced(stacked, bias, std::lcm(PackedLinear::kPanel, std::max(hw, 1)));
}
// The layers of one group stacked into one (their weights' rows and biases one after the other), so.
SlicedLinear packStacked(const std::vector<const Linear*>& layers, int hw) {
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
  return packStacked(WeightView::rows(w.data(), out, in, in), biased ? b.data() : nullptr, hw);
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
    const float* x = w.xOf(b).data();
    return {x, x, x, t.d_in};
  }
  const int g = w.groupOf(h), d = t.model.d_out;
  const int first = (h - g) * t.head_width;  // the head's first column in its group (a group of one: 0)
  const float* block = w.qkvBlock(b, g);
  const OutputBlocks columns = w.qkvColumns();
  return {block + columns.offset(first), block + columns.offset(d + first), block + columns.offset(2 * d + first),
          w.qkvLd()};
}

using AlignedFloats = std::vector<float, Eigen::aligned_allocator<float>>;

// Query rows [r0, r0 + n) of head h of element b as the tile kernels take them (attendRowsFused,
// attendRowsStreamed): Q, K and V where they lie, the keys the rows read, and each key tile of K
// and V as the kernels read it. In the row-major layout (Work) a tile's rows of V (and of K for the
// scalar kernels) are copied side by side: in place they lie 3·d_out floats apart (3 KiB for
// medium, 9 KiB for GPT-2), a stride that maps a tile onto a sixteenth of the L1 cache's sets, and
// the kernels, which read a tile's rows once per register block of rows, found them in L2 instead.
// The SIMD scores read K once, to pack it (tile_kernels.cpp), and need no copy; head-major rows are
// dense and need none either.
struct TileRows {
  const Trace& t;
  int T, hw, r0, n;
  bool causal;
  float log2_scale;
  HeadInputs in;
  std::size_t keep0;  // the first of the head's dropout draws
  const TileKernels& kernels;
  int key_end;  // keys after the last query row are all masked
  bool copy_values, copy_keys;

  TileRows(const Work& w, int b, int h, int r0_, int n_)
      : t(*w.trace),
        T(t.tokens),
        hw(t.head_width),
        r0(r0_),
        n(n_),
        causal(t.model.causal),
        log2_scale(log2Scale(t.scale_divisor)),
        in(headInputs(w, b, h)),
        keep0(dropoutOffset(t, b, h)),
        kernels(activeTileKernels()),
        key_end(causal ? r0 + n : T),
        copy_values(in.ld != hw),
        copy_keys(in.ld != hw && kernels.isa == Isa::Scalar) {}

  const float* queries() const { return in.q + static_cast<std::size_t>(r0) * in.ld; }
  // Row r's unmasked keys in the tile from key j0 (nk keys): j < r + keyLimit.
  int keyLimit(int j0, int nk) const { return causal ? r0 - j0 + 1 : nk; }
  // Keys [j0, j0 + nk) of K or V as the kernels read them: in place (row stride in.ld), or copied
  // side by side into `to` (stride hw) when `copy` says so. Rows of a few dozen floats: a loop the
  // compiler vectorizes inline, not a memcpy call per row.
  std::pair<const float*, int> tile(const float* base, int j0, int nk, bool copy, AlignedFloats& to) const {
    const float* from = base + static_cast<std::size_t>(j0) * in.ld;
    if (!copy) return {from, in.ld};
    to.resize(static_cast<std::size_t>(kKeyTile) * hw);
    for (int j = 0; j < nk; ++j)
      for (int c = 0; c < hw; ++c)
        to[static_cast<std::size_t>(j) * hw + c] = from[static_cast<std::size_t>(j) * in.ld + c];
    return {to.data(), hw};
  }
  // S = Q·Kᵀ of the rows and keys [j0, j0 + nk) (TileKernels::scores; S row stride lds): a whole
  // tile the pass packed once (Work::key_tiles) when the rows read all of it — a block that ends
  // inside a tile may run before the later keys are projected, so it packs its part itself, as do
  // the scalar kernels, which pack nothing. The same packing and product as tile::scoresPacked:
  // the same bits.
  void scores(const Work& w, int b, int h, int j0, int nk, float* S, int lds, int key_limit,
              AlignedFloats& k_buf) const {
    if (w.key_tiles != nullptr && kernels.isa != Isa::Scalar && nk == std::min(kKeyTile, T - j0)) {
      const std::size_t slot = (static_cast<std::size_t>(b) * t.heads + h) * keyTilesPerHead(T) + j0 / kKeyTile;
      const PackedLinear* keys = w.key_tiles->get(slot, [&](PackedLinear& tile) {
        tile.pack(in.k + static_cast<std::size_t>(j0) * in.ld, nk, hw, in.ld, nullptr);
      });
      if (keys != nullptr) {
        scoresOfPackedKeys(kernels.isa, n, *keys, queries(), in.ld, S, lds, key_limit);
        return;
      }
    }
    const auto [k, ldk] = tile(in.k, j0, nk, copy_keys, k_buf);
    kernels.scores(n, nk, hw, queries(), in.ld, k, ldk, S, lds, key_limit);
  }
};

}  // namespace

void prepareKeyTiles(Work& w, PackedKeyTiles& tiles) {
  const Trace& t = *w.trace;
  w.key_tiles = nullptr;
  if (activeTileKernels().isa == Isa::Scalar) return;
  tiles.reset(static_cast<std::size_t>(t.model.batch_size) * t.heads * keyTilesPerHead(t.tokens));
  w.key_tiles = &tiles;
}

std::shared_ptr<const PackedModule> packedWeights(const std::shared_ptr<const Parameters>& p, const ModelConfig& m) {
  if (gemmBackend() != GemmBackend::Packed) return nullptr;
  // Keyed by the parameters' owner: a weak pointer never matches a later set at the same address.
  // As many as the parameters' own cache keeps, within the same bytes.
  static RecentCache<std::weak_ptr<const Parameters>, std::shared_ptr<const PackedModule>> recent(4, std::size_t{64}
                                                                                                         << 20);
  const auto same = [&](const std::weak_ptr<const Parameters>& k) { return !k.owner_before(p) && !p.owner_before(k); };
  if (auto hit = recent.find(same)) return *hit;
  std::shared_ptr<const PackedModule> packed = packModule(*p, m);
  recent.insert(p, packed, parameterBytes(*p));  // the panels hold about what they pack
  return packed;
}

void layOutRows(FloatBuffer& qkv, int from, int to, int rows, int width, int hw, bool head_major, std::size_t room) {
  const std::size_t need = static_cast<std::size_t>(to) * width;
  room = std::max(room, need);
  const int blocks = head_major ? width / hw : 1;
  // Block c's rows [0, rows) at c · tokens · hw in a layout of `tokens` (one block of whole rows
  // when not head-major: the same place whatever the tokens).
  const std::size_t run = static_cast<std::size_t>(rows) * (head_major ? hw : width);
  const auto at = [&](int c, int tokens) { return static_cast<std::size_t>(c) * tokens * hw; };
  if (qkv.capacity() < need || qkv.capacity() > 2 * room || qkv.size() < at(blocks - 1, from) + run) {
    FloatBuffer roomy;
    roomy.reserve(room);
    roomy.resize(need);
    if (rows > 0)
      for (int c = 0; c < blocks; ++c)
        std::copy_n(qkv.data() + (head_major ? at(c, from) : 0), run, roomy.data() + (head_major ? at(c, to) : 0));
    qkv.swap(roomy);
    return;
  }
  if (!head_major || from == to || rows == 0) {
    qkv.resize(need);
    return;
  }
  // Growing, the last block moves first; shrinking, the first: no block is written over before it moved.
  if (to > from) {
    qkv.resize(need);
    for (int c = blocks - 1; c > 0; --c) std::memmove(qkv.data() + at(c, to), qkv.data() + at(c, from), run * 4);
  } else {
    for (int c = 1; c < blocks; ++c) std::memmove(qkv.data() + at(c, to), qkv.data() + at(c, from), run * 4);
    qkv.resize(need);
  }
}

// Projection of rows [r0, r0+n) of batch element b, group g: Q, K, V = X W_qᵀ, X W_kᵀ, X W_vᵀ, by
// the reference's block (attention_reference.h). Row-major [Q | K | V] (the reference path never
// lays them out head-major).
void projectRowsReference(Work& w, int b, int g, int r0, int n) {
  const Parameters& p = *w.trace->parameters;
  const int T = w.trace->tokens, d = w.trace->model.d_out, ld = w.qkvLd();
  float* base = w.qkvBlock(b, g);
  const Matrix& x = w.xOf(b);
  linearForward(x, p.query[g], r0, n, Block(base, T, d, Stride(ld)));
  linearForward(x, p.key[g], r0, n, Block(base + d, T, d, Stride(ld)));
  linearForward(x, p.value[g], r0, n, Block(base + 2 * d, T, d, Stride(ld)));
}

// The fast path's projection of the same rows: the same products on the fastest GEMM (gemm.h), in
// the block's layout (Work::qkvColumns; head-major only with the packed product).
void projectRowsFast(Work& w, int b, int g, int s, int r0, int n) {
  const int d = w.trace->model.d_out, d_in = w.trace->d_in, ld = w.qkvLd();
  float* rows = w.qkvBlock(b, g) + static_cast<std::size_t>(r0) * ld;
  const float* x = w.xOf(b).data() + static_cast<std::size_t>(r0) * d_in;
  if (w.packed != nullptr) {
    w.packed->qkv[g].apply(s, n, x, d_in, rows, ld, w.qkvColumns());
    return;
  }
  const Parameters& p = *w.trace->parameters;  // (a given module held packed alone has none: packed above)
  int part = 0;
  for (const Linear* l : {&p.query[g], &p.key[g], &p.value[g]}) {
    float* y = rows + part++ * d;
    gemmABt(n, d, d_in, x, d_in, l->weight.data(), d_in, 0.0f, y, ld);
    if (l->bias.size() > 0) Block(y, n, d, Stride(ld)).rowwise() += l->bias;
  }
}

// Attention rows [r0, r0+n) of batch element b, head h by the reference's block (attentionForward,
// attention_reference.h): the scores and weights rows (and the keep mask, with dropout) go to
// `maps` at row o (the whole head when it is traced, o = r0; a row-block scratch otherwise,
// o = 0), the context rows to `context` (T × w). The keep bits of the rows become `maps`' dropout
// mask rows first, which the block reads.
void attendRowsReference(Work& w, int b, int h, int r0, int n, HeadTrace& maps, int o, Matrix& context) {
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
      for (int j = 0; j < T; ++j)
        maps.dropout_mask(o + i - r0, j) = w.keep(keep0 + static_cast<std::size_t>(i) * T + j);
  }
  if (!attentionForward(t.model, t.scale_divisor, t.dropout_scale, Q, K, V, r0, n, maps, o, context)) w.overflow = true;
}

// The traced rows on the fast path: the stored stages of the reference's attentionForward (scores,
// weights, the keep mask), with row-wise vector operations (Eigen's exp, vectorized sums) instead
// of scalar loops, and P·V over the unmasked keys only. Softmax normalization only (the fast path's
// condition). The products are the fused kernel's micro-kernels (tile_kernels.h), whose every
// result is one fixed sum of its row's own numbers: a row gets the same bits whatever T and its
// block (a general GEMM's edge columns sum in another order), so a trained model's pass that takes
// an edited text's first rows from the last one agrees with a pass of every row (lm/gpt_forward.h).
// Tested against the reference (unit.fused, unit.reference_forward).
void attendRowsTraced(Work& w, int b, int h, int r0, int n, HeadTrace& head) {
  const Trace& t = *w.trace;
  const int T = t.tokens, hw = t.head_width;
  const bool causal = t.model.causal, scaled = t.model.scale == Scale::SqrtDk;
  const bool dropout = w.keep.words != nullptr;
  const TileRows rows_of(w, b, h, r0, n);
  const HeadInputs& in = rows_of.in;
  const TileKernels& kernels = rows_of.kernels;
  const ConstBlock Q = in.Q(T, hw), K = in.K(T, hw), V = in.V(T, hw);
  head.queries.middleRows(r0, n) = Q.middleRows(r0, n);
  head.keys.middleRows(r0, n) = K.middleRows(r0, n);
  head.values.middleRows(r0, n) = V.middleRows(r0, n);
  thread_local AlignedFloats k_buf, v_buf, acc_buf;
  // Every key's score, the masked ones too (the scores stage shows them).
  for (int j0 = 0; j0 < T; j0 += kKeyTile) {
    const int nk = std::min(kKeyTile, T - j0);
    rows_of.scores(w, b, h, j0, nk, head.scores.data() + static_cast<std::size_t>(r0) * T + j0, T, nk, k_buf);
  }

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
    // exp and the sum in the aligned row buffer: Eigen vectorizes from where a row's alignment lets
    // it, and its vector exp differs from its scalar one in the last bit, so in place in the
    // weights a row's bits would depend on T.
    sc.head(valid) = (sc.head(valid) - row_max).exp();
    const float inverse = static_cast<float>(1.0 / sc.head(valid).template cast<double>().sum());
    wt.head(valid) = sc.head(valid).transpose() * inverse;
    wt.tail(T - valid).setZero();
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
  // The rows' weights are 0 beyond their last unmasked key (the kernel's condition on P).
  const float* P = dropout ? dropped_buf.data() : head.weights.data() + static_cast<std::size_t>(r0) * T;
  acc_buf.assign(static_cast<std::size_t>(n) * hw, 0.0f);
  for (int j0 = 0; j0 < rows_of.key_end; j0 += kKeyTile) {
    const int nk = std::min(kKeyTile, rows_of.key_end - j0);
    const auto [v, ldv] = rows_of.tile(in.v, j0, nk, rows_of.copy_values, v_buf);
    kernels.accumulate(n, nk, hw, P + j0, T, v, ldv, acc_buf.data(), hw, rows_of.keyLimit(j0, nk));
  }
  head.context.middleRows(r0, n) = Eigen::Map<const Matrix>(acc_buf.data(), n, hw);
  if (!finite || !head.context.middleRows(r0, n).allFinite()) w.overflow = true;
}

// The fused kernel (flash attention): context rows [r0, r0+n) of head h of element b, written to
// `ctx` (row stride ldc), without ever holding a T × T map. Same maths as the reference's
// attentionForward with softmax normalization: per key tile of kKeyTile columns, S = Q Kᵀ, the
// causal mask on the tiles that cross the diagonal (tiles wholly above it are skipped, and inside a
// crossing tile the micro-kernels' register blocks above the diagonal too), an online softmax whose
// exponent holds the ÷ √d_k (p = 2^((s − m)·log₂e/√d_k) with m the running max of the raw scores,
// and the sum l; earlier partial sums are rescaled by 2^((m_old − m_new)·log₂e/√d_k) when m grows),
// dropout from the keep bits (l counts every weight, P·V only the kept ones), then
// ctx = (Σ kept p·V) · (1/(1 − p)) / l. Shapes: Q n × w, K and V T × w, tiles n × kKeyTile. The
// products and the softmax rows are the micro-kernels of tile_kernels.h, chosen once per process
// for the CPU: a small head's products are too short for a GEMM's packing to pay.
void attendRowsFused(Work& w, int b, int h, int r0, int n, float* ctx, int ldc) {
  const TileRows rows_of(w, b, h, r0, n);
  const int T = rows_of.T, hw = rows_of.hw;
  const TileKernels& kernels = rows_of.kernels;

  // Per-thread buffers, reused across calls: no allocation once they have grown. The kernels' sums
  // run from each row's start with unaligned loads, so their order, hence the bits, does not
  // depend on where a thread's buffer lies; the alignment only spares split cache lines.
  thread_local AlignedFloats s_buf, acc_buf, k_buf, v_buf;
  thread_local std::vector<float> m_buf, l_buf;
  thread_local std::vector<SoftmaxRowResult> rows;
  s_buf.resize(static_cast<std::size_t>(n) * kKeyTile);
  rows.resize(n);
  acc_buf.assign(static_cast<std::size_t>(n) * hw, 0.0f);
  m_buf.assign(n, negInf());
  l_buf.assign(n, 0.0f);
  float* S = s_buf.data();
  float* acc = acc_buf.data();
  bool finite = true;

  for (int j0 = 0; j0 < rows_of.key_end; j0 += kKeyTile) {
    const int nk = std::min(kKeyTile, rows_of.key_end - j0), key_limit = rows_of.keyLimit(j0, nk);
    const auto [v, ldv] = rows_of.tile(rows_of.in.v, j0, nk, rows_of.copy_values, v_buf);
    rows_of.scores(w, b, h, j0, nk, S, kKeyTile, key_limit, k_buf);
    kernels.softmaxRows(S, kKeyTile, n, nk, key_limit, rows_of.log2_scale, m_buf.data(), w.keep.words,
                        rows_of.keep0 + static_cast<std::size_t>(r0) * T + j0, T, rows.data());
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
        const float correction = std::exp2((m_old - row.max) * rows_of.log2_scale);
        l_buf[r] = l_buf[r] * correction + row.sum;
        float* a = acc + static_cast<std::size_t>(r) * hw;
        for (int c = 0; c < hw; ++c) a[c] *= correction;
      }
    }
    kernels.accumulate(n, nk, hw, S, kKeyTile, v, ldv, acc, hw, key_limit);
  }
  for (int r = 0; r < n; ++r) {
    const float factor = rows_of.t.dropout_scale / l_buf[r];
    float* out = ctx + static_cast<std::size_t>(r) * ldc;
    const float* a = acc + static_cast<std::size_t>(r) * hw;
    for (int c = 0; c < hw; ++c) out[c] = a[c] * factor;
    if (!allFinite(out, hw)) finite = false;
  }
  if (!finite) w.overflow = true;
}

// The streamed rows (a head that keeps no maps but hands its weights to a sink): the fused
// kernel's micro-kernels on one block of whole rows instead of an online softmax. Per key tile,
// S = Q·Kᵀ over the rows' unmasked keys into a per-thread block of n × keys; each row's max m over
// its unmasked keys, and s − m kept aside for the entropy; per tile the softmax step with m as the
// running max, so p = 2^((s − m)·log₂e/√d_k) with no rescaling and l = Σ p tile by tile; the
// masked keys set to 0; the weights α = p · (1/l) (l in double) and each row's entropy
// ln l + Σ α·(m − s)/√d_k (WeightRows::entropy: −Σ α ln α without a logarithm per weight, and
// both terms ≥ 0, so nothing cancels); `sink` reads them; then the dropped ones 0 (dropout) and
// ctx = P·V · 1/(1 − p), P·V over the same tiles as the fused kernel. Shapes: Q n × w, K and V
// T × w, the blocks n × keys.
void attendRowsStreamed(Work& w, int b, int h, int r0, int n, float* ctx, int ldc,
                        const std::function<void(const WeightRows&)>& sink) {
  const TileRows rows_of(w, b, h, r0, n);
  const int T = rows_of.T, hw = rows_of.hw, keys = rows_of.key_end;
  const TileKernels& kernels = rows_of.kernels;
  const int lds = (keys + 15) / 16 * 16;                                         // whole cache lines per row
  const auto unmasked = [&](int r) { return rows_of.causal ? r0 + r + 1 : T; };  // row r's unmasked keys

  thread_local AlignedFloats p_buf, d_buf, acc_buf, k_buf, v_buf;
  thread_local std::vector<float> m_buf;
  thread_local std::vector<double> l_buf, entropy_buf;
  thread_local std::vector<SoftmaxRowResult> rows;
  p_buf.resize(static_cast<std::size_t>(n) * lds);
  d_buf.resize(static_cast<std::size_t>(n) * lds);
  entropy_buf.resize(n);
  acc_buf.assign(static_cast<std::size_t>(n) * hw, 0.0f);
  m_buf.resize(n);
  l_buf.assign(n, 0.0);
  rows.resize(n);
  float* P = p_buf.data();
  const auto row = [&](int r) { return P + static_cast<std::size_t>(r) * lds; };
  const auto fail = [&] { w.overflow = true; };

  for (int j0 = 0; j0 < keys; j0 += kKeyTile) {
    const int nk = std::min(kKeyTile, keys - j0);
    rows_of.scores(w, b, h, j0, nk, P + j0, lds, rows_of.keyLimit(j0, nk), k_buf);
  }
  bool finite = true;
  for (int r = 0; r < n; ++r) {
    const Eigen::Map<const Eigen::ArrayXf> s(row(r), unmasked(r));
    m_buf[r] = s.maxCoeff();
    if (!std::isfinite(m_buf[r])) finite = false;  // ±∞ or NaN among the scores
    Eigen::Map<Eigen::ArrayXf>(d_buf.data() + static_cast<std::size_t>(r) * lds, unmasked(r)) = m_buf[r] - s;
  }
  if (!finite) return fail();
  for (int j0 = 0; j0 < keys; j0 += kKeyTile) {
    const int nk = std::min(kKeyTile, keys - j0), key_limit = rows_of.keyLimit(j0, nk);
    kernels.softmaxRows(P + j0, lds, n, nk, key_limit, rows_of.log2_scale, m_buf.data(), nullptr, 0, 0, rows.data());
    for (int r = 0; r < n; ++r)
      if (r + key_limit > 0) {
        l_buf[r] += rows[r].sum;
        if (!rows[r].finite) finite = false;
      }
  }
  if (!finite) return fail();
  for (int r = 0; r < n; ++r) {
    float* p = row(r);
    const int valid = unmasked(r);
    std::fill(p + valid, p + keys, 0.0f);
    Eigen::Map<Eigen::ArrayXf> alpha(p, valid);
    alpha *= static_cast<float>(1.0 / l_buf[r]);
    const Eigen::Map<const Eigen::ArrayXf> below_max(d_buf.data() + static_cast<std::size_t>(r) * lds, valid);
    entropy_buf[r] = std::log(l_buf[r]) + static_cast<double>((alpha * below_max).sum()) / rows_of.t.scale_divisor;
  }
  sink(WeightRows{b, h, r0, n, keys, P, lds, entropy_buf.data()});
  if (ctx == nullptr) return;  // the weights alone (TraceRequest::weights_before_first_row)
  if (w.keep.words != nullptr)
    for (int r = 0; r < n; ++r) {
      float* p = row(r);
      const std::size_t row_keep = rows_of.keep0 + static_cast<std::size_t>(r0 + r) * T;
      for (int j = 0; j < unmasked(r); ++j)
        if (!w.keep(row_keep + j)) p[j] = 0.0f;
    }
  float* acc = acc_buf.data();
  for (int j0 = 0; j0 < keys; j0 += kKeyTile) {
    const int nk = std::min(kKeyTile, keys - j0);
    const auto [v, ldv] = rows_of.tile(rows_of.in.v, j0, nk, rows_of.copy_values, v_buf);
    kernels.accumulate(n, nk, hw, P + j0, lds, v, ldv, acc, hw, rows_of.keyLimit(j0, nk));
  }
  for (int r = 0; r < n; ++r) {
    float* out = ctx + static_cast<std::size_t>(r) * ldc;
    const float* a = acc + static_cast<std::size_t>(r) * hw;
    for (int c = 0; c < hw; ++c) out[c] = a[c] * rows_of.t.dropout_scale;
    if (!allFinite(out, hw)) fail();
  }
}

// Sizes a head's matrices: `rows` rows of the T × T maps (T for a traced head, a row block for
// scratch), the keep mask only with dropout, and T × w for Q, K, V (traced only).
void allocateHead(HeadTrace& h, int rows, int T, int hw, bool traced, bool dropout, bool tril) {
  if (traced)
    for (Matrix* m : {&h.queries, &h.keys, &h.values}) m->resize(T, hw);
  h.scores.resize(rows, T);
  h.weights.resize(rows, T);
  h.unmasked_weights.resize(traced && tril ? rows : 0, traced && tril ? T : 0);
  h.dropout_mask.resize(dropout ? rows : 0, dropout ? T : 0);
}

// Output rows: out_proj(context) for multihead (slice s of its outputs on the packed product, the
// whole of them otherwise), the context for the others (slice 0).
void outputRows(Work& w, int b, int r0, int n, int s, bool fast) {
  Trace& t = *w.trace;
  BatchTrace& bt = t.batches[b];
  const int out_w = static_cast<int>(bt.output.cols()), ctx_w = static_cast<int>(bt.context.cols());
  const float* context = bt.context.data() + static_cast<std::size_t>(r0) * ctx_w;
  float* output = bt.output.data() + static_cast<std::size_t>(r0) * out_w;
  if (!hasOutProj(t.model.variant)) {
    bt.output.middleRows(r0, n) = bt.context.middleRows(r0, n);
  } else if (fast && w.packed != nullptr) {
    if (!w.packed->out_proj.apply(s, n, context, ctx_w, output, out_w)) w.overflow = true;
    return;
  } else if (fast) {
    const Linear& l = t.parameters->out_proj;
    gemmABt(n, out_w, ctx_w, context, ctx_w, l.weight.data(), ctx_w, 0.0f, output, out_w);
    bt.output.middleRows(r0, n).rowwise() += l.bias;
  } else {
    linearForward(bt.context, t.parameters->out_proj, r0, n,
                  Block(bt.output.data(), bt.output.rows(), out_w, Stride(out_w)));
  }
  if (!allFinite(output, static_cast<std::size_t>(n) * out_w)) w.overflow = true;
}

int outputSlices(const Work& w, bool fast) {
  return fast && w.packed != nullptr && hasOutProj(w.trace->model.variant) ? w.packed->out_proj.count() : 1;
}

int projectionSlices(const Work& w, bool fast) { return fast && w.packed != nullptr ? w.packed->qkv[0].count() : 1; }

}  // namespace attnscope::pass

namespace attnscope {

std::shared_ptr<const Parameters> PackedModule::unpacked(const ModelConfig& m) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (std::shared_ptr<const Parameters> held = unpacked_.lock()) return held;
  auto p = std::make_shared<Parameters>();
  // Rows [o0, o0 + rows) of a layer, as a Linear of its own.
  const auto unpack = [](const SlicedLinear& s, int o0, int rows, bool biased) {
    Linear l{Matrix(rows, s.slices.front().packed.inputs()), biased ? RowVector(rows) : RowVector()};
    s.unpack(o0, o0 + rows, l.weight.data(), static_cast<int>(l.weight.cols()), biased ? l.bias.data() : nullptr);
    return l;
  };
  for (const SlicedLinear& group : qkv) {  // [W_query; W_key; W_value] stacked (packStacked)
    const int width = group.outputs / 3;
    p->query.push_back(unpack(group, 0, width, m.qkv_bias));
    p->key.push_back(unpack(group, width, width, m.qkv_bias));
    p->value.push_back(unpack(group, 2 * width, width, m.qkv_bias));
  }
  if (!out_proj.slices.empty()) p->out_proj = unpack(out_proj, 0, out_proj.outputs, true);
  unpacked_ = p;
  return p;
}

std::shared_ptr<const PackedModule> packModule(const Parameters& p, const ModelConfig& m) {
  auto packed = std::make_shared<PackedModule>();
  for (std::size_t g = 0; g < p.query.size(); ++g) {
    const int d_in = static_cast<int>(p.query[g].weight.cols());
    packed->qkv.push_back(pass::packStacked({&p.query[g], &p.key[g], &p.value[g]}, headWidth(m, d_in)));
  }
  if (hasOutProj(m.variant)) {
    const Linear& o = p.out_proj;
    packed->out_proj = packSliced(o.weight.data(), static_cast<int>(o.weight.rows()), static_cast<int>(o.weight.cols()),
                                  static_cast<int>(o.weight.cols()), o.bias.size() > 0 ? o.bias.data() : nullptr);
  }
  return packed;
}

std::shared_ptr<const PackedModule> packModule(const WeightView& qkv, const float* qkv_bias, const WeightView& out_proj,
                                               const float* out_bias, const ModelConfig& m) {
  auto packed = std::make_shared<PackedModule>();
  packed->qkv.push_back(pass::packStacked(qkv, qkv_bias, headWidth(m, qkv.in)));
  packed->out_proj = packSliced(out_proj, out_bias);
  return packed;
}

}  // namespace attnscope
