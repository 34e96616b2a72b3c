// InteractionBench: `attnscope --bench-interaction OUT.json`, what a user feels (docs/DESIGN.md §3.3).
// One class, three modes (the command line picks one):
//   presets  (the default)         edits of each preset, command → first frame showing the result;
//   model    (--model PATH)        a trained model's opening from the process's start, then its text edits;
//   learn    (--bench-learn TASK)  every frame drawn while a model trains (docs/DESIGN.md §3.9).
// Presets: it opens each preset and makes a series of edits through the app's one command path (the
// commands the inputs table and the model panel push), one at a time, and times each from the
// moment its command is queued (t0, just before the Controller::update of the frame that applies
// it) to the end of the first frame whose drawn snapshot answers the document version after the
// edit (t1, after that frame's swap). Model (`--model PATH --bench-tokens T`): the model's opening,
// from the process's start to the first frame showing its result, then edits of its text: `text`
// commands of T token ids (in turn a new text of random ids, one token changed at a random
// position, the last token changed), each answered by the first frame whose snapshot holds the
// pass of those ids (every head's thumbnail) and the next-token logits at the selected token. Frames are
// drawn back to back (swap interval 0) except between an edit and its result, when the window
// sleeps until the engine wakes it, as a user's does. Learn: the app's own `learn` (play) starts
// the run, then for each tab of kLearnTabs (the Learn tab first, then the other views of its
// model) the bench shows the tab with `view` as the tab bar does and records every frame over the
// tab's seconds: its interval from the previous frame's end, its draw time (frame start → after the
// swap) and the steps trained meanwhile. The window sleeps throughout, as a user's does: frames
// come when the run (at most 60 wake-ups a second), the engine or a timeout wakes it. Then it
// writes the figures as JSON, prints one summary line and the program exits.
#pragma once
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "editing/command.h"

namespace attnscope {

class Controller;
struct CommandFailure;
struct Snapshot;

struct InteractionBenchOptions {
  std::string out_path;              // the JSON written at the end
  std::vector<std::string> presets;  // opened one after the other with the `preset` command
  int edits = 200;                   // edits per preset, each timed
  int gap_ms = 0;                    // frames keep being drawn this long after a result before the next edit
  double timeout_s = 300;            // the longest wait for one result
  // A trained model instead of the presets: main.cpp opens it at start with model_open, as
  // --model does; the bench waits for its first result, then edits its text.
  std::string model_path;
  int tokens = 64;  // token ids of the model's text in every edit
  // Frames while a model trains instead (--bench-learn): the TASK, read and checked by main.cpp
  // (trainTaskJson of it: a relative tokenizer path made absolute); null in the other modes.
  nlohmann::json learn_task;
  std::string learn_task_path;  // the TASK's file, as given (the JSON names it)
  double learn_seconds = 10;    // the Learn tab's recording; each other tab records a share of it (kLearnTabs)
};

class InteractionBench {
 public:
  explicit InteractionBench(InteractionBenchOptions options);
  // Before Controller::update: queues the next command once the previous one's result is on screen (t0).
  void beforeUpdate(Controller& app);
  // At the end of a frame (after the swap): t1 when the drawn snapshot answers the edit (learn: the
  // frame recorded). True once every preset (every tab) is done or the bench failed: then call finish().
  bool afterFrame(const Controller& app);
  // The window may sleep until something wakes it, as a user's does: between an edit and its result,
  // and throughout a learn run once it started.
  bool maySleep() const { return phase_ == Phase::Waiting || (learnMode() && phase_ != Phase::Queue); }
  // A bench command the app refused.
  void refused(const CommandFailure& failure);
  // Writes OUT.json and the summary line (or the one error line); the exit code (2 when the
  // command line asked for what the model cannot do, 1 when the run failed).
  int finish(int window_w, int window_h);

 private:
  using Clock = std::chrono::steady_clock;
  struct Sample {
    std::string kind;      // "set_cell", "seed", "dropout", "preset"; "model_open", "new_text", "token_changed",
                           // "last_token_changed"
    double ms = 0;         // t1 − t0
    int frames = 0;        // frames from the one applying the command to the one showing its result
    double engine_ms = 0;  // computeTrace time of the snapshot shown (Snapshot::milliseconds)
  };
  struct Config {
    std::string preset;  // empty with a model
    int tokens = 0, d_in = 0, heads = 0, batch_size = 0;
    std::string model;                       // --model's path
    int layers = 0, vocab = 0, context = 0;  // the model's
    double before_first_frame_ms = 0;        // process start → the first frame (the window, its fonts)
    double first_frame_ms = 0;               // the frame applying model_open: the model loaded, then drawn
    Sample open;                             // a preset: from its command; a model: from the process's start
    double open_user_ms = 0,
           open_kernel_ms = 0;  // a model: the process's CPU time until then, its own and the kernel's
    std::vector<Sample> edits;
    std::vector<double> frame_ms;  // every frame drawn while waiting for a result
    double rss_after_open_mb = 0, peak_rss_mb = 0, rss_mb = 0;
    std::vector<double> rss_trend_mb;  // VmRSS after every tenth of the edits
  };
  // Learn: one tab's frames. Intervals and draw times in ms; steps are the run's at the recording's
  // start and end.
  struct TabFrames {
    std::string tab;
    double seconds = 0;  // from the end of the tab's settling to its last recorded frame's end
    std::vector<double> interval_ms, draw_ms;
    int steps_before = 0, steps_after = 0;
    double run_steps_per_s = 0;  // the run's own figure (LearnSession::stepsPerSecond) at the end
    bool run_ended = false;      // the run stopped (finished) during the recording
  };
  enum class Phase { Queue, Applying, Waiting, Settling, Recording, Done, Failed };

  bool modelMode() const { return !options_.model_path.empty(); }
  bool learnMode() const { return !options_.learn_task.is_null(); }
  void learnBeforeUpdate(Controller& app);
  bool learnAfterFrame(const Controller& app, Clock::time_point now);
  int finishLearn(int window_w, int window_h);
  std::size_t configCount() const { return modelMode() ? 1 : options_.presets.size(); }
  // The version an edit bumps: the document's, or the open model's text and layer.
  std::uint64_t editedVersion(const Controller& app) const;
  // The drawn snapshot shows the edited version's result (a model: its pass and the selected
  // token's next-token logits).
  bool answers(const Controller& app, const Snapshot& shown) const;
  Command nextCommand(const Controller& app, std::string* kind);
  void fail(const std::string& message);
  void refuseOption(const std::string& message);  // the command line's fault: one line, exit 2
  std::string where() const;

  InteractionBenchOptions options_;
  std::vector<Config> configs_;
  std::size_t preset_ = 0;  // index into options_.presets
  int edit_ = -1;           // −1 while opening the preset (or the model)
  Phase phase_ = Phase::Queue;
  std::string kind_;
  std::uint64_t version_before_ = 0, target_ = 0;
  Clock::time_point process_start_;  // from /proc/self/stat: the model's opening is timed from it
  Clock::time_point t0_, settle_until_, last_frame_;
  int frames_ = 0, settle_frames_ = 0;
  Clock::time_point frame_start_, record_start_;  // learn: this frame's start, the tab's recording's
  std::vector<TabFrames> tabs_;                   // learn: the tabs recorded, in order
  std::size_t tab_ = 0;                           // learn: index into kLearnTabs
  std::string error_;
  int error_code_ = 1;
  std::mt19937 random_{31};  // the model's token ids
  double load_before_ = 0;   // the 1-minute load average at the start
};

}  // namespace attnscope
