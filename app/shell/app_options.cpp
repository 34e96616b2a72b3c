#include "shell/app_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <utility>

#include "editing/finite_option.h"
#include "engine/errors.h"
#include "formats/presets.h"
#include "state/capture_targets.h"

namespace attnscope {

const char* const kXvfbHint = "xvfb-run -a -s \"-screen 0 1920x1080x24\" attnscope --open S.json --screenshot out.png";

int parseAppOptions(int argc, char** argv, AppOptions& o) {
  // Named, so --help says "attnscope" however it was started (help2man makes the man page of it).
  CLI::App cli{"attnscope: self-attention, visible. Heatmaps of every head, live.", "attnscope"};
  cli.set_version_flag("--version", "attnscope " ATTNSCOPE_VERSION);
  std::string size;
  CLI::Option* open = cli.add_option("--open", o.open_path,
                                     "workspace JSON to open (default: the book's multi-head example)");
  // `attnscope FILE` as file managers start it (the desktop entry's Exec=attnscope %f).
  cli.add_option("file", o.open_path, "the same as --open FILE: a workspace JSON or a PNG saved by attnscope")
      ->excludes(open);
  cli.footer(std::string("Without a display, render to a file under Xvfb:\n  ") + kXvfbHint);
  cli.add_option(
      "--screenshot", o.screenshot_path,
      "render, save the window (or --panel) to this file and exit: .png, or .svg / .pdf for one map or the lines");
  cli.add_option("--size", size, "window size WxH in pixels (default 1600x1000)");
  cli.add_option("--theme", o.theme, "dark or light")->check(CLI::IsMember({"dark", "light"}));
  cli.add_option("--text-size", o.text_size, "text and UI size in percent, 100 to 250 (View › Text size)")
      ->check(CLI::Range(100, 250));
  cli.add_option("--dump-layout", o.dump_layout_path, "write panel/heatmap/control rectangles as JSON (tests)");
  cli.add_option("--screenshot-dir", o.screenshot_dir, "folder for F12 screenshots");
  cli.add_option("--frames", o.frames, "frames to render before a headless capture")->check(CLI::Range(3, 1000));
  cli.add_option("--scale", o.scale, "screenshot scale: 1, 2 or 3 (text rasterized at that size)")
      ->check(finiteRange(1.0f, 4.0f));
  std::string panels;
  for (const std::string& p : capturePanels())
    panels += (panels.empty() ? "" : ", ") + p;  // spaces: help2man can break the line
  cli.add_option("--panel", o.panel, "capture one panel or one heatmap: " + panels);
  cli.add_option("--head", o.head, "the head of a heatmap --panel (1-based; default: the one selected, else the first)")
      ->check(CLI::Range(1, Limits{}.max_heads));
  cli.add_flag("--each-head", o.each_head, "with a heatmap --panel: one PNG per head, OUT-h1.png, OUT-h2.png, …");
  cli.add_flag("--caption", o.caption,
               "add a line under the screenshot: the step, sizes and seed, or a trained model's name and layer");
  cli.add_flag("--selection", o.selection, "keep the selected token's row and key outlined in the screenshot");
  cli.add_option("--commands", o.commands_path,
                 "apply the commands of this JSON file (an array), one per frame (see README)");
  cli.add_flag("--keep-going", o.keep_going, "with --commands: report a command that cannot apply and go on");
  CLI::Option* lesson = cli.add_option(
      "--lesson", o.lesson_path,
      "open this lesson (JSON; the shipped ones are in share/attnscope/lessons/, assets/lessons/ in a checkout)");
  cli.add_option("--step", o.lesson_step, "with --lesson: the step to show, from 1 (default 1)")
      ->check(CLI::Range(1, 1000000))
      ->needs(lesson);
  CLI::Option* model = cli.add_option(
      "--model", o.model_path,
      "open a trained GPT: a Hugging Face GPT-2 folder, or the book's GPTModel as .pth, .safetensors or "
      ".npz with vocab.json and merges.txt beside it (File › Open model…)");
  cli.add_option("--num-heads", o.model_heads,
                 "with --model: its heads (default: config.json's, else what a .safetensors or .pth saved by attnscope "
                 "says, else d / 64)")
      ->check(CLI::Range(1, Limits{}.max_heads))
      ->needs(model);
  CLI::Option* bench = cli.add_option("--bench-interaction", o.bench_path,
                                      "time edits from command to the first frame showing their result, for each "
                                      "--bench-presets, or with --model its text edits, or with --bench-learn the "
                                      "frames drawn while a model trains; write the figures to this JSON and exit");
  CLI::Option* bench_presets = cli.add_option("--bench-presets", o.bench_presets,
                                              "presets the bench opens in turn (default multihead,gpt2-small)")
                                   ->delimiter(',')
                                   ->needs(bench);
  CLI::Option* bench_tokens =
      cli.add_option("--bench-tokens", o.bench_tokens,
                     "with --model: each edit gives the model a new text of this many random token ids (default 64)")
          ->check(CLI::Range(1, 1 << 20))
          ->needs(bench);
  CLI::Option* bench_edits = cli.add_option("--bench-edits", o.bench_edits,
                                            "edits per preset, or of the model's text (default 200)")
                                 ->check(CLI::Range(1, 100000))
                                 ->needs(bench);
  CLI::Option* bench_learn =
      cli.add_option("--bench-learn", o.bench_learn_path,
                     "instead of edits, train the model of this TASK (JSON, as attnscope-cli train reads) with the "
                     "Learn tab shown, then Layers, Heatmaps and Lines, and record every frame drawn: fps, frame "
                     "intervals, draw times, steps per second")
          ->needs(bench);
  cli.add_option("--bench-seconds", o.bench_seconds,
                 "with --bench-learn: seconds the Learn tab is recorded, each other tab 0.3 of it (default 10)")
      ->check(finiteRange(1.0, 3600.0))
      ->needs(bench_learn);
  CLI::Option* memory_budget =
      cli.add_option("--memory-budget", o.memory_budget_mib,
                     "refuse workspaces (and, given, models) estimated to need more (MiB; default 1024), as "
                     "attnscope-cli does")
          ->check(finiteRange(1.0, 1048576.0));
  cli.add_flag("--listen", o.listen,
               "take commands on the channel (a notebook's attnscope.show) even with --commands, --screenshot or "
               "--bench-interaction; an interactive window always does");
  cli.add_flag("--new-window", o.new_window, "open FILE in a window of its own, not in the attnscope already running");
  cli.add_flag("--watch", o.watch,
               "reload the workspace FILE (or --model) whenever another program rewrites it, as one undo step "
               "(View › Reload on change)");
  CLI::Option* bench_gap = cli.add_option("--bench-gap-ms", o.bench_gap_ms,
                                          "frames drawn this long after a result before the next edit (default 0)")
                               ->check(CLI::Range(0, 60000))
                               ->needs(bench);
  try {
    cli.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return cli.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << e.what() << " (see attnscope --help)\n";
    return 2;
  }
  if (!o.panel.empty() && std::find(capturePanels().begin(), capturePanels().end(), o.panel) == capturePanels().end()) {
    std::cerr << "error: --panel: unknown panel '" << o.panel << "' (one of " << panels << ")\n";
    return 2;
  }
  o.memory_budget_given = memory_budget->count() > 0;
  if (o.each_head && !isHeatmapStage(o.panel)) {
    std::cerr << "error: --each-head needs a heatmap --panel such as weights\n";
    return 2;
  }
  if (!o.screenshot_path.empty()) {  // .png, or a figure of one map as .svg or .pdf
    if (const std::string error = captureTargetError(o.screenshot_path, o.panel); !error.empty()) {
      std::cerr << "error: --screenshot: " << error << "\n";
      return 2;
    }
  }
  if (!o.bench_path.empty()) {
    if (!o.screenshot_path.empty() || !o.commands_path.empty() || !o.lesson_path.empty()) {
      std::cerr << "error: --bench-interaction runs its own edits: it does not combine with --screenshot, --commands "
                   "or --lesson\n";
      return 2;
    }
    const std::filesystem::path folder = std::filesystem::path(o.bench_path).parent_path();
    std::error_code ec;
    if (!folder.empty() && !std::filesystem::is_directory(folder, ec)) {
      std::cerr << "error: --bench-interaction: no folder " << folder.string() << " for " << o.bench_path << "\n";
      return 2;
    }
    if (!o.bench_learn_path.empty()) {  // frames while a model trains: no edits to time, no other model
      const std::pair<bool, const char*> others[] = {{!o.model_path.empty(), "--model"},
                                                     {bench_presets->count() > 0, "--bench-presets"},
                                                     {bench_edits->count() > 0, "--bench-edits"},
                                                     {bench_gap->count() > 0, "--bench-gap-ms"},
                                                     {bench_tokens->count() > 0, "--bench-tokens"}};
      for (const auto& [given, name] : others)
        if (given) {
          std::cerr << "error: --bench-learn records the frames drawn while a model trains, with no edits: " << name
                    << " does not combine with it\n";
          return 2;
        }
    }
    if (!o.model_path.empty() && bench_presets->count() > 0) {
      std::cerr << "error: --bench-interaction with --model times the model's text edits: --bench-presets does not "
                   "combine with it\n";
      return 2;
    }
    if (o.model_path.empty() && bench_tokens->count() > 0) {
      std::cerr << "error: --bench-tokens needs --model: it is the length of the texts the bench gives a trained "
                   "model\n";
      return 2;
    }
    const std::vector<std::string> known = presetNames();
    for (const std::string& p : o.bench_presets)
      if (std::find(known.begin(), known.end(), p) == known.end()) {
        std::string list;
        for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
        std::cerr << "error: --bench-presets: unknown preset '" << p << "' (one of " << list << ")\n";
        return 2;
      }
  }
  if (!size.empty()) {
    int w = 0, h = 0;
    char x = 0, extra = 0;
    if (std::sscanf(size.c_str(), "%d%c%d%c", &w, &x, &h, &extra) != 3 || (x != 'x' && x != 'X') || w < 320 ||
        h < 240 || w > 8192 || h > 8192) {
      std::cerr << "error: --size: expected WxH between 320x240 and 8192x8192, got '" << size << "'\n";
      return 2;
    }
    o.width = w;
    o.height = h;
  }
  return -1;  // go on
}

}  // namespace attnscope
