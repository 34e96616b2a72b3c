// OffThread<R>: one job at a time on a thread of its own, its result collected by the UI thread
// (docs/DESIGN.md §3.3). Opening a trained model reads and packs hundreds of megabytes: the window
// keeps drawing meanwhile. The job turns its own failures into R (it must not throw); starting
// another job or cancel() sets the cancel flag it may watch, waits for it, and drops its result.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "state/ui_wake.h"

namespace attnscope {

template <class R>
class OffThread {
 public:
  OffThread() = default;
  OffThread(const OffThread&) = delete;
  OffThread& operator=(const OffThread&) = delete;
  ~OffThread() { cancel(); }

  void start(std::function<R(const std::atomic<bool>& cancel)> job) {
    cancel();
    auto state = std::make_shared<State>();
    state_ = state;
    thread_ = std::thread([state, job = std::move(job)] {
      R r = job(state->cancel);
      {
        std::lock_guard<std::mutex> lock(state->mutex);
        state->result = std::move(r);
      }
      state->done = true;
      wakeUi();  // the window may be asleep: the result is taken at once
    });
  }
  void cancel() {
    if (state_) state_->cancel = true;
    if (thread_.joinable()) thread_.join();
    state_.reset();
  }
  // A job runs, or its result has not been taken (poll) yet.
  bool busy() const { return state_ != nullptr; }
  // The finished job's result, once (then idle).
  std::optional<R> poll() {
    if (!state_ || !state_->done.load()) return std::nullopt;
    std::optional<R> r;
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      r = std::move(state_->result);
    }
    if (thread_.joinable()) thread_.join();
    state_.reset();
    return r;
  }

 private:
  struct State {
    std::atomic<bool> cancel{false}, done{false};
    std::mutex mutex;
    std::optional<R> result;  // under mutex
  };
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace attnscope
