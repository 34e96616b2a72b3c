// The reference forward pass, written to be read top to bottom as llm.c's train_gpt2.c is: one
// function per step of the seed classes' forward, loops over single elements, no tasks, no shared
// scratch. What it computes is docs/DESIGN.md §2.1 (the variants), §2.2 (parameters and dropout
// masks drawn as torch draws them) and §2.3 (the stages a head keeps, in the seed classes' order).
// The engine's reference path runs the blocks below on its threads (attention_reference.h), and
// the fast path is tested against this file.
//
// Shapes (every comment below uses them):
//   B      batch elements: the inputs stacked batch_size times
//   T      tokens (rows of the inputs; query rows i and key columns j of a T × T map)
//   d_in   input width (columns of the embeddings X)
//   d_out  projection width: per head for the wrapper, of all heads together for multihead
//   H      heads; w the width of one (d_out / H for multihead, d_out for the other variants with
//          projections, d_in for simple, which attends with X itself)
//   G      projection groups: H for the wrapper (each head is a CausalAttention module of its own),
//          else 1 (multihead splits one projection into its H heads)
//
// The matrix products are Eigen expressions over blocks of kReferenceRowBlock query rows: Eigen
// picks a product's kernel (and with it the order of its sums) from the product's shape, so the
// blocks are part of what is computed (attention_reference.h). Everything else is plain loops, in
// the order the engine's reference path computes it, and gives the same bits
// (unit.reference_forward).
#include "engine/attention_reference.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "engine/errors.h"
#include "engine/torch_generator.h"

namespace attnscope {

namespace {

// MKL's MCG31m1 generator: x ← a·x mod (2³¹ − 1) (DESIGN.md §2.2 "Two dropout streams").
constexpr std::uint64_t kMcg31Multiplier = 1132489760u;

float negInf() { return -std::numeric_limits<float>::infinity(); }

// Columns [c0, c0 + w) of m (T × any): a T × w view.
ConstRows columns(const Matrix& m, int c0, int w) {
  return ConstRows(m.data() + c0, m.rows(), w, Eigen::OuterStride<>(m.cols()));
}

// One call of nn.Dropout(p) in training mode over keep.size() elements, in row-major order:
// keep[e] = 1 if element e survives. p ≥ 1: nothing survives and nothing is drawn (torch returns
// zeros). Torch's own stream ("default"): one 64-bit draw per element, kept iff its 53-bit uniform
// u < 1 − p (bernoulli_(1 − p)). MKL's ("mkl"): one 32-bit draw seeds an MCG31m1 stream x₀, x₁, …
// and element e is kept iff xₑ < mklKeepBelow(p), MKL's single-precision compare.
void dropoutCall(double p, DropoutStream stream, TorchGenerator& generator, std::vector<std::uint8_t>& keep) {
  if (p >= 1) {
    std::fill(keep.begin(), keep.end(), 0);
    return;
  }
  if (stream == DropoutStream::Default) {
    for (std::uint8_t& k : keep) k = generator.uniformDouble(0.0, 1.0) < 1.0 - p;
    return;
  }
  std::uint64_t x = generator.random() % TorchGenerator::kMklModulus;
  if (x == 0) x = 1;
  const std::uint32_t keep_below = TorchGenerator::mklKeepBelow(p);
  for (std::uint8_t& k : keep) {
    k = x < keep_below;
    x = x * kMcg31Multiplier % TorchGenerator::kMklModulus;
  }
}

// The dropout masks of every element and head: batches[b].heads[h].dropout_mask, T × T each
// (1 = kept), sized already. CausalAttention and MultiHeadAttention call dropout once on their
// (B, H, T, T) weights (H = 1 for causal); the wrapper's heads call it on their own (B, T, T)
// weights, head after head.
void drawDropoutMasks(const ModelConfig& m, int T, TorchGenerator& generator, std::vector<BatchTrace>& batches) {
  const int B = m.batch_size, H = headCount(m);
  const std::size_t TT = static_cast<std::size_t>(T) * T;
  const bool per_head = m.variant == Variant::MultiHeadWrapper;
  const int calls = per_head ? H : 1;
  std::vector<std::uint8_t> keep(B * TT * (per_head ? 1 : H));
  for (int call = 0; call < calls; ++call) {
    dropoutCall(m.dropout, m.dropout_rng, generator, keep);
    for (std::size_t e = 0; e < keep.size(); ++e) {
      const int b = static_cast<int>(per_head ? e / TT : e / (H * TT));
      const int h = per_head ? call : static_cast<int>(e / TT % H);
      const std::size_t ij = e % TT;
      batches[b].heads[h].dropout_mask(ij / T, ij % T) = keep[e];
    }
  }
}

// One projection: x (T × d_in) → y = x Wᵀ + b (T × d_out), a block of rows at a time.
Matrix projectionForward(const Matrix& x, const Linear& layer) {
  const int T = static_cast<int>(x.rows()), out = static_cast<int>(layer.weight.rows());
  Matrix y(T, out);
  for (int r0 = 0; r0 < T; r0 += kReferenceRowBlock)
    linearForward(x, layer, r0, std::min(kReferenceRowBlock, T - r0),
                  Rows(y.data(), T, out, Eigen::OuterStride<>(out)));
  return y;
}

// The weights of query row i from its raw scores (T each, in `scores`): masked = −∞ above the
// diagonal (causal, on the −∞ route), scaled = masked ÷ √d_k, then weights = softmax(scaled) —
// the row's max subtracted before exp, the sum in double, × float(1/sum), masked keys exactly 0 —
// or, for 'simple' with normalization "sum", scaled ÷ float(Σ scaled, summed in double). On the
// tril route the softmax runs over every key; that row goes to `unmasked` (T floats, or null when
// not kept), is multiplied by tril (keys j ≤ i) and divided by its sum (in double, rounded to
// float). Returns false if a scaled score is not finite, or a row sum is 0 or not finite.
bool weightsRow(const ModelConfig& m, float scale_divisor, int T, int i, const float* scores, float* weights,
                float* unmasked) {
  const bool tril = trilRoute(m);
  std::vector<float> scaled(T);
  std::vector<char> masked(T);
  bool finite = true;
  float row_max = negInf();
  for (int j = 0; j < T; ++j) {
    masked[j] = m.causal && !tril && j > i;  // the tril route masks the weights instead
    const float s = masked[j] ? negInf() : scores[j];
    scaled[j] = m.scale == Scale::SqrtDk ? s / scale_divisor : s;
    finite = finite && (masked[j] || std::isfinite(scaled[j]));
    if (!masked[j]) row_max = std::max(row_max, scaled[j]);
  }
  if (m.normalization == Normalization::Sum) {  // simple's "÷ row sum" alternative
    double sum = 0;
    for (int j = 0; j < T; ++j) sum += scaled[j];
    const float fsum = static_cast<float>(sum);
    for (int j = 0; j < T; ++j) weights[j] = scaled[j] / fsum;
    return finite && fsum != 0.0f && std::isfinite(fsum);
  }
  double sum = 0;
  for (int j = 0; j < T; ++j) {
    weights[j] = masked[j] ? 0.0f : std::exp(scaled[j] - row_max);
    sum += weights[j];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int j = 0; j < T; ++j) weights[j] *= inv;
  if (!tril) return finite;
  // masked_simple = weights × tril; masked_simple / masked_simple.sum(dim=-1) (cells [26]–[28])
  if (unmasked != nullptr) std::copy(weights, weights + T, unmasked);
  double kept = 0;
  for (int j = 0; j <= i; ++j) kept += weights[j];
  const float row_sum = static_cast<float>(kept);
  for (int j = 0; j < T; ++j) weights[j] = j <= i ? weights[j] / row_sum : 0.0f;
  return finite && row_sum > 0.0f;
}

// Dropout on one row of weights (T): dropped = weights × 1/(1 − p) where `keep` (T flags) says
// kept, else 0; without dropout (keep null) the weights themselves.
void dropoutRow(int T, const float* weights, const std::uint8_t* keep, float dropout_scale, float* dropped) {
  for (int j = 0; j < T; ++j) dropped[j] = keep == nullptr ? weights[j] : keep[j] ? weights[j] * dropout_scale : 0.0f;
}

// One head of one batch element, every stage: Q, K, V (T × w) → head (queries, keys, values T × w;
// scores, weights, unmasked weights on the tril route, T × T; context T × w). Its dropout mask
// (T × T, 1 = kept) is drawn already, or empty. Returns false on an overflow.
bool headForward(const ModelConfig& m, const Trace& t, const ConstRows& Q, const ConstRows& K, const ConstRows& V,
                 HeadTrace& head) {
  const int T = t.tokens, w = t.head_width;
  head.queries = Q;
  head.keys = K;
  head.values = V;
  head.scores.resize(T, T);
  head.weights.resize(T, T);
  if (trilRoute(m)) head.unmasked_weights.resize(T, T);
  head.context.resize(T, w);
  bool finite = true;
  for (int r0 = 0; r0 < T; r0 += kReferenceRowBlock)
    if (!attentionForward(m, t.scale_divisor, t.dropout_scale, Q, K, V, r0, std::min(kReferenceRowBlock, T - r0), head,
                          r0, head.context))
      finite = false;
  return finite;
}

}  // namespace

void checkForwardInputs(const Matrix& x, const ModelConfig& m, const Limits& limits) {
  const int T = static_cast<int>(x.rows()), d_in = static_cast<int>(x.cols());
  if (T < 1 || d_in < 1) throw InputError("embeddings: need at least one token and one column");
  validateModel(m, T, d_in, limits);
  if (!allFinite(x.data(), static_cast<std::size_t>(x.size())))
    throw InputError("embeddings: every value must be a finite number");
}

void throwOverflow() {
  throw ComputeError(
      "the scores or outputs overflow float32 (or a row sums to 0 with sum normalization): "
      "use smaller embedding values");
}

void linearForward(const Matrix& x, const Linear& layer, int r0, int n, Rows y) {
  y.middleRows(r0, n).noalias() = x.middleRows(r0, n) * layer.weight.transpose();
  if (layer.bias.size() > 0) y.middleRows(r0, n).rowwise() += layer.bias;
}

bool attentionForward(const ModelConfig& m, float scale_divisor, float dropout_scale, const ConstRows& Q,
                      const ConstRows& K, const ConstRows& V, int r0, int n, HeadTrace& maps, int o, Matrix& context) {
  const int T = static_cast<int>(K.rows());
  const bool dropout = maps.dropout_mask.size() > 0;
  // scores = Q Kᵀ (n × T)
  maps.scores.middleRows(o, n).noalias() = Q.middleRows(r0, n) * K.transpose();
  // weights and dropped weights, row by row (n × T)
  Matrix dropped(n, T);
  bool finite = true;
  for (int i = r0, oi = o; i < r0 + n; ++i, ++oi) {
    float* unmasked = maps.unmasked_weights.rows() > 0 ? &maps.unmasked_weights(oi, 0) : nullptr;
    if (!weightsRow(m, scale_divisor, T, i, &maps.scores(oi, 0), &maps.weights(oi, 0), unmasked)) finite = false;
    dropoutRow(T, &maps.weights(oi, 0), dropout ? &maps.dropout_mask(oi, 0) : nullptr, dropout_scale,
               &dropped(i - r0, 0));
  }
  // context = dropped weights · V (n × w)
  context.middleRows(r0, n).noalias() = dropped * V;
  return finite && context.middleRows(r0, n).allFinite();
}

Trace referenceForward(const Matrix& x, const ModelConfig& m, const Limits& limits) {
  checkForwardInputs(x, m, limits);
  const int T = static_cast<int>(x.rows()), d_in = static_cast<int>(x.cols());
  const int B = m.batch_size, H = headCount(m), w = headWidth(m, d_in);
  Trace t;
  t.model = m;
  t.tokens = T;
  t.d_in = d_in;
  t.heads = H;
  t.head_width = w;
  t.scale_divisor = m.scale == Scale::SqrtDk ? static_cast<float>(std::sqrt(w)) : 1.0f;
  t.dropout_active = hasDropout(m.variant) && m.training && m.dropout > 0;
  if (t.dropout_active) t.dropout_scale = TorchGenerator::dropoutScale(m.dropout);

  // torch.manual_seed(seed), the draws of earlier cells, then the module's constructor draws its
  // parameters; the user's own values replace theirs (load_state_dict: nothing drawn).
  TorchGenerator generator(m.seed);
  generator.discard(static_cast<std::uint64_t>(m.draws_before));
  Parameters parameters = initParameters(m, d_in, generator);
  applyParameterValues(m, d_in, parameters);
  t.parameters = std::make_shared<const Parameters>(std::move(parameters));
  const Parameters& p = *t.parameters;

  // The forward's dropout draws follow (or follow torch.manual_seed(dropout_seed)).
  t.batches.resize(B);
  for (BatchTrace& bt : t.batches) {
    bt.heads.resize(H);
    for (int h = 0; h < H; ++h) {
      bt.heads[h].index = h;
      if (t.dropout_active) bt.heads[h].dropout_mask.resize(T, T);
    }
  }
  if (m.dropout_seed) generator = TorchGenerator(*m.dropout_seed);
  if (t.dropout_active) drawDropoutMasks(m, T, generator, t.batches);

  // Q, K, V of each group (T × d_out): the same for every batch element, whose inputs are all X.
  const int G = m.variant == Variant::MultiHeadWrapper ? H : 1;
  std::vector<Matrix> queries, keys, values;
  if (hasProjections(m.variant))
    for (int g = 0; g < G; ++g) {
      queries.push_back(projectionForward(x, p.query[g]));
      keys.push_back(projectionForward(x, p.key[g]));
      values.push_back(projectionForward(x, p.value[g]));
    }

  bool finite = true;
  for (int b = 0; b < B; ++b) {
    BatchTrace& bt = t.batches[b];
    for (int h = 0; h < H; ++h) {
      if (!hasProjections(m.variant)) {  // 'simple' attends with the inputs: Q = K = V = X
        const ConstRows X = columns(x, 0, d_in);
        if (!headForward(m, t, X, X, X, bt.heads[h])) finite = false;
        continue;
      }
      // The wrapper's head h is a group of its own (all d_out columns); multihead's head h is
      // columns [h·w, (h+1)·w) of the one group.
      const int g = G > 1 ? h : 0, c0 = G > 1 ? 0 : h * w;
      if (!headForward(m, t, columns(queries[g], c0, w), columns(keys[g], c0, w), columns(values[g], c0, w),
                       bt.heads[h]))
        finite = false;
    }
    // context = the heads side by side (T × H·w); output (T × d_out) = out_proj(context) for
    // multihead, else the context.
    bt.context.resize(T, H * w);
    for (int h = 0; h < H; ++h) bt.context.middleCols(h * w, w) = bt.heads[h].context;
    if (hasOutProj(m.variant)) {
      bt.output.resize(T, m.d_out);
      for (int r0 = 0; r0 < T; r0 += kReferenceRowBlock)
        linearForward(bt.context, p.out_proj, r0, std::min(kReferenceRowBlock, T - r0),
                      Rows(bt.output.data(), T, m.d_out, Eigen::OuterStride<>(m.d_out)));
    } else {
      bt.output = bt.context;
    }
    if (!allFinite(bt.output.data(), static_cast<std::size_t>(bt.output.size()))) finite = false;
  }
  if (!finite) throwOverflow();
  return t;
}

}  // namespace attnscope
