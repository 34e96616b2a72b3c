// LearnSession: a model training live in the Learn tab (docs/DESIGN.md §3.9). A thread of its own
// runs the task's TrainingRun (core/learn/) while playing, or a number of steps asked for, and
// publishes what it measured — the losses, the head scores and the probe's attention maps at each
// score record; the UI thread moves them in at frame start (update), so that the views draw only
// what is here. The timeline of maps is bounded: past its limit every other snapshot is dropped
// (the first and the newest stay), so a long run keeps an even sample of its whole history.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "learn/training_run.h"

namespace attnscope {

class LearnSession {
 public:
  // The probe's maps at one score record: L·H maps of T × T, layer-major.
  struct Snapshot {
    int step = 0;
    std::shared_ptr<const std::vector<float>> maps;
  };
  // How much the timeline holds: at most this many bytes of maps (and 400 snapshots).
  static constexpr std::int64_t kTimelineBytes = std::int64_t{64} << 20;

  LearnSession() = default;
  LearnSession(const LearnSession&) = delete;
  LearnSession& operator=(const LearnSession&) = delete;
  ~LearnSession() { close(); }

  // A new run of `task` at step 0, paused (the one before it stops). The task is checked already.
  void start(const TrainTask& task);
  void play();
  void pause();
  void stepBy(int steps);  // that many steps more, then paused
  void close();            // no run
  // At frame start: what the thread published since. True when a newer snapshot came.
  bool update();

  bool open() const { return open_; }
  bool playing() const { return playing_; }
  // Steps were asked for (stepBy, or play) and the run has not reached them: a script's next
  // command waits for them.
  bool stepping() const { return open_ && target_ > done_ && error_.empty() && !finished(); }
  bool finished() const { return open_ && done_ >= task_.steps; }
  const TrainTask& task() const { return task_; }
  int stepsDone() const { return done_; }
  const std::vector<double>& losses() const { return losses_; }
  const std::vector<ScoreRecord>& scores() const { return scores_; }
  const std::vector<Snapshot>& timeline() const { return timeline_; }
  const std::vector<int>& probe() const { return probe_; }
  std::vector<std::string> probeLabels() const;  // the probe's tokens as the views name them
  double stepsPerSecond() const { return steps_per_s_; }
  const std::string& error() const { return error_; }  // the run stopped: the loss was not finite
  // The model's parameters as the thread last published them (at each score record and whenever
  // it stops) and the step they are at; null before the first.
  const std::shared_ptr<const std::vector<float>>& parameters() const { return parameters_; }
  int parametersStep() const { return parameters_step_; }
  std::uint64_t version() const { return version_; }   // bumped by every change update() takes
  std::uint64_t runId() const { return run_id_; }      // another for each start()

 private:
  struct Outbox {  // written by the thread, taken by update()
    std::vector<double> losses;
    std::vector<ScoreRecord> scores;
    std::vector<Snapshot> snapshots;
    int done = 0;
    double steps_per_s = 0;
    std::string error;
    bool stopped = false;  // the thread paused itself (the target reached, finished, an error)
    std::shared_ptr<const std::vector<float>> parameters;
    int parameters_step = 0;
  };
  void run(std::uint64_t generation);  // the thread
  void stopThread();
  void thin();

  TrainTask task_;
  bool open_ = false, playing_ = false;
  int target_ = 0, done_ = 0;
  std::vector<double> losses_;
  std::vector<ScoreRecord> scores_;
  std::vector<Snapshot> timeline_;
  std::vector<int> probe_;
  double steps_per_s_ = 0;
  std::string error_;
  std::uint64_t version_ = 0;
  std::uint64_t run_id_ = 0;
  std::shared_ptr<const std::vector<float>> parameters_;
  int parameters_step_ = 0;

  std::thread thread_;
  std::mutex mutex_;  // guards the three below
  std::condition_variable wake_;
  int asked_ = 0;  // the step the thread trains to (INT_MAX while playing)
  bool quit_ = false;
  Outbox outbox_;
};

}  // namespace attnscope
