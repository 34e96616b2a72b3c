#include "state/learn_session.h"

#include <chrono>
#include <climits>

#include "engine/errors.h"
#include "state/ui_wake.h"

namespace attnscope {

void LearnSession::start(const TrainTask& task) {
  close();
  // Built here, so that its untrained model is shown at once (a lesson's next command may pick a
  // view of it); a task the budget allows initializes in milliseconds (the default's 43 k
  // parameters in under one). The thread then trains it.
  auto training = std::make_shared<TrainingRun>(task);
  task_ = task;
  open_ = true;
  playing_ = false;
  target_ = done_ = 0;
  probe_ = training->probe();
  scores_ = training->scores();
  timeline_ = {{0, std::make_shared<const std::vector<float>>(training->model().values)}};
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
void LearnSession::run(std::shared_ptr<TrainingRun> training) {
  using Clock = std::chrono::steady_clock;
  std::size_t published_scores = training->scores().size();  // start() took the step-0 record
  auto publish = [&](std::unique_lock<std::mutex>&, bool snapshot) {
    for (; published_scores < training->scores().size(); ++published_scores)
      outbox_.scores.push_back(training->scores()[published_scores]);
    outbox_.done = training->stepsDone();
    if (snapshot)
      outbox_.snapshots.push_back(
          {training->stepsDone(), std::make_shared<const std::vector<float>>(training->model().values)});
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
    try {
      loss = training->step();
    } catch (const std::exception& e) {  // ComputeError: the loss overflowed
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
    const bool reached = training->stepsDone() >= asked_ || training->finished();
    // A snapshot at each score record, and where it stops between records (the views show that step).
    publish(lock, reached || training->scores().size() > records);
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

bool LearnSession::update() {
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
  timeline_.insert(timeline_.end(), in.snapshots.begin(), in.snapshots.end());
  thin();
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

void LearnSession::thin() {
  if (timeline_.empty()) return;
  const std::int64_t each = static_cast<std::int64_t>(timeline_.front().parameters->size()) * 4;
  const std::size_t most = static_cast<std::size_t>(std::max<std::int64_t>(
      16, std::min<std::int64_t>(kTimelineSnapshots, kTimelineBytes / std::max<std::int64_t>(each, 1))));
  if (timeline_.size() <= most) return;
  std::vector<Snapshot> kept;
  for (std::size_t i = 0; i < timeline_.size(); ++i)
    if (i % 2 == 0 || i + 1 == timeline_.size()) kept.push_back(std::move(timeline_[i]));
  timeline_ = std::move(kept);
}

}  // namespace attnscope
