// EngineWorker: computes snapshots off the UI thread, so a GPT-2-sized recompute never freezes
// the window (docs/DESIGN.md §3.3). The newest request wins; requests made while one runs wait
// for it, then the newest of them runs once. In: an immutable copy of the inputs. Out: an
// immutable Snapshot, or the engine's refusal. A request with first_heads gives two snapshots:
// the outputs and those heads first, then every head — unless a newer request arrives between.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "state/snapshot.h"

namespace attnscope {

struct EngineRequest {
  std::shared_ptr<const Workspace> inputs;
  std::uint64_t version = 0;  // the document version of `inputs`
  int batch = 0;              // whose intermediates to keep
  ExecutionOptions exec;
  // Heads whose maps are computed first and shown at once (those on screen); the other heads
  // follow in a second snapshot of the same version. Empty: every head at once.
  std::vector<int> first_heads;
};

struct EngineResult {
  std::shared_ptr<const Snapshot> snapshot;  // null when the engine refused
  std::string error;                         // the engine's message when it refused
  bool cancelled = false;                    // superseded before it finished: not delivered
  std::uint64_t version = 0;                 // the request this answers
};

class EngineWorker {
 public:
  EngineWorker() = default;
  EngineWorker(const EngineWorker&) = delete;
  EngineWorker& operator=(const EngineWorker&) = delete;
  ~EngineWorker();
  void request(EngineRequest r);
  // Starts the pending request if idle; returns a finished result once. A request started by this
  // call may be waited for up to `wait` (tiny inputs: the result shows on this very frame).
  std::optional<EngineResult> poll(std::chrono::milliseconds wait = std::chrono::milliseconds(0));
  bool busy() const { return running_ || pending_.has_value(); }

 private:
  std::optional<EngineResult> collect(std::chrono::milliseconds wait);  // the job, if it has finished
  void start();                                                        // runs pending_
  std::optional<EngineRequest> pending_;
  std::optional<EngineRequest> running_request_;  // the job in flight, for its second part
  bool pending_second_part_ = false;              // pending_ completes a split request
  bool running_second_part_ = false;              // the job in flight completes one …
  std::shared_ptr<std::atomic<bool>> cancel_;     // … and is stopped when a newer request comes
  std::future<EngineResult> future_;
  std::thread thread_;                            // the job's own thread, joined when collected
  bool running_ = false;
  std::uint64_t serial_ = 0;
};

}  // namespace attnscope
