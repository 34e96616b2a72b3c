// The trained GPT's layout, initialization, forward pass with its caches, and backward pass
// (learn/train_model.h). Shapes as there: N = B·T rows, d, H heads of width w, F = 4d, V.
#include "learn/train_model.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "engine/errors.h"
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

// LayerNorm (the book's: biased variance, eps 1e-5), N × d. Keeps x̂ and 1/σ for the backward.
void layerNorm(const Matrix& x, ConstMap scale, ConstMap shift, Matrix& y, Matrix& xhat, Eigen::VectorXf& rstd) {
  const int N = static_cast<int>(x.rows()), d = static_cast<int>(x.cols());
  y.resize(N, d), xhat.resize(N, d), rstd.resize(N);
  for (int r = 0; r < N; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < d; ++c) mean += x(r, c);
    mean /= d;
    for (int c = 0; c < d; ++c) var += (x(r, c) - mean) * (x(r, c) - mean);
    var /= d;
    const float s = static_cast<float>(1.0 / std::sqrt(var + 1e-5));
    rstd(r) = s;
    for (int c = 0; c < d; ++c) {
      xhat(r, c) = (x(r, c) - static_cast<float>(mean)) * s;
      y(r, c) = scale(0, c) * xhat(r, c) + shift(0, c);
    }
  }
}

// dy → dx, and the scale's and shift's gradients: dx = (ĝ − mean ĝ − x̂ · mean(ĝ x̂)) / σ with
// ĝ = dy ⊙ scale.
void layerNormBackward(const Matrix& dy, const Matrix& xhat, const Eigen::VectorXf& rstd, ConstMap scale,
                       Eigen::Map<Matrix> dscale, Eigen::Map<Matrix> dshift, Matrix& dx) {
  const int N = static_cast<int>(dy.rows()), d = static_cast<int>(dy.cols());
  dx.resize(N, d);
  for (int r = 0; r < N; ++r) {
    double mg = 0, mgx = 0;
    for (int c = 0; c < d; ++c) {
      const double g = double(dy(r, c)) * scale(0, c);
      mg += g, mgx += g * xhat(r, c);
      dscale(0, c) += dy(r, c) * xhat(r, c);
      dshift(0, c) += dy(r, c);
    }
    mg /= d, mgx /= d;
    for (int c = 0; c < d; ++c)
      dx(r, c) = static_cast<float>(rstd(r) * (double(dy(r, c)) * scale(0, c) - mg - xhat(r, c) * mgx));
  }
}

// y = x Wᵀ (+ b): torch's Linear, W out × in.
Matrix linear(const Matrix& x, ConstMap w, const float* b) {
  Matrix y = x * w.transpose();
  if (b)
    for (int r = 0; r < y.rows(); ++r)
      for (int c = 0; c < y.cols(); ++c) y(r, c) += b[c];
  return y;
}

// Linear's backward: dW += dyᵀ x, db += Σ dy, and dx = dy W (when asked).
void linearBackward(const Matrix& dy, const Matrix& x, ConstMap w, Eigen::Map<Matrix> dw, float* db, Matrix* dx) {
  dw.noalias() += dy.transpose() * x;
  if (db)
    for (int r = 0; r < dy.rows(); ++r)
      for (int c = 0; c < dy.cols(); ++c) db[c] += dy(r, c);
  if (dx) *dx = dy * w;
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
// Without a generator (eval) every element is kept as it is.
Matrix dropoutMask(int rows, int cols, double p, TorchGenerator* g) {
  if (g == nullptr) return Matrix::Ones(rows, cols);
  std::vector<std::uint8_t> keep(static_cast<std::size_t>(rows) * cols);
  g->fillDropoutKeep(keep.data(), keep.size(), p);
  Matrix m(rows, cols);
  const float scale = TorchGenerator::dropoutScale(p);
  for (std::size_t i = 0; i < keep.size(); ++i) m.data()[i] = keep[i] ? scale : 0.0f;
  return m;
}

// [SECTION] The forward pass with its caches ----------------------------------------------------------

struct BlockCache {
  Matrix x_in, xhat1, h1, q, k, v, ctx, x_mid, xhat2, h2, f1, g;
  Eigen::VectorXf rstd1, rstd2;
  std::vector<Matrix> weights, weight_masks;  // per (b, h): T × T, after softmax; its dropout mask
  Matrix shortcut1_mask, shortcut2_mask;      // N × d (empty without dropout)
};

struct ForwardCache {
  int B = 0, T = 0;
  Matrix emb_mask, x_final, xhat_f, hf, logits;
  Eigen::VectorXf rstd_f;
  std::vector<BlockCache> blocks;
};

void forward(const TrainModel& m, const std::vector<int>& ids, int B, int T, double p, TorchGenerator* gen,
             ForwardCache& c) {
  const std::vector<float>& P = m.values;
  const bool drop = p > 0 && gen;
  const int N = B * T, d = m.d, w = m.head_width;
  c.B = B, c.T = T;
  Matrix x(N, d);
  ConstMap tok = m.view(P, m.tok_emb), pos = m.view(P, m.pos_emb);
  for (int r = 0; r < N; ++r) x.row(r) = tok.row(ids[static_cast<std::size_t>(r)]) + pos.row(r % T);
  if (drop) {
    c.emb_mask = dropoutMask(N, d, p, gen);
    x = x.cwiseProduct(c.emb_mask);
  }
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
    if (drop) k.weight_masks.assign(static_cast<std::size_t>(B * m.heads), {});
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
        Matrix used = a;
        if (drop) {
          Matrix mask = dropoutMask(T, T, p, gen);
          used = a.cwiseProduct(mask);
          k.weight_masks[static_cast<std::size_t>(e * m.heads + h)] = std::move(mask);
        }
        k.ctx.block(e * T, h * w, T, w) = used * k.v.block(e * T, h * w, T, w);
        k.weights[static_cast<std::size_t>(e * m.heads + h)] = std::move(a);
      }
    Matrix o = linear(k.ctx, m.view(P, b.wo), bias(b.bo));
    if (drop) {
      k.shortcut1_mask = dropoutMask(N, d, p, gen);
      o = o.cwiseProduct(k.shortcut1_mask);
    }
    x = k.x_in + o;
    k.x_mid = x;
    if (m.mlp) {
      layerNorm(x, m.view(P, b.norm2_scale), m.view(P, b.norm2_shift), k.h2, k.xhat2, k.rstd2);
      k.f1 = linear(k.h2, m.view(P, b.w1), bias(b.b1));
      k.g = k.f1.unaryExpr([](float v) { return gelu(v); });
      Matrix f2 = linear(k.g, m.view(P, b.w2), bias(b.b2));
      if (drop) {
        k.shortcut2_mask = dropoutMask(N, d, p, gen);
        f2 = f2.cwiseProduct(k.shortcut2_mask);
      }
      x = k.x_mid + f2;
    }
  }
  c.x_final = x;
  layerNorm(x, m.view(P, m.final_scale), m.view(P, m.final_shift), c.hf, c.xhat_f, c.rstd_f);
  c.logits = c.hf * m.view(P, m.out_head).transpose();
}

}  // namespace

// [SECTION] Loss and gradients ---------------------------------------------------------------------

double lossAndGradients(const TrainModel& m, const TrainBatch& batch, std::vector<float>* gradients, double dropout,
                        TorchGenerator* generator) {
  ForwardCache c;
  forward(m, batch.inputs, batch.B, batch.T, dropout, generator, c);
  const int N = batch.B * batch.T, V = m.vocab, d = m.d, w = m.head_width, T = batch.T;
  // Cross-entropy over the scored rows: log-softmax in double, the mean over the scored.
  Matrix dlogits = Matrix::Zero(N, V);
  double loss = 0;
  int scored = 0;
  for (int r = 0; r < N; ++r) {
    const int target = batch.targets[static_cast<std::size_t>(r)];
    if (target == kIgnored) continue;
    ++scored;
    const float top = c.logits.row(r).maxCoeff();
    double sum = 0;
    for (int j = 0; j < V; ++j) sum += std::exp(double(c.logits(r, j)) - top);
    loss += std::log(sum) + top - c.logits(r, target);
    for (int j = 0; j < V; ++j) dlogits(r, j) = static_cast<float>(std::exp(double(c.logits(r, j)) - top) / sum);
    dlogits(r, target) -= 1.0f;
  }
  if (scored == 0) throw InputError("batch: no target is scored");
  loss /= scored;
  if (!std::isfinite(loss)) throw ComputeError("the loss is not finite: the learning rate may be too high");
  if (!gradients) return loss;

  std::vector<float>& G = *gradients;
  G.assign(m.values.size(), 0.0f);
  const std::vector<float>& P = m.values;
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
      Matrix df2 = k.shortcut2_mask.size() ? Matrix(dx.cwiseProduct(k.shortcut2_mask)) : dx;
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
    Matrix dout = k.shortcut1_mask.size() ? Matrix(dx.cwiseProduct(k.shortcut1_mask)) : dx;
    Matrix dctx;
    linearBackward(dout, k.ctx, m.view(P, b.wo), m.view(G, b.wo), gbias(b.bo), &dctx);
    Matrix dq = Matrix::Zero(N, d), dk = Matrix::Zero(N, d), dv = Matrix::Zero(N, d);
    for (int e = 0; e < batch.B; ++e)
      for (int h = 0; h < m.heads; ++h) {
        const std::size_t at = static_cast<std::size_t>(e * m.heads + h);
        const Matrix& a = k.weights[at];
        const bool masked = !k.weight_masks.empty();
        const Matrix used = masked ? Matrix(a.cwiseProduct(k.weight_masks[at])) : a;
        const Matrix dc = dctx.block(e * T, h * w, T, w);
        dv.block(e * T, h * w, T, w) = used.transpose() * dc;
        Matrix da = dc * k.v.block(e * T, h * w, T, w).transpose();
        if (masked) da = da.cwiseProduct(k.weight_masks[at]);
        // softmax: dz = a ⊙ (da − Σⱼ da ⊙ a); the scores' gradient is dz / √w (0 where masked)
        Matrix ds = Matrix::Zero(T, T);
        for (int i = 0; i < T; ++i) {
          double dot = 0;
          for (int j = 0; j <= i; ++j) dot += double(da(i, j)) * a(i, j);
          for (int j = 0; j <= i; ++j) ds(i, j) = static_cast<float>(a(i, j) * (da(i, j) - dot)) / sqrt_w;
        }
        dq.block(e * T, h * w, T, w) = ds * k.k.block(e * T, h * w, T, w);
        dk.block(e * T, h * w, T, w) = ds.transpose() * k.q.block(e * T, h * w, T, w);
      }
    Matrix dh1, part;
    linearBackward(dq, k.h1, m.view(P, b.wq), m.view(G, b.wq), gbias(b.bq), &dh1);
    linearBackward(dk, k.h1, m.view(P, b.wk), m.view(G, b.wk), gbias(b.bk), &part);
    dh1 += part;
    linearBackward(dv, k.h1, m.view(P, b.wv), m.view(G, b.wv), gbias(b.bv), &part);
    dh1 += part;
    Matrix din;
    layerNormBackward(dh1, k.xhat1, k.rstd1, m.view(P, b.norm1_scale), m.view(G, b.norm1_scale),
                      m.view(G, b.norm1_shift), din);
    dx += din;
  }
  if (c.emb_mask.size()) dx = dx.cwiseProduct(c.emb_mask);
  Eigen::Map<Matrix> dtok = m.view(G, m.tok_emb), dpos = m.view(G, m.pos_emb);
  for (int r = 0; r < N; ++r) {
    dtok.row(batch.inputs[static_cast<std::size_t>(r)]) += dx.row(r);
    dpos.row(r % T) += dx.row(r);
  }
  return loss;
}

// [SECTION] Saving ----------------------------------------------------------------------------------

void checkTrainModelPath(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext != ".npz" && ext != ".safetensors" && ext != ".pth" && ext != ".pt")
    throw InputError(path + ": save a model as .npz, .safetensors, .pth or .pt (the book's state_dict in each)");
  writableTarget(path);  // a FIFO or a device is refused before anything is made
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

void saveTrainModel(const TrainModel& m, const std::string& path) {
  saveStateDict(m.tensors, m.context, m.values.data(), path);
}

void saveStateDict(const std::vector<ParamTensor>& layout, int context, const float* values, const std::string& path) {
  checkTrainModelPath(path);
  const std::string ext = std::filesystem::path(path).extension().string();
  std::vector<float> masks;
  const std::vector<NamedFloats> tensors = stateDictTensors(layout, context, values, &masks);  // every format's
  if (ext == ".npz") {
    std::vector<std::pair<std::string, std::string>> entries;
    for (const NamedFloats& t : tensors) entries.emplace_back(t.name + ".npy", arrayNpy(t.data, t.shape));
    writeFileAtomically(path, zipBytes(entries));
    return;
  }
  if (ext == ".pth" || ext == ".pt") {  // torch.save(model.state_dict(), path)'s zip (formats/torch_save.h)
    writeFileAtomically(path, torchSaveBytes(tensors, torchArchiveName(path)));
    return;
  }
  // safetensors: an 8-byte little-endian header length, the JSON header, the tensors' bytes.
  nlohmann::json header = {{"__metadata__", {{"format", "pt"}, {"written_by", "attnscope"}}}};
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
  forward(m, ids, 1, static_cast<int>(ids.size()), 0, nullptr, c);
  std::vector<std::vector<Matrix>> maps(static_cast<std::size_t>(m.layers));
  for (int l = 0; l < m.layers; ++l)
    maps[static_cast<std::size_t>(l)] = std::move(c.blocks[static_cast<std::size_t>(l)].weights);
  return maps;
}

}  // namespace attnscope
