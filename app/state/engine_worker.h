// EngineWorker: computes snapshots off the UI thread, so a GPT-2-sized recompute never freezes
// the window (docs/DESIGN.md §3.3). The newest request wins; requests made while one runs wait
// for it, then the newest of them runs once. In: an immutable copy of the inputs. Out: an
// immutable Snapshot, or the engine's refusal.
#pragma once
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "state/snapshot.h"

namespace attnscope {

struct EngineRequest {
  std::shared_ptr<const Workspace> inputs;
  std::uint64_t version = 0;  // the document version of `inputs`
  int batch = 0;              // whose intermediates to keep
  ExecutionOptions exec;
};

struct EngineResult {
  std::shared_ptr<const Snapshot> snapshot;  // null when the engine refused
  std::string error;                         // the engine's message when it refused
  std::uint64_t version = 0;                 // the request this answers
};

class EngineWorker {
 public:
  EngineWorker() = default;
  EngineWorker(const EngineWorker&) = delete;
  EngineWorker& operator=(const EngineWorker&) = delete;
  ~EngineWorker();
  void request(EngineRequest r);
  // Starts the pending request if idle; returns a finished result once.
  std::optional<EngineResult> poll();
  bool busy() const { return running_ || pending_.has_value(); }

 private:
  std::optional<EngineRequest> pending_;
  std::future<EngineResult> future_;
  bool running_ = false;
  std::uint64_t serial_ = 0;
};

}  // namespace attnscope
