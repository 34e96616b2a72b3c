#include "state/engine_worker.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "display/map_look.h"
#include "engine/attention.h"
#include "engine/errors.h"
#include "engine/thread_team.h"
#include "formats/export.h"
#include "formats/utf8.h"
#include "lm/gpt_forward.h"
#include "state/ui_wake.h"

namespace attnscope {

namespace {
// Tokens with characters above U+FFFF (emoji), which ImGui cannot draw, with those as "U+1F600";
// empty when no token has one (the snapshot then draws the workspace's tokens).
std::vector<std::string> drawableTokens(const std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  bool changed = false;
  for (const std::string& t : tokens) {
    out.push_back(beyondBmpSpelled(t));
    changed = changed || out.back() != t;
  }
  return changed ? out : std::vector<std::string>{};
}
}  // namespace

namespace {

// The display data views need, computed here rather than on the UI thread.
// The colour ranges of one head's stages.
// `model`: a trained model's layer, whose weights span the rows below the first (as its thumbnails
// do: the first row's 1 would leave a long text's diffuse heads all dark).
std::array<ValueRange, kStageCount> stageRanges(const Trace& t, const HeadTrace& h, bool model) {
  std::array<ValueRange, kStageCount> r{};
  for (const StageInfo& info : stageTable()) {
    const auto k = static_cast<std::size_t>(info.stage);
    if (info.flags)
      r[k] = ValueRange{0, 1};
    else if (!stageHeld(t, info.stage))
      r[k] = ValueRange{0, 1};  // another route's stage: nothing to measure
    else if (info.stage == Stage::ScaledScores && t.model.scale == Scale::SqrtDk &&
             (!t.model.causal || trilRoute(t.model)))
      // Division by √d_k > 0 is monotone and correctly rounded: the scores' ends, divided (with a
      // causal mask the scaled map hides cells the scores show, so it is measured itself).
      r[k] = ValueRange{r[static_cast<std::size_t>(Stage::Scores)].lo / t.scale_divisor,
                        r[static_cast<std::size_t>(Stage::Scores)].hi / t.scale_divisor};
    else if (info.stage == Stage::DroppedWeights && !t.dropout_active)  // the weights themselves
      r[k] = r[static_cast<std::size_t>(Stage::Weights)];
    else if (model && info.stage == Stage::Weights && t.model.causal) {
      // From 0: the zeros above the diagonal are cells of the map too (with two tokens the one row
      // below the first spanned 0.45–0.55, and 0.0000 and 0.4505 were one colour).
      r[k] = finiteRangeBelowFirstRow(StageMap(t, h, info.stage));
      r[k].lo = std::min(r[k].lo, 0.0f);
    } else
      r[k] = finiteRange(StageMap(t, h, info.stage));
  }
  return r;
}

// The display data views need, computed here rather than on the UI thread. Heads and outputs taken
// from a first part keep its ranges (`outputs_kept` false: the outputs were computed again).
void deriveDisplayData(Snapshot& s, const Snapshot* first_part, bool outputs_kept) {
  const Trace& t = *s.trace;
  const BatchTrace& bt = s.shown();
  s.ranges.resize(bt.heads.size());
  s.statistics.resize(bt.heads.size());
  s.head_serial.assign(bt.heads.size(), 0);
  // One head per item on the engine's threads: a GPT-2 snapshot scans 12 heads' 1024 × 1024 maps.
  const int threads = s.exec.parallel ? resolveThreads(s.exec.threads) : 1;
  parallelFor(threads, static_cast<int>(bt.heads.size()), [&](int i) {
    const auto h = static_cast<std::size_t>(i);
    if (first_part && first_part->head_serial[h] != 0) {
      s.ranges[h] = first_part->ranges[h];
      s.statistics[h] = first_part->statistics[h];
      s.head_serial[h] = first_part->head_serial[h];
    } else if (bt.heads[h].hasMaps()) {  // else computed in the second part
      s.ranges[h] = stageRanges(t, bt.heads[h], s.model != nullptr);
      s.statistics[h] = headStatistics(t, bt.heads[h]);
      s.head_serial[h] = s.serial;
    }
  });
  if (first_part && outputs_kept) {
    s.inputs_range = first_part->inputs_range;
    s.module_ranges = first_part->module_ranges;
    s.outputs_serial = first_part->outputs_serial;
  } else {
    s.inputs_range = finiteRange(s.inputs->embeddings);
    for (const ModuleMapInfo& info : moduleMapTable())
      s.module_ranges[static_cast<int>(info.map)] = finiteRange(moduleMapValues(t, bt, info.map));
    s.outputs_serial = s.serial;
  }
  const Eigen::Index widest = std::max(
      {static_cast<Eigen::Index>(std::max(t.head_width, t.d_in)), bt.context.cols(), bt.output.cols()});
  s.dims = dimLabels(widest);
  s.head_dims.resize(bt.heads.size());
  for (std::size_t h = 0; h < bt.heads.size(); ++h)
    s.head_dims[h] = dimLabels(t.head_width, headFirstColumn(t, static_cast<int>(h)));
}

// The rest of a split request: the heads the first part lacks, then its outputs and heads moved in
// beside them (copied: the first part stays on screen until this one replaces it).
Trace completeTrace(const EngineRequest& req, const Snapshot& first) {
  const Trace& done = *first.trace;
  TraceRequest what = TraceRequest::only({first.batch});
  what.outputs = false;
  const BatchTrace& shown = first.shown();
  for (std::size_t h = 0; h < shown.heads.size(); ++h)
    if (!shown.heads[h].hasMaps()) what.heads.push_back(static_cast<int>(h));
  Trace t = computeTrace(inputsOf(*req.inputs), req.inputs->model, req.exec, what, req.limits);
  for (std::size_t b = 0; b < t.batches.size(); ++b) {
    t.batches[b].context = done.batches[b].context;
    t.batches[b].output = done.batches[b].output;
  }
  BatchTrace& bt = t.batches[static_cast<std::size_t>(first.batch)];
  for (std::size_t h = 0; h < shown.heads.size(); ++h)
    if (shown.heads[h].hasMaps()) bt.heads[h] = shown.heads[h];
  return t;
}

// A trained model's layer: the pass (or the previous one's, for the same ids), the layer's trace,
// the logits at the positions the views show.
// Returns the snapshot whose display data the new one shares (the same layer of the same pass: a
// token change), else null.
// Given maps' layer as the snapshot holds a layer: their tokens, and a trace whose heads hold the
// maps as their weights (their only stage: the views of the other stages, which read the rest, are
// not shown for given maps; the layer's other members are zeros of the right shapes).
void givenLayer(const GivenAttention& g, int layer, Snapshot& s) {
  const int T = g.tokens, H = g.heads;
  Workspace ws;
  ws.tokens = g.labels;
  ws.embeddings = Matrix::Zero(T, H);
  ws.model = defaultConfig(Variant::MultiHead);
  ws.model.d_out = H;
  ws.model.num_heads = H;
  ws.model.batch_size = 1;
  ws.model.causal = false;
  auto t = std::make_shared<Trace>();
  t->model = ws.model;
  t->tokens = T;
  t->d_in = H;
  t->heads = H;
  t->head_width = 1;
  auto p = std::make_shared<Parameters>();  // a one-wide head's projections, zero
  const Linear zero{Matrix::Zero(H, H), RowVector()};
  p->query = p->key = p->value = {zero};
  p->out_proj = Linear{Matrix::Zero(H, H), RowVector::Zero(H)};
  t->parameters = std::move(p);
  t->batches.resize(1);
  BatchTrace& bt = t->batches[0];
  bt.context = Matrix::Zero(T, H);
  bt.output = Matrix::Zero(T, H);
  for (int h = 0; h < H; ++h) {
    HeadTrace head;
    head.index = h;
    head.queries = head.keys = head.values = head.context = Matrix::Zero(T, 1);
    head.weights = Eigen::Map<const Matrix>(g.map(layer, h), T, T);
    head.scores = head.weights;  // hasMaps(): the head is there
    bt.heads.push_back(std::move(head));
  }
  s.inputs = std::make_shared<const Workspace>(std::move(ws));
  s.trace = std::move(t);
}

// The rest of a model's result split in two (ModelJob::thumbnails_first): the layer traced from its
// attention input, as every route traces it (runModel); the first part's pass and next tokens kept.
const Snapshot* completeModel(const EngineRequest& req, Snapshot& s) {
  const Snapshot& first = *req.first_part;
  s.trace = std::make_shared<Trace>(layerTrace(*first.model, first.layer, req.exec, req.limits));
  s.inputs = first.inputs;
  s.model = first.model;
  s.layer = first.layer;
  s.model_version = first.model_version;
  s.model_lineage = first.model_lineage;
  s.logit_positions = first.logit_positions;
  s.logits = first.logits;
  s.thumbnail_indices = first.thumbnail_indices;
  return &first;
}

// `job` with another result before it.
std::shared_ptr<const ModelJob> withPrevious(const ModelJob& job, std::shared_ptr<const Snapshot> previous) {
  auto copy = std::make_shared<ModelJob>(job);
  copy->previous = std::move(previous);
  return copy;
}

const Snapshot* runModel(const EngineRequest& req, Snapshot& s) {
  if (req.first_part) return completeModel(req, s);
  const ModelJob& job = *req.model;
  const Snapshot* prev = job.previous.get();
  std::shared_ptr<const ModelPass> pass;
  if (job.given) {  // maps as they are: their thumbnails and scores once, then a layer is a copy
    pass = prev && prev->model && prev->model->given == job.given ? prev->model : passOfMaps(job.given, req.exec);
    givenLayer(*job.given, job.layer, s);
  }
  // The result before showed the same model (a pass of it, not given maps).
  const bool same_model = job.model && prev && prev->model && prev->model->model == job.model;
  if (same_model && prev->model->ids == job.ids) pass = prev->model;
  // (A first part's layer has no maps yet: a token clicked before they came traces it again.)
  const bool same_layer = pass && prev && prev->layer == job.layer && prev->complete;
  const int T = static_cast<int>(job.ids.size());
  if (job.model) {  // given maps have no next tokens
    s.logit_positions = {T - 1};
    if (job.position >= 0 && job.position < T - 1) s.logit_positions.insert(s.logit_positions.begin(), job.position);
  }
  if (job.given) {
  } else if (same_layer) {
    s.inputs = prev->inputs;
    s.trace = prev->trace;
  } else {
    // The layer shown is traced from its attention input, whatever the route (a new pass, another
    // layer of the same pass, the rest of a split result): its maps and outputs then have the same
    // bits for the same text and layer, and an edit changes no cell of the rows before it (a pass
    // that traced the layer itself fed the next layers outputs within the last bits of the
    // streamed ones, so the pass, and every layer after, depended on the layer shown).
    Trace kept;
    const bool new_pass = !pass;
    // The pass keeps the layer's outputs only for a first part (traced whole, they would be
    // computed for nothing: layerTrace computes them again).
    if (new_pass)
      pass = runModelPass(job.model, job.ids, req.exec, req.limits, job.thumbnails_first ? job.layer : -1,
                          job.thumbnails_first ? &kept : nullptr,
                          prev != nullptr ? prev->model.get() : nullptr,  // a text edited after its start
                          s.logit_positions, KeptLayer::Outputs);
    if (new_pass && job.thumbnails_first) {  // the heads' maps follow (completeModel); the views wait for them
      kept.batches[0].heads.resize(static_cast<std::size_t>(kept.heads));
      for (int h = 0; h < kept.heads; ++h) kept.batches[0].heads[static_cast<std::size_t>(h)].index = h;
      s.complete = false;
    } else {
      kept = layerTrace(*pass, job.layer, req.exec, req.limits);
    }
    // The layer's weights as the result before holds them when it showed the same model's layer.
    const bool same_weights = same_model && prev->layer == job.layer;
    s.inputs = std::make_shared<const Workspace>(
        layerWorkspace(*pass, job.layer, job.tokens, same_weights ? prev->inputs->model.parameters : nullptr));
    s.trace = std::make_shared<Trace>(std::move(kept));
  }
  if (job.model) {
    if (prev && pass == prev->model && prev->logit_positions == s.logit_positions)
      s.logits = prev->logits;  // another layer of the same pass: the head's 154 MB (GPT-2) not read again
    else
      s.logits = gptLogits(*job.model, pass->forward, s.logit_positions, req.exec);
  }
  s.layer = job.layer;
  s.model_version = job.version;
  s.model_lineage = job.lineage;
  if (prev && pass == prev->model) {
    s.thumbnail_indices = prev->thumbnail_indices;
    s.model = std::move(pass);
    return same_layer && !job.given ? prev : nullptr;
  }
  const std::size_t cells = static_cast<std::size_t>(pass->cells) * static_cast<std::size_t>(pass->cells);
  s.thumbnail_indices.resize(pass->heads.size() * cells);
  for (std::size_t i = 0; i < pass->heads.size(); ++i)
    colormapIndices(pass->heads[i].cells.data(), cells, ValueRange{0.0f, pass->heads[i].largest},
                    s.thumbnail_indices.data() + i * cells);
  s.model = std::move(pass);
  return nullptr;
}

EngineResult run(const EngineRequest& req, std::uint64_t serial) {
  EngineResult r;
  r.version = req.version;
  const auto start = std::chrono::steady_clock::now();
  try {
    auto s = std::make_shared<Snapshot>();
    s->serial = serial;
    s->version = req.version;
    s->inputs = req.inputs;
    s->exec = req.exec;
    s->exec.cancel = nullptr;  // the flag belongs to this job
    const Snapshot* shares_display = req.first_part.get();
    if (req.model) {
      shares_display = runModel(req, *s);
    } else if (req.first_part) {
      s->batch = req.first_part->batch;
      s->trace = std::make_shared<Trace>(completeTrace(req, *req.first_part));
    } else {
      s->batch = std::clamp(req.batch, 0, req.inputs->model.batch_size - 1);
      // Only the shown element keeps its intermediates (GPT-2 stays small); of it, the first heads
      // alone when the request splits the work in two.
      TraceRequest what = TraceRequest::only({s->batch});
      const int heads = headCount(req.inputs->model);
      for (int h : req.first_heads)  // the view may still show heads of a larger model
        if (h >= 0 && h < heads) what.heads.push_back(h);
      if (!what.heads.empty() && static_cast<int>(what.heads.size()) < heads)
        s->complete = false;
      else
        what.heads.clear();
      s->trace = std::make_shared<Trace>(
          computeTrace(inputsOf(*req.inputs), req.inputs->model, req.exec, what, req.limits));
    }
    s->drawn_tokens = drawableTokens(s->inputs->tokens);
    s->milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() +
                      (req.first_part ? req.first_part->milliseconds : 0.0);  // both parts of a split request
    deriveDisplayData(*s, shares_display, !(req.model && req.first_part));    // a model's rest traces its outputs
    r.snapshot = std::move(s);
  } catch (const InputError& e) {
    r.error = e.what();
  } catch (const ComputeError& e) {
    r.error = e.what();
  } catch (const Cancelled&) {
    r.cancelled = true;
  } catch (const std::bad_alloc&) {
    r.error = "out of memory: try a smaller configuration";
  }
  return r;
}

}  // namespace

EngineWorker::~EngineWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    pending_.reset();
    if (running_) cancel_->store(true);  // a result nobody will see: stop at the next task
  }
  work_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void EngineWorker::request(EngineRequest r) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_ = std::move(r);
    deferred_.reset();
    // The rest of a split request is not worth waiting for once the inputs have changed; a first
    // part (what the user is looking at) always completes, so a drag keeps showing results.
    if (running_ && running_second_part_) cancel_->store(true);
    // A model's pass over a text nobody will see (another text, another model, none) stops too:
    // a layer or token change of the same text still completes, reusing it.
    if (running_ && running_model_ &&
        (!pending_->model || pending_->model->model != running_model_->model ||
         pending_->model->ids != running_model_->ids))
      cancel_->store(true);
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  work_.notify_one();
}

std::optional<EngineResult> EngineWorker::poll(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!result_ && wait.count() > 0 && (running_ || pending_))
    finished_.wait_for(lock, wait, [this] { return result_.has_value(); });
  std::optional<EngineResult> r = std::exchange(result_, std::nullopt);
  if (r && deferred_) {  // a first part taken: its rest runs now
    pending_ = std::move(deferred_);
    deferred_.reset();
    work_.notify_one();
  }
  return r;
}

bool EngineWorker::busy() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_ || pending_.has_value() || result_.has_value() || deferred_.has_value();
}

bool EngineWorker::ready() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return result_.has_value();
}

void EngineWorker::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_.wait(lock, [this] { return stop_ || pending_.has_value(); });
    if (stop_) return;
    EngineRequest job = std::move(*pending_);
    pending_.reset();
    // A model job names the result on screen when it was sent. One sent while a pass of the same
    // model computed, or before its result was collected, takes that newer pass instead: a token
    // clicked or a layer chosen meanwhile then needs no pass at all, and a text typed on reuses
    // the newer pass's rows and holds one set of projections (the older pass gave them to it).
    if (const std::shared_ptr<const Snapshot> newest = newest_.lock();
        newest && job.model && !job.first_part && newest != job.model->previous && newest->model && job.model->model &&
        newest->model->model == job.model->model) {
      job.model = withPrevious(*job.model, newest);
    }
    running_ = true;
    running_second_part_ = job.first_part != nullptr;
    running_model_ = job.model;
    cancel_ = std::make_shared<std::atomic<bool>>(false);
    const std::shared_ptr<std::atomic<bool>> cancel = cancel_;  // job.exec.cancel points into it
    job.exec.cancel = cancel.get();
    const std::uint64_t serial = ++serial_;
    lock.unlock();
    EngineResult result = run(job, serial);
    lock.lock();
    running_ = false;
    running_model_.reset();
    if (result.cancelled) continue;  // superseded: nothing to show; the newer request runs next
    if (result.snapshot) newest_ = result.snapshot;
    // The first part of a split request is done: the rest follows unless a newer request (an
    // edit, another batch element) has come in meanwhile.
    if (result.snapshot && !result.snapshot->complete && !pending_ && !stop_) {
      job.first_heads.clear();
      job.first_part = result.snapshot;
      job.exec.cancel = nullptr;
      // The rest needs the first part alone: the result before it (its pass, its layer's maps) may go.
      if (job.model && job.model->previous) job.model = withPrevious(*job.model, nullptr);
      deferred_ = std::move(job);
    }
    result_ = std::move(result);  // the newest: an older one not collected yet is superseded
    finished_.notify_all();
    lock.unlock();
    wakeUi();  // the window may be asleep: the result is drawn at once
    lock.lock();
  }
}

}  // namespace attnscope
