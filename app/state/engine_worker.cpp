#include "state/engine_worker.h"

#include <chrono>

#include "engine/errors.h"

namespace attnscope {

namespace {

// The display data views need, computed here rather than on the UI thread.
void deriveDisplayData(Snapshot& s) {
  const BatchTrace& bt = s.shown();
  for (const HeadTrace& h : bt.heads) {
    s.keep.push_back(h.dropout_mask.cast<float>());
    std::array<ValueRange, kStageCount> r{};
    for (const StageInfo& info : stageTable())
      r[static_cast<int>(info.stage)] = info.flags ? ValueRange{0, 1} : finiteRange(h.*info.values);
    s.ranges.push_back(r);
  }
  s.inputs_range = finiteRange(s.inputs->embeddings);
  s.context_range = finiteRange(bt.context);
  s.output_range = finiteRange(bt.output);
  for (int d = 0; d < std::max(s.trace->head_width, s.trace->d_in); ++d) s.dims.push_back("d" + std::to_string(d));
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
    s->batch = std::clamp(req.batch, 0, req.inputs->model.batch_size - 1);
    TraceRequest what;  // only the shown element keeps its intermediates: GPT-2 stays small
    what.all_batches = false;
    what.batches = {s->batch};
    s->trace = std::make_shared<Trace>(computeTrace(req.inputs->embeddings, req.inputs->model, req.exec, what));
    s->milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    deriveDisplayData(*s);
    r.snapshot = std::move(s);
  } catch (const InputError& e) {
    r.error = e.what();
  } catch (const ComputeError& e) {
    r.error = e.what();
  } catch (const std::bad_alloc&) {
    r.error = "out of memory: try a smaller configuration";
  }
  return r;
}

}  // namespace

EngineWorker::~EngineWorker() {
  if (running_) future_.wait();
}

void EngineWorker::request(EngineRequest r) { pending_ = std::move(r); }

std::optional<EngineResult> EngineWorker::poll() {
  std::optional<EngineResult> done;
  if (running_ && future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    done = future_.get();
    running_ = false;
  }
  if (!running_ && pending_) {
    EngineRequest job = std::move(*pending_);
    pending_.reset();
    future_ = std::async(std::launch::async, [job = std::move(job), serial = ++serial_] { return run(job, serial); });
    running_ = true;
  }
  return done;
}

}  // namespace attnscope
