// LearnSession: a model training live in the Learn tab (docs/DESIGN.md §3.9). A thread of its own
// runs the task's TrainingRun (core/learn/) while playing, or a number of steps asked for, and
// publishes what it measured — the losses, the head scores and the model's parameters at each
// score record (and where it stops); the UI thread moves them in at frame start (update), so that
// the views draw only what is here. The timeline of parameters is bounded: past its limit every
// other snapshot is dropped (the first and the newest stay), so a long run keeps an even sample of
// its whole history.
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
#include "lm/gpt_model.h"

namespace attnscope {

class LearnSession {
 public:
  // The model at one score record, or where the run stopped: its parameters, laid out as
  // TrainModel::values, and — the newest only — the model the views show of them, made on the
  // run's thread (learn/run_model.h; modelOf makes an older one's).
  struct Snapshot {
    int step = 0;
    std::shared_ptr<const std::vector<float>> parameters;
    std::shared_ptr<const GptModel> model;
  };
  // How much the timeline holds: at most this many bytes of parameters (and 400 snapshots; the
  // default task's model is 174 KB), but always the first and the newest.
  static constexpr std::int64_t kTimelineBytes = std::int64_t{128} << 20;
  static constexpr std::size_t kTimelineSnapshots = 400;

  LearnSession() = default;
  LearnSession(const LearnSession&) = delete;
  LearnSession& operator=(const LearnSession&) = delete;
  ~LearnSession() { close(); }

  // A new run of `task` at step 0, paused; its step-0 model is in the timeline at once (built
  // here: a lesson's next command may pick a view of it). The run before stops only once the new
  // one is built: a task that does not fit in memory is an InputError that changes nothing. The
  // task is checked already.
  void start(const TrainTask& task);
  void play();
  void pause();
  void stepBy(int steps);  // that many steps more, then paused
  void trainTo(int step);  // up to `step`, then paused (nothing when done already)
  void close();            // no run
  // At frame start: what the thread published since; the snapshot at `shown_step` (the one the
  // views show, −1: the newest) stays when the timeline is thinned. True when a newer snapshot came.
  bool update(int shown_step = -1);

  bool open() const { return open_; }
  bool playing() const { return playing_; }
  // A number of steps was asked for (stepBy, trainTo) and the run has not reached them: a script's
  // next command waits for them, and the views are not settled. A run that plays is not stepping:
  // it trains until paused or done, and nothing waits for it.
  bool stepping() const { return open_ && !playing_ && target_ > done_ && error_.empty() && !finished(); }
  bool finished() const { return open_ && done_ >= task_.steps; }
  int target() const { return target_; }  // the step stepping() trains to
  const TrainTask& task() const { return task_; }
  int stepsDone() const { return done_; }
  const std::vector<double>& losses() const { return losses_; }
  const std::vector<ScoreRecord>& scores() const { return scores_; }
  const std::vector<Snapshot>& timeline() const { return timeline_; }
  // The snapshot at or before `step` (−1: the newest); null before the first.
  const Snapshot* snapshotAt(int step) const;
  // The model of a snapshot: the newest's as the thread made it, an older one's made now.
  std::shared_ptr<const GptModel> modelOf(const Snapshot& s) const;
  const std::vector<ParamTensor>& layout() const { return layout_; }  // the parameters' tensors
  static std::string runName(const TrainTask& task, int step);           // "induction run, step 700"
  const std::vector<int>& probe() const { return probe_; }
  double stepsPerSecond() const { return steps_per_s_; }
  const std::string& error() const { return error_; }  // the run stopped: the loss was not finite
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
  };
  void run(std::shared_ptr<TrainingRun> training);  // the thread
  void stopThread();
  void thin(int keep_step);

  TrainTask task_;
  std::vector<ParamTensor> layout_;
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

  std::thread thread_;
  std::mutex mutex_;  // guards the three below
  std::condition_variable wake_;
  int asked_ = 0;  // the step the thread trains to (INT_MAX while playing)
  bool quit_ = false;
  Outbox outbox_;
};

}  // namespace attnscope
