#include "state/interaction_bench.h"

#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/errors.h"
#include "engine/model_config.h"
#include "formats/atomic_file.h"
#include "formats/workspace_file.h"
#include "state/controller.h"
#include "state/learn_session.h"
#include "state/snapshot.h"

namespace attnscope {

namespace {

// VmHWM (peak) or VmRSS (now) of this process in MB, from /proc/self/status; 0 when unknown.
double procStatusMb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) != 0) continue;
    std::istringstream rest(line.substr(field.size() + 1));
    double kb = 0;
    rest >> kb;
    return kb / 1024.0;
  }
  return 0;
}

// The q-quantile (0 … 1) with linear interpolation between the closest ranks (numpy's default).
double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

// The 1-minute load average: other work on the machine skews the figures.
double loadAverage() {
  std::ifstream in("/proc/loadavg");
  double load = -1;
  in >> load;
  return load;
}

double round3(double x) { return std::round(x * 1000) / 1000; }

// Field `field` (1-based, as proc(5) numbers them; 3 or more) of /proc/self/stat, in clock ticks
// where it is a time; 0 when unknown.
unsigned long long statField(int field) {
  std::ifstream in("/proc/self/stat");
  std::string stat;
  std::getline(in, stat);
  const std::size_t name_end = stat.rfind(')');  // the command's name (field 2) may hold ") "
  if (name_end == std::string::npos) return 0;
  std::istringstream fields(stat.substr(name_end + 1));
  std::string skip;
  for (int f = 3; f < field; ++f) fields >> skip;
  unsigned long long value = 0;
  return fields >> value ? value : 0;
}

// When this process started, on the steady clock: /proc/self/stat's start time (field 22, clock
// ticks since boot, 10 ms apart; taken at the fork, so exec and the dynamic linker are inside)
// against CLOCK_BOOTTIME, which counts from the same boot. `fallback` when either is unknown.
std::chrono::steady_clock::time_point processStart(std::chrono::steady_clock::time_point fallback) {
  const long ticks = sysconf(_SC_CLK_TCK);
  timespec boot{};
  const unsigned long long start_ticks = statField(22);
  if (start_ticks == 0 || ticks <= 0 || clock_gettime(CLOCK_BOOTTIME, &boot) != 0) return fallback;
  const double ago = static_cast<double>(boot.tv_sec) + static_cast<double>(boot.tv_nsec) * 1e-9 -
                     static_cast<double>(start_ticks) / static_cast<double>(ticks);
  if (ago < 0 || ago > 3600) return fallback;
  return std::chrono::steady_clock::now() -
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(ago));
}

// This process's CPU time so far, all threads, in ms: its own (utime, field 14) or the kernel's for
// it (stime, 15: where a VM's host backing the pages first touched shows — 80 % of a slow model
// open here was the kernel zeroing them). 0 when unknown.
double processCpuMs(bool kernel) {
  const long ticks = sysconf(_SC_CLK_TCK);
  return ticks > 0 ? static_cast<double>(statField(kernel ? 15 : 14)) * 1000.0 / static_cast<double>(ticks) : 0;
}

// Learn: the tabs recorded while the run trains, in order, each for this share of --bench-seconds:
// the Learn tab, then the other views of the run's model (docs/DESIGN.md §3.9).
struct LearnTab {
  const char* id;  // the view's tab, as `view` names it
  double share;
};
constexpr LearnTab kLearnTabs[] = {{"learn", 1.0}, {"layers", 0.3}, {"heatmaps", 0.3}, {"lines", 0.3}};
constexpr std::size_t kLearnTabCount = sizeof kLearnTabs / sizeof kLearnTabs[0];
constexpr double kTabSettleS = 0.5;  // each tab's first frames (its textures, its layout) are not recorded

nlohmann::json summary(const std::vector<double>& v) {
  return {{"p50", round3(quantile(v, 0.5))},
          {"p95", round3(quantile(v, 0.95))},
          {"max", round3(v.empty() ? 0 : *std::max_element(v.begin(), v.end()))},
          {"mean", round3(mean(v))}};
}

}  // namespace

InteractionBench::InteractionBench(InteractionBenchOptions options)
    : options_(std::move(options)), process_start_(processStart(Clock::now())), load_before_(loadAverage()) {}

std::string InteractionBench::where() const {
  if (learnMode())
    return "the run of " + options_.learn_task_path + ", the " + kLearnTabs[std::min(tab_, kLearnTabCount - 1)].id +
           " tab";
  std::string what;
  if (modelMode())
    what = "the model " + options_.model_path + " (" + std::to_string(options_.tokens) + " tokens)";
  else
    what = preset_ < options_.presets.size() ? options_.presets[preset_] : "";
  if (edit_ < 0) return what + (modelMode() ? ", opening the model" : ", opening the preset");
  return what + ", edit " + std::to_string(edit_ + 1) + " of " + std::to_string(options_.edits) + " (" + kind_ + ")";
}

void InteractionBench::fail(const std::string& message) {
  if (phase_ == Phase::Failed) return;
  error_ = "--bench-interaction: " + where() + ": " + message;
  phase_ = Phase::Failed;
}

void InteractionBench::refuseOption(const std::string& message) {
  if (phase_ == Phase::Failed) return;
  error_ = message;
  error_code_ = 2;
  phase_ = Phase::Failed;
}

void InteractionBench::refused(const CommandFailure& failure) {
  fail("the app refused the command: " + failure.message);
}

std::uint64_t InteractionBench::editedVersion(const Controller& app) const {
  return modelMode() ? app.model().version() : app.document().version();
}

bool InteractionBench::answers(const Controller& app, const Snapshot& shown) const {
  if (!modelMode()) return shown.version >= target_;
  // What the Layers tab and the next-token list draw from (panels/model_text_panel.cpp).
  return shown.model && shown.model_version >= target_ && shown.logitsAt(app.view().token) != nullptr;
}

// The edits, as the inputs table and the model panel make them: mostly one embedding cell changed
// by ±0.125 (four cells in turn, each moving back and forth, so every edit changes the result),
// and in every ten edits one re-seed (the model panel's seed field) and one dropout change. A
// model's edits are texts of T token ids, as the model text panel's Enter applies them, in turn of
// three kinds (kModelEdits): a new text (every id a fresh uniform draw from the vocabulary: a
// paste), one token changed at a uniformly drawn position (a word edited anywhere), and the last
// token changed (typing at the end). The first edit is always a new text of T ids.
Command InteractionBench::nextCommand(const Controller& app, std::string* kind) {
  if (edit_ < 0) {
    *kind = "preset";
    return makeCommand("preset", {{"name", options_.presets[preset_]}});
  }
  if (modelMode()) {
    static constexpr const char* kModelEdits[] = {"new_text", "token_changed", "last_token_changed"};
    std::uniform_int_distribution<int> id(0, app.model().model()->config.vocab_size - 1);
    std::vector<int> ids = app.model().ids();
    const bool fresh = edit_ % 3 == 0 || static_cast<int>(ids.size()) != options_.tokens || id.b() < 1;
    *kind = kModelEdits[fresh ? 0 : edit_ % 3];
    if (fresh) {
      ids.resize(static_cast<std::size_t>(options_.tokens));
      for (int& v : ids) v = id(random_);
    } else {
      const int at = edit_ % 3 == 2 ? options_.tokens - 1
                                    : std::uniform_int_distribution<int>(0, options_.tokens - 1)(random_);
      const int was = ids[static_cast<std::size_t>(at)];
      while (ids[static_cast<std::size_t>(at)] == was) ids[static_cast<std::size_t>(at)] = id(random_);
    }
    return makeCommand("text", {{"ids", ids}});
  }
  const Workspace& ws = app.document().workspace();
  const ModelConfig& m = ws.model;
  if (edit_ % 10 == 4) {
    *kind = "seed";
    return makeCommand("set", {{"field", "seed"}, {"value", m.seed ^ 1u}});
  }
  if (edit_ % 10 == 9 && hasDropout(m.variant)) {
    *kind = "dropout";
    return makeCommand("set", {{"field", "dropout"}, {"value", m.dropout > 0 ? 0.0 : 0.1}});
  }
  *kind = "set_cell";
  const int T = static_cast<int>(ws.embeddings.rows()), d = static_cast<int>(ws.embeddings.cols());
  const int rows[4] = {0, T / 2, T - 1, T / 3}, cols[4] = {0, d / 3, d - 1, 2 * d / 3};
  const int cell = edit_ % 4;
  const double old = ws.embeddings(rows[cell], cols[cell]);
  const double delta = (edit_ / 4) % 2 == 0 ? 0.125 : -0.125;
  return makeCommand("set_cell", {{"row", rows[cell]}, {"col", cols[cell]}, {"value", old + delta}});
}

void InteractionBench::beforeUpdate(Controller& app) {
  frame_start_ = Clock::now();
  if (learnMode()) return learnBeforeUpdate(app);
  if (phase_ != Phase::Queue) return;
  if (edit_ < 0) {
    configs_.emplace_back();
    if (modelMode()) {  // main.cpp queued model_open (--model): this frame applies it
      Config& config = configs_.back();
      config.model = options_.model_path;
      kind_ = "model_open";
      t0_ = process_start_;
      last_frame_ = Clock::now();
      config.before_first_frame_ms = std::chrono::duration<double, std::milli>(last_frame_ - t0_).count();
      frames_ = 0;
      phase_ = Phase::Applying;
      return;
    }
    configs_.back().preset = options_.presets[preset_];
  }
  version_before_ = editedVersion(app);
  Command c;
  try {
    c = nextCommand(app, &kind_);
  } catch (const InputError& e) {
    fail(e.what());
    return;
  }
  c.script_index = edit_ + 1;  // ≥ 0: a refusal comes back through Controller::takeFailures, not as a toast
  app.commands().push(std::move(c));
  t0_ = last_frame_ = Clock::now();
  frames_ = 0;
  phase_ = Phase::Applying;
}

bool InteractionBench::afterFrame(const Controller& app) {
  const Clock::time_point now = Clock::now();
  if (learnMode()) return learnAfterFrame(app, now);
  const double frame_ms = std::chrono::duration<double, std::milli>(now - last_frame_).count();
  last_frame_ = now;
  if (phase_ == Phase::Settling) {
    if (now >= settle_until_ && --settle_frames_ <= 0) phase_ = Phase::Queue;
    return false;
  }
  if (phase_ == Phase::Applying) {  // the command was applied by this frame's Controller::update
    target_ = editedVersion(app);
    if (edit_ >= 0 && target_ <= version_before_) {
      fail(modelMode() ? "the edit did not change the model's text" : "the edit did not change the document");
      return true;
    }
    // The model is read off the UI thread (a failure: main.cpp says why and exits); it is checked
    // once open, below.
    if (modelMode() && edit_ < 0) configs_.back().first_frame_ms = frame_ms;
    phase_ = Phase::Waiting;
  }
  if (phase_ == Phase::Waiting) {
    Config& config = configs_.back();
    ++frames_;
    config.frame_ms.push_back(frame_ms);
    const Snapshot* shown = app.shown().get();  // what this frame drew
    const double seconds = std::chrono::duration<double>(now - t0_).count();
    if (shown && answers(app, *shown)) {
      const Sample sample{kind_, seconds * 1000, frames_, shown->milliseconds};
      if (edit_ < 0) {
        if (modelMode() && options_.tokens > app.model().maxTokens()) {
          refuseOption("--bench-tokens: " + std::to_string(options_.tokens) + " tokens, more than the model reads (" +
                       std::to_string(app.model().maxTokens()) + ")");
          return true;
        }
        config.open = sample;
        config.open_user_ms = processCpuMs(false);
        config.open_kernel_ms = processCpuMs(true);
        if (modelMode()) {  // the edits' text, the model's shape
          const GptConfig& g = app.model().model()->config;
          config.tokens = options_.tokens;
          config.d_in = g.d_model;
          config.heads = g.heads;
          config.layers = g.layers;
          config.vocab = g.vocab_size;
          config.context = g.context_length;
          config.batch_size = 1;
        } else {
          const ModelConfig& m = shown->inputs->model;
          config.tokens = shown->tokenCount();
          config.d_in = static_cast<int>(shown->inputs->embeddings.cols());
          config.heads = headCount(m);
          config.batch_size = m.batch_size;
        }
        config.rss_after_open_mb = procStatusMb("VmRSS");
        // Let the new preset's maps be coloured before the first edit: at least 10 frames and as
        // long again as opening took (at most 3 s).
        settle_until_ = now + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(std::min(seconds, 3.0)));
        settle_frames_ = 10;
        edit_ = 0;
        phase_ = Phase::Settling;
        return false;
      }
      config.edits.push_back(sample);
      const int every = std::max(1, options_.edits / 10);
      if ((edit_ + 1) % every == 0) config.rss_trend_mb.push_back(round3(procStatusMb("VmRSS")));
      if (++edit_ < options_.edits) {
        settle_until_ = now + std::chrono::milliseconds(options_.gap_ms);
        settle_frames_ = 0;
        phase_ = options_.gap_ms > 0 ? Phase::Settling : Phase::Queue;
        return false;
      }
      config.rss_mb = procStatusMb("VmRSS");  // first: the peak read after it is at least as large
      config.peak_rss_mb = procStatusMb("VmHWM");
      edit_ = -1;
      phase_ = ++preset_ < configCount() ? Phase::Queue : Phase::Done;
    } else if (app.settled() && !app.engineError().empty()) {
      fail("the engine refused the inputs: " + app.engineError());
    } else if (seconds > options_.timeout_s) {
      char text[96];
      std::snprintf(text, sizeof text, "no result on screen after %.0f s (%d frames)", seconds, frames_);
      fail(text);
    }
  }
  return phase_ == Phase::Done || phase_ == Phase::Failed;
}

int InteractionBench::finish(int window_w, int window_h) {
  if (phase_ == Phase::Failed) {
    std::cerr << "error: " << error_ << "\n";
    return error_code_;
  }
  if (learnMode()) return finishLearn(window_w, window_h);
  nlohmann::json configs = nlohmann::json::array();
  std::string line;
  for (const Config& c : configs_) {
    std::vector<double> ms, frames, engine;
    std::map<std::string, std::vector<double>> by_kind, engine_by_kind;
    std::map<int, int> histogram;
    int next_frame = 0;
    for (const Sample& s : c.edits) {
      ms.push_back(s.ms);
      frames.push_back(s.frames);
      engine.push_back(s.engine_ms);
      by_kind[s.kind].push_back(s.ms);
      engine_by_kind[s.kind].push_back(s.engine_ms);
      ++histogram[s.frames];
      next_frame += s.frames == 1;
    }
    nlohmann::json kinds = nlohmann::json::object(), frames_hist = nlohmann::json::object();
    for (const auto& [kind, v] : by_kind) {
      kinds[kind] = summary(v);
      kinds[kind]["edits"] = v.size();
      kinds[kind]["engine_ms"] = summary(engine_by_kind[kind]);
    }
    for (const auto& [n, count] : histogram) frames_hist[std::to_string(n)] = count;
    const nlohmann::json frame_summary = summary(frames);
    const double fraction = c.edits.empty() ? 0 : static_cast<double>(next_frame) / static_cast<double>(c.edits.size());
    nlohmann::json config;
    if (modelMode())  // the edits' text and the model's shape
      config = {{"model", c.model},  {"tokens", c.tokens}, {"layers", c.layers},  {"heads", c.heads},
                {"d_model", c.d_in}, {"vocab", c.vocab},   {"context", c.context}};
    else
      config = {{"preset", c.preset},
                {"tokens", c.tokens},
                {"d_in", c.d_in},
                {"heads", c.heads},
                {"batch_size", c.batch_size}};
    nlohmann::json open = {{"ms", round3(c.open.ms)},
                           {"frames", c.open.frames},
                           {"engine_ms", round3(c.open.engine_ms)}};
    if (modelMode()) {
      open["from"] = "process start";
      open["before_first_frame_ms"] = round3(c.before_first_frame_ms);
      open["first_frame_ms"] = round3(c.first_frame_ms);
      open["cpu_ms"] = round3(c.open_user_ms);  // of all threads, until then: the process's own, the kernel's
      open["kernel_cpu_ms"] = round3(c.open_kernel_ms);
    }
    config.update({{"edits", c.edits.size()},
                   {"edit_to_frame_ms", summary(ms)},
                   {"frames_to_result",
                    {{"p50", frame_summary["p50"]},
                     {"max", frame_summary["max"]},
                     {"mean", frame_summary["mean"]},
                     {"histogram", frames_hist}}},
                   {"next_frame_fraction", round3(fraction)},
                   {"by_kind", kinds},
                   {"engine_ms", summary(engine)},
                   {"frame_ms", summary(c.frame_ms)},
                   {"open", open},
                   {"rss_after_open_mb", round3(c.rss_after_open_mb)},
                   {"peak_rss_mb", round3(c.peak_rss_mb)},
                   {"rss_mb", round3(c.rss_mb)},
                   {"rss_trend_mb", c.rss_trend_mb}});
    configs.push_back(std::move(config));
    const std::string name = modelMode() ? "model " + c.model + ", " + std::to_string(c.tokens) + " tokens" : c.preset;
    char opened[96] = "";
    if (modelMode())
      std::snprintf(opened, sizeof opened, "first result %.2f s after the process started, ", c.open.ms / 1000);
    char text[480];
    std::snprintf(text, sizeof text,
                  "%s%s: %zu edits, edit→frame p50 %.1f ms, p95 %.1f ms, max %.1f ms, %.1f frames on average "
                  "(next frame %.0f%%), %speak RSS %.0f MB",
                  line.empty() ? "" : "; ", name.c_str(), c.edits.size(), quantile(ms, 0.5), quantile(ms, 0.95),
                  ms.empty() ? 0.0 : *std::max_element(ms.begin(), ms.end()), mean(frames), fraction * 100, opened,
                  c.peak_rss_mb);
    line += text;
  }
  const nlohmann::json out = {
      {"configs", configs},
      {"window", {window_w, window_h}},
      {"gap_ms", options_.gap_ms},
      {"load_average", {{"before", load_before_}, {"after", loadAverage()}}},
      {"method",
       "t0: the command is queued just before the Controller::update of the frame that applies it; t1: the end of the "
       "first "
       "frame (after its swap) whose drawn snapshot has a version >= the document's after the edit. frames_to_result "
       "counts frames from the one applying the edit (1) to the one showing its result; next frame = 1. Swap "
       "interval 0. Between an edit and its result the window sleeps until the engine wakes it, as the app does for a "
       "user; otherwise frames are drawn back to back. Large maps may still show their colouring placeholder at t1. "
       "A trained model (--model): its edits are `text` commands of `tokens` ids, in turn a new text of random ids "
       "(by_kind new_text), one token changed at a random position (token_changed) and the last token changed "
       "(last_token_changed); t1 is the end of the "
       "first frame whose snapshot holds the pass of those ids (every head's thumbnail in the Layers tab) and the "
       "next-token logits at the selected token (the last) — past 2^20 cells of the layer shown, a first part whose "
       "layer maps follow (DESIGN.md §3.3 Two-part results) and are not waited for; its open is timed from the "
       "process's start "
       "(/proc/self/stat, 10 ms ticks) to the first frame showing its first text's result, and splits into "
       "before_first_frame_ms (the window), first_frame_ms (model_open: the model loaded) and the rest (the first "
       "pass, the frames)."}};
  try {
    writeFileAtomically(options_.out_path, out.dump(2) + "\n");
  } catch (const InputError& e) {
    std::cerr << "error: --bench-interaction: " << e.what() << "\n";
    return 2;
  }
  std::cout << line << " → " << options_.out_path << "\n";
  return 0;
}

// [SECTION] Learn: the frames drawn while a model trains ----------------------------------------

// The first frame starts the run as the Learn tab's Train does (`learn` with play, a refusal coming
// back through Controller::takeFailures); each tab is then shown as the tab bar shows it (`view`,
// the UI's own command: a script's command would wait for the run's last step, §3.9).
void InteractionBench::learnBeforeUpdate(Controller& app) {
  if (phase_ != Phase::Queue) return;
  if (tabs_.empty()) {
    Command learn = makeCommand("learn", {{"task", options_.learn_task}, {"play", true}});
    learn.script_index = 0;
    app.commands().push(std::move(learn));
  }
  app.commands().push("view", {{"field", "tab"}, {"value", kLearnTabs[tab_].id}});
  tabs_.emplace_back();
  tabs_.back().tab = kLearnTabs[tab_].id;
  phase_ = Phase::Applying;
}

bool InteractionBench::learnAfterFrame(const Controller& app, Clock::time_point now) {
  const double interval_ms = std::chrono::duration<double, std::milli>(now - last_frame_).count();
  const double draw_ms = std::chrono::duration<double, std::milli>(now - frame_start_).count();
  last_frame_ = now;
  if (phase_ == Phase::Failed) return true;
  const LearnSession& run = app.learn();
  if (!run.error().empty()) {
    fail("the run stopped: " + run.error());
    return true;
  }
  const bool ended = !run.open() || !run.playing();  // finished (or ended by something else)
  TabFrames& tab = tabs_.back();
  if (phase_ == Phase::Applying) {  // this frame's Controller::update applied the commands
    if (!run.open() || !run.playing()) {
      fail("the run did not start");
      return true;
    }
    if (app.view().tab != tab.tab) {
      fail("the app did not show the tab (it shows " + app.view().tab + ")");
      return true;
    }
    settle_until_ = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kTabSettleS));
    phase_ = Phase::Settling;
    return false;
  }
  if (phase_ == Phase::Settling) {
    if (ended) {  // the run finished before this tab was recorded: the tabs before it are the figures
      tabs_.pop_back();
      if (tabs_.empty())
        fail("the run finished before any frame was recorded: give its TASK more steps");
      else
        phase_ = Phase::Done;
      return true;
    }
    if (now >= settle_until_) {
      record_start_ = now;
      tab.steps_before = run.stepsDone();
      phase_ = Phase::Recording;
    }
    return false;
  }
  if (phase_ != Phase::Recording) return phase_ == Phase::Done;
  if (app.view().tab != tab.tab) {
    fail("the tab changed to " + app.view().tab + " while it was recorded");
    return true;
  }
  tab.interval_ms.push_back(interval_ms);
  tab.draw_ms.push_back(draw_ms);
  tab.seconds = std::chrono::duration<double>(now - record_start_).count();
  tab.steps_after = run.stepsDone();
  if (tab.seconds < options_.learn_seconds * kLearnTabs[tab_].share && !ended) return false;
  tab.run_steps_per_s = run.stepsPerSecond();
  tab.run_ended = ended;
  phase_ = ended || ++tab_ == kLearnTabCount ? Phase::Done : Phase::Queue;
  return phase_ == Phase::Done;
}

int InteractionBench::finishLearn(int window_w, int window_h) {
  nlohmann::json tabs = nlohmann::json::object();
  std::string line;
  double seconds = 0;
  int steps = 0;
  for (const TabFrames& t : tabs_) {
    const double fps = t.seconds > 0 ? static_cast<double>(t.interval_ms.size()) / t.seconds : 0;
    const int tab_steps = t.steps_after - t.steps_before;
    seconds += t.seconds;
    steps += tab_steps;
    const nlohmann::json interval = summary(t.interval_ms), draw = summary(t.draw_ms);
    tabs[t.tab] = {{"frames", t.interval_ms.size()},
                   {"seconds", round3(t.seconds)},
                   {"fps", round3(fps)},
                   {"interval_ms", interval},
                   {"draw_ms", draw},
                   {"steps", tab_steps},
                   {"steps_per_s", round3(t.seconds > 0 ? tab_steps / t.seconds : 0)},
                   {"run_steps_per_s", round3(t.run_steps_per_s)},
                   {"run_ended", t.run_ended}};
    char text[200];
    std::snprintf(text, sizeof text, "%s%s %.1f fps (interval p50 %.1f ms, p95 %.1f ms; draw p50 %.1f ms)",
                  line.empty() ? "" : ", ", t.tab.c_str(), fps, interval["p50"].get<double>(),
                  interval["p95"].get<double>(), draw["p50"].get<double>());
    line += text;
  }
  nlohmann::json order = nlohmann::json::array();
  for (const TabFrames& t : tabs_) order.push_back(t.tab);
  const double steps_per_s = seconds > 0 ? steps / seconds : 0;
  const std::string task = options_.learn_task.value("task", std::string("?"));
  const nlohmann::json out = {
      {"mode", "learn"},
      {"task", options_.learn_task},
      {"task_file", options_.learn_task_path},
      {"window", {window_w, window_h}},
      {"tabs", tabs},
      {"tab_order", order},
      {"seconds", round3(seconds)},
      {"steps", steps},
      {"steps_per_s", round3(steps_per_s)},
      {"run_ended", !tabs_.empty() && tabs_.back().run_ended},
      {"load_average", {{"before", load_before_}, {"after", loadAverage()}}},
      {"method",
       "The app's own `learn` (play) starts the run of `task`; each tab is shown with `view` as the tab bar does, "
       "its first 0.5 s not recorded, then every frame drawn is recorded for --bench-seconds (the Learn tab) or 0.3 "
       "of it (each other tab), or until the run finishes. The window sleeps as a user's does (glfwWaitEventsTimeout, "
       "swap interval 0): a frame is drawn when the run (at most 60 wake-ups a second), the engine or a timeout "
       "wakes it. interval_ms: from the previous frame's end (after its swap) to this frame's end; draw_ms: from the "
       "frame's start (after the wait) to after its swap, the run's results moved in included. fps = frames ÷ "
       "seconds recorded. steps: training steps done over the recording (the run's count at frame start); "
       "run_steps_per_s: the run's own figure over its last half second."}};
  try {
    writeFileAtomically(options_.out_path, out.dump(2) + "\n");
  } catch (const InputError& e) {
    std::cerr << "error: --bench-interaction: " << e.what() << "\n";
    return 2;
  }
  char rate[48];
  std::snprintf(rate, sizeof rate, "%.1f steps/s", steps_per_s);
  std::cout << "learn " << task << " at " << window_w << "x" << window_h << ": " << line << "; " << rate << " → "
            << options_.out_path << "\n";
  return 0;
}

}  // namespace attnscope
