// EngineWorker: computes snapshots on a thread of its own, so a GPT-2-sized recompute never
// freezes the window (docs/DESIGN.md §3.3). The newest request wins; requests made while one runs
// wait for it, then the newest of them runs once. In: an immutable copy of the inputs. Out: an
// immutable Snapshot, or the engine's refusal. A request with first_heads gives two snapshots:
// the outputs and those heads first, then the other heads once the first is collected — unless a
// newer request arrives between. The thread goes on from one job to the next by itself and wakes the UI (wakeUi) only
// for a result to show.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "state/snapshot.h"

namespace attnscope {

// A trained model's layer to show (docs/DESIGN.md §3.1 "A trained model"): the model runs over
// `ids` unless `previous` already did (same model, same ids: a layer change costs one layer's
// trace, a token change one row of logits).
struct ModelJob {
  std::shared_ptr<const GptModel> model;        // a model to run, or …
  std::shared_ptr<const GivenAttention> given;  // … maps given as they are (nothing to run)
  std::vector<int> ids;
  std::vector<std::string> tokens;  // the labels of ids
  int layer = 0;
  int position = 0;  // whose next tokens, besides the last position's
  // A new pass's result in two parts (docs/DESIGN.md §3.3): first the thumbnails, the next tokens
  // and the layer's outputs (KeptLayer::Outputs), then the layer traced (layerTrace) — set while the model view
  // is on screen and the layer's maps are large (a long text).
  bool thumbnails_first = false;
  std::uint64_t version = 0;
  std::uint64_t lineage = 0;
  std::shared_ptr<const Snapshot> previous;  // the result on screen: its pass, and its layer's trace
};

struct EngineRequest {
  std::shared_ptr<const Workspace> inputs;
  std::uint64_t version = 0;  // the document version of `inputs`
  int batch = 0;              // whose intermediates to keep
  ExecutionOptions exec;
  // Heads whose maps are computed first and shown at once (those on screen); the other heads
  // follow in a second snapshot of the same version. Empty: every head at once.
  std::vector<int> first_heads;
  // The rest of a split request: the first part's snapshot, whose outputs and heads are kept;
  // only the other heads' maps are computed (of a model's pass, its layer's heads).
  std::shared_ptr<const Snapshot> first_part;
  std::shared_ptr<const ModelJob> model;  // set: a trained model's layer instead of `inputs`
  Limits limits;  // the app's (Controller::limits: its budget, two elements' maps): what the document was checked with
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
  ~EngineWorker();  // cancels what runs (nobody will see it) and joins the thread
  void request(EngineRequest r);
  // The newest finished result, once. When a job runs, waits for it up to `wait` (tiny inputs:
  // the result shows on the very frame that asked for it).
  std::optional<EngineResult> poll(std::chrono::milliseconds wait = std::chrono::milliseconds(0));
  // A request waits or runs, or its result has not been collected.
  bool busy() const;
  // A result waits to be collected (poll).
  bool ready() const;

 private:
  void loop();  // the thread
  mutable std::mutex mutex_;
  std::condition_variable work_;      // to the thread: a request, or stop
  std::condition_variable finished_;  // to poll: a result
  std::optional<EngineRequest> pending_;
  // The rest of a split request, sent once its first part is collected (poll): a first part is
  // always shown, never replaced by its own rest before the UI took it.
  std::optional<EngineRequest> deferred_;
  bool running_ = false;
  bool running_second_part_ = false;               // the job in flight completes one …
  std::shared_ptr<std::atomic<bool>> cancel_;      // … and is stopped when a newer request comes
  std::shared_ptr<const ModelJob> running_model_;  // the model job in flight, if any
  std::optional<EngineResult> result_;             // finished, not collected yet
  std::weak_ptr<const Snapshot> newest_;           // the last result computed (while anyone holds it)
  bool stop_ = false;
  std::uint64_t serial_ = 0;
  std::thread thread_;  // started by the first request
};

}  // namespace attnscope
