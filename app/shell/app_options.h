// Command-line options of the desktop app, one plain struct with defaults.
#pragma once
#include <string>
#include <vector>

namespace attnscope {

struct AppOptions {
  std::string open_path;         // workspace to open; empty = the book's multi-head example
  std::string screenshot_path;   // render, save this PNG and exit (headless mode)
  int width = 1600;              // window width in pixels
  int height = 1000;             // window height in pixels
  std::string theme;             // "dark" or "light" (slides and print); empty = the workspace's view
  int text_size = 0;             // text and UI size in percent (100–250); 0 = the workspace's view (default 100)
  std::string dump_layout_path;  // write panel, heatmap and widget rectangles as JSON when they change
  std::string screenshot_dir;    // where F12 saves; empty = ~/Pictures/attnscope
  int frames = 3;                // frames rendered before a headless capture (GL needs ≥ 3)
  float scale = 1;               // screenshot scale: the UI rendered k× larger, text crisp
  std::string panel;             // capture one panel or heatmap stage instead of the window
  int head = 0;                  // the head of a heatmap panel (1-based); 0: the one selected (the first
                                 // while all are shown)
  bool each_head = false;        // one PNG per head of a heatmap panel
  bool caption = false;          // a caption line under the screenshot
  bool selection = false;        // keep the selected row and key outlined in screenshots (--selection)
  std::string commands_path;     // a JSON array of commands to apply, one per frame
  bool keep_going = false;       // a command that cannot apply is reported, the run goes on
  std::string lesson_path;       // --lesson: a lesson file (assets/lessons/), opened before any --commands
  int lesson_step = 1;           // --step: the lesson's step to show, 1-based
  std::string model_path;        // --model: a trained GPT opened at start (model_open)
  int model_heads = 0;           // --num-heads: its heads when it has no config.json (0: d / 64)
  std::string bench_path;        // --bench-interaction: time edit → first frame showing it, write this JSON, exit
  std::vector<std::string> bench_presets = {"multihead", "gpt2-small"};  // opened in turn by the bench
  int bench_edits = 200;                                                 // edits per preset, each timed
  int bench_gap_ms = 0;             // frames drawn this long after a result before the next edit
  int bench_tokens = 0;             // --bench-tokens: with --model, token ids per text edit (0: not given, 64)
  std::string bench_learn_path;     // --bench-learn: the frames drawn while this TASK's model trains, instead of edits
  double bench_seconds = 10;        // --bench-seconds: with --bench-learn, the Learn tab's recording
  double memory_budget_mib = 1024;  // --memory-budget: what the app may hold for a workspace (MiB)
  bool memory_budget_given = false;  // … given: a model opened is held to it too (Limits::max_model_bytes)
  bool listen = false;              // --listen: take commands on the channel even when scripted or headless
  bool new_window = false;          // --new-window: open FILE here, not in the attnscope already running
  bool watch = false;               // --watch FILE: open FILE and reload it whenever another program rewrites it
};

// The command line for a machine without a display (--help's footer, the window's errors).
extern const char* const kXvfbHint;

// Reads the command line into `o`: −1 to go on, else the exit code (0 after --help or --version,
// 2 after one line saying what is wrong).
int parseAppOptions(int argc, char** argv, AppOptions& o);

}  // namespace attnscope
