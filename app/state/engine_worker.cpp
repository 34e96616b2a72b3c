#include "state/engine_worker.h"

#include <chrono>

#include "engine/errors.h"

namespace attnscope {

namespace {

EngineResult run(const Workspace& ws, const ExecutionOptions& exec, const TraceRequest& what,
                 std::uint64_t version) {
  EngineResult r;
  r.version = version;
  const auto start = std::chrono::steady_clock::now();
  try {
    r.trace = std::make_shared<Trace>(computeTrace(ws.embeddings, ws.model, exec, what));
  } catch (const InputError& e) {
    r.error = e.what();
  } catch (const ComputeError& e) {
    r.error = e.what();
  } catch (const std::bad_alloc&) {
    r.error = "out of memory: try a smaller configuration";
  }
  r.milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace

EngineWorker::~EngineWorker() {
  if (running_) future_.wait();
}

void EngineWorker::request(const Workspace& ws, const ExecutionOptions& exec,
                           const TraceRequest& what) {
  pending_ = Job{ws, exec, what, next_version_++};
}

std::optional<EngineResult> EngineWorker::poll() {
  std::optional<EngineResult> done;
  if (running_ && future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    done = future_.get();
    running_ = false;
  }
  if (!running_ && pending_) {
    Job job = std::move(*pending_);
    pending_.reset();
    future_ = std::async(std::launch::async, [job = std::move(job)] {
      return run(job.workspace, job.exec, job.what, job.version);
    });
    running_ = true;
  }
  return done;
}

}  // namespace attnscope
