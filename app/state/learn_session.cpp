#include "state/learn_session.h"

#include <chrono>
#include <climits>

#include "engine/errors.h"
#include "learn/run_model.h"
#include "state/ui_wake.h"

namespace attnscope {

void LearnSession::start(const TrainTask& task) {
  // Built first, so that a refusal leaves the run before as it was; the default task initializes in
  // under a millisecond, the largest the budget allows (39 M parameters) in about a second.
  std::shared_ptr<TrainingRun> training;
  try {
    training = std::make_shared<TrainingRun>(task);
  } catch (const std::bad_alloc&) {
    throw InputError("not enough memory for this task's model: fewer layers, a smaller width or a shorter context");
  }
  auto first = std::make_shared<const std::vector<float>>(training->model().values);
  std::shared_ptr<const GptModel> model = runGptModel(task, training->model().tensors, first, runName(task, 0));
  close();
  task_ = task;
  layout_ = training->model().tensors;
  open_ = true;
  playing_ = false;
  target_ = done_ = 0;
  probe_ = training->probe();
  scores_ = training->scores();
  timeline_ = {{0, std::move(first), std::move(model)}};
  ++version_;
  ++run_id_;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    asked_ = 0;
    quit_ = false;
    outbox_ = {};
  }
  thread_ = std::thread([this, training] { run(training); });
}

std::string LearnSession::runName(const TrainTask& task, int step) {
  return std::string(taskInfo(task.kind).name) + " run, step " + std::to_string(step);
}

std::shared_ptr<const GptModel> LearnSession::modelOf(const Snapshot& s) const {
  return s.model ? s.model : runGptModel(task_, layout_, s.parameters, runName(task_, s.step));
}

void LearnSession::play() {
  if (!open_ || finished()) return;
  playing_ = true;
  target_ = task_.steps;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    asked_ = task_.steps;
  }
  wake_.notify_one();
}

void LearnSession::pause() {
  if (!open_) return;
  playing_ = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    asked_ = 0;  // the thread stops after the step it is in; done_ catches up in update()
  }
  target_ = 0;
}

void LearnSession::stepBy(int steps) {
  if (!open_ || finished()) return;
  playing_ = false;
  target_ = std::min(task_.steps, std::max(done_, target_) + steps);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    asked_ = target_;
  }
  wake_.notify_one();
}

void LearnSession::trainTo(int step) {
  if (!open_ || step <= done_) return;
  playing_ = false;
  target_ = std::min(task_.steps, step);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    asked_ = target_;
  }
  wake_.notify_one();
}

void LearnSession::close() {
  stopThread();
  open_ = playing_ = false;
  target_ = done_ = 0;
  losses_.clear();
  scores_.clear();
  timeline_.clear();
  probe_.clear();
  steps_per_s_ = 0;
  error_.clear();
  ++version_;
}

void LearnSession::stopThread() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

// The thread: builds the run (its step-0 record published), then trains while asked to.
// The thread: trains while asked to, publishing each score record's snapshot (and where it stops)
// with the model the views will show of it, made here rather than on the UI thread.
void LearnSession::run(std::shared_ptr<TrainingRun> training) {
  using Clock = std::chrono::steady_clock;
  std::size_t published_scores = training->scores().size();  // start() took the step-0 record
  // The snapshot of the run as it is now, made outside the lock (a large model takes a while).
  auto snapshotNow = [&]() -> Snapshot {
    const int step = training->stepsDone();
    auto values = std::make_shared<const std::vector<float>>(training->model().values);
    return {step, values, runGptModel(task_, training->model().tensors, values, runName(task_, step))};
  };
  auto publish = [&](std::unique_lock<std::mutex>&, Snapshot* snapshot) {
    for (; published_scores < training->scores().size(); ++published_scores)
      outbox_.scores.push_back(training->scores()[published_scores]);
    outbox_.done = training->stepsDone();
    if (snapshot != nullptr) outbox_.snapshots.push_back(std::move(*snapshot));
  };
  Clock::time_point window = Clock::now(), last_wake = window;
  int window_steps = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return quit_ || asked_ > training->stepsDone(); });
      if (quit_) return;
    }
    double loss = 0;
    std::string error;
    const std::size_t records = training->scores().size();
    Snapshot snapshot;
    bool reached = false;
    try {
      loss = training->step();
      {
        std::lock_guard<std::mutex> lock(mutex_);
        reached = training->stepsDone() >= asked_ || training->finished();
      }
      // A snapshot at each score record, and where it stops between records (the views show that step).
      if (reached || training->scores().size() > records) snapshot = snapshotNow();
    } catch (const std::exception& e) {  // ComputeError: the loss overflowed; InputError: a weight did
      error = e.what();
    }
    ++window_steps;
    const Clock::time_point now = Clock::now();
    const double seconds = std::chrono::duration<double>(now - window).count();
    std::unique_lock<std::mutex> lock(mutex_);
    if (!error.empty()) {
      outbox_.error = error;
      outbox_.stopped = true;
      asked_ = 0;
      lock.unlock();
      wakeUi();
      continue;
    }
    outbox_.losses.push_back(loss);
    reached = reached || training->stepsDone() >= asked_ || training->finished();
    publish(lock, snapshot.parameters ? &snapshot : nullptr);
    if (seconds >= 0.5) {
      outbox_.steps_per_s = window_steps / seconds;
      window = now;
      window_steps = 0;
    }
    if (reached) outbox_.stopped = true, asked_ = 0;
    lock.unlock();
    // At most 60 wake-ups a second: the UI takes everything published at its next frame.
    if (reached || std::chrono::duration<double>(now - last_wake).count() >= 1.0 / 60) {
      last_wake = now;
      wakeUi();
    }
  }
}

bool LearnSession::update(int shown_step) {
  if (!open_) return false;
  Outbox in;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    in = std::move(outbox_);
    outbox_ = {};
    outbox_.steps_per_s = in.steps_per_s;
  }
  const bool changed = !in.losses.empty() || !in.scores.empty() || !in.snapshots.empty() || !in.error.empty() ||
                       in.stopped;
  if (!changed) return false;
  losses_.insert(losses_.end(), in.losses.begin(), in.losses.end());
  scores_.insert(scores_.end(), in.scores.begin(), in.scores.end());
  done_ = std::max(done_, in.done);
  if (in.steps_per_s > 0) steps_per_s_ = in.steps_per_s;
  if (!in.error.empty()) error_ = in.error, playing_ = false, target_ = done_;
  if (in.stopped && done_ >= target_) playing_ = false;
  const bool new_snapshot = !in.snapshots.empty();
  if (!in.snapshots.empty() && !timeline_.empty()) timeline_.back().model.reset();  // only the newest holds one
  for (std::size_t i = 0; i + 1 < in.snapshots.size(); ++i) in.snapshots[i].model.reset();
  timeline_.insert(timeline_.end(), in.snapshots.begin(), in.snapshots.end());
  thin(shown_step);
  ++version_;
  return new_snapshot;
}

const LearnSession::Snapshot* LearnSession::snapshotAt(int step) const {
  if (timeline_.empty()) return nullptr;
  if (step < 0) return &timeline_.back();
  const Snapshot* at = &timeline_.front();
  for (const Snapshot& s : timeline_)
    if (s.step <= step) at = &s;
  return at;
}

void LearnSession::thin(int keep_step) {
  if (timeline_.empty()) return;
  const std::int64_t each = static_cast<std::int64_t>(timeline_.front().parameters->size()) * 4;
  const std::size_t most = static_cast<std::size_t>(std::max<std::int64_t>(
      2, std::min<std::int64_t>(kTimelineSnapshots, kTimelineBytes / std::max<std::int64_t>(each, 1))));
  const Snapshot* shown = keep_step >= 0 ? snapshotAt(keep_step) : nullptr;
  while (timeline_.size() > most) {
    std::vector<Snapshot> kept;
    for (std::size_t i = 0; i < timeline_.size(); ++i)
      if (i % 2 == 0 || i + 1 == timeline_.size() || &timeline_[i] == shown) kept.push_back(std::move(timeline_[i]));
    if (kept.size() == timeline_.size()) break;  // two or three left, one of them shown
    timeline_ = std::move(kept);
    shown = keep_step >= 0 ? snapshotAt(keep_step) : nullptr;
  }
}

}  // namespace attnscope
