// InteractionBench: `attnscope --bench-interaction OUT.json`, what a user feels (docs/DESIGN.md §3.3).
// For each preset it opens the preset and makes a series of edits through the app's one command
// path (the commands the inputs table and the model panel push), one at a time, and times each
// from the moment its command is queued (t0, just before the Controller::update of the frame that
// applies it) to the end of the first frame whose drawn snapshot answers the document version
// after the edit (t1, after that frame's swap). With a trained model (`--model PATH
// --bench-tokens T`) it times instead the model's opening, from the process's start to the first
// frame showing its result, then edits of its text: `text` commands of T random token ids, each
// answered by the first frame whose snapshot holds the pass of those ids (every head's thumbnail)
// and the next-token logits at the selected token. Frames are drawn back to back (swap interval 0)
// except between an edit and its result, when the window sleeps until the engine wakes it, as a
// user's does. Then it writes the figures as JSON, prints one summary line and the program exits.
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
  int tokens = 64;  // token ids per edit of the model's text (random, different every edit)
};

class InteractionBench {
 public:
  explicit InteractionBench(InteractionBenchOptions options);
  // Before Controller::update: queues the next command once the previous one's result is on screen (t0).
  void beforeUpdate(Controller& app);
  // At the end of a frame (after the swap): t1 when the drawn snapshot answers the edit. True once
  // every preset is done or the run failed: then call finish().
  bool afterFrame(const Controller& app);
  // Between an edit and its result: the window may sleep until the engine wakes it, as a user's does.
  bool awaitingResult() const { return phase_ == Phase::Waiting; }
  // A bench command the app refused.
  void refused(const CommandFailure& failure);
  // Writes OUT.json and the summary line (or the one error line); the exit code (2 when the
  // command line asked for what the model cannot do, 1 when the run failed).
  int finish(int window_w, int window_h);

 private:
  using Clock = std::chrono::steady_clock;
  struct Sample {
    std::string kind;      // "set_cell", "seed", "dropout", "preset"; "model_open", "text"
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
    std::vector<Sample> edits;
    std::vector<double> frame_ms;  // every frame drawn while waiting for a result
    double rss_after_open_mb = 0, peak_rss_mb = 0, rss_mb = 0;
    std::vector<double> rss_trend_mb;  // VmRSS after every tenth of the edits
  };
  enum class Phase { Queue, Applying, Waiting, Settling, Done, Failed };

  bool modelMode() const { return !options_.model_path.empty(); }
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
  std::string error_;
  int error_code_ = 1;
  std::mt19937 random_{31};  // the model's token ids
  double load_before_ = 0;   // the 1-minute load average at the start
};

}  // namespace attnscope
