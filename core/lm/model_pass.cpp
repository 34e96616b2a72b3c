// A trained model's pass over a text for the model view (lm/model_pass.h, docs/DESIGN.md §2.6).
#include "lm/model_pass.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <utility>
#include <vector>

#include "engine/errors.h"
#include "engine/gemm.h"
#include "engine/parameters.h"
#include "engine/thread_team.h"
#include "formats/utf8.h"
#include "lm/gpt_forward.h"

namespace attnscope {

namespace {

// What the model view keeps of one layer's heads, a block of rows of weights at a time: the block
// maxima of the rows' parts of each thumbnail row, and each row's part of the scores (HeadScoreRow).
// A head's thumbnail and scores are reductions of these, so the rows may come from a kept map or
// streamed by the attention a block at a time (TraceRequest::weight_rows) — no T × T map is held
// for them. Blocks are written by the pass's threads, each row by one; the reductions run once the
// layer is done.
//
// A thumbnail row (S cells) stands for rows [blockStart(i), blockStart(i + 1)); a block of rows
// covers parts of some. Each part — rows [r, e) of one thumbnail row within one block, with row 0
// a part of its own (the colour range leaves it out) — is reduced to S maxima at its first row r:
// the rows' elementwise maximum first (one vectorized pass), then S maxima of that one row.
class LayerRows {
 public:
  // `causal`: row r's keys are r + 1 at most (a model's pass); else every key (given maps, which may
  // be any model's).
  LayerRows(int heads, int T, int S, const TokenPatterns& patterns, bool causal = true)
      : T_(T),
        S_(S),
        causal_(causal),
        patterns_(patterns),
        parts_(static_cast<std::size_t>(heads) * T * S),
        starts_(static_cast<std::size_t>(heads) * T),
        scores_(static_cast<std::size_t>(heads) * T) {}

  // Before a layer's rows: no part started yet.
  void clear() { std::fill(starts_.begin(), starts_.end(), std::uint8_t{0}); }

  // Rows [first, first + n) of head h: row r at w + (r − first)·ld, its first min(r + 1, keys) keys
  // when causal (beyond them 0: the mask), else all `keys`; entropy: each row's, or null.
  void add(int h, int first, int n, const float* w, int ld, int keys, const double* entropy) {
    thread_local Eigen::ArrayXf most;
    if (most.size() < keys) most.resize(keys);
    const auto rowOf = [&](int r) {
      return Eigen::Map<const Eigen::ArrayXf>(w + static_cast<std::size_t>(r - first) * ld, keys);
    };
    for (int r = first; r < first + n;) {
      const int cell_row = cellOf(r);
      const int end = std::min({first + n, ModelPass::blockStart(cell_row + 1, T_, S_), r == 0 ? 1 : T_});
      most.head(keys) = rowOf(r);
      for (int e = r + 1; e < end; ++e) most.head(keys) = most.head(keys).max(rowOf(e));
      float* cells = parts_.data() + (static_cast<std::size_t>(h) * T_ + r) * S_;
      for (int j = 0; j < S_; ++j) {
        const int c0 = ModelPass::blockStart(j, T_, S_), c1 = std::min(ModelPass::blockStart(j + 1, T_, S_), keys);
        // A few keys by hand: Eigen's reduction costs more to set up than it saves (T ≤ S: one).
        if (c1 - c0 >= 8) {
          cells[j] = most.segment(c0, c1 - c0).maxCoeff();
        } else {
          float m = 0;
          for (int c = c0; c < c1; ++c) m = std::max(m, most[c]);
          cells[j] = m;
        }
      }
      starts_[static_cast<std::size_t>(h) * T_ + r] = 1;
      r = end;
    }
    for (int r = first; r < first + n; ++r)
      scores_[static_cast<std::size_t>(h) * T_ + r] = headScoreRow(w + static_cast<std::size_t>(r - first) * ld, r,
                                                                   causal_ ? std::min(r + 1, keys) : keys, patterns_,
                                                                   entropy != nullptr ? entropy + (r - first)
                                                                                      : nullptr);
  }

  // Row r of head h as an earlier pass computed it, with T ≤ S (each row a part of its own, each
  // cell a weight): its thumbnail row (`cells` of them, at least r + 1: the weights, 0 beyond)
  // and its part of the scores.
  void addKnown(int h, int r, const float* cells, int count, const HeadScoreRow& score) {
    float* part = parts_.data() + (static_cast<std::size_t>(h) * T_ + r) * S_;
    const int n = std::min(count, S_);
    std::copy_n(cells, n, part);
    std::fill(part + n, part + S_, 0.0f);
    starts_[static_cast<std::size_t>(h) * T_ + r] = 1;
    scores_[static_cast<std::size_t>(h) * T_ + r] = score;
  }
  const HeadScoreRow* scoreRows(int h) const { return scores_.data() + static_cast<std::size_t>(h) * T_; }

  // Head h's thumbnail (the S × S block maxima; the colour range's top is the largest weight below
  // the first row, which under the causal mask always puts 1 on the first token — with it, a long
  // text's diffuse heads would all look empty) and scores.
  HeadThumbnail finish(int h) const {
    HeadThumbnail t;
    t.cells.assign(static_cast<std::size_t>(S_) * S_, 0.0f);
    const std::size_t head = static_cast<std::size_t>(h) * T_;
    for (int r = 0; r < T_; ++r) {
      if (!starts_[head + r]) continue;
      const float* part = parts_.data() + (head + r) * S_;
      float* cells = t.cells.data() + static_cast<std::size_t>(cellOf(r)) * S_;
      for (int j = 0; j < S_; ++j) cells[j] = std::max(cells[j], part[j]);
      if (r >= 1 || T_ == 1) t.largest = std::max(t.largest, *std::max_element(part, part + S_));
    }
    t.scores = headScoresOfRows(scores_.data() + head, T_);
    return t;
  }

 private:
  // The thumbnail row that text row r falls in: the last i with blockStart(i) ≤ r.
  int cellOf(int r) const {
    int i = static_cast<int>(static_cast<std::int64_t>(r) * S_ / T_);
    while (ModelPass::blockStart(i + 1, T_, S_) <= r) ++i;
    while (ModelPass::blockStart(i, T_, S_) > r) --i;
    return i;
  }

  int T_, S_;
  bool causal_;
  const TokenPatterns& patterns_;
  std::vector<float> parts_;          // H × T × S: a part's maxima at its first row
  std::vector<std::uint8_t> starts_;  // H × T: where a part starts (bytes: threads write their own)
  std::vector<HeadScoreRow> scores_;  // H × T
};

}  // namespace

bool ModelPass::keepsProjections(int layers) const {
  std::lock_guard<std::mutex> lock(projections_mutex);
  return static_cast<int>(projections.size()) == layers;
}

std::vector<KeptProjections> ModelPass::takeProjections() const {
  std::lock_guard<std::mutex> lock(projections_mutex);
  return std::exchange(projections, {});
}

void ModelPass::keepProjections(std::vector<KeptProjections> p) const {
  std::lock_guard<std::mutex> lock(projections_mutex);
  projections = std::move(p);
}

PrefixReuse reusablePrefix(const ModelPass& previous, const GptModel& model, const std::vector<int>& ids,
                           int keep_layer) {
  const int T = static_cast<int>(ids.size()), before = static_cast<int>(previous.ids.size());
  const GptPrefix& kept = previous.forward;
  if (!previous.fused || previous.model.get() != &model || previous.kept_layer != keep_layer ||
      static_cast<int>(kept.attention_inputs.size()) != model.config.layers || kept.final_x.rows() != before)
    return {};
  const int same = static_cast<int>(
      std::mismatch(ids.begin(), ids.begin() + std::min(T, before), previous.ids.begin()).first - ids.begin());
  PrefixReuse reuse;
  reuse.rows = std::min(same, T - 1);
  // The rows' own thumbnail rows and scores, and their projections, are kept together (a pass of
  // at most kThumbnailCells tokens, the fast path).
  const bool projected = previous.keepsProjections(model.config.layers);
  reuse.whole_attention = T > kThumbnailCells || previous.score_rows.empty() || !projected;
  reuse.projections = projected;
  if (reuse.rows <= 0) return {};
  return reuse;
}

double passWorkRows(const GptConfig& config, int tokens, const PrefixReuse& reuse) {
  const double T = tokens, q = reuse.rows, d = config.d_model, F = config.mlp ? config.mlp_width : 0;
  if (!reuse.whole_attention) return T - q;
  // Multiply-adds under the causal mask: row r's projections 3d², out_proj d², MLP 2dF, and its
  // attention over r + 1 keys, (r + 1)·d for the scores and as many for P·V — a whole pass
  // T(4d² + 2dF) + T²d, a row the T-th of it. The rows from q: all of theirs. The reused rows:
  // their scores alone (q²d/2) from kept projections; else their projections, attention and
  // out_proj (every step but the MLP: q·4d² + q²d).
  const double row = 4 * d * d + 2 * d * F + T * d;
  const double fresh = (T - q) * (4 * d * d + 2 * d * F) + (T * T - q * q) * d;
  const double reused = reuse.projections ? q * q * d / 2 : q * 4 * d * d + q * q * d;
  return (fresh + reused) / row;
}

std::shared_ptr<const ModelPass> runModelPass(std::shared_ptr<const GptModel> model, const std::vector<int>& ids,
                                              const ExecutionOptions& exec, const Limits& limits, int keep_layer,
                                              Trace* kept, const ModelPass* previous,
                                              const std::vector<int>& final_rows, KeptLayer how) {
  const auto start = std::chrono::steady_clock::now();
  auto pass = std::make_shared<ModelPass>();
  const GptConfig& c = model->config;
  const int T = static_cast<int>(ids.size()), H = c.heads;
  if (kept == nullptr) keep_layer = -1;
  const int outputs_of = how == KeptLayer::Outputs ? keep_layer : -1;  // the layer whose outputs alone are kept
  if (how == KeptLayer::Outputs) keep_layer = -1;                      // … and which keeps no maps
  pass->ids = ids;
  pass->layer_count = c.layers;
  pass->head_count = H;
  pass->cells = std::min(T, kThumbnailCells);
  pass->kept_layer = keep_layer;
  pass->heads.resize(static_cast<std::size_t>(c.layers) * static_cast<std::size_t>(H));
  // A short text keeps its rows' thumbnail rows and scores, which a later pass over a text that
  // begins the same reuses; a long one would hold a thumbnail row of several text rows, which the
  // next text's length regroups. Every text keeps its projections within kKeptProjectionBytes
  // (GPT-2 small's 1024 tokens: 113 MB), so that a later pass attends the rows it reuses without
  // projecting them again.
  const bool keeps_rows = T <= kThumbnailCells && exec.fused;
  if (keeps_rows) pass->score_rows.resize(static_cast<std::size_t>(c.layers) * H * T);
  const int width = 3 * model->attention_config.d_out;
  const int cap_rows = static_cast<int>(kKeptProjectionBytes /
                                        (static_cast<std::size_t>(width) * c.layers * sizeof(float)));
  const bool keeps_projections = exec.fused && T <= cap_rows;
  PrefixReuse reuse = previous != nullptr && exec.fused ? reusablePrefix(*previous, *model, ids, keep_layer)
                                                        : PrefixReuse();
  // The previous pass's projections, taken over: each layer's block becomes this pass's own
  // (GptRequest::prefix_projections), its rows before q kept in place when it holds them — else its
  // memory alone: fresh pages cost more than the rows — so that two sets are never held (GPT-2
  // small at 1024 tokens: 113 MB each).
  std::vector<KeptProjections> handed;
  if (previous != nullptr && (keeps_projections || (reuse.rows > 0 && reuse.projections)))
    handed = previous->takeProjections();
  // As this pass will lay them out: the trained model's attention runs on its packed panels.
  const bool head_major = KeptProjections::headMajor(width / 3 / H, gemmBackend() == GemmBackend::Packed);
  const auto holds = [&](const std::vector<KeptProjections>& set, int rows) {
    return static_cast<int>(set.size()) == c.layers &&
           std::all_of(set.begin(), set.end(),
                       [&](const KeptProjections& k) { return k.holds(rows, width) && k.head_major == head_major; });
  };
  if (reuse.projections && !holds(handed, reuse.rows)) {  // taken meanwhile, or fewer rows: projected again
    reuse.projections = false;
    reuse.whole_attention = true;
  }
  const int q = reuse.rows;
  pass->reused_rows = q;
  pass->whole_attention = reuse.whole_attention;
  pass->reused_projections = reuse.projections;
  pass->fused = exec.fused;
  const TokenPatterns patterns(ids);
  const int threads = exec.parallel ? resolveThreads(exec.threads) : 1;
  LayerRows rows(H, T, pass->cells, patterns);  // the layer being computed
  // Rows [0, q) of layer l's streamed heads as the previous pass has them (a kept layer's are
  // computed whole, from its maps).
  const auto addKnownRows = [&](int layer) {
    if (q == 0 || reuse.whole_attention || layer >= c.layers || layer == keep_layer || layer == outputs_of) return;
    for (int h = 0; h < H; ++h) {
      const HeadThumbnail& before = previous->head(layer, h);
      const HeadScoreRow* scores = previous->score_rows.data() +
                                   (static_cast<std::size_t>(layer) * H + h) * previous->ids.size();
      for (int r = 0; r < q; ++r)
        rows.addKnown(h, r, before.cells.data() + static_cast<std::size_t>(r) * previous->cells, previous->cells,
                      scores[r]);
    }
  };
  GptRequest request;
  request.no_logits = true;
  request.keep_prefix = &pass->forward;
  request.keep_projections = keeps_projections;
  // Room for 64 more rows (typing at the end grows in place), within the context and the cap.
  request.keep_room = std::min({T + 64, c.context_length, cap_rows});
  request.final_rows = final_rows;
  if (q > 0) {
    request.prefix = &previous->forward;
    request.prefix_rows = q;
    request.whole_attention = reuse.whole_attention;
    request.whole_layer = outputs_of;  // its outputs kept whole
  }
  if (!handed.empty()) request.prefix_projections = &handed;
  // The layer asked for keeps its maps (every stage); the others stream their weights into `rows`.
  if (keep_layer >= 0)
    request.map_layers = {keep_layer};
  else
    request.no_maps = true;
  request.weight_rows = [&](int, const WeightRows& w) {
    if (w.element == 0) rows.add(w.head, w.first_row, w.rows, w.weights, w.ld, w.keys, w.entropy);
  };
  request.on_layer = [&](int layer, const Matrix&, Trace&& trace) {
    const BatchTrace& bt = trace.batches[0];
    // One head per item: a kept layer's rows from its maps first, then each head's reductions.
    forEachItem(threads, H, [&](int h) {
      if (h < static_cast<int>(bt.heads.size()) && bt.heads[static_cast<std::size_t>(h)].hasMaps()) {
        const Matrix& w = bt.heads[static_cast<std::size_t>(h)].weights;
        rows.add(h, 0, T, w.data(), T, T, nullptr);
      }
      pass->heads[static_cast<std::size_t>(layer) * H + h] = rows.finish(h);
      if (keeps_rows)
        std::copy_n(rows.scoreRows(h), T, pass->score_rows.data() + (static_cast<std::size_t>(layer) * H + h) * T);
    });
    rows.clear();
    addKnownRows(layer + 1);
    if (layer == keep_layer || layer == outputs_of) {
      *kept = std::move(trace);
      // The views read its weights (a layer of outputs alone was streamed: it has none yet).
      if (kept->parameters == nullptr)
        kept->parameters = model->blocks[static_cast<std::size_t>(layer)].attention.weights(model->attention_config);
    }
  };
  addKnownRows(0);
  try {
    gptForward(*model, ids, request, exec, limits);
  } catch (...) {
    // Cancelled or refused: the previous pass keeps its projections for the next one (a text typed
    // faster than its passes). Those of the layers this pass had done are its own, whose first q
    // rows are the previous pass's too (the same inputs); the layer it was computing holds its block
    // again (computeTrace).
    for (std::size_t l = 0; l < handed.size(); ++l)
      if (handed[l].qkv.empty() && l < pass->forward.projections.size()) {
        handed[l] = std::move(pass->forward.projections[l]);
        handed[l].rows = std::min(handed[l].rows, q);
      }
    if (holds(handed, 0)) previous->keepProjections(std::move(handed));
    throw;
  }
  pass->keepProjections(std::exchange(pass->forward.projections, {}));
  pass->model = std::move(model);
  pass->milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return pass;
}

std::shared_ptr<const ModelPass> passOfMaps(std::shared_ptr<const GivenAttention> given, const ExecutionOptions& exec) {
  const auto start = std::chrono::steady_clock::now();
  const GivenAttention& g = *given;
  const int L = g.layers, H = g.heads, T = g.tokens;
  auto pass = std::make_shared<ModelPass>();
  pass->layer_count = L;
  pass->head_count = H;
  pass->cells = std::min(T, kThumbnailCells);
  std::map<std::string, int> id_of;  // the same text, the same token
  for (const std::string& label : g.labels)
    pass->ids.push_back(id_of.emplace(label, static_cast<int>(id_of.size())).first->second);
  pass->heads.resize(static_cast<std::size_t>(L) * static_cast<std::size_t>(H));
  const TokenPatterns patterns(pass->ids);
  const int threads = exec.parallel ? resolveThreads(exec.threads) : 1;
  std::vector<std::string> errors(static_cast<std::size_t>(H));
  // Maps with nothing above the diagonal (a GPT's, as a notebook sends them) are a causal pass's
  // rows: row i sees i + 1 keys, which an even head's duplicate and induction scores count
  // (HeadScores' *_even): read as seeing every key, a causal head's labels would not be the ones the
  // same model's pass gives it.
  bool causal = true;
  for (int m = 0; m < L * H && causal; ++m) {
    const float* w = g.maps.data() +
                     static_cast<std::size_t>(m) * static_cast<std::size_t>(T) * static_cast<std::size_t>(T);
    for (int i = 0; i < T && causal; ++i)
      for (int j = i + 1; j < T; ++j)
        if (w[static_cast<std::size_t>(i) * static_cast<std::size_t>(T) + static_cast<std::size_t>(j)] != 0.0f) {
          causal = false;
          break;
        }
  }
  for (int l = 0; l < L; ++l) {
    LayerRows rows(H, T, pass->cells, patterns, causal);
    forEachItem(threads, H, [&](int h) {
      const float* w = g.map(l, h);
      const std::size_t n = static_cast<std::size_t>(T) * static_cast<std::size_t>(T);
      for (std::size_t k = 0; k < n; ++k)
        if (!(w[k] >= 0.0f) || !std::isfinite(w[k])) {  // NaN fails the first test
          errors[static_cast<std::size_t>(h)] = "maps: layer " + std::to_string(l) + " head " + std::to_string(h) +
                                                " has a weight that is " +
                                                (std::isfinite(w[k]) ? "negative" : "not finite") + " (row " +
                                                std::to_string(k / static_cast<std::size_t>(T)) + ")";
          return;
        }
      rows.add(h, 0, T, w, T, T, nullptr);
      pass->heads[static_cast<std::size_t>(l) * H + h] = rows.finish(h);
    });
    for (const std::string& e : errors)
      if (!e.empty()) throw InputError(e);
  }
  pass->given = std::move(given);
  pass->milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return pass;
}

Trace layerTrace(const ModelPass& pass, int layer, const ExecutionOptions& exec, const Limits& limits, bool outputs) {
  if (layer < 0 || layer >= pass.layers())
    throw InputError("layer " + std::to_string(layer) + " does not exist: the model has " +
                     std::to_string(pass.layers()) + " layers (0 … " + std::to_string(pass.layers() - 1) + ")");
  const GptModel& m = *pass.model;
  TraceRequest what;
  what.outputs = outputs;
  // The layer's projections as the pass keeps them, lent (taken over and given back, not copied):
  // every row the same bits as projected again (a row's projections do not depend on its block),
  // GPT-2's 3.6 GFLOP at 1024 tokens spared.
  std::vector<KeptProjections> lent = pass.takeProjections();
  KeptProjections back;
  const auto l = static_cast<std::size_t>(layer);
  if (l < lent.size()) {
    what.reuse = &lent[l];
    what.reuse_rows = lent[l].rows;
    what.keep_projections = &back;
    // Its room kept too (a text typed at its end grows in place).
    if (lent[l].width > 0)
      what.keep_room = static_cast<int>(lent[l].qkv.capacity() / static_cast<std::size_t>(lent[l].width));
  }
  struct GiveBack {  // whether the trace is computed, cancelled or refused
    const ModelPass& pass;
    std::vector<KeptProjections>& lent;
    KeptProjections& back;
    std::size_t l;
    ~GiveBack() {
      if (l < lent.size() && lent[l].qkv.empty()) lent[l] = std::move(back);  // else put back by computeTrace
      pass.keepProjections(std::move(lent));
    }
  } give_back{pass, lent, back, l};
  return computeTrace(pass.forward.attention_inputs[l], m.attention_config, m.blocks[l].attention, exec, what, limits);
}

Workspace layerWorkspace(const ModelPass& pass, int layer, std::vector<std::string> tokens,
                         std::shared_ptr<const ParameterValues> weights) {
  const GptModel& m = *pass.model;
  Workspace ws;
  ws.tokens = std::move(tokens);
  ws.embeddings = pass.forward.attention_inputs[static_cast<std::size_t>(layer)];
  ws.model = m.attention_config;
  ws.model.parameters = weights != nullptr ? std::move(weights)
                                           : std::make_shared<const ParameterValues>(
                                                 stateDict(m.attention_config,
                                                           *m.blocks[static_cast<std::size_t>(layer)].attention.weights(
                                                               m.attention_config)));
  return ws;
}

namespace {

// Spaces and control characters as the Control Pictures block draws them (U+2400 + the code; a space
// ␣, U+2423; DEL ␡, U+2421).
std::string visibleCharacters(const std::string& label) {
  std::string out;
  for (const char ch : label) {
    const auto c = static_cast<unsigned char>(ch);
    const unsigned picture = c == ' ' ? 0x2423u : c == 0x7F ? 0x2421u : c < 0x20 ? 0x2400u + c : 0;
    if (picture == 0) {
      out += ch;
    } else {
      appendUtf8(out, picture);
    }
  }
  return out;
}

}  // namespace

std::string tokenLabel(const GptModel& model, int id) {
  if (id >= 0 && id < static_cast<int>(model.token_labels.size()))
    return visibleCharacters(model.token_labels[static_cast<std::size_t>(id)]);
  return model.tokenizer != nullptr && id >= 0 && id < model.tokenizer->vocabularySize()
             ? visibleCharacters(model.tokenizer->tokenString(id))
             : "#" + std::to_string(id);
}

std::vector<NextToken> topNextTokens(const float* logits, int V, double temperature, int k) {
  k = std::clamp(k, 0, V);
  // The k largest in one pass, kept in order: a token enters only above the k-th (an equal logit
  // comes later in id, so after it), a few times in 50,257 (sorting every id's place took 0.3 ms
  // of the frame that shows a result).
  // Many asked for (model-trace --top-k 50257), a partial sort: the insertions would be V · k.
  std::vector<int> order;
  const auto before = [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  if (k > 64) {
    order.resize(static_cast<std::size_t>(V));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    order.resize(static_cast<std::size_t>(k));
  } else {
    order.reserve(static_cast<std::size_t>(k) + 1);
    for (int v = 0; v < V && k > 0; ++v) {
      if (static_cast<int>(order.size()) == k && !before(v, order.back())) continue;
      order.insert(std::upper_bound(order.begin(), order.end(), v, before), v);
      if (static_cast<int>(order.size()) > k) order.pop_back();
    }
  }
  std::vector<NextToken> out;
  if (k == 0) return out;
  const double top = logits[order[0]];
  // exp((logit − top) / T) of every token in double, vectorized: a loop of std::exp took 6 ms on a
  // random model's logits, whose far tails reach glibc's slow path for results near underflow.
  thread_local Eigen::ArrayXd weights;
  double sum = 0;
  if (temperature > 0) {
    weights = ((Eigen::Map<const Eigen::ArrayXf>(logits, V).cast<double>() - top) / temperature).exp();
    sum = weights.sum();
  }
  for (int i = 0; i < k; ++i) {
    const int v = order[static_cast<std::size_t>(i)];
    NextToken t;
    t.id = v;
    t.logit = logits[v];
    t.probability = temperature > 0 ? static_cast<float>(weights[v] / sum) : (i == 0 ? 1.0f : 0.0f);
    out.push_back(t);
  }
  return out;
}

}  // namespace attnscope
