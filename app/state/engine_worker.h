// EngineWorker: runs computeTrace off the UI thread, so a GPT-2-sized recompute never freezes
// the window. The newest request wins; requests made while one runs wait for it, then run once.
#pragma once
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "engine/attention.h"
#include "formats/workspace.h"

namespace attnscope {

struct EngineResult {
  std::shared_ptr<const Trace> trace;  // null when the engine refused the input
  std::string error;                   // the engine's message when it refused
  double milliseconds = 0;             // time of computeTrace
  std::uint64_t version = 0;           // the request this answers
};

class EngineWorker {
 public:
  ~EngineWorker();
  void request(const Workspace& ws, const ExecutionOptions& exec, const TraceRequest& what);
  // Starts the pending request if idle; returns a finished result once.
  std::optional<EngineResult> poll();
  bool busy() const { return running_ || pending_.has_value(); }

 private:
  struct Job {
    Workspace workspace;
    ExecutionOptions exec;
    TraceRequest what;
    std::uint64_t version;
  };
  std::optional<Job> pending_;
  std::future<EngineResult> future_;
  bool running_ = false;
  std::uint64_t next_version_ = 1;
};

}  // namespace attnscope
