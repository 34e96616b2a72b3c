// The trained GPT's layout, initialization, forward pass with its caches, and backward pass
// (learn/train_model.h). Shapes as there: N = B·T rows, d, H heads of width w, F = 4d, V.
#include "learn/train_model.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "engine/errors.h"
#include "engine/thread_team.h"
#include "formats/atomic_file.h"
#include "formats/export.h"
#include "formats/torch_save.h"
#include "formats/zip_archive.h"

namespace attnscope {

// [SECTION] Layout and initialization ------------------------------------------------------------

TrainModel::TrainModel(const TrainTask& task)
    : layers(task.layers),
      heads(task.heads),
      d(task.d_model),
      head_width(task.d_model / task.heads),
      context(task.seq_len),
      vocab(task.vocab),
      mlp(task.mlp),
      qkv_bias(task.qkv_bias) {
  auto add = [&](const std::string& name, std::vector<int> shape) {
    ParamTensor t;
    t.name = name;
    t.shape = std::move(shape);
    t.offset = values.size();
    t.size = 1;
    for (int n : t.shape) t.size *= static_cast<std::size_t>(n);
    values.resize(values.size() + t.size);
    tensors.push_back(t);
    return static_cast<int>(tensors.size()) - 1;
  };
  tok_emb = add("tok_emb.weight", {vocab, d});
  pos_emb = add("pos_emb.weight", {context, d});
  for (int l = 0; l < layers; ++l) {
    const std::string p = "trf_blocks." + std::to_string(l) + ".";
    Block b{};
    b.wq = add(p + "att.W_query.weight", {d, d});
    b.bq = qkv_bias ? add(p + "att.W_query.bias", {d}) : -1;
    b.wk = add(p + "att.W_key.weight", {d, d});
    b.bk = qkv_bias ? add(p + "att.W_key.bias", {d}) : -1;
    b.wv = add(p + "att.W_value.weight", {d, d});
    b.bv = qkv_bias ? add(p + "att.W_value.bias", {d}) : -1;
    b.wo = add(p + "att.out_proj.weight", {d, d});
    b.bo = add(p + "att.out_proj.bias", {d});
    b.w1 = b.b1 = b.w2 = b.b2 = b.norm2_scale = b.norm2_shift = -1;
    if (mlp) {
      b.w1 = add(p + "ff.layers.0.weight", {4 * d, d});
      b.b1 = add(p + "ff.layers.0.bias", {4 * d});
      b.w2 = add(p + "ff.layers.2.weight", {d, 4 * d});
      b.b2 = add(p + "ff.layers.2.bias", {d});
    }
    b.norm1_scale = add(p + "norm1.scale", {d});
    b.norm1_shift = add(p + "norm1.shift", {d});
    if (mlp) {
      b.norm2_scale = add(p + "norm2.scale", {d});
      b.norm2_shift = add(p + "norm2.shift", {d});
    }
    blocks.push_back(b);
  }
  final_scale = add("final_norm.scale", {d});
  final_shift = add("final_norm.shift", {d});
  out_head = add("out_head.weight", {vocab, d});
}

void TrainModel::initialize(TorchGenerator& g) {
  auto ends = [](const std::string& s, const char* tail) {
    const std::string t(tail);
    return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
  };
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const ParamTensor& t = tensors[i];
    float* v = values.data() + t.offset;
    if (t.name == "tok_emb.weight" || t.name == "pos_emb.weight") {
      g.fillNormal(v, t.size, 0, 1);
    } else if (ends(t.name, ".scale")) {
      std::fill(v, v + t.size, 1.0f);
    } else if (ends(t.name, ".shift")) {
      std::fill(v, v + t.size, 0.0f);
    } else if (ends(t.name, ".weight")) {
      g.fillLinearWeight(v, static_cast<std::size_t>(t.shape[0]), static_cast<std::size_t>(t.shape[1]));
    } else {  // a Linear's bias, right after its weight
      const ParamTensor& w = tensors[i - 1];
      g.fillLinearBias(v, t.size, static_cast<std::size_t>(w.shape[1]));
    }
  }
}

Eigen::Map<Matrix> TrainModel::view(std::vector<float>& buffer, int i) const {
  const ParamTensor& t = tensors[static_cast<std::size_t>(i)];
  const int rows = t.shape.size() == 2 ? t.shape[0] : 1;
  return {buffer.data() + t.offset, rows, t.shape.back()};
}

Eigen::Map<const Matrix> TrainModel::view(const std::vector<float>& buffer, int i) const {
  const ParamTensor& t = tensors[static_cast<std::size_t>(i)];
  const int rows = t.shape.size() == 2 ? t.shape[0] : 1;
  return {buffer.data() + t.offset, rows, t.shape.back()};
}

namespace {

using ConstMap = Eigen::Map<const Matrix>;

// [SECTION] Stages: forward and backward ----------------------------------------------------------

// Σ term(c) for c < n in double: eight running sums, then those in order — a fixed order (the same
// bits every run) that the compiler can turn into vector adds, which one running sum is not.
template <class Term>
double laneSum(int n, Term term) {
  double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int c = 0;
  for (; c + 8 <= n; c += 8)
    for (int k = 0; k < 8; ++k) lanes[k] += term(c + k);
  double sum = 0;
  for (double lane : lanes) sum += lane;
  for (; c < n; ++c) sum += term(c);
  return sum;
}

// LayerNorm (the book's: biased variance, eps 1e-5), N × d. Keeps x̂ and 1/σ for the backward.
void layerNorm(const Matrix& x, ConstMap scale, ConstMap shift, Matrix& y, Matrix& xhat, Eigen::VectorXf& rstd) {
  const int N = static_cast<int>(x.rows()), d = static_cast<int>(x.cols());
  y.resize(N, d), xhat.resize(N, d), rstd.resize(N);
  for (int r = 0; r < N; ++r) {
    const float* row = x.row(r).data();
    const double mean = laneSum(d, [&](int c) { return double(row[c]); }) / d;
    const double var = laneSum(d, [&](int c) { return (row[c] - mean) * (row[c] - mean); }) / d;
    const float s = static_cast<float>(1.0 / std::sqrt(var + 1e-5));
    rstd(r) = s;
    xhat.row(r) = (x.row(r).array() - static_cast<float>(mean)) * s;
    y.row(r) = scale.row(0).array() * xhat.row(r).array() + shift.row(0).array();
  }
}

// dy → dx, and the scale's and shift's gradients: dx = (ĝ − mean ĝ − x̂ · mean(ĝ x̂)) / σ with
// ĝ = dy ⊙ scale.
void layerNormBackward(const Matrix& dy, const Matrix& xhat, const Eigen::VectorXf& rstd, ConstMap scale,
                       Eigen::Map<Matrix> dscale, Eigen::Map<Matrix> dshift, Matrix& dx) {
  const int N = static_cast<int>(dy.rows()), d = static_cast<int>(dy.cols());
  dx.resize(N, d);
  const float* sc = scale.data();
  for (int r = 0; r < N; ++r) {
    const float *g = dy.row(r).data(), *xh = xhat.row(r).data();
    const double mg = laneSum(d, [&](int c) { return double(g[c]) * sc[c]; }) / d;
    const double mgx = laneSum(d, [&](int c) { return double(g[c]) * sc[c] * xh[c]; }) / d;
    dscale.row(0).array() += dy.row(r).array() * xhat.row(r).array();
    dshift.row(0) += dy.row(r);
    float* out = dx.row(r).data();
    for (int c = 0; c < d; ++c) out[c] = static_cast<float>(rstd(r) * (double(g[c]) * sc[c] - mg - xh[c] * mgx));
  }
}

// y = x Wᵀ (+ b): torch's Linear, W out × in.
Matrix linear(const Matrix& x, ConstMap w, const float* b) {
  Matrix y(x.rows(), w.rows());
  y.noalias() = x * w.transpose();
  if (b)
    for (int r = 0; r < y.rows(); ++r)
      for (int c = 0; c < y.cols(); ++c) y(r, c) += b[c];
  return y;
}

// Linear's backward: dW += dyᵀ x, db += Σ dy, and dx = dy W (when asked).
void linearBackward(const Matrix& dy, const Matrix& x, ConstMap w, Eigen::Map<Matrix> dw, float* db, Matrix* dx) {
  dw.noalias() += dy.transpose() * x;
  if (db) {  // row after row, whole rows at a time (Eigen's colwise().sum() sums in an order that
             // depends on where the rows lie in memory: other bits from run to run)
    Eigen::RowVectorXf sum = Eigen::RowVectorXf::Zero(dy.cols());
    for (int r = 0; r < dy.rows(); ++r) sum += dy.row(r);
    Eigen::Map<Eigen::RowVectorXf>(db, dy.cols()) += sum;
  }
  if (dx) {
    dx->resize(dy.rows(), w.cols());
    dx->noalias() = dy * w;  // straight into dx (an assignment goes through a transposed temporary)
  }
}

// GELU, tanh form (the book's class): ½ x (1 + tanh(√(2/π) (x + 0.044715 x³))), and its derivative.
constexpr double kGeluC = 0.7978845608028654;  // √(2/π)
float gelu(float x) {
  const float u = static_cast<float>(kGeluC) * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + std::tanh(u));
}
float geluDerivative(float x) {
  const float u = static_cast<float>(kGeluC) * (x + 0.044715f * x * x * x);
  const float t = std::tanh(u);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * static_cast<float>(kGeluC) * (1.0f + 3 * 0.044715f * x * x);
}

// A dropout mask as torch draws it (one decision per element, row-major), scaled: 1/(1 − p) or 0.
Matrix dropoutMask(int rows, int cols, double p, TorchGenerator& g) {
  std::vector<std::uint8_t> keep(static_cast<std::size_t>(rows) * cols);
  g.fillDropoutKeep(keep.data(), keep.size(), p);
  Matrix m(rows, cols);
  const float scale = TorchGenerator::dropoutScale(p);
  for (std::size_t i = 0; i < keep.size(); ++i) m.data()[i] = keep[i] ? scale : 0.0f;
  return m;
}

// A training step's dropout masks, drawn before the forward in the order torch's forward draws
// them — drop_emb (N × d), then per block every (sequence, head)'s attention weights (T × T), the
// shortcut after attention and the one after the MLP (N × d) — so that parts of the batch can run
// apart and still use torch's masks.
struct DropoutMasks {
  Matrix emb;
  struct Block {
    std::vector<Matrix> weights;  // (e · H + h)
    Matrix shortcut1, shortcut2;
  };
  std::vector<Block> blocks;
};

DropoutMasks drawDropoutMasks(const TrainModel& m, int B, int T, double p, TorchGenerator& g) {
  const int N = B * T;
  DropoutMasks masks;
  masks.emb = dropoutMask(N, m.d, p, g);
  masks.blocks.resize(static_cast<std::size_t>(m.layers));
  for (DropoutMasks::Block& b : masks.blocks) {
    for (int i = 0; i < B * m.heads; ++i) b.weights.push_back(dropoutMask(T, T, p, g));
    b.shortcut1 = dropoutMask(N, m.d, p, g);
    if (m.mlp) b.shortcut2 = dropoutMask(N, m.d, p, g);
  }
  return masks;
}

// [SECTION] The forward pass with its caches ----------------------------------------------------------

// One part of a batch: its sequences [first, first + B) of T tokens, rows N = B·T.
struct BatchPart {
  const int* ids;                    // N
  int first, B, T;
  const DropoutMasks* masks;         // null: eval, or no dropout
  int N() const { return B * T; }
  // A mask of N × d rows, this part's rows of it.
  auto rowsOf(const Matrix& mask) const { return mask.middleRows(static_cast<Eigen::Index>(first) * T, N()); }
  const Matrix& weightMask(int l, int e, int h, int heads) const {
    return masks->blocks[static_cast<std::size_t>(l)].weights[static_cast<std::size_t>((first + e) * heads + h)];
  }
};

struct BlockCache {
  Matrix x_in, xhat1, h1, q, k, v, ctx, x_mid, xhat2, h2, f1, g;
  Eigen::VectorXf rstd1, rstd2;
  std::vector<Matrix> weights;  // per (b, h): T × T, after softmax
};

struct ForwardCache {
  Matrix x_final, xhat_f, hf, logits;
  Eigen::VectorXf rstd_f;
  std::vector<BlockCache> blocks;
};

void forward(const TrainModel& m, const BatchPart& part, ForwardCache& c) {
  const std::vector<float>& P = m.values;
  const DropoutMasks* drop = part.masks;
  const int N = part.N(), B = part.B, T = part.T, d = m.d, w = m.head_width;
  Matrix x(N, d);
  ConstMap tok = m.view(P, m.tok_emb), pos = m.view(P, m.pos_emb);
  for (int r = 0; r < N; ++r) x.row(r) = tok.row(part.ids[r]) + pos.row(r % T);
  if (drop) x = x.cwiseProduct(part.rowsOf(drop->emb));
  const float sqrt_w = std::sqrt(static_cast<float>(w));  // keys.shape[-1] ** 0.5
  c.blocks.assign(static_cast<std::size_t>(m.layers), {});
  for (int l = 0; l < m.layers; ++l) {
    const TrainModel::Block& b = m.blocks[static_cast<std::size_t>(l)];
    BlockCache& k = c.blocks[static_cast<std::size_t>(l)];
    k.x_in = x;
    layerNorm(x, m.view(P, b.norm1_scale), m.view(P, b.norm1_shift), k.h1, k.xhat1, k.rstd1);
    auto bias = [&](int i) { return i < 0 ? nullptr : P.data() + m.tensors[static_cast<std::size_t>(i)].offset; };
    k.q = linear(k.h1, m.view(P, b.wq), bias(b.bq));
    k.k = linear(k.h1, m.view(P, b.wk), bias(b.bk));
    k.v = linear(k.h1, m.view(P, b.wv), bias(b.bv));
    k.ctx = Matrix::Zero(N, d);
    k.weights.assign(static_cast<std::size_t>(B * m.heads), {});
    for (int e = 0; e < B; ++e)
      for (int h = 0; h < m.heads; ++h) {
        // scores = q kᵀ, masked above the diagonal, / √w, softmax over the keys
        const Matrix z = (k.q.block(e * T, h * w, T, w) * k.k.block(e * T, h * w, T, w).transpose()) / sqrt_w;
        Matrix a = Matrix::Zero(T, T);
        for (int i = 0; i < T; ++i) {
          const float top = z.row(i).head(i + 1).maxCoeff();
          double sum = 0;
          for (int j = 0; j <= i; ++j) sum += a(i, j) = std::exp(z(i, j) - top);
          for (int j = 0; j <= i; ++j) a(i, j) = static_cast<float>(a(i, j) / sum);
        }
        if (drop)
          k.ctx.block(e * T, h * w, T, w).noalias() = a.cwiseProduct(part.weightMask(l, e, h, m.heads)) * k.v.block(e * T, h * w, T, w);
        else
          k.ctx.block(e * T, h * w, T, w).noalias() = a * k.v.block(e * T, h * w, T, w);
        k.weights[static_cast<std::size_t>(e * m.heads + h)] = std::move(a);
      }
    Matrix o = linear(k.ctx, m.view(P, b.wo), bias(b.bo));
    if (drop) o = o.cwiseProduct(part.rowsOf(drop->blocks[static_cast<std::size_t>(l)].shortcut1));
    x = k.x_in + o;
    k.x_mid = x;
    if (m.mlp) {
      layerNorm(x, m.view(P, b.norm2_scale), m.view(P, b.norm2_shift), k.h2, k.xhat2, k.rstd2);
      k.f1 = linear(k.h2, m.view(P, b.w1), bias(b.b1));
      k.g = k.f1.unaryExpr([](float v) { return gelu(v); });
      Matrix f2 = linear(k.g, m.view(P, b.w2), bias(b.b2));
      if (drop) f2 = f2.cwiseProduct(part.rowsOf(drop->blocks[static_cast<std::size_t>(l)].shortcut2));
      x = k.x_mid + f2;
    }
  }
  c.x_final = x;
  layerNorm(x, m.view(P, m.final_scale), m.view(P, m.final_shift), c.hf, c.xhat_f, c.rstd_f);
  c.logits.resize(N, m.vocab);
  c.logits.noalias() = c.hf * m.view(P, m.out_head).transpose();
}

// [SECTION] Loss and gradients ---------------------------------------------------------------------

// One part's share of the loss — the sum over its scored targets of −log softmax, in double — and,
// when `G` is given, its gradients added into G (laid out as the values): the batch's mean is the
// sum over the parts divided by `scored`, the whole batch's count, so each part scales by it.
double partLossAndGradients(const TrainModel& m, const BatchPart& part, const int* targets, int scored,
                            std::vector<float>* gradients) {
  ForwardCache c;
  forward(m, part, c);
  const int N = part.N(), V = m.vocab, d = m.d, w = m.head_width, T = part.T;
  // Cross-entropy over the scored rows: log-softmax in double.
  Matrix dlogits = Matrix::Zero(N, V);
  double loss = 0;
  Eigen::RowVectorXf exps(V);
  for (int r = 0; r < N; ++r) {
    const int target = targets[r];
    if (target == kIgnored) continue;
    const float top = c.logits.row(r).maxCoeff();
    exps = (c.logits.row(r).array() - top).exp().matrix();  // float, as torch's log_softmax
    double sum = 0;
    for (int j = 0; j < V; ++j) sum += exps(j);
    loss += std::log(sum) + top - c.logits(r, target);
    dlogits.row(r) = (exps.cast<double>() / sum).cast<float>();
    dlogits(r, target) -= 1.0f;
  }
  if (!gradients) return loss;

  std::vector<float>& G = *gradients;
  const std::vector<float>& P = m.values;
  const DropoutMasks* drop = part.masks;
  dlogits /= static_cast<float>(scored);
  // out_head and the final LayerNorm
  m.view(G, m.out_head).noalias() += dlogits.transpose() * c.hf;
  Matrix dhf = dlogits * m.view(P, m.out_head);
  Matrix dx;
  layerNormBackward(dhf, c.xhat_f, c.rstd_f, m.view(P, m.final_scale), m.view(G, m.final_scale),
                    m.view(G, m.final_shift), dx);
  auto gbias = [&](int i) { return i < 0 ? nullptr : G.data() + m.tensors[static_cast<std::size_t>(i)].offset; };
  const float sqrt_w = std::sqrt(static_cast<float>(w));
  for (int l = m.layers - 1; l >= 0; --l) {
    const TrainModel::Block& b = m.blocks[static_cast<std::size_t>(l)];
    BlockCache& k = c.blocks[static_cast<std::size_t>(l)];
    // x_out = x_mid + drop(MLP(LN₂(x_mid)))
    if (m.mlp) {
      Matrix df2 = drop ? Matrix(dx.cwiseProduct(part.rowsOf(drop->blocks[static_cast<std::size_t>(l)].shortcut2))) : dx;
      Matrix dg;
      linearBackward(df2, k.g, m.view(P, b.w2), m.view(G, b.w2), gbias(b.b2), &dg);
      Matrix df1(dg.rows(), dg.cols());
      for (int i = 0; i < dg.size(); ++i) df1.data()[i] = dg.data()[i] * geluDerivative(k.f1.data()[i]);
      Matrix dh2, dmid;
      linearBackward(df1, k.h2, m.view(P, b.w1), m.view(G, b.w1), gbias(b.b1), &dh2);
      layerNormBackward(dh2, k.xhat2, k.rstd2, m.view(P, b.norm2_scale), m.view(G, b.norm2_scale),
                        m.view(G, b.norm2_shift), dmid);
      dx += dmid;
    }
    // x_mid = x_in + drop(out_proj(attention(LN₁(x_in))))
    Matrix dout = drop ? Matrix(dx.cwiseProduct(part.rowsOf(drop->blocks[static_cast<std::size_t>(l)].shortcut1))) : dx;
    Matrix dctx;
    linearBackward(dout, k.ctx, m.view(P, b.wo), m.view(G, b.wo), gbias(b.bo), &dctx);
    Matrix dq = Matrix::Zero(N, d), dk = Matrix::Zero(N, d), dv = Matrix::Zero(N, d);
    for (int e = 0; e < part.B; ++e)
      for (int h = 0; h < m.heads; ++h) {
        const Matrix& a = k.weights[static_cast<std::size_t>(e * m.heads + h)];
        const Matrix used = drop ? Matrix(a.cwiseProduct(part.weightMask(l, e, h, m.heads))) : a;
        const Matrix dc = dctx.block(e * T, h * w, T, w);
        dv.block(e * T, h * w, T, w).noalias() = used.transpose() * dc;
        Matrix da = dc * k.v.block(e * T, h * w, T, w).transpose();
        if (drop) da = da.cwiseProduct(part.weightMask(l, e, h, m.heads));
        // softmax: dz = a ⊙ (da − Σⱼ da ⊙ a); the scores' gradient is dz / √w (0 where masked)
        Matrix ds = Matrix::Zero(T, T);
        for (int i = 0; i < T; ++i) {
          double dot = 0;
          for (int j = 0; j <= i; ++j) dot += double(da(i, j)) * a(i, j);
          for (int j = 0; j <= i; ++j) ds(i, j) = static_cast<float>(a(i, j) * (da(i, j) - dot)) / sqrt_w;
        }
        dq.block(e * T, h * w, T, w).noalias() = ds * k.k.block(e * T, h * w, T, w);
        dk.block(e * T, h * w, T, w).noalias() = ds.transpose() * k.q.block(e * T, h * w, T, w);
      }
    Matrix dh1, piece;
    linearBackward(dq, k.h1, m.view(P, b.wq), m.view(G, b.wq), gbias(b.bq), &dh1);
    linearBackward(dk, k.h1, m.view(P, b.wk), m.view(G, b.wk), gbias(b.bk), &piece);
    dh1 += piece;
    linearBackward(dv, k.h1, m.view(P, b.wv), m.view(G, b.wv), gbias(b.bv), &piece);
    dh1 += piece;
    Matrix din;
    layerNormBackward(dh1, k.xhat1, k.rstd1, m.view(P, b.norm1_scale), m.view(G, b.norm1_scale),
                      m.view(G, b.norm1_shift), din);
    dx += din;
  }
  if (drop) dx = dx.cwiseProduct(part.rowsOf(drop->emb));
  Eigen::Map<Matrix> dtok = m.view(G, m.tok_emb), dpos = m.view(G, m.pos_emb);
  for (int r = 0; r < N; ++r) {
    dtok.row(part.ids[r]) += dx.row(r);
    dpos.row(r % T) += dx.row(r);
  }
  return loss;
}

}  // namespace

double lossAndGradients(const TrainModel& m, const TrainBatch& batch, std::vector<float>* gradients, double dropout,
                        TorchGenerator* generator, int parts) {
  const int B = batch.B, T = batch.T;
  const int scored = static_cast<int>(
      std::count_if(batch.targets.begin(), batch.targets.end(), [](int t) { return t != kIgnored; }));
  if (scored == 0) throw InputError("batch: no target is scored");
  std::optional<DropoutMasks> masks;
  if (dropout > 0 && generator) masks = drawDropoutMasks(m, B, T, dropout, *generator);
  parts = std::clamp(parts, 1, B);
  // Part i: sequences [B·i/parts, B·(i+1)/parts), its gradients in its own buffer (part 0's is
  // the caller's), summed in part order once all are done: the same sums whatever the threads.
  std::vector<double> losses(static_cast<std::size_t>(parts));
  std::vector<std::vector<float>> own(static_cast<std::size_t>(parts - 1));
  if (gradients) gradients->assign(m.values.size(), 0.0f);
  forEachItem(parts, parts, [&](int i) {
    const int first = B * i / parts, last = B * (i + 1) / parts;
    const BatchPart part{batch.inputs.data() + static_cast<std::size_t>(first) * T, first, last - first, T,
                         masks ? &*masks : nullptr};
    std::vector<float>* G = gradients;
    if (gradients && i > 0) {
      own[static_cast<std::size_t>(i - 1)].assign(m.values.size(), 0.0f);
      G = &own[static_cast<std::size_t>(i - 1)];
    }
    losses[static_cast<std::size_t>(i)] =
        partLossAndGradients(m, part, batch.targets.data() + static_cast<std::size_t>(first) * T, scored, G);
  });
  if (gradients)
    for (const std::vector<float>& g : own)
      for (std::size_t j = 0; j < g.size(); ++j) (*gradients)[j] += g[j];
  double loss = 0;
  for (double l : losses) loss += l;
  loss /= scored;
  if (!std::isfinite(loss)) throw ComputeError("the loss is not finite: the learning rate may be too high");
  return loss;
}

// [SECTION] Saving ----------------------------------------------------------------------------------

void checkTrainModelPath(const std::string& path) {
  const std::string ext = "." + extensionOf(path);  // .PTH as .pth
  if (ext != ".npz" && ext != ".safetensors" && ext != ".pth" && ext != ".pt")
    throw InputError(path + ": save a model as .npz, .safetensors, .pth or .pt (the book's state_dict in each)");
  checkWritable(path);  // a FIFO, a device or a folder that cannot be written is refused before a run
}

std::vector<NamedFloats> stateDictTensors(const std::vector<ParamTensor>& layout, int context, const float* values,
                                          std::vector<float>* masks) {
  std::vector<NamedFloats> tensors;
  if (masks != nullptr) {
    masks->assign(static_cast<std::size_t>(context) * context, 0.0f);
    for (int i = 0; i < context; ++i)
      for (int j = i + 1; j < context; ++j) (*masks)[static_cast<std::size_t>(i) * context + j] = 1.0f;
  }
  for (const ParamTensor& t : layout) {
    if (masks != nullptr && t.name.find(".att.W_query.weight") != std::string::npos)
      tensors.push_back({t.name.substr(0, t.name.find(".W_query")) + ".mask", {context, context}, masks->data()});
    tensors.push_back({t.name, std::vector<std::int64_t>(t.shape.begin(), t.shape.end()), values + t.offset});
  }
  return tensors;
}

void saveTrainModel(const TrainModel& m, const std::string& path, const TokenNames& tokens) {
  saveStateDict(m.tensors, m.context, m.values.data(), path, m.heads, tokens);
}

void saveStateDict(const std::vector<ParamTensor>& layout, int context, const float* values, const std::string& path,
                   int heads, const TokenNames& tokens) {
  const std::vector<std::string>& vocabulary = tokens.labels;
  checkTrainModelPath(path);
  const std::string ext = "." + extensionOf(path);  // .PTH as .pth
  std::vector<float> masks;
  const std::vector<NamedFloats> tensors = stateDictTensors(layout, context, values, &masks);  // every format's
  if (ext == ".npz") {
    std::vector<std::pair<std::string, std::string>> entries;
    for (const NamedFloats& t : tensors) entries.emplace_back(t.name + ".npy", arrayNpy(t.data, t.shape));
    writeFileAtomically(path, zipBytes(entries));
    return;
  }
  if (ext == ".pth" || ext == ".pt") {  // torch.save(model.state_dict(), path)'s zip (formats/torch_save.h)
    std::vector<std::pair<std::string, MetadataValue>> metadata;
    if (heads > 0 || !vocabulary.empty())
      metadata.emplace_back("version", 1);  // as state_dict() makes sd._metadata['']
    if (heads > 0) metadata.emplace_back("n_head", heads);
    if (!vocabulary.empty())
      metadata.emplace_back("vocabulary",
                            nlohmann::json(vocabulary).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    if (!vocabulary.empty()) metadata.emplace_back("tokens", tokens.kind);
    writeFileAtomically(path, torchSaveBytes(tensors, torchArchiveName(path), metadata));
    return;
  }
  // safetensors: an 8-byte little-endian header length, the JSON header, the tensors' bytes.
  nlohmann::json header = {{"__metadata__", {{"format", "pt"}, {"written_by", "attnscope"}}}};
  if (heads > 0) header["__metadata__"]["n_head"] = std::to_string(heads);  // metadata values are strings
  if (!vocabulary.empty())
    header["__metadata__"]["vocabulary"] =
        nlohmann::json(vocabulary).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!vocabulary.empty()) header["__metadata__"]["tokens"] = tokens.kind;
  std::size_t offset = 0;
  for (const NamedFloats& t : tensors) {
    std::size_t n = 1;
    for (std::int64_t d : t.shape) n *= static_cast<std::size_t>(d);
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + 4 * n}}};
    offset += 4 * n;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  writeFileAtomically(path, [&](std::ostream& out) {
    const std::uint64_t size = text.size();
    for (int k = 0; k < 8; ++k) out.put(static_cast<char>((size >> (8 * k)) & 0xff));
    out << text;
    for (const NamedFloats& t : tensors) {
      std::size_t n = 1;
      for (std::int64_t d : t.shape) n *= static_cast<std::size_t>(d);
      out.write(reinterpret_cast<const char*>(t.data), static_cast<std::streamsize>(4 * n));  // little-endian hosts
    }
  });
}

std::vector<std::vector<Matrix>> attentionMaps(const TrainModel& m, const std::vector<int>& ids) {
  ForwardCache c;
  forward(m, BatchPart{ids.data(), 0, 1, static_cast<int>(ids.size()), nullptr}, c);
  std::vector<std::vector<Matrix>> maps(static_cast<std::size_t>(m.layers));
  for (int l = 0; l < m.layers; ++l)
    maps[static_cast<std::size_t>(l)] = std::move(c.blocks[static_cast<std::size_t>(l)].weights);
  return maps;
}

}  // namespace attnscope
