#include "state/engine_worker.h"

#include <chrono>

#include "engine/errors.h"
#include "state/ui_wake.h"

namespace attnscope {

namespace {

// The display data views need, computed here rather than on the UI thread.
void deriveDisplayData(Snapshot& s) {
  const Trace& t = *s.trace;
  const BatchTrace& bt = s.shown();
  for (const HeadTrace& h : bt.heads) {
    std::array<ValueRange, kStageCount> r{};
    if (h.hasMaps())  // else computed in the second part
      for (const StageInfo& info : stageTable()) {
        const auto k = static_cast<std::size_t>(info.stage);
        if (info.flags)
          r[k] = ValueRange{0, 1};
        else if (info.stage == Stage::ScaledScores && t.model.scale == Scale::SqrtDk)
          // Division by √d_k > 0 is monotone and correctly rounded: the scores' ends, divided.
          r[k] = ValueRange{r[static_cast<std::size_t>(Stage::Scores)].lo / t.scale_divisor,
                            r[static_cast<std::size_t>(Stage::Scores)].hi / t.scale_divisor};
        else
          r[k] = finiteRange(StageMap(t, h, info.stage));
      }
    s.ranges.push_back(r);
  }
  s.inputs_range = finiteRange(s.inputs->embeddings);
  s.context_range = finiteRange(bt.context);
  s.output_range = finiteRange(bt.output);
  for (int d = 0; d < std::max(t.head_width, t.d_in); ++d) s.dims.push_back("d" + std::to_string(d));
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
    s->trace = std::make_shared<Trace>(computeTrace(req.inputs->embeddings, req.inputs->model, req.exec, what));
    s->milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    deriveDisplayData(*s);
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
  if (!running_) return;
  cancel_->store(true);  // a result nobody will see: stop at the next task instead of finishing
  thread_.join();
}

void EngineWorker::request(EngineRequest r) {
  pending_ = std::move(r);
  pending_second_part_ = false;
  // The rest of a split request is not worth waiting for once the inputs have changed; a first
  // part (what the user is looking at) always completes, so a drag keeps showing results.
  if (running_ && running_second_part_) cancel_->store(true);
}

std::optional<EngineResult> EngineWorker::collect(std::chrono::milliseconds wait) {
  if (!running_ || future_.wait_for(wait) != std::future_status::ready) return std::nullopt;
  std::optional<EngineResult> done = future_.get();
  thread_.join();  // it has set the result: only the wake-up is left
  running_ = false;
  if (done->cancelled) done.reset();
  // The first part of a split request is on screen: the rest follows unless a newer request
  // (an edit, another batch element) has come in meanwhile.
  if (done && done->snapshot && !done->snapshot->complete && !pending_) {
    pending_ = std::move(running_request_);
    pending_->first_heads.clear();
    pending_second_part_ = true;
  }
  running_request_.reset();
  return done;
}

void EngineWorker::start() {
  EngineRequest job = std::move(*pending_);
  pending_.reset();
  running_request_ = job;
  running_second_part_ = pending_second_part_;
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  job.exec.cancel = cancel_.get();
  std::promise<EngineResult> promise;
  future_ = promise.get_future();
  thread_ = std::thread([job = std::move(job), cancel = cancel_, serial = ++serial_, promise = std::move(promise)]() mutable {
    static_cast<void>(cancel);  // held here: job.exec.cancel points into it
    promise.set_value(run(job, serial));
    wakeUi();  // after the result is ready: the window may be asleep, and draws it at once
  });
  running_ = true;
}

std::optional<EngineResult> EngineWorker::poll(std::chrono::milliseconds wait) {
  std::optional<EngineResult> done = collect(std::chrono::milliseconds(0));
  if (!running_ && pending_) {
    start();
    if (!done && wait.count() > 0) done = collect(wait);
  }
  return done;
}

}  // namespace attnscope
