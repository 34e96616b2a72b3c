// attnscope: the desktop app. GLFW window, OpenGL 3.3 core through glad, Dear ImGui 1.86.
// The main loop follows ImGui's example: poll, apply commands, new frame, UI, render, swap;
// shutdown in reverse. The state and everything done to it live in App (shell/app.h). Headless
// modes drive this same loop: --commands feeds its script, --bench-interaction its edits
// (shell/interaction_bench.h), one command path for all.
#include <glad/gl.h>
// glad before GLFW: it provides the GL declarations
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cfloat>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "display/vector_figure.h"
#include "panels/lines_view.h"
#include "editing/command.h"
#include "engine/errors.h"
#include "engine/memory.h"
#include "formats/file_reading.h"
#include "formats/png_image.h"
#include "formats/presets.h"
#include "panels/heatmap_grid.h"
#include "shell/app.h"
#include "state/lesson_check.h"
#include "shell/app_options.h"
#include "shell/capture.h"
#include "widgets/fonts.h"
#include "shell/interaction_bench.h"
#include "widgets/layout_dump.h"
#include "widgets/theme.h"
#include "state/ui_wake.h"
#include "widgets/heatmap.h"

using namespace attnscope;

namespace {

std::string glfw_error;

// Keys the app acts on, caught in GLFW's callback: ImGui 1.86 reads key state once per frame and
// misses a press and release that fall between two frames (as xdotool sends them). Each key
// becomes a command, unless a text field has the keyboard (then it edits text).
void onKey(GLFWwindow* window, int key, int scancode, int action, int mods) {
  if (action != GLFW_PRESS && action != GLFW_REPEAT) return;
  App* app = static_cast<App*>(glfwGetWindowUserPointer(window));
  if (!app) return;
  CommandQueue& cmd = app->commands();
  const bool ctrl = mods & GLFW_MOD_CONTROL, shift = mods & GLFW_MOD_SHIFT;
  const bool typing = ImGui::GetCurrentContext() && ImGui::GetIO().WantTextInput;
  if (key == GLFW_KEY_F12 && action == GLFW_PRESS) cmd.push("screenshot", {{"path", ""}});
  if (key == GLFW_KEY_Q && ctrl) cmd.push("quit");
  if (key == GLFW_KEY_S && ctrl) cmd.push("save");
  if (key == GLFW_KEY_O && ctrl) cmd.push("dialog", {{"which", "open"}});
  if (key == GLFW_KEY_F11 && action == GLFW_PRESS) cmd.push("fullscreen");  // toggles
  if (key == GLFW_KEY_F10 && action == GLFW_PRESS)
    cmd.push("view", {{"field", "presentation"}, {"value", !app->view().presentation}});
  if (ctrl) {  // text size: + and − as the keyboard layout places them, or the keypad's
    const char* name = glfwGetKeyName(key, scancode);
    const std::string k = name ? name : "";
    if (key == GLFW_KEY_KP_ADD || k == "+" || k == "=" || (k.empty() && key == GLFW_KEY_EQUAL))
      cmd.push("view", {{"field", "text_size"}, {"value", "larger"}});
    else if (key == GLFW_KEY_KP_SUBTRACT || k == "-" || (k.empty() && key == GLFW_KEY_MINUS))
      cmd.push("view", {{"field", "text_size"}, {"value", "smaller"}});
    else if (key == GLFW_KEY_KP_0 || k == "0" || (k.empty() && key == GLFW_KEY_0))
      cmd.push("view", {{"field", "text_size"}, {"value", 100}});
  }
  if (typing) return;
  // A dialog is modal: Space, arrows and Ctrl+Z do nothing behind it (no page turns while browsing).
  if (app->dialogOpen()) return;
  if (key == GLFW_KEY_Z && ctrl) cmd.push(shift ? "redo" : "undo");
  if (key == GLFW_KEY_V && ctrl && shift && action == GLFW_PRESS) cmd.push("paste_embeddings");  // reads the clipboard
  if (key == GLFW_KEY_Y && ctrl) cmd.push("redo");
  if (key == GLFW_KEY_P && ctrl && action == GLFW_PRESS) cmd.push("pin");
  // With a lesson open its steps have the keys a presenter's clicker sends: Space, → and PageDown
  // go on; ←, PageUp and Shift+Space go back (held down, a key does not race through the steps).
  // Without a lesson, ← and → move the selected token as before.
  if (app->lessonOpen() && !ctrl && !(mods & GLFW_MOD_ALT)) {
    const bool next = (key == GLFW_KEY_SPACE && !shift) || key == GLFW_KEY_RIGHT || key == GLFW_KEY_PAGE_DOWN;
    const bool back = (key == GLFW_KEY_SPACE && shift) || key == GLFW_KEY_LEFT || key == GLFW_KEY_PAGE_UP;
    if (next || back) {
      if (action == GLFW_PRESS) cmd.push(next ? "lesson_next" : "lesson_back");
      return;
    }
  }
  if (key == GLFW_KEY_UP || key == GLFW_KEY_LEFT) cmd.push("select_token", {{"step", -1}});
  if (key == GLFW_KEY_DOWN || key == GLFW_KEY_RIGHT) cmd.push("select_token", {{"step", 1}});
  if (key == GLFW_KEY_TAB) cmd.push("select_head", {{"step", shift ? -1 : 1}});
}

const char* kXvfbHint =
    "xvfb-run -a -s \"-screen 0 1920x1080x24\" attnscope --open S.json --screenshot out.png";

int parseOptions(int argc, char** argv, AppOptions& o) {
  // Named, so --help says "attnscope" however it was started (help2man makes the man page of it).
  CLI::App cli{"attnscope: self-attention, visible. Heatmaps of every head, live.", "attnscope"};
  cli.set_version_flag("--version", "attnscope " ATTNSCOPE_VERSION);
  std::string size;
  CLI::Option* open = cli.add_option("--open", o.open_path, "workspace JSON to open (default: the book's multi-head example)");
  // `attnscope FILE` as file managers start it (the desktop entry's Exec=attnscope %f).
  cli.add_option("file", o.open_path, "the same as --open FILE: a workspace JSON or a PNG saved by attnscope")
      ->excludes(open);
  cli.footer(std::string("Without a display, render to a file under Xvfb:\n  ") + kXvfbHint);
  cli.add_option("--screenshot", o.screenshot_path,
                 "render, save the window (or --panel) to this file and exit: .png, or .svg / .pdf for one map or the lines");
  cli.add_option("--size", size, "window size WxH in pixels (default 1600x1000)");
  cli.add_option("--theme", o.theme, "dark or light")->check(CLI::IsMember({"dark", "light"}));
  cli.add_option("--text-size", o.text_size, "text and UI size in percent, 100 to 250 (View › Text size)")
      ->check(CLI::Range(100, 250));
  cli.add_option("--dump-layout", o.dump_layout_path, "write panel/heatmap/control rectangles as JSON (tests)");
  cli.add_option("--screenshot-dir", o.screenshot_dir, "folder for F12 screenshots");
  cli.add_option("--frames", o.frames, "frames to render before a headless capture")->check(CLI::Range(3, 1000));
  cli.add_option("--scale", o.scale, "screenshot scale: 1, 2 or 3 (text rasterized at that size)")->check(CLI::Range(1.0f, 4.0f));
  std::string panels;
  for (const std::string& p : capturePanels()) panels += (panels.empty() ? "" : ", ") + p;  // spaces: help2man can break the line
  cli.add_option("--panel", o.panel, "capture one panel or one heatmap: " + panels);
  cli.add_option("--head", o.head, "the head of a heatmap --panel (1-based)")->check(CLI::Range(1, Limits{}.max_heads));
  cli.add_flag("--each-head", o.each_head, "with a heatmap --panel: one PNG per head, OUT-h1.png, OUT-h2.png, …");
  cli.add_flag("--caption", o.caption, "add a line with variant, sizes and seed under the screenshot");
  cli.add_flag("--selection", o.selection, "keep the selected token's row and key outlined in the screenshot");
  cli.add_option("--commands", o.commands_path, "apply this JSON array of commands, one per frame (see README)");
  cli.add_flag("--keep-going", o.keep_going, "with --commands: report a command that cannot apply and go on");
  CLI::Option* lesson = cli.add_option("--lesson", o.lesson_path, "open this lesson (JSON; the shipped ones are in share/attnscope/lessons/, assets/lessons/ in a checkout)");
  cli.add_option("--step", o.lesson_step, "with --lesson: the step to show, from 1 (default 1)")
      ->check(CLI::Range(1, 1000000))
      ->needs(lesson);
  CLI::Option* bench = cli.add_option("--bench-interaction", o.bench_path,
                                      "time edits from command to the first frame showing their result, for each "
                                      "--bench-presets; write the figures to this JSON and exit");
  cli.add_option("--bench-presets", o.bench_presets, "presets the bench opens in turn (default multihead,gpt2-small)")
      ->delimiter(',')
      ->needs(bench);
  cli.add_option("--bench-edits", o.bench_edits, "edits per preset (default 200)")->check(CLI::Range(1, 100000))->needs(bench);
  cli.add_option("--memory-budget", o.memory_budget_mib,
                 "refuse workspaces estimated to need more (MiB; default 1024), as attnscope-cli does")
      ->check(CLI::Range(1.0, 1048576.0));
  cli.add_option("--bench-gap-ms", o.bench_gap_ms, "frames drawn this long after a result before the next edit (default 0)")
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
      std::cerr << "error: --bench-interaction runs its own edits: it does not combine with --screenshot, --commands or --lesson\n";
      return 2;
    }
    const std::filesystem::path folder = std::filesystem::path(o.bench_path).parent_path();
    std::error_code ec;
    if (!folder.empty() && !std::filesystem::is_directory(folder, ec)) {
      std::cerr << "error: --bench-interaction: no folder " << folder.string() << " for " << o.bench_path << "\n";
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

// --screenshot: the window, a panel, or a heatmap (of one head, or each head) as PNG files, or a
// heatmap as SVG or PDF figures.
int headlessCapture(const AppOptions& o, App& app) {
  CaptureSpec spec{o.scale, o.panel, o.head - 1, o.caption, o.selection};
  std::vector<std::pair<int, std::string>> shots;  // head, path
  if (o.each_head) {
    const std::filesystem::path out(o.screenshot_path);
    const std::string ext = out.extension().string();  // OUT-h1.png, OUT-h1.svg, …
    const std::string stem = (out.parent_path() / out.stem()).string();
    for (int h = 0; h < headCount(app.document().workspace().model); ++h) shots.push_back({h, stem + "-h" + std::to_string(h + 1) + ext});
  } else {
    shots.push_back({spec.head, o.screenshot_path});
  }
  for (const auto& [head, path] : shots) {
    spec.head = head;
    if (const std::string error = app.capture(spec, path); !error.empty()) {
      std::cerr << "error: " << error << "\n";
      return 2;
    }
    if (isVectorFigurePath(path)) {
      std::cout << "saved " << path << "\n";
      continue;
    }
    const RgbImage image = readPngRgb(path);
    std::cout << "saved " << path << " (" << image.width << "×" << image.height << ")\n";
  }
  return 0;
}

// --commands FILE: one command a frame into the app's queue, numbered for error messages.
class CommandScript {
 public:
  explicit CommandScript(std::vector<Command> commands) : commands_(std::move(commands)) {
    for (std::size_t i = 0; i < commands_.size(); ++i) commands_[i].script_index = static_cast<int>(i);
  }
  // Feeds the next command once the app has applied the previous one.
  void feed(App& app) {
    if (next_ < commands_.size() && app.commands().empty()) app.commands().push(commands_[next_++]);
  }
  bool done(const App& app) const { return next_ == commands_.size() && app.idle(); }

 private:
  std::vector<Command> commands_;
  std::size_t next_ = 0;
};

std::vector<Command> readCommands(const std::string& path) {
  const std::string text = readFileWithin(path, Limits{}.max_file_bytes);
  try {
    return parseCommandList(text);
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  tuneMalloc();  // every edit of a large workspace allocates a trace's maps again (engine/memory.h)
  AppOptions options;
  if (int code = parseOptions(argc, argv, options); code >= 0) return code;

  const bool headless = !options.screenshot_path.empty();
  // The bench runs unattended too: no vsync, no autosave, no recovery.
  std::optional<InteractionBench> bench;
  if (!options.bench_path.empty()) {
    InteractionBenchOptions b;
    b.out_path = options.bench_path;
    b.presets = options.bench_presets;
    b.edits = options.bench_edits;
    b.gap_ms = options.bench_gap_ms;
    bench.emplace(std::move(b));
  }
  const bool unattended = headless || bench;
  const Limits limits = App::limits(static_cast<std::int64_t>(options.memory_budget_mib * (1 << 20)));
  Document document(bookExample(), "", false, limits);
  std::optional<CommandScript> script;
  try {
    if (!options.open_path.empty()) {
      Workspace ws = loadWorkspace(options.open_path, limits);  // what the app will hold
      // A PNG, or a file of the app's presets folder (`make run`'s), opens untitled: Save asks for a name.
      const std::string file = isPng(options.open_path) || isPresetFile(options.open_path) ? "" : documentPath(options.open_path);
      document = Document(std::move(ws), file, false, limits);
    }
    if (!options.commands_path.empty()) script.emplace(readCommands(options.commands_path));
    if (!options.lesson_path.empty()) {  // checked whole before a window opens: one line, exit 2
      LessonCheck check;
      check.limits = limits;  // what the app may hold, as lesson_open checks it
      const Lesson lesson = loadCheckedLesson(options.lesson_path, document.workspace(), check);
      try {
        checkLessonStep(lesson, options.lesson_step);
      } catch (const InputError& e) {
        throw InputError(options.lesson_path + ": --" + e.what());
      }
    }
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  // What the command line says of the view wins over the workspace's view, and over the autosave's
  // when the last session is restored (App::keepFromCommandLine).
  nlohmann::json command_line_view = nlohmann::json::object();
  if (!options.theme.empty()) command_line_view["theme"] = options.theme;
  if (options.text_size > 0) command_line_view["text_size"] = options.text_size;
  ViewState view = viewFromJson(document.workspace().view);
  for (const auto& [field, value] : command_line_view.items()) setViewField(view, field, value);
  if (!options.screenshot_dir.empty()) view.screenshot_dir = options.screenshot_dir;

  glfwSetErrorCallback([](int, const char* text) { glfw_error = text; });
  if (!glfwInit()) {
    std::cerr << "error: no display (" << glfw_error << "). To render without one, run under Xvfb:\n  "
              << kXvfbHint << "\n";
    return 2;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);
  // WM_CLASS "attnscope": how an X11 desktop ties the window to the desktop entry (StartupWMClass)
  // and its icon, whatever the window title says.
  glfwWindowHintString(GLFW_X11_CLASS_NAME, "attnscope");
  glfwWindowHintString(GLFW_X11_INSTANCE_NAME, "attnscope");
  GLFWwindow* window = glfwCreateWindow(options.width, options.height, "attnscope", nullptr, nullptr);
  if (!window) {
    std::cerr << "error: cannot open an OpenGL 3.3 window (" << glfw_error << "). Without a display, run:\n  "
              << kXvfbHint << "\n";
    glfwTerminate();
    return 2;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(unattended ? 0 : 1);
  if (!gladLoadGL(glfwGetProcAddress)) {
    std::cerr << "error: cannot load OpenGL 3.3 functions\n";
    glfwDestroyWindow(window);
    glfwTerminate();
    return 2;
  }

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // the layout is computed, not remembered
  float xscale = 1, yscale = 1;
  glfwGetWindowContentScale(window, &xscale, &yscale);
  const float scale = std::max(1.0f, std::max(xscale, yscale));  // the monitor's; × the view's text size
  loadFonts(scale * view.textScale());
  applyTheme(view.light_theme, scale * view.textScale());
  io.ConfigFlags &= ~ImGuiConfigFlags_NavEnableKeyboard;  // arrows and Tab belong to the view
  glfwSetKeyCallback(window, onKey);  // before ImGui's, which chains to it
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  // Tab cycles the heads (onKey), never ImGui's focus: its tabbing walked from a typed cell into
  // the next cell's text field, which then kept the arrows and Tab.
  io.KeyMap[ImGuiKey_Tab] = -1;
  ImGui_ImplOpenGL3_Init("#version 330 core");

  // What the app needs from this window: offscreen frames at k× for screenshots, fonts and theme.
  App* app_ptr = nullptr;
  float ui_scale = scale * view.textScale();
  auto setScale = [&](float s) {  // fonts rasterized at s, sizes scaled by s
    ui_scale = s;
    loadFonts(s);
    ImGui_ImplOpenGL3_DestroyFontsTexture();
    ImGui_ImplOpenGL3_CreateFontsTexture();
    applyTheme(app_ptr->view().light_theme, s);
  };
  WindowHooks hooks;
  hooks.capture.base_scale = scale;
  hooks.capture.set_scale = [&](float s) {
    if (s != ui_scale) setScale(s);
  };
  hooks.capture.frame = [&](const CaptureFrame& frame) {
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    io.DisplaySize = ImVec2(frame.width, frame.height);  // the offscreen size, and no hover effects from the real mouse
    io.DisplayFramebufferScale = ImVec2(1, 1);
    io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
    ImGui::NewFrame();
    app_ptr->draw(glfwGetTime(), frame);
    ImGui::Render();
  };
  hooks.capture.selection = options.selection;  // F12 and scripted screenshots too
  // One map as an SVG or PDF figure, drawn from the snapshot with the grid's choices.
  hooks.capture.vector_figure = [&](const CaptureSpec& spec, const std::string& path) -> std::string {
    const Snapshot* snap = app_ptr->snapshot();
    Stage stage = Stage::Weights;
    ModuleMap module = ModuleMap::Output;
    if (!snap || !snap->trace) return "nothing computed yet";
    FigureOptions options;
    options.scale = app_ptr->view().textScale();  // the text size, as a PNG of the map has it
    if (spec.panel == "lines") return writeLinesFigure(linesFigure(*snap, app_ptr->view(), spec.caption), path, options);
    if (parseModuleMap(spec.panel, &module))  // the module's maps: one per batch element
      return writeVectorFigure(moduleFigure(*snap, app_ptr->view(), module, spec.caption), path, options);
    if (!parseStage(spec.panel, &stage)) return "no map '" + spec.panel + "'";
    const auto& heads = snap->shown().heads;
    if (spec.head < 0 || spec.head >= static_cast<int>(heads.size()) || !heads[static_cast<std::size_t>(spec.head)].hasMaps())
      return "no maps of head " + std::to_string(spec.head + 1) + " (the model has " + std::to_string(heads.size()) + ")";
    return writeVectorFigure(heatmapFigure(*snap, app_ptr->view(), stage, spec.head, spec.caption, app_ptr->zoomWindow()),
                             path, options);
  };
  hooks.size = [window](int* w, int* h) { glfwGetWindowSize(window, w, h); };
  hooks.theme_changed = [&] { setScale(ui_scale); };
  hooks.clipboard = [window](const std::string& text) { glfwSetClipboardString(window, text.c_str()); };
  hooks.clipboard_text = [window]() -> std::string {  // X11: asks the selection's owner (xclip, a browser, …)
    const char* text = glfwGetClipboardString(window);
    return text ? text : "";
  };
  // Full screen on the monitor that holds most of the window (a projector beside the laptop), and
  // back to the window's place and size.
  int windowed[4] = {0, 0, options.width, options.height};  // x, y, w, h before going full-screen
  hooks.fullscreen = [window] { return glfwGetWindowMonitor(window) != nullptr; };
  hooks.set_fullscreen = [window, &windowed](bool on) -> std::string {
    if (on == (glfwGetWindowMonitor(window) != nullptr)) return "";
    if (!on) {
      glfwSetWindowMonitor(window, nullptr, windowed[0], windowed[1], windowed[2], windowed[3], GLFW_DONT_CARE);
      return "";
    }
    glfwGetWindowPos(window, &windowed[0], &windowed[1]);
    glfwGetWindowSize(window, &windowed[2], &windowed[3]);
    int count = 0;
    GLFWmonitor** monitors = glfwGetMonitors(&count);
    GLFWmonitor* best = nullptr;
    long best_area = -1;
    for (int i = 0; i < count; ++i) {
      const GLFWvidmode* mode = glfwGetVideoMode(monitors[i]);
      if (!mode) continue;
      int mx = 0, my = 0;
      glfwGetMonitorPos(monitors[i], &mx, &my);
      const long w = std::max(0, std::min(windowed[0] + windowed[2], mx + mode->width) - std::max(windowed[0], mx));
      const long h = std::max(0, std::min(windowed[1] + windowed[3], my + mode->height) - std::max(windowed[1], my));
      if (w * h > best_area) best = monitors[i], best_area = w * h;
    }
    const GLFWvidmode* mode = best ? glfwGetVideoMode(best) : nullptr;
    if (!mode) return "no monitor to fill (" + (glfw_error.empty() ? std::string("none reported") : glfw_error) + ")";
    glfwSetWindowMonitor(window, best, 0, 0, mode->width, mode->height, mode->refreshRate);
    return glfwGetWindowMonitor(window) ? "" : "the window system refused (" + glfw_error + ")";
  };

  // Interactive sessions autosave and, started without a file, pick up where the last one ended.
  App app(std::move(document), view, !unattended, hooks);
  app_ptr = &app;
  app.keepFromCommandLine(command_line_view);
  glfwSetWindowUserPointer(window, &app);
  glfwSetWindowCloseCallback(window, [](GLFWwindow* w) {  // ask before closing
    static_cast<App*>(glfwGetWindowUserPointer(w))->commands().push("quit");
  });
  // The state folder: temporary files of writes a killed session never finished go, this session's
  // are journaled; an instance slot of its own (two windows never overwrite each other's autosave).
  std::optional<InstanceSlot> slot;
  removeAbandonedTemporaryFiles(stateFolder());
  journalTemporaryFiles(stateFolder());
  if (!unattended) {  // the last session's autosave: restored, or kept aside, never overwritten
    slot.emplace(InstanceSlot::take());
    app.autosaveTo(slot->autosavePath());
    const Recovery recovery = planRecovery(Autosave(slot->autosavePath()), options.open_path);
    if (!recovery.restore.empty()) app.commands().push("restore", {{"path", recovery.restore}});
    if (!recovery.offer.empty()) app.offerRecovery(recovery.offer, options.open_path);
    std::string note = recovery.note;
    if (const std::string orphans = slot->collectOrphans(); !orphans.empty()) note += (note.empty() ? "" : " ") + orphans;
    if (!note.empty()) app.notify(note, glfwGetTime());
  }
  if (!options.lesson_path.empty())  // before the script's commands: they may step through it
    app.commands().push("lesson_open", {{"path", options.lesson_path}, {"step", options.lesson_step}});

  int ready_frames = 0, exit_code = 0;
  const double start = glfwGetTime();
  std::string title;
  // The engine and the colouring thread wake the loop when a result is ready (state/ui_wake.h).
  setWakeHandler([] { glfwPostEmptyEvent(); });
  int eager_frames = 0;
  std::uint64_t glyphs_version = ~std::uint64_t{0};
  bool hint_at_start = !unattended;
  for (bool running = true; running;) {
    // A window with nothing new to show sleeps: until input, a result, a message's end, or a
    // quarter second (a caret's blink, the autosave). It leaves both cores to the engine while it
    // computes. Scripts and screenshots run flat out; the bench sleeps like a user's window while
    // it waits for a result (docs/DESIGN.md §3.3).
    const bool may_sleep = !headless && !script && (!bench || bench->awaitingResult());
    if (may_sleep && eager_frames <= 0) {
      const unsigned wakes = wakeCount();
      glfwWaitEventsTimeout(app.idleTimeout(glfwGetTime(), 0.25));
      // A result needs one frame; input two, for ImGui to settle it (hover, popups, layout).
      eager_frames = wakeCount() != wakes ? 1 : 2;
    } else {
      glfwPollEvents();
    }
    --eager_frames;
    glfwSetWindowShouldClose(window, 0);  // closing goes through the quit command and its prompt
    const double now = glfwGetTime();
    const auto frame_start = std::chrono::steady_clock::now();
    if (script) script->feed(app);
    if (bench) bench->beforeUpdate(app);  // t0 of an edit: queued just before the frame applying it
    app.update(now);  // every queued command, in one place, before the frame
    if (app.document().version() != glyphs_version) {  // new tokens: their CJK glyphs into the atlas
      glyphs_version = app.document().version();
      if (useTokenGlyphs(app.document().workspace().tokens)) setScale(ui_scale);
    }
    if (hint_at_start) {  // after the autosave's view is restored: its text size counts
      hint_at_start = false;
      app.hintIfCramped(now, true);
    }
    for (const CommandFailure& f : app.takeFailures()) {
      if (bench) {
        bench->refused(f);
        continue;
      }
      std::cerr << "error: command " << f.index << " (" << f.name << "): " << f.message << "\n";
      if (!options.keep_going) exit_code = 2;
    }
    if (exit_code != 0 || app.quitRequested()) break;

    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    if (app.takeCommitTyping()) {  // Ctrl+S while typing: a click outside every window, as the user
      io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);  // would click away, so the field commits its value
      io.MouseDown[ImGuiMouseButton_Left] = true;  // (the next frame reads the real button again)
    }
    ImGui::NewFrame();
    app.draw(now);
    if (!options.dump_layout_path.empty()) app.recordState();  // tests only: it costs
    ImGui::Render();
    int fb_w = 0, fb_h = 0;
    glfwGetFramebufferSize(window, &fb_w, &fb_h);
    glViewport(0, 0, fb_w, fb_h);
    const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
    glClearColor(bg.x, bg.y, bg.z, 1);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    glfwSwapBuffers(window);

    app.endFrame(now, ImGui::IsAnyMouseDown(), io.WantTextInput,
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - frame_start).count());
    if (const std::string wanted = app.windowTitle(); wanted != title) glfwSetWindowTitle(window, (title = wanted).c_str());
    layout().endFrame(options.dump_layout_path);
    collectHeatmapTextures();

    if (bench && bench->afterFrame(app)) {  // t1: the end of the frame showing an edit's result
      int w = 0, h = 0;
      glfwGetWindowSize(window, &w, &h);
      exit_code = bench->finish(w, h);
      running = false;
    }

    // Headless: once the commands are done and the newest result has been on screen a few frames.
    const bool script_done = !script || script->done(app);
    ready_frames = script_done && app.settled() && (app.snapshot() || !app.engineError().empty()) ? ready_frames + 1 : 0;
    if (headless && ready_frames >= options.frames) {
      exit_code = headlessCapture(options, app);
      running = false;
    } else if (headless && now - start > 600) {
      std::cerr << "error: the engine did not finish within 600 s\n";
      exit_code = 1;
      running = false;
    }
  }

  setWakeHandler(nullptr);  // before the window goes: a late result wakes nothing
  releaseHeatmapTextures();
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return exit_code;
}
