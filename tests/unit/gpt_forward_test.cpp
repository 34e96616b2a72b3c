// The trained-model forward (lm/gpt_forward.h): the fast path against the serial reference, the
// same bits on any number of threads, cancelling, and the loader's refusals, on random models in
// the book's layout held in memory. Torch is the oracle elsewhere (tests/oracle/test_gpt_oracle.py).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <utility>

#include "engine/errors.h"
#include "lm/gpt_forward.h"
#include "lm/gpt_model.h"
#include "lm/model_pass.h"

namespace attnscope {
namespace {

// Tensors held in memory, listed as a file would list them.
class MemoryTensors : public TensorFile {
 public:
  MemoryTensors() {
    path_ = "memory";
    format_ = "npz";
  }
  void add(const std::string& name, std::vector<std::int64_t> shape, std::mt19937& rng, float scale, float mean = 0) {
    std::int64_t n = 1;
    for (auto s : shape) n *= s;
    std::normal_distribution<float> normal(mean, scale);
    auto values = std::make_shared<std::vector<float>>(n);
    for (float& v : *values) v = normal(rng);
    values_[name] = values;
    tensors_.push_back({name, "F32", shape});
    indexTensors("tensors");
  }
  std::vector<float>& values(const std::string& name) { return *values_.at(name); }
  FloatTensor floats(const std::string& name) const override {
    const TensorInfo* t = find(name);
    if (t == nullptr) throw InputError("memory: no tensor " + name);
    return {values_.at(name)->data(), t->shape, values_.at(name)};
  }

 private:
  std::map<std::string, std::shared_ptr<std::vector<float>>> values_;
};

// The book's GPTModel state_dict with random values: V vocabulary, C positions, d width, L blocks
// (without `mlp`, attention-only blocks: no feed-forward and no LayerNorm 2).
MemoryTensors bookModel(int V, int C, int d, int L, unsigned seed, bool mlp = true) {
  std::mt19937 rng(seed);
  MemoryTensors m;
  const float s = 1.0f / std::sqrt(static_cast<float>(d));
  m.add("tok_emb.weight", {V, d}, rng, 1);
  m.add("pos_emb.weight", {C, d}, rng, 1);
  for (int i = 0; i < L; ++i) {
    const std::string p = "trf_blocks." + std::to_string(i) + ".";
    for (const char* w : {"W_query", "W_key", "W_value"}) {
      m.add(p + "att." + w + ".weight", {d, d}, rng, s);
      m.add(p + "att." + w + ".bias", {d}, rng, 0.1f);
    }
    m.add(p + "att.out_proj.weight", {d, d}, rng, s);
    m.add(p + "att.out_proj.bias", {d}, rng, 0.1f);
    if (mlp) {
      m.add(p + "ff.layers.0.weight", {4 * d, d}, rng, s);
      m.add(p + "ff.layers.0.bias", {4 * d}, rng, 0.1f);
      m.add(p + "ff.layers.2.weight", {d, 4 * d}, rng, 0.5f * s);
      m.add(p + "ff.layers.2.bias", {d}, rng, 0.1f);
    }
    for (const char* n : {"norm1", "norm2"}) {
      if (!mlp && std::string(n) == "norm2") continue;
      m.add(p + n + ".scale", {d}, rng, 0.2f, 1);
      m.add(p + n + ".shift", {d}, rng, 0.1f);
    }
  }
  m.add("final_norm.scale", {d}, rng, 0.2f, 1);
  m.add("final_norm.shift", {d}, rng, 0.1f);
  m.add("out_head.weight", {V, d}, rng, s);
  return m;
}

// `threads` threads (one: not parallel), however small the work.
ExecutionOptions onThreads(int threads) {
  ExecutionOptions exec;
  exec.parallel = threads > 1;
  exec.threads = threads;
  exec.min_parallel_work = 0;
  return exec;
}

// The model in `file`, its blocks' attention in `heads` heads.
std::shared_ptr<const GptModel> modelOf(const MemoryTensors& file, int heads) {
  GptLoadOptions options;
  options.num_heads = heads;
  return gptModelFromTensors(file, "", options);
}

// The book's GPTModel of 3 blocks, d = 64 in 4 heads, 53 tokens, 320 positions (past the
// attention's 128-key tiles and the MLP's 128-row blocks), random weights from `seed`.
std::shared_ptr<const GptModel> fourHeadModel(unsigned seed) { return modelOf(bookModel(53, 320, 64, 3, seed), 4); }

std::vector<int> someIds(int T, int V, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int> ids(T);
  for (int& id : ids) id = static_cast<int>(rng() % V);
  return ids;
}

struct ForwardRun {
  Matrix logits;
  std::vector<std::vector<Matrix>> weights;  // layer × head
};

ForwardRun run(const GptModel& model, const std::vector<int>& ids, const ExecutionOptions& exec) {
  ForwardRun r;
  GptRequest request;
  request.logit_positions = {0, static_cast<int>(ids.size()) - 1};
  request.on_layer = [&](int, const Matrix&, Trace&& t) {
    std::vector<Matrix> heads;
    for (const HeadTrace& h : t.batches[0].heads) heads.push_back(h.weights);
    r.weights.push_back(heads);
  };
  r.logits = gptForward(model, ids, request, exec).logits;
  return r;
}

double worstRelative(const Matrix& a, const Matrix& b) {
  return ((a - b).array().abs() / (1.0f + b.array().abs())).maxCoeff();
}

TEST(GptForward, FastPathMatchesTheReference) {
  // Heads of width 16 (row-major projections) and 32 (head-major, the packed product's panels); a
  // width of 128 makes the MLP's hidden rows 512 floats, stored with a longer stride (aliasFreeStride).
  for (auto [d, heads] : {std::pair{64, 4}, std::pair{64, 2}, std::pair{128, 4}}) {
    MemoryTensors file = bookModel(61, 80, d, 2, 7);
    const auto model = modelOf(file, heads);
    const std::vector<int> ids = someIds(75, 61, 3);
    ExecutionOptions reference;
    reference.fused = false;
    ExecutionOptions fast;
    fast.parallel = true;
    fast.threads = 2;
    fast.min_parallel_work = 0;
    const ForwardRun a = run(*model, ids, reference), b = run(*model, ids, fast);
    EXPECT_LT(worstRelative(b.logits, a.logits), 1e-5) << "width " << d << ", " << heads << " heads";
    ASSERT_EQ(a.weights.size(), 2u);
    for (std::size_t l = 0; l < a.weights.size(); ++l)
      for (int h = 0; h < heads; ++h)
        EXPECT_LT((b.weights[l][h] - a.weights[l][h]).cwiseAbs().maxCoeff(), 1e-6)
            << "width " << d << ", layer " << l << " head " << h;
  }
}

TEST(GptForward, TheSameBitsOnAnyNumberOfThreads) {
  MemoryTensors file = bookModel(50, 140, 64, 2, 11);
  const auto model = modelOf(file, 2);
  const std::vector<int> ids = someIds(130, 50, 5);
  Matrix first;
  for (int threads : {1, 2, 3}) {
    ExecutionOptions exec;
    exec.parallel = true;
    exec.threads = threads;
    exec.min_parallel_work = 0;
    const ForwardRun r = run(*model, ids, exec);
    if (threads == 1) first = r.logits;
    EXPECT_TRUE(r.logits.cwiseEqual(first).all()) << threads << " threads";
  }
}

// The model view's pass (lm/model_pass.h): the same numbers as the forward, kept so that any
// layer's trace and any position's logits come back without running it again. The layer asked for
// keeps its maps; every other streams its weights (GptRequest::weight_rows), whose reductions are
// the thumbnails and scores.
TEST(ModelPass, KeepsWhatTheForwardComputed) {
  MemoryTensors file = bookModel(53, 120, 64, 3, 17);
  const std::shared_ptr<const GptModel> model = modelOf(file, 4);
  const ExecutionOptions exec = onThreads(2);
  for (int T : {9, 100}) {  // thumbnails of the weights themselves, and of 64 × 64 blocks
    // Repeated tokens, so that the duplicate and induction scores are defined.
    std::vector<int> ids = someIds(T, 53, 19);
    for (int t = T / 2; t < T; ++t) ids[t] = ids[t - T / 2];
    std::vector<int> every(T);
    for (int t = 0; t < T; ++t) every[t] = t;
    // The forward the pass runs: layer 1's maps kept, the others' weights streamed (gathered
    // here, each row once, by the pass's threads), the logits at every position.
    GptRequest request;
    request.logit_positions = every;
    request.map_layers = {1};
    std::vector<std::vector<Matrix>> weights(3, std::vector<Matrix>(4, Matrix::Zero(T, T)));
    request.weight_rows = [&](int layer, const WeightRows& w) {
      for (int r = 0; r < w.rows; ++r)
        for (int j = 0; j < w.keys; ++j)
          weights[layer][w.head](w.first_row + r, j) = w.weights[static_cast<std::size_t>(r) * w.ld + j];
    };
    std::vector<Trace> traces(3);
    request.on_layer = [&](int layer, const Matrix&, Trace&& t) {
      if (layer == 1)
        for (int h = 0; h < 4; ++h) weights[1][h] = t.batches[0].heads[h].weights;
      traces[layer] = std::move(t);
    };
    const Matrix logits = gptForward(*model, ids, request, exec).logits;
    Trace kept;
    const auto pass = runModelPass(model, ids, exec, {}, 1, &kept);
    ASSERT_EQ(pass->cells, std::min(T, kThumbnailCells));
    // Any position's logits from the kept residual stream: the forward's bits.
    EXPECT_TRUE(gptLogits(*model, pass->forward.final_x, every, exec).cwiseEqual(logits).all()) << T;
    const TokenPatterns patterns(ids);
    for (int l = 0; l < 3; ++l) {
      const Trace t = layerTrace(*pass, l, exec, {});
      for (int h = 0; h < 4; ++h) {
        const Matrix& w = weights[l][h];
        // Any layer's trace again: the traced maps; the streamed weights are those within 1e-5.
        const Matrix& traced = t.batches[0].heads[h].weights;
        if (l == 1) {
          EXPECT_TRUE(traced.cwiseEqual(w).all()) << h;
          EXPECT_TRUE(kept.batches[0].heads[h].weights.cwiseEqual(w).all()) << h;
        } else {
          EXPECT_LT((traced - w).cwiseAbs().maxCoeff(), 1e-5) << "layer " << l << " head " << h;
        }
        // Each cell is the largest weight of its block; the colour range tops at the largest
        // weight below the first row (which is 1 on the first key).
        const HeadThumbnail& th = pass->head(l, h);
        const int S = pass->cells;
        EXPECT_EQ(th.largest, w.bottomRows(T - 1).maxCoeff());
        for (int i = 0; i < S; ++i)
          for (int j = 0; j < S; ++j) {
            const int r0 = ModelPass::blockStart(i, T, S), r1 = ModelPass::blockStart(i + 1, T, S);
            const int c0 = ModelPass::blockStart(j, T, S), c1 = ModelPass::blockStart(j + 1, T, S);
            ASSERT_GE(r1 - r0, 1);
            EXPECT_EQ(th.cells[static_cast<std::size_t>(i) * S + j], w.block(r0, c0, r1 - r0, c1 - c0).maxCoeff())
                << i << "," << j;
          }
        // The scores are those of the weights; the streamed rows' entropy comes from the scores.
        HeadTrace head;
        head.weights = w;
        const HeadScores want = headScores(traces[l], head, patterns), &got = th.scores;
        EXPECT_EQ(got.previous_token, want.previous_token);
        EXPECT_EQ(got.first_token, want.first_token);
        ASSERT_TRUE(got.has_duplicate && want.has_duplicate && got.has_induction && want.has_induction);
        EXPECT_EQ(got.duplicate_token, want.duplicate_token);
        EXPECT_EQ(got.induction, want.induction);
        EXPECT_NEAR(got.mean_entropy, want.mean_entropy, l == 1 ? 0.0 : 1e-5) << "layer " << l << " head " << h;
      }
    }
    // A layer as a chapter workspace: the engine's seeded module with the layer's weights loaded
    // over it computes the layer's maps again.
    std::vector<std::string> labels(T, "t");
    const Workspace ws = layerWorkspace(*pass, 2, labels);
    // Another text's workspace of the same layer shares its weights (not copied again): the same values.
    const Workspace shared = layerWorkspace(*pass, 2, labels, ws.model.parameters);
    EXPECT_EQ(shared.model.parameters, ws.model.parameters);
    const Workspace again_copied = layerWorkspace(*pass, 2, labels);
    const ParameterValues& copied = *again_copied.model.parameters;
    ASSERT_EQ(copied.size(), ws.model.parameters->size());
    for (std::size_t i = 0; i < copied.size(); ++i)
      EXPECT_TRUE(copied[i].value.cwiseEqual((*ws.model.parameters)[i].value).all()) << copied[i].name;
    const Trace again = computeTrace(ws.embeddings, ws.model, exec);
    for (int h = 0; h < 4; ++h)
      EXPECT_LT((again.batches[0].heads[h].weights - weights[2][h]).cwiseAbs().maxCoeff(), 1e-5) << h;
    EXPECT_EQ(again.batches.size(), 1u);
  }
}

// A trained model's attention weights are held once, packed; a layer a view shows unpacks them:
// the file's values, bit for bit, one set while anything holds it, and none for a layer streamed.
TEST(GptModel, HoldsItsAttentionPackedAloneAndShowsTheFilesWeights) {
  MemoryTensors file = bookModel(53, 120, 64, 3, 29);
  const std::shared_ptr<const GptModel> model = modelOf(file, 4);
  const ModelConfig& config = model->attention_config;
  const auto same = [&](const Matrix& m, const std::string& name) {
    const std::vector<float>& want = file.values(name);
    return static_cast<std::size_t>(m.size()) == want.size() &&
           std::memcmp(m.data(), want.data(), want.size() * sizeof(float)) == 0;
  };
  for (int l = 0; l < 3; ++l) {
    const GivenModule& a = model->blocks[static_cast<std::size_t>(l)].attention;
    EXPECT_EQ(a.parameters, nullptr) << "held twice";
    const std::shared_ptr<const Parameters> w = a.weights(config);
    EXPECT_EQ(a.weights(config), w) << "unpacked again while held";
    const std::string p = "trf_blocks." + std::to_string(l) + ".att.";
    const Linear* layers[] = {&w->query.at(0), &w->key.at(0), &w->value.at(0), &w->out_proj};
    const char* names[] = {"W_query", "W_key", "W_value", "out_proj"};
    for (int k = 0; k < 4; ++k) {
      EXPECT_TRUE(same(layers[k]->weight, p + names[k] + ".weight")) << l << " " << names[k];
      EXPECT_TRUE(same(layers[k]->bias, p + names[k] + ".bias")) << l << " " << names[k];
    }
  }
  // A pass keeping layer 1: its trace holds layer 1's weights, as layerTrace's does layer 2's; the
  // layers streamed hold none.
  const std::vector<int> ids = someIds(40, 53, 3);
  Trace kept;
  const auto pass = runModelPass(model, ids, onThreads(2), {}, 1, &kept);
  EXPECT_EQ(kept.parameters, model->blocks[1].attention.weights(config));
  const Trace two = layerTrace(*pass, 2, onThreads(2), {});
  ASSERT_NE(two.parameters, nullptr);
  EXPECT_TRUE(same(two.parameters->query.at(0).weight, "trf_blocks.2.att.W_query.weight"));
  EXPECT_EQ(model->blocks[0].attention.weights(config).use_count(), 1) << "a streamed layer's weights unpacked";
  // The same maps as from the module given in torch's layout beside its panels.
  const std::shared_ptr<const Parameters> one = model->blocks[1].attention.weights(config);
  const GivenModule unpacked{one, packModule(*one, config)};
  const Trace again = computeTrace(pass->forward.attention_inputs[1], config, unpacked, onThreads(2));
  for (int h = 0; h < 4; ++h)
    EXPECT_TRUE(again.batches[0]
                    .heads[static_cast<std::size_t>(h)]
                    .weights.cwiseEqual(kept.batches[0].heads[static_cast<std::size_t>(h)].weights)
                    .all())
        << h;
}

// An edit after a text's first tokens (GptRequest::prefix): the pass that takes the rows before
// the edit from the previous one gives the same bits as a pass of every row — thumbnails, scores,
// each layer's attention input, the residual stream, the kept layer's trace — on heads of width 16
// (row-major projections) and 32 (head-major), on one thread and two, and chained from one edit
// to the next; past 64 tokens (to 300) with every row's attention computed again. Rows it may not reuse
// (another kept layer) are all computed.
TEST(ModelPass, AnEditRecomputesOnlyTheRowsAfterIt) {
  for (int heads : {4, 2}) {
    MemoryTensors file = bookModel(53, 320, 64, 3, 29);  // past 128 and 256: the key tiles', the MLP's row blocks
    const std::shared_ptr<const GptModel> model = modelOf(file, heads);
    for (int threads : {1, 2}) {
      const ExecutionOptions exec = onThreads(threads);
      const auto same = [&](const ModelPass& a, const ModelPass& b, const Trace& ta, const Trace& tb,
                            const std::string& what) {
        ASSERT_EQ(a.heads.size(), b.heads.size()) << what;
        for (std::size_t i = 0; i < a.heads.size(); ++i) {
          const HeadThumbnail &x = a.heads[i], &y = b.heads[i];
          EXPECT_EQ(x.cells, y.cells) << what << ", head " << i;
          EXPECT_EQ(x.largest, y.largest) << what << ", head " << i;
          EXPECT_EQ(x.scores.previous_token, y.scores.previous_token) << what << ", head " << i;
          EXPECT_EQ(x.scores.first_token, y.scores.first_token) << what << ", head " << i;
          EXPECT_EQ(x.scores.duplicate_token, y.scores.duplicate_token) << what << ", head " << i;
          EXPECT_EQ(x.scores.induction, y.scores.induction) << what << ", head " << i;
          EXPECT_EQ(x.scores.mean_entropy, y.scores.mean_entropy) << what << ", head " << i;
          EXPECT_EQ(x.scores.has_induction, y.scores.has_induction) << what << ", head " << i;
        }
        for (int l = 0; l < 3; ++l)
          EXPECT_TRUE(a.forward.attention_inputs[l].cwiseEqual(b.forward.attention_inputs[l]).all()) << what << l;
        EXPECT_TRUE(a.forward.final_x.cwiseEqual(b.forward.final_x).all()) << what;
        for (int h = 0; h < heads; ++h) {
          const HeadTrace &x = ta.batches[0].heads[h], &y = tb.batches[0].heads[h];
          EXPECT_TRUE(x.weights.cwiseEqual(y.weights).all()) << what << ", kept head " << h;
          EXPECT_TRUE(x.values.cwiseEqual(y.values).all()) << what << ", kept head " << h;
        }
        EXPECT_TRUE(ta.batches[0].output.cwiseEqual(tb.batches[0].output).all()) << what;
      };
      // A text with repeats (duplicate and induction scores defined), then edits as a user makes them.
      std::vector<int> text = someIds(40, 53, 31);
      for (int t = 20; t < 40; ++t) text[t] = text[t - 20];
      Trace kept;
      std::shared_ptr<const ModelPass> previous = runModelPass(model, text, exec, {}, 1, &kept);
      struct Edit {
        const char* what;
        std::function<void(std::vector<int>&)> change;
        int reused;  // rows taken from the previous pass
        bool whole_attention = false;
      };
      const std::vector<Edit> edits = {
          {"a token appended", [](std::vector<int>& t) { t.push_back(7); }, 40},
          {"another appended", [](std::vector<int>& t) { t.push_back(t[3]); }, 41},
          {"a token changed in the middle", [](std::vector<int>& t) { t[25] = (t[25] + 1) % 53; }, 25},
          {"a token inserted", [](std::vector<int>& t) { t.insert(t.begin() + 10, (t[10] + 1) % 53); }, 10},
          {"the last token deleted", [](std::vector<int>& t) { t.pop_back(); }, 41},
          {"the first token changed", [](std::vector<int>& t) { t[0] = (t[0] + 1) % 53; }, 0},
          {"grown to 64 tokens", [](std::vector<int>& t) { t.resize(64, 11); }, 42},
          // Past kThumbnailCells a thumbnail's cell is a block of rows: the rows' attention is
          // computed again (whole_attention), their MLP not.
          {"past 64 tokens", [](std::vector<int>& t) { t.push_back(12); }, 64, true},
          {"back to 64", [](std::vector<int>& t) { t.pop_back(); }, 63, true},
          {"back within 64 rows", [](std::vector<int>& t) { t[62] = (t[62] + 1) % 53; }, 62},
          {"grown to 110", [](std::vector<int>& t) { t.resize(110, 5); }, 64, true},
          {"a token changed at 109", [](std::vector<int>& t) { t[109] = 6; }, 109, true},
          {"a token changed at 80", [](std::vector<int>& t) { t[80] = 7; }, 80, true},
          {"a token appended at 110", [](std::vector<int>& t) { t.push_back(t[20]); }, 110, true},
          {"the first token changed, long", [](std::vector<int>& t) { t[0] = (t[0] + 2) % 53; }, 0},
          {"shortened to 90", [](std::vector<int>& t) { t.resize(90); }, 89, true},
          // Past the attention's 128-key tiles and the MLP's 128-row blocks, which start at the
          // first new row here and at 0 in a pass of every row.
          {"grown to 300", [](std::vector<int>& t) { t.resize(300, 9); }, 90, true},
          {"a token changed at 131", [](std::vector<int>& t) { t[131] = (t[131] + 1) % 53; }, 131, true},
          {"a token changed at 256", [](std::vector<int>& t) { t[256] = (t[256] + 1) % 53; }, 256, true},
          {"a token changed at 299", [](std::vector<int>& t) { t[299] = (t[299] + 1) % 53; }, 299, true},
      };
      for (const Edit& e : edits) {
        e.change(text);
        Trace kept_reused, kept_whole;
        const auto reused = runModelPass(model, text, exec, {}, 1, &kept_reused, previous.get());
        const auto whole = runModelPass(model, text, exec, {}, 1, &kept_whole);
        const std::string what = std::string(e.what) + ", " + std::to_string(heads) + " heads, " +
                                 std::to_string(threads) + " threads";
        EXPECT_EQ(reused->reused_rows, e.reused) << what;
        EXPECT_EQ(reused->whole_attention, e.whole_attention) << what;
        // Every pass here keeps its projections: a reused row is never projected again, and the
        // pass that reuses rows takes them over (one set held).
        EXPECT_EQ(reused->reused_projections, e.reused > 0) << what;
        EXPECT_FALSE(previous->keepsProjections(3)) << what << ": taken over, or dropped by a pass that reuses none";
        EXPECT_TRUE(reused->keepsProjections(3)) << what;
        same(*reused, *whole, kept_reused, kept_whole, what);
        previous = reused;
      }
      // A pass whose projections the next one took still gives its rows, projected again: the same
      // bits (a cancelled pass leaves its previous so).
      std::vector<int> other_end = text;
      other_end.back() = (other_end.back() + 1) % 53;
      Trace kept_taker, kept_after, kept_fresh;
      const auto taker = runModelPass(model, other_end, exec, {}, 1, &kept_taker, previous.get());
      ASSERT_FALSE(previous->keepsProjections(3));
      other_end.back() = (other_end.back() + 1) % 53;
      const auto after = runModelPass(model, other_end, exec, {}, 1, &kept_after, previous.get());
      EXPECT_EQ(after->reused_rows, 299);
      EXPECT_FALSE(after->reused_projections);
      same(*after, *runModelPass(model, other_end, exec, {}, 1, &kept_fresh), kept_after, kept_fresh,
           "after its projections were taken");
      // A pass cancelled (a newer text) gives the projections it took back.
      ASSERT_TRUE(after->keepsProjections(3));
      std::atomic<bool> stop{true};
      ExecutionOptions cancelled = exec;
      cancelled.cancel = &stop;
      other_end.back() = (other_end.back() + 1) % 53;
      Trace kept_cancelled;
      EXPECT_THROW(runModelPass(model, other_end, cancelled, {}, 1, &kept_cancelled, after.get()), Cancelled);
      EXPECT_TRUE(after->keepsProjections(3)) << "given back";
      // Another layer kept: nothing is taken. The kept layer's weights come from the traced path,
      // the others' from the streamed rows, which differ in the last bits, and the rows after them.
      text[30] = (text[30] + 1) % 53;
      Trace other;
      EXPECT_EQ(runModelPass(model, text, exec, {}, 2, &other, previous.get())->reused_rows, 0);
    }
  }
}

// A pass takes the previous pass's projections over block by block, in place, so two sets are
// never held. Failing after some layers, it gives back its own blocks for those, whose rows before
// the first edited one are the previous pass's: a later pass reuses them up to there, and projects
// again past it.
TEST(ModelPass, APassThatFailsGivesBackTheRowsItTook) {
  MemoryTensors file = bookModel(53, 120, 64, 3, 41);
  // Token 52 leaves 2e38 in column 5 of the residual stream; block 1's attention adds 2e38 more:
  // beyond float32 in block 1, on the rows of token 52 alone.
  for (int c = 0; c < 64; ++c) file.values("tok_emb.weight")[52 * 64 + c] = 0.0f;
  file.values("tok_emb.weight")[52 * 64 + 5] = 2e38f;
  file.values("trf_blocks.1.att.out_proj.bias")[5] = 2e38f;
  const std::shared_ptr<const GptModel> model = modelOf(file, 4);
  const ExecutionOptions exec = onThreads(2);
  const std::vector<int> text = someIds(100, 52, 43);  // no token 52; past 64 rows: whole_attention
  // The pass over `text`, after a pass over it with token 52 at row 70 failed.
  const auto failedAfter = [&]() {
    Trace kept;
    std::shared_ptr<const ModelPass> previous = runModelPass(model, text, exec, {}, -1, &kept);
    EXPECT_TRUE(previous->keepsProjections(3));
    std::vector<int> failing = text;
    failing[70] = 52;
    try {
      runModelPass(model, failing, exec, {}, -1, &kept, previous.get());
      ADD_FAILURE() << "no overflow";
    } catch (const ComputeError& e) {
      EXPECT_NE(std::string(e.what()).find("block 1"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(previous->keepsProjections(3)) << "given back";
    return previous;
  };
  const auto same = [&](int edited_row, bool projections, const std::string& what) {
    const std::shared_ptr<const ModelPass> previous = failedAfter();
    std::vector<int> ids = text;
    ids[static_cast<std::size_t>(edited_row)] = (ids[static_cast<std::size_t>(edited_row)] + 1) % 52;
    Trace a, b;
    const auto reused = runModelPass(model, ids, exec, {}, -1, &a, previous.get());
    const auto fresh = runModelPass(model, ids, exec, {}, -1, &b);
    EXPECT_EQ(reused->reused_rows, edited_row) << what;
    EXPECT_EQ(reused->reused_projections, projections) << what;
    for (std::size_t i = 0; i < fresh->heads.size(); ++i)
      EXPECT_EQ(reused->heads[i].cells, fresh->heads[i].cells) << what << ", head " << i;
    EXPECT_TRUE(reused->forward.final_x.cwiseEqual(fresh->forward.final_x).all()) << what;
    for (int l = 0; l < 3; ++l)
      EXPECT_TRUE(reused->forward.attention_inputs[static_cast<std::size_t>(l)]
                      .cwiseEqual(fresh->forward.attention_inputs[static_cast<std::size_t>(l)])
                      .all())
          << what << ", layer " << l;
  };
  same(60, true, "an edit before the failed one's");  // block 0's rows 0 … 69 are the previous pass's
  same(80, false, "an edit after the failed one's");  // … but not its rows 70 … 79
}

// The engine's part (GptRequest::prefix_projections, TraceRequest::reuse): a pass over a longer
// text, cancelled in layer 1, leaves layer 0's block in its own kept prefix and layer 1's back where
// it came from, laid out for the new text with its first rows the previous pass's, bit for bit;
// layer 2's untouched. Head-major blocks (2 heads of 32), a new length: every block moved.
TEST(GptForward, ACancelledPassLeavesEachBlockWhereItCanBeUsed) {
  MemoryTensors file = bookModel(53, 200, 64, 3, 47);
  const std::shared_ptr<const GptModel> model = modelOf(file, 2);
  const ExecutionOptions exec = onThreads(2);
  const std::vector<int> before = someIds(100, 53, 5);
  std::vector<int> after(before.begin(), before.begin() + 70);
  for (int t = 0; t < 50; ++t) after.push_back((t * 7) % 53);  // 120 tokens, rows 0 … 69 the same
  const auto passOver = [&](const std::vector<int>& ids, GptPrefix& prefix) {
    GptRequest r;
    r.keep_prefix = &prefix;
    r.keep_projections = true;
    r.no_maps = true;
    gptForward(*model, ids, r, exec);
  };
  GptPrefix a, fresh;
  passOver(before, a);
  passOver(after, fresh);  // the blocks a pass of every row lays out for the new text
  std::vector<KeptProjections> blocks = std::move(a.projections);
  a.projections.clear();
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_TRUE(blocks[0].head_major) << "heads of 32: head-major blocks";
  std::atomic<bool> stop{false};
  ExecutionOptions cancelled = exec;
  cancelled.cancel = &stop;
  GptRequest r;
  r.prefix = &a;
  r.prefix_rows = 70;
  r.whole_attention = true;  // as a long text's view does
  r.prefix_projections = &blocks;
  GptPrefix kept;
  r.keep_prefix = &kept;
  r.keep_projections = true;
  r.keep_room = 200;
  r.no_maps = true;
  r.weight_rows = [&](int layer, const WeightRows&) {
    if (layer == 1) stop = true;
  };
  EXPECT_THROW(gptForward(*model, after, r, cancelled), Cancelled);
  const auto firstRows = [](const KeptProjections& k, const KeptProjections& want, int rows) {
    // Head-major: width ÷ 32 blocks of tokens × 32.
    for (int c = 0; c < k.width / 32; ++c)
      if (std::memcmp(k.qkv.data() + static_cast<std::size_t>(c) * k.tokens * 32,
                      want.qkv.data() + static_cast<std::size_t>(c) * want.tokens * 32,
                      static_cast<std::size_t>(rows) * 32 * sizeof(float)) != 0)
        return false;
    return true;
  };
  EXPECT_TRUE(blocks[0].qkv.empty()) << "layer 0's block is the new pass's";
  ASSERT_EQ(kept.projections.size(), 3u);
  EXPECT_EQ(kept.projections[0].tokens, 120);
  EXPECT_EQ(kept.projections[0].rows, 120);
  EXPECT_TRUE(firstRows(kept.projections[0], fresh.projections[0], 120)) << "layer 0 as a pass of every row";
  EXPECT_EQ(blocks[1].tokens, 120) << "layer 1's block back, in the new layout";
  EXPECT_EQ(blocks[1].rows, 70);
  EXPECT_TRUE(blocks[1].holds(70, 3 * 64));
  EXPECT_GE(blocks[1].qkv.capacity(), static_cast<std::size_t>(200) * 3 * 64) << "its room";
  EXPECT_TRUE(firstRows(blocks[1], fresh.projections[1], 70)) << "layer 1's first rows";
  EXPECT_EQ(blocks[2].tokens, 100) << "layer 2's untouched";
  EXPECT_EQ(blocks[2].rows, 100);
  // The set given back serves a pass over the new text from row 70, with a fresh pass's bits.
  GptRequest again = r;
  again.prefix_projections = nullptr;
  a.projections = std::move(blocks);
  a.projections[0] = std::move(kept.projections[0]);
  a.projections[0].rows = 70;
  GptPrefix done;
  again.keep_prefix = &done;
  again.weight_rows = nullptr;
  gptForward(*model, after, again, exec);
  for (int l = 0; l < 3; ++l)
    EXPECT_TRUE(
        firstRows(done.projections[static_cast<std::size_t>(l)], fresh.projections[static_cast<std::size_t>(l)], 120))
        << "layer " << l;
  EXPECT_TRUE(done.final_x.cwiseEqual(fresh.final_x).all());
}

// The next tokens asked for at some positions (GptRequest::final_rows): the last block's MLP runs
// on those rows alone. Their residual stream and logits, the thumbnails and scores, are a pass of
// every row's bits; another position's logits, asked for later, are finished then with the same
// bits; a later pass over the same first tokens finishes a prefix row it is asked for, and one
// that asks for every row finishes them all.
TEST(ModelPass, TheLastMlpRunsOnlyOnTheRowsWhoseNextTokensAreAskedFor) {
  const std::shared_ptr<const GptModel> model = fourHeadModel(37);
  for (int threads : {1, 2}) {
    const ExecutionOptions exec = onThreads(threads);
    for (int T : {40, 150}) {  // below and above the thumbnails' 64 cells and the MLP's 128-row blocks
      const std::vector<int> ids = someIds(T, 53, 41);
      std::vector<int> every(T);
      for (int t = 0; t < T; ++t) every[t] = t;
      const std::string what = std::to_string(threads) + " threads, T = " + std::to_string(T);
      Trace kept_whole, kept_part;
      const auto whole = runModelPass(model, ids, exec, {}, 1, &kept_whole);
      const auto part = runModelPass(model, ids, exec, {}, 1, &kept_part, nullptr, {3, T - 1});
      const Matrix logits = gptLogits(*model, whole->forward.final_x, every, exec);
      ASSERT_EQ(part->forward.finished.size(), static_cast<std::size_t>(T)) << what;
      for (int t = 0; t < T; ++t) {
        const bool asked = t == 3 || t == T - 1;
        EXPECT_EQ(part->forward.finished[t], asked ? 1 : 0) << what << ", row " << t;
        // The rows asked for are the whole pass's; the others lack the last MLP, so they differ.
        EXPECT_EQ(part->forward.final_x.row(t).cwiseEqual(whole->forward.final_x.row(t)).all(), asked)
            << what << ", row " << t;
      }
      EXPECT_TRUE(gptLogits(*model, part->forward, {T - 1, 3}, exec)
                      .cwiseEqual(gptLogits(*model, whole->forward.final_x, {T - 1, 3}, exec))
                      .all())
          << what;
      // Every position asked for afterwards: finished then, the whole pass's bits.
      EXPECT_TRUE(gptLogits(*model, part->forward, every, exec).cwiseEqual(logits).all()) << what;
      for (std::size_t i = 0; i < whole->heads.size(); ++i) {
        EXPECT_EQ(part->heads[i].cells, whole->heads[i].cells) << what << ", head " << i;
        EXPECT_EQ(part->heads[i].scores.mean_entropy, whole->heads[i].scores.mean_entropy) << what << ", head " << i;
      }
      EXPECT_TRUE(kept_part.batches[0].output.cwiseEqual(kept_whole.batches[0].output).all()) << what;
      // gptForward's own logits with final_rows: those positions finished too.
      GptRequest request;
      request.logit_positions = {5, T - 1};
      const Matrix every_row = gptForward(*model, ids, request, exec).logits;
      request.final_rows = {T - 1};
      EXPECT_TRUE(gptForward(*model, ids, request, exec).logits.cwiseEqual(every_row).all()) << what;

      // A token appended: the previous rows reused, row 10 (unfinished there) asked for now.
      std::vector<int> longer = ids;
      longer.push_back(7);
      Trace kept_longer, kept_every;
      const auto edited = runModelPass(model, longer, exec, {}, 1, &kept_longer, part.get(), {10, T});
      ASSERT_EQ(edited->reused_rows, T) << what;
      const auto fresh = runModelPass(model, longer, exec, {}, 1, &kept_every);
      for (int t : {3, 10, T - 1, T}) {
        EXPECT_EQ(edited->forward.finished[t], 1) << what << ", row " << t;
        EXPECT_TRUE(edited->forward.final_x.row(t).cwiseEqual(fresh->forward.final_x.row(t)).all())
            << what << ", row " << t;
      }
      EXPECT_EQ(edited->forward.finished[11], 0) << what;
      // And a pass that asks for every row finishes the prefix's too.
      Trace kept_all;
      std::vector<int> again = longer;
      again.push_back(9);
      const auto all = runModelPass(model, again, exec, {}, 1, &kept_all, edited.get());
      Trace kept_all_fresh;
      const auto all_fresh = runModelPass(model, again, exec, {}, 1, &kept_all_fresh);
      ASSERT_GT(all->reused_rows, 0) << what;
      EXPECT_TRUE(all->forward.final_x.cwiseEqual(all_fresh->forward.final_x).all()) << what;
      EXPECT_EQ(std::count(all->forward.finished.begin(), all->forward.finished.end(), 1), T + 2) << what;
    }
  }
}

// A layer kept as its outputs alone (KeptLayer::Outputs: what the app shows first for a long text,
// its maps following): the pass streams every layer, so it is a pass that keeps no layer's, bit for
// bit; the layer's outputs are the streamed layer's; its maps, traced afterwards without outputs,
// are layerTrace's. Such passes reuse each other's rows whichever layer each shows, and a reused
// pass's kept outputs are whole.
TEST(ModelPass, ALayersMapsMayFollowItsOutputs) {
  const std::shared_ptr<const GptModel> model = fourHeadModel(43);
  for (int threads : {1, 2}) {
    const ExecutionOptions exec = onThreads(threads);
    for (int T : {40, 150}) {  // a reuse of the rows' own thumbnail rows, and one of every row's attention
      const std::vector<int> ids = someIds(T, 53, 47);
      const std::string what = std::to_string(threads) + " threads, T = " + std::to_string(T);
      Trace outputs;
      const auto pass = runModelPass(model, ids, exec, {}, 1, &outputs, nullptr, {T - 1}, KeptLayer::Outputs);
      const auto streamed = runModelPass(model, ids, exec, {}, -1, nullptr, nullptr, {T - 1});
      EXPECT_EQ(pass->kept_layer, -1) << what;
      for (std::size_t i = 0; i < pass->heads.size(); ++i) {
        EXPECT_EQ(pass->heads[i].cells, streamed->heads[i].cells) << what << ", head " << i;
        EXPECT_EQ(pass->heads[i].scores.mean_entropy, streamed->heads[i].scores.mean_entropy) << what << ", head " << i;
      }
      EXPECT_TRUE(pass->forward.final_x.cwiseEqual(streamed->forward.final_x).all()) << what;
      // The outputs: those of layer 1 in a forward that keeps no maps and streams every weight.
      GptRequest request;
      request.no_maps = true;
      request.weight_rows = [](int, const WeightRows&) {};
      Trace layer1;
      request.on_layer = [&](int layer, const Matrix&, Trace&& t) {
        if (layer == 1) layer1 = std::move(t);
      };
      gptForward(*model, ids, request, exec);
      EXPECT_TRUE(outputs.batches[0].heads.empty()) << what;
      EXPECT_TRUE(outputs.batches[0].context.cwiseEqual(layer1.batches[0].context).all()) << what;
      EXPECT_TRUE(outputs.batches[0].output.cwiseEqual(layer1.batches[0].output).all()) << what;
      // The maps that follow: layerTrace's heads, and no outputs (those are kept from the first).
      const Trace maps = layerTrace(*pass, 1, exec, {}, false), whole = layerTrace(*pass, 1, exec, {});
      EXPECT_EQ(maps.batches[0].output.size(), 0) << what;
      EXPECT_EQ(maps.batches[0].context.size(), 0) << what;
      ASSERT_EQ(maps.batches[0].heads.size(), 4u) << what;
      for (int h = 0; h < 4; ++h) {
        const HeadTrace &a = maps.batches[0].heads[h], &b = whole.batches[0].heads[h];
        EXPECT_TRUE(a.weights.cwiseEqual(b.weights).all()) << what << ", head " << h;
        EXPECT_TRUE(a.scores.cwiseEqual(b.scores).all()) << what << ", head " << h;
        EXPECT_TRUE(a.queries.cwiseEqual(b.queries).all()) << what << ", head " << h;
        EXPECT_TRUE(a.context.cwiseEqual(b.context).all()) << what << ", head " << h;
      }
      // A token edited, another layer shown: the rows before it reused all the same, and the
      // outputs kept whole (the rows before the edit are not 0), a pass of every row's bits.
      std::vector<int> edited = ids;
      edited[T / 2] = (edited[T / 2] + 1) % 53;
      Trace reused_outputs, fresh_outputs;
      const auto reused = runModelPass(model, edited, exec, {}, 2, &reused_outputs, pass.get(), {T - 1},
                                       KeptLayer::Outputs);
      const auto fresh = runModelPass(model, edited, exec, {}, 2, &fresh_outputs, nullptr, {T - 1}, KeptLayer::Outputs);
      EXPECT_EQ(reused->reused_rows, T / 2) << what;
      EXPECT_EQ(reused->whole_attention, T > kThumbnailCells) << what;
      EXPECT_TRUE(reused->forward.final_x.cwiseEqual(fresh->forward.final_x).all()) << what;
      EXPECT_TRUE(reused_outputs.batches[0].output.cwiseEqual(fresh_outputs.batches[0].output).all()) << what;
      EXPECT_TRUE(reused_outputs.batches[0].context.cwiseEqual(fresh_outputs.batches[0].context).all()) << what;
      EXPECT_GT(reused_outputs.batches[0].output.topRows(T / 2).cwiseAbs().maxCoeff(), 0.0f) << what;
      for (std::size_t i = 0; i < reused->heads.size(); ++i)
        EXPECT_EQ(reused->heads[i].cells, fresh->heads[i].cells) << what << ", head " << i;
      // A pass that traces its layer's maps (KeptLayer::Maps) differs in the last bits: not reused.
      Trace traced;
      EXPECT_EQ(runModelPass(model, edited, exec, {}, 2, &traced, pass.get())->reused_rows, 0) << what;
    }
  }
}

// layerTrace takes the layer's projections from its pass (lent, not projected again): the trace of
// the layer's attention input alone, bit for bit, and the pass holds them after as before — the
// next text's pass still reuses them. Also when an edited text's pass holds them (its rows before
// the edit a pass before's) and on 1 or 2 threads.
TEST(ModelPass, ALayersTraceFromItsPasssProjectionsIsTheTraceOfItsInput) {
  const std::shared_ptr<const GptModel> model = fourHeadModel(61);
  for (int threads : {1, 2}) {
    const ExecutionOptions exec = onThreads(threads);
    const std::vector<int> ids = someIds(90, 53, 5);
    std::vector<int> edited = ids;
    edited[30] = (edited[30] + 1) % 53;
    Trace unused;
    const auto first = runModelPass(model, ids, exec, {}, 0, &unused, nullptr, {89}, KeptLayer::Outputs);
    const auto pass = runModelPass(model, edited, exec, {}, 0, &unused, first.get(), {89}, KeptLayer::Outputs);
    ASSERT_TRUE(pass->reused_projections);
    for (int layer : {0, 2}) {
      const std::string what = std::to_string(threads) + " threads, layer " + std::to_string(layer);
      ASSERT_TRUE(pass->keepsProjections(3)) << what;
      const Trace lent = layerTrace(*pass, layer, exec, {});
      const Trace alone = computeTrace(pass->forward.attention_inputs[static_cast<std::size_t>(layer)],
                                       model->attention_config,
                                       model->blocks[static_cast<std::size_t>(layer)].attention, exec, TraceRequest(),
                                       {});
      EXPECT_TRUE(pass->keepsProjections(3)) << what << ": given back";
      const BatchTrace &a = lent.batches[0], &b = alone.batches[0];
      EXPECT_TRUE(a.output.cwiseEqual(b.output).all()) << what;
      EXPECT_TRUE(a.context.cwiseEqual(b.context).all()) << what;
      for (int h = 0; h < 4; ++h) {
        const HeadTrace &x = a.heads[static_cast<std::size_t>(h)], &y = b.heads[static_cast<std::size_t>(h)];
        EXPECT_TRUE(x.queries.cwiseEqual(y.queries).all()) << what << ", head " << h;
        EXPECT_TRUE(x.keys.cwiseEqual(y.keys).all()) << what << ", head " << h;
        EXPECT_TRUE(x.values.cwiseEqual(y.values).all()) << what << ", head " << h;
        EXPECT_TRUE(x.scores.cwiseEqual(y.scores).all()) << what << ", head " << h;
        EXPECT_TRUE(x.weights.cwiseEqual(y.weights).all()) << what << ", head " << h;
      }
    }
    // The lent rows are read as they are, not projected again: one of them altered in the pass's
    // block shows in the trace (a layout that did not match would have projected them afresh).
    {
      std::vector<KeptProjections> held = pass->takeProjections();
      ASSERT_EQ(held.size(), 3u);
      const float was = held[1].qkv[0];
      held[1].qkv[0] = was + 1.0f;
      pass->keepProjections(std::move(held));
      const Trace altered = layerTrace(*pass, 1, exec, {});
      const Trace alone = computeTrace(pass->forward.attention_inputs[1], model->attention_config,
                                       model->blocks[1].attention, exec, TraceRequest(), {});
      EXPECT_FALSE(altered.batches[0].heads[0].queries.cwiseEqual(alone.batches[0].heads[0].queries).all())
          << threads << " threads: the lent rows were projected again";
      held = pass->takeProjections();
      held[1].qkv[0] = was;
      pass->keepProjections(std::move(held));
    }
    // The pass's projections serve the next edit as before.
    std::vector<int> again = edited;
    again[60] = (again[60] + 1) % 53;
    const auto next = runModelPass(model, again, exec, {}, 0, &unused, pass.get(), {89}, KeptLayer::Outputs);
    const auto fresh = runModelPass(model, again, exec, {}, 0, &unused, nullptr, {89}, KeptLayer::Outputs);
    EXPECT_TRUE(next->reused_projections);
    EXPECT_TRUE(next->forward.final_x.cwiseEqual(fresh->forward.final_x).all());
  }
}

// The engine's part of it (TraceRequest::first_row): refused where rows before it would be needed.
TEST(GptForward, FirstRowNeedsAnEarlierPassAndNoKeptHead) {
  MemoryTensors file = bookModel(53, 120, 64, 1, 3);
  const auto model = modelOf(file, 2);
  const Matrix x = Matrix::Random(10, 64);
  const GptBlock& b = model->blocks[0];
  KeptProjections kept;
  TraceRequest keep = TraceRequest::only({});
  keep.keep_projections = &kept;
  computeTrace(x, model->attention_config, b.attention, {}, keep);
  EXPECT_EQ(kept.tokens, 10);
  TraceRequest later = TraceRequest::only({});
  later.first_row = 4;
  EXPECT_THROW(computeTrace(x, model->attention_config, b.attention, {}, later), InputError);  // no earlier pass
  later.earlier = &kept;
  EXPECT_NO_THROW(computeTrace(x, model->attention_config, b.attention, {}, later));
  TraceRequest traced;  // every head kept
  traced.first_row = 4;
  traced.earlier = &kept;
  EXPECT_THROW(computeTrace(x, model->attention_config, b.attention, {}, traced), InputError);
  later.first_row = 10;  // not a row of the text
  EXPECT_THROW(computeTrace(x, model->attention_config, b.attention, {}, later), InputError);
  // The earlier rows' weights again: only into weight_rows, every row of every head once, the same
  // bits as a pass of every row's; the later rows' outputs a pass of every row's too.
  later.first_row = 4;
  later.weights_before_first_row = true;
  EXPECT_THROW(computeTrace(x, model->attention_config, b.attention, {}, later), InputError);  // nowhere to go
  Matrix every = Matrix::Constant(2 * 10, 10, -1), again = every;
  std::vector<int> calls(2 * 10, 0);
  const auto into = [&calls](Matrix& m) {
    return [&m, &calls](const WeightRows& w) {
      for (int r = 0; r < w.rows; ++r) {
        ++calls[static_cast<std::size_t>(w.head * 10 + w.first_row + r)];
        for (int j = 0; j < 10; ++j)
          m(w.head * 10 + w.first_row + r, j) = j < w.keys ? w.weights[static_cast<std::size_t>(r) * w.ld + j] : 0.0f;
      }
    };
  };
  TraceRequest whole = TraceRequest::only({});
  whole.weight_rows = into(every);
  const Trace all = computeTrace(x, model->attention_config, b.attention, {}, whole);
  std::fill(calls.begin(), calls.end(), 0);
  later.weight_rows = into(again);
  const Trace part = computeTrace(x, model->attention_config, b.attention, {}, later);
  EXPECT_TRUE(again.cwiseEqual(every).all()) << "every row's weights, the earlier ones attended again";
  EXPECT_EQ(calls, std::vector<int>(2 * 10, 1)) << "each row of each head handed over once";
  EXPECT_TRUE(part.batches[0].output.bottomRows(6).cwiseEqual(all.batches[0].output.bottomRows(6)).all());
}

// A long text's edit (GptRequest::whole_attention): the rows before it attended again from the
// prefix's projections, or, from a prefix kept without them, projected again from its attention
// inputs — either way a pass of every row's bits, its weights streamed for every row.
TEST(GptForward, EveryRowsAttentionAgainWithOrWithoutTheKeptProjections) {
  const std::shared_ptr<const GptModel> model = fourHeadModel(53);
  const ExecutionOptions exec = onThreads(2);
  std::vector<int> ids = someIds(150, 53, 59);
  // Which way the rows before q went: attended from their projections, the layers' outputs there
  // are not computed (0); projected again, computed whole.
  std::vector<float> before_q;  // per layer, the largest |output| of the rows before q
  const auto pass = [&](const GptPrefix* prefix, int q, GptPrefix* keep, bool projections) {
    GptRequest r;
    r.logit_positions = {0, 70, 149};
    r.no_maps = true;
    before_q.clear();
    r.on_layer = [&before_q, q](int, const Matrix&, Trace&& t) {
      before_q.push_back(q > 0 ? t.batches[0].output.topRows(q).cwiseAbs().maxCoeff() : 0.0f);
    };
    auto weights = std::make_shared<std::vector<Matrix>>(3 * 4, Matrix::Constant(150, 150, -1));
    r.weight_rows = [weights](int layer, const WeightRows& w) {
      for (int i = 0; i < w.rows; ++i)  // every key: those past the rows' block are masked, 0
        for (int j = 0; j < 150; ++j)
          (*weights)[layer * 4 + w.head](w.first_row + i,
                                         j) = j < w.keys ? w.weights[static_cast<std::size_t>(i) * w.ld + j] : 0.0f;
    };
    r.prefix = prefix;
    r.prefix_rows = q;
    r.whole_attention = prefix != nullptr;
    r.keep_prefix = keep;
    r.keep_projections = projections;
    return std::pair{gptForward(*model, ids, r, exec).logits, weights};
  };
  GptPrefix with, without, unused;
  pass(nullptr, 0, &with, true);
  pass(nullptr, 0, &without, false);
  ASSERT_EQ(with.projections.size(), 3u);
  ASSERT_TRUE(without.projections.empty());
  ids[120] = (ids[120] + 1) % 53;
  const auto [logits, weights] = pass(nullptr, 0, &unused, false);
  for (const GptPrefix* prefix : {&with, &without}) {
    const auto [l, w] = pass(prefix, 120, &unused, false);
    const std::string what = prefix == &with ? "from the kept projections" : "projected again";
    ASSERT_EQ(before_q.size(), 3u);
    for (float largest : before_q) EXPECT_EQ(largest == 0.0f, prefix == &with) << what;
    EXPECT_TRUE(l.cwiseEqual(logits).all()) << what;
    for (std::size_t i = 0; i < w->size(); ++i)
      EXPECT_TRUE((*w)[i].cwiseEqual((*weights)[i]).all()) << what << ", layer " << i / 4 << " head " << i % 4;
  }
}

// Maps given as they are (a notebook's show_attention): the pass of a model's own maps gives the
// thumbnails and scores the model's pass gives, the same name being the same token.
TEST(ModelPass, OfGivenMapsAsTheModelsOwn) {
  MemoryTensors file = bookModel(53, 120, 64, 3, 17);
  const std::shared_ptr<const GptModel> model = modelOf(file, 4);
  ExecutionOptions exec;
  const int T = 90;
  std::vector<int> ids = someIds(T, 53, 23);
  for (int t = T / 2; t < T; ++t) ids[t] = ids[t - T / 2];
  Trace kept;
  const auto pass = runModelPass(model, ids, exec, {}, 0, &kept);
  auto given = std::make_shared<GivenAttention>();
  given->layers = 3;
  given->heads = 4;
  given->tokens = T;
  for (int id : ids) given->labels.push_back("w" + std::to_string(id));
  std::vector<Trace> traces;
  for (int l = 0; l < 3; ++l) {
    traces.push_back(layerTrace(*pass, l, exec, {}));
    for (int h = 0; h < 4; ++h) {
      const Matrix& w = traces.back().batches[0].heads[h].weights;
      for (int i = 0; i < T; ++i)
        for (int j = 0; j < T; ++j) given->maps.push_back(w(i, j));
    }
  }
  const auto of_maps = passOfMaps(given, exec);
  ASSERT_EQ(of_maps->given, given);
  EXPECT_EQ(of_maps->model, nullptr);
  ASSERT_EQ(of_maps->layers(), 3);
  ASSERT_EQ(of_maps->headsPerLayer(), 4);
  EXPECT_EQ(of_maps->cells, pass->cells);
  const TokenPatterns patterns(ids);
  for (int l = 0; l < 3; ++l)
    for (int h = 0; h < 4; ++h) {
      const HeadThumbnail &got = of_maps->head(l, h), &model_pass = pass->head(l, h);
      HeadTrace head;
      head.weights = traces[l].batches[0].heads[h].weights;
      const HeadScores want = headScores(traces[l], head, patterns);
      EXPECT_EQ(got.scores.previous_token, want.previous_token) << l << "." << h;
      EXPECT_EQ(got.scores.first_token, want.first_token);
      ASSERT_TRUE(got.scores.has_duplicate && got.scores.has_induction);
      EXPECT_EQ(got.scores.duplicate_token, want.duplicate_token);
      EXPECT_EQ(got.scores.induction, want.induction);
      EXPECT_EQ(got.scores.mean_entropy, want.mean_entropy);
      // The model's pass streamed its weights (within 1e-5 of the traced ones): so are its cells.
      ASSERT_EQ(got.cells.size(), model_pass.cells.size());
      for (std::size_t k = 0; k < got.cells.size(); ++k) EXPECT_NEAR(got.cells[k], model_pass.cells[k], 1e-5);
      EXPECT_NEAR(got.largest, model_pass.largest, 1e-5);
      EXPECT_NEAR(got.scores.induction, model_pass.scores.induction, 1e-5);
    }
}

// A head that puts all of every row on the first token is a sink from 8 tokens on; on fewer, even a
// head spreading its weight evenly scores near the threshold (3 tokens: 0.61 against 0.7), so no
// label. Weights of T tokens: every row on key 0.
TEST(HeadScores, LabelsNeedEightTokens) {
  for (int T : {1, 3, 7, 8, 20}) {
    Matrix w = Matrix::Zero(T, T);
    w.col(0).setOnes();
    std::vector<int> ids(static_cast<std::size_t>(T));
    for (int i = 0; i < T; ++i) ids[static_cast<std::size_t>(i)] = i;  // no repeats
    const TokenPatterns patterns(ids);
    std::vector<HeadScoreRow> rows;
    for (int i = 0; i < T; ++i) rows.push_back(headScoreRow(w.row(i).data(), i, i + 1, patterns));
    const HeadScores s = headScoresOfRows(rows.data(), T);
    EXPECT_FLOAT_EQ(s.first_token, 1.0f) << T;
    EXPECT_EQ(s.rows, T);
    const HeadLabelInfo* label = headLabel(s);
    if (T < kLabelMinTokens)
      EXPECT_EQ(label, nullptr) << T;
    else
      EXPECT_STREQ(label != nullptr ? label->id : "none", "first_token") << T;
  }
}

// A sink on a text whose first token comes again ("the cat sat on the mat and the dog"): the first
// position is the sink's, not an earlier copy, so its duplicate score is 0 — it scored 1.0 there
// and was labelled a duplicate head.
TEST(HeadScores, TheFirstPositionIsTheSinksNotADuplicate) {
  const std::vector<int> ids = {1, 2, 3, 4, 1, 5, 6, 1, 7};  // the cat sat on the mat and the dog
  const int T = static_cast<int>(ids.size());
  Matrix sink = Matrix::Zero(T, T);
  sink.col(0).setOnes();
  const TokenPatterns patterns(ids);
  std::vector<HeadScoreRow> rows;
  for (int i = 0; i < T; ++i) rows.push_back(headScoreRow(sink.row(i).data(), i, i + 1, patterns));
  HeadScores s = headScoresOfRows(rows.data(), T);
  ASSERT_TRUE(s.has_duplicate);  // row 7 ("the") has a copy after the first position, row 4
  EXPECT_FLOAT_EQ(s.duplicate_token, 0.0f);
  EXPECT_STREQ(headLabel(s)->id, "first_token");
  // A head on the earlier copies after the first: row 7 ("the") on row 4, the rows without one on key 0.
  Matrix dup = sink;
  dup.row(7).setZero();
  dup(7, 4) = 1;
  rows.clear();
  for (int i = 0; i < T; ++i) rows.push_back(headScoreRow(dup.row(i).data(), i, i + 1, patterns));
  s = headScoresOfRows(rows.data(), T);
  ASSERT_TRUE(s.has_duplicate);
  EXPECT_FLOAT_EQ(s.duplicate_token, 1.0f);  // row 7 only: row 4's one copy is position 0
}

// An induction head is labelled so only as a mean over kLabelMinTokens rows: on a text whose only
// repeats give 2 rows keys after an earlier copy, a head on those keys (and elsewhere on itself)
// has an induction score of 1 and no label; on a text said twice, 8 rows, the label.
TEST(HeadScores, APatternLabelNeedsItsMeanOverEnoughRows) {
  const auto scoresOf = [](const std::vector<int>& ids) {
    const int T = static_cast<int>(ids.size());
    const TokenPatterns patterns(ids);
    Matrix w = Matrix::Zero(T, T);
    for (int i = 0; i < T; ++i) {
      int key = i;  // itself, where it has no key after an earlier copy
      for (int k = 0; k + 1 <= i - 1; ++k)
        if (ids[static_cast<std::size_t>(k)] == ids[static_cast<std::size_t>(i)]) key = k + 1;
      w(i, key) = 1;
    }
    std::vector<HeadScoreRow> rows;
    for (int i = 0; i < T; ++i) rows.push_back(headScoreRow(w.row(i).data(), i, i + 1, patterns));
    return headScoresOfRows(rows.data(), T);
  };
  const HeadScores few = scoresOf({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2});
  ASSERT_TRUE(few.has_induction);
  EXPECT_FLOAT_EQ(few.induction, 1.0f);
  EXPECT_EQ(few.induction_rows, 2);
  EXPECT_EQ(headLabel(few), nullptr);
  const HeadScores twice = scoresOf({1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(twice.induction_rows, 8);
  ASSERT_NE(headLabel(twice), nullptr);
  EXPECT_STREQ(headLabel(twice)->id, "induction");
}

TEST(ModelPass, TopNextTokens) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f};
  const auto top = topNextTokens(logits.data(), 5, 1.0, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].id, 1);  // a tie goes to the smaller id
  EXPECT_EQ(top[1].id, 3);
  EXPECT_EQ(top[2].id, 2);
  double sum = 0;
  for (float l : logits) sum += std::exp(l);
  EXPECT_NEAR(top[0].probability, std::exp(3.0) / sum, 1e-7);
  EXPECT_NEAR(top[2].probability, std::exp(2.0) / sum, 1e-7);
  const auto hot = topNextTokens(logits.data(), 5, 2.0, 5), greedy = topNextTokens(logits.data(), 5, 0.0, 2);
  EXPECT_GT(hot[4].probability, 0.02f);  // a higher temperature flattens
  EXPECT_EQ(greedy[0].probability, 1.0f);
  EXPECT_EQ(greedy[1].probability, 0.0f);
}

// A vocabulary's worth of logits with many ties: the k most likely, in order, are those of every
// id sorted by logit (a stable sort: ties by id), whatever k.
TEST(ModelPass, TopNextTokensAreTheSortedVocabularysFirst) {
  std::mt19937 rng(7);
  std::vector<float> logits(50257);
  for (float& l : logits) l = static_cast<float>(static_cast<int>(rng() % 400)) / 16.0f - 12.0f;
  std::vector<int> sorted(logits.size());
  std::iota(sorted.begin(), sorted.end(), 0);
  std::stable_sort(sorted.begin(), sorted.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  for (int k : {0, 1, 10, 1000}) {
    const auto top = topNextTokens(logits.data(), static_cast<int>(logits.size()), 0.7, k);
    ASSERT_EQ(top.size(), static_cast<std::size_t>(k));
    for (int i = 0; i < k; ++i)
      EXPECT_EQ(top[static_cast<std::size_t>(i)].id, sorted[static_cast<std::size_t>(i)]) << k;
  }
}

TEST(GptForward, CancelStopsIt) {
  MemoryTensors file = bookModel(50, 40, 64, 2, 13);
  const auto model = gptModelFromTensors(file, "", {});
  std::atomic<bool> cancel{true};
  ExecutionOptions exec;
  exec.cancel = &cancel;
  EXPECT_THROW(gptForward(*model, someIds(10, 50, 1), {}, exec), Cancelled);
}

// A residual stream that leaves float32 is refused, naming the block and the part where it did, on
// the fast path (checked slice by slice, on every thread) and the reference alike.
TEST(GptForward, AResidualBeyondFloat32NamesWhereItLeft) {
  const auto overflowIn = [](bool mlp, bool fused) -> std::string {
    MemoryTensors file = bookModel(50, 40, 64, 2, 23, mlp);
    // Block 1's attention adds 3e38 to one column of the residual stream: still finite. With an
    // MLP, its second layer adds as much again: beyond float32. Without, block 1's attention
    // does once more.
    file.values("trf_blocks.0.att.out_proj.bias")[5] = 3e38f;
    file.values(mlp ? "trf_blocks.0.ff.layers.2.bias" : "trf_blocks.1.att.out_proj.bias")[5] = 3e38f;
    GptLoadOptions options;
    options.reference_mlp = !fused;
    const auto model = gptModelFromTensors(file, "", options);
    ExecutionOptions exec;
    exec.fused = fused;
    exec.parallel = true;
    exec.threads = 2;
    exec.min_parallel_work = 0;
    try {
      gptForward(*model, someIds(30, 50, 5), {}, exec);
    } catch (const ComputeError& e) {
      return e.what();
    }
    return "no error";
  };
  for (bool fused : {true, false}) {
    EXPECT_NE(overflowIn(true, fused).find("overflow float32 in block 0's MLP"), std::string::npos)
        << overflowIn(true, fused) << (fused ? " (fast path)" : " (reference)");
    EXPECT_NE(overflowIn(false, fused).find("overflow float32 in block 1's attention"), std::string::npos)
        << overflowIn(false, fused) << (fused ? " (fast path)" : " (reference)");
  }
}

TEST(GptModel, RefusesAValueThatIsNotFinite) {
  MemoryTensors file = bookModel(50, 40, 64, 1, 17);
  file.values("trf_blocks.0.ff.layers.0.weight")[5] = std::nanf("");
  try {
    gptModelFromTensors(file, "", {});
    FAIL() << "a NaN weight was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("trf_blocks.0.ff.layers.0.weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not finite"), std::string::npos) << e.what();
  }
}

TEST(GptModel, ConfigMustAgreeWithTheTensors) {
  MemoryTensors file = bookModel(50, 40, 64, 1, 19);
  try {
    gptModelFromTensors(file, R"({"n_embd": 128, "n_head": 2})", {});
    FAIL() << "a config that disagrees was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("n_embd is 128 but the tensors hold 64"), std::string::npos) << e.what();
  }
  const auto model = gptModelFromTensors(file, R"({"n_embd": 64, "n_head": 4, "layer_norm_epsilon": 1e-6})", {});
  EXPECT_EQ(model->config.heads, 4);
  EXPECT_EQ(model->config.heads_from, "config.json");
  EXPECT_FLOAT_EQ(model->config.layer_norm_eps, 1e-6f);
}

}  // namespace
}  // namespace attnscope
