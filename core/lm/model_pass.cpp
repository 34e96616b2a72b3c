// A trained model's pass over a text for the model view (lm/model_pass.h, docs/DESIGN.md §2.6).
#include "lm/model_pass.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "engine/errors.h"
#include "engine/parameters.h"
#include "engine/thread_team.h"
#include "lm/gpt_forward.h"

namespace attnscope {

namespace {

// The S × S block maxima of a head's weights (T × T).
HeadThumbnail thumbnailOf(const Matrix& w, int S) {
  const int T = static_cast<int>(w.rows());
  HeadThumbnail t;
  t.cells.assign(static_cast<std::size_t>(S) * S, 0.0f);
  for (int i = 0; i < S; ++i) {
    const int r0 = ModelPass::blockStart(i, T, S), r1 = ModelPass::blockStart(i + 1, T, S);
    for (int r = r0; r < r1; ++r)
      for (int j = 0; j < S; ++j) {
        const int c0 = ModelPass::blockStart(j, T, S), c1 = ModelPass::blockStart(j + 1, T, S);
        float& cell = t.cells[static_cast<std::size_t>(i) * S + j];
        for (int c = c0; c < c1; ++c) cell = std::max(cell, w(r, c));
      }
  }
  // The colour range's top: the largest weight below the first row, which under the causal mask
  // always puts 1 on the first token (with it, a long text's diffuse heads would all look empty).
  t.largest = T > 1 ? w.bottomRows(T - 1).maxCoeff() : w.maxCoeff();
  return t;
}

}  // namespace

std::shared_ptr<const ModelPass> runModelPass(std::shared_ptr<const GptModel> model, const std::vector<int>& ids,
                                              const ExecutionOptions& exec, const Limits& limits, int keep_layer,
                                              Trace* kept) {
  const auto start = std::chrono::steady_clock::now();
  auto pass = std::make_shared<ModelPass>();
  const GptConfig& c = model->config;
  pass->ids = ids;
  pass->cells = std::min(static_cast<int>(ids.size()), kThumbnailCells);
  pass->heads.resize(static_cast<std::size_t>(c.layers) * static_cast<std::size_t>(c.heads));
  pass->attention_inputs.resize(static_cast<std::size_t>(c.layers));
  const TokenPatterns patterns(ids);
  const int threads = exec.parallel ? resolveThreads(exec.threads) : 1;
  GptRequest request;
  request.no_logits = true;
  request.keep_final_x = true;
  request.on_layer = [&](int layer, const Matrix& input, Trace&& trace) {
    pass->attention_inputs[static_cast<std::size_t>(layer)] = input;
    const BatchTrace& bt = trace.batches[0];
    // One head per item: its thumbnail and scores read its T × T weights once each.
    forEachItem(threads, static_cast<int>(bt.heads.size()), [&](int h) {
      HeadThumbnail t = thumbnailOf(bt.heads[static_cast<std::size_t>(h)].weights, pass->cells);
      t.scores = headScores(trace, bt.heads[static_cast<std::size_t>(h)], patterns);
      pass->heads[static_cast<std::size_t>(layer) * c.heads + h] = std::move(t);
    });
    if (layer == keep_layer && kept != nullptr) *kept = std::move(trace);
  };
  GptResult result = gptForward(*model, ids, request, exec, limits);
  pass->final_x = std::move(result.final_x);
  pass->model = std::move(model);
  pass->milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return pass;
}

Trace layerTrace(const ModelPass& pass, int layer, const ExecutionOptions& exec, const Limits& limits) {
  if (layer < 0 || layer >= pass.layers())
    throw InputError("layer " + std::to_string(layer) + " does not exist: the model has " +
                     std::to_string(pass.layers()) + " layers (0 … " + std::to_string(pass.layers() - 1) + ")");
  const GptModel& m = *pass.model;
  return computeTrace(pass.attention_inputs[static_cast<std::size_t>(layer)], m.attention_config,
                      m.blocks[static_cast<std::size_t>(layer)].attention, exec, TraceRequest(), limits);
}

Workspace layerWorkspace(const ModelPass& pass, int layer, std::vector<std::string> tokens) {
  const GptModel& m = *pass.model;
  Workspace ws;
  ws.tokens = std::move(tokens);
  ws.embeddings = pass.attention_inputs[static_cast<std::size_t>(layer)];
  ws.model = m.attention_config;
  ws.model.parameters = std::make_shared<const ParameterValues>(
      stateDict(m.attention_config, *m.blocks[static_cast<std::size_t>(layer)].attention.parameters));
  return ws;
}

std::string tokenLabel(const GptModel& model, int id) {
  return model.tokenizer != nullptr && id >= 0 && id < model.tokenizer->vocabularySize()
             ? model.tokenizer->tokenString(id)
             : "#" + std::to_string(id);
}

std::vector<NextToken> topNextTokens(const float* logits, int V, double temperature, int k) {
  k = std::clamp(k, 0, V);
  std::vector<int> order(static_cast<std::size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  const auto before = [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
  std::vector<NextToken> out;
  if (k == 0) return out;
  const float top = logits[order[0]];
  double sum = 0;
  if (temperature > 0)
    for (int v = 0; v < V; ++v) sum += std::exp((static_cast<double>(logits[v]) - top) / temperature);
  for (int i = 0; i < k; ++i) {
    const int v = order[static_cast<std::size_t>(i)];
    NextToken t;
    t.id = v;
    t.logit = logits[v];
    t.probability = temperature > 0 ? static_cast<float>(std::exp((static_cast<double>(logits[v]) - top) / temperature) / sum)
                                    : (i == 0 ? 1.0f : 0.0f);
    out.push_back(t);
  }
  return out;
}

}  // namespace attnscope
