// attnscope: the desktop app. GLFW window, OpenGL 3.3 core through glad, Dear ImGui 1.86.
// The main loop follows ImGui's example: poll, new frame, UI, render, swap; shutdown in reverse.
#include <glad/gl.h>
// glad before GLFW: it provides the GL declarations
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <functional>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "shell/app_options.h"
#include "state/app_state.h"
#include "shell/capture.h"
#include "engine/errors.h"
#include "formats/export.h"
#include "state/files.h"
#include "shell/fonts.h"
#include "widgets/heatmap.h"
#include "panels/heatmap_grid.h"
#include "panels/inputs_panel.h"
#include "panels/inspector_panel.h"
#include "shell/layout_dump.h"
#include "panels/main_menu.h"
#include "panels/model_panel.h"
#include "panels/pipeline_view.h"
#include "formats/png_image.h"
#include "formats/pytorch_script.h"
#include "shell/screenshot.h"
#include "panels/status_bar.h"
#include "shell/theme.h"

using namespace attnscope;

namespace {

std::string glfw_error;

// Keys the app acts on, caught in GLFW's callback: ImGui 1.86 reads key state once per frame and
// misses a press and release that fall between two frames (as xdotool sends them).
struct KeyRequests {
  bool screenshot = false, quit = false, undo = false, redo = false, save = false, open = false;
  int token_step = 0;  // arrows: move the selected query token
  int head_step = 0;   // Tab / Shift+Tab: cycle the shown head
} keys;

void onKey(GLFWwindow*, int key, int, int action, int mods) {
  if (action != GLFW_PRESS && action != GLFW_REPEAT) return;
  const bool ctrl = mods & GLFW_MOD_CONTROL, shift = mods & GLFW_MOD_SHIFT;
  if (key == GLFW_KEY_F12 && action == GLFW_PRESS) keys.screenshot = true;
  if (key == GLFW_KEY_Q && ctrl) keys.quit = true;
  if (key == GLFW_KEY_S && ctrl) keys.save = true;
  if (key == GLFW_KEY_O && ctrl) keys.open = true;
  if (key == GLFW_KEY_Z && ctrl) (shift ? keys.redo : keys.undo) = true;
  if (key == GLFW_KEY_Y && ctrl) keys.redo = true;
  if (key == GLFW_KEY_UP || key == GLFW_KEY_LEFT) keys.token_step -= 1;
  if (key == GLFW_KEY_DOWN || key == GLFW_KEY_RIGHT) keys.token_step += 1;
  if (key == GLFW_KEY_TAB) keys.head_step += shift ? -1 : 1;
}

// Keys that act on the view, unless a text field has the keyboard (then they edit text).
void applyKeys(AppState& app) {
  const bool typing = ImGui::GetIO().WantTextInput;
  if (keys.undo && !typing) app.undo();
  if (keys.redo && !typing) app.redo();
  if (!typing && keys.token_step != 0) {
    const int T = static_cast<int>(app.workspace.embeddings.rows());
    app.view.token = std::clamp(app.view.token + keys.token_step, 0, T - 1);
  }
  if (!typing && keys.head_step != 0) {  // all heads → 1 → 2 → … → all heads
    const int H = headCount(app.workspace.model);
    app.view.head = ((app.view.head + 1 + keys.head_step) % (H + 1) + (H + 1)) % (H + 1) - 1;
  }
}

const char* kXvfbHint =
    "xvfb-run -a -s \"-screen 0 1920x1080x24\" attnscope --open S.json --screenshot out.png";

int parseOptions(int argc, char** argv, AppOptions& o) {
  CLI::App cli{"attnscope: self-attention, visible. Heatmaps of every head, live."};
  std::string size;
  cli.add_option("--open", o.open_path, "workspace JSON to open (default: the book's multi-head example)");
  cli.add_option("--screenshot", o.screenshot_path, "render, save the window to this PNG and exit");
  cli.add_option("--size", size, "window size WxH in pixels (default 1600x1000)");
  cli.add_option("--theme", o.theme, "dark or light")->check(CLI::IsMember({"dark", "light"}));
  cli.add_option("--dump-layout", o.dump_layout_path, "write panel/heatmap/control rectangles as JSON (tests)");
  cli.add_option("--screenshot-dir", o.screenshot_dir, "folder for F12 screenshots");
  cli.add_option("--frames", o.frames, "frames to render before a headless capture")->check(CLI::Range(3, 1000));
  cli.add_option("--scale", o.scale, "screenshot scale: 1, 2 or 3 (text rasterized at that size)")->check(CLI::Range(1.0f, 4.0f));
  std::string panels;
  for (const std::string& p : capturePanels()) panels += (panels.empty() ? "" : "|") + p;
  cli.add_option("--panel", o.panel, "capture one panel or one heatmap: " + panels);
  cli.add_option("--head", o.head, "the head of a heatmap --panel (1-based)")->check(CLI::Range(1, 64));
  cli.add_flag("--each-head", o.each_head, "with a heatmap --panel: one PNG per head, OUT-h1.png, OUT-h2.png, …");
  cli.add_flag("--caption", o.caption, "add a line with variant, sizes and seed under the screenshot");
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

// The main area: the heatmap grid or the pipeline, as tabs.
void drawMainArea(AppState& app, ImVec2 pos, ImVec2 size) {
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  ImGui::Begin("##main", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoScrollWithMouse |
                   ImGuiWindowFlags_NoSavedSettings);
  static std::string shown;  // select the tab the view asks for (a loaded workspace, a test)
  if (ImGui::BeginTabBar("views")) {
    for (const char* tab : {"heatmaps", "pipeline"}) {
      const ImGuiTabItemFlags flags = shown != app.view.tab && app.view.tab == tab ? ImGuiTabItemFlags_SetSelected : 0;
      const bool open = ImGui::BeginTabItem(tab == std::string("heatmaps") ? "Heatmaps" : "Pipeline", nullptr, flags);
      layout().widget(std::string("tab_") + tab);
      if (open) {
        if (shown == app.view.tab) app.view.tab = tab;
        shown = tab;
        if (app.view.tab == std::string("heatmaps")) drawHeatmapGrid(app);
        else drawPipeline(app, ImGui::GetContentRegionAvail());
        ImGui::EndTabItem();
      }
    }
    ImGui::EndTabBar();
  }
  ImGui::End();
}

// The window's layout: menu bar; model and inputs on the left; heatmaps or pipeline; inspector
// on the right; status bar.
void drawFrame(AppState& app, double now, float caption_h) {
  ImGuiViewport vp_copy = *ImGui::GetMainViewport();
  vp_copy.Size.y -= caption_h;  // a screenshot's caption strip sits below everything
  const ImGuiViewport* vp = &vp_copy;
  const float menu_h = ImGui::GetFrameHeight();
  const float status_h = ImGui::GetFrameHeight() + ImGui::GetStyle().WindowPadding.y * 2;
  const float left_w = std::clamp(vp->Size.x * 0.225f, px(300), px(380));
  const float right_w = app.view.show_inspector ? std::clamp(vp->Size.x * 0.21f, px(280), px(380)) : 0.0f;
  const ImVec2 top(vp->Pos.x, vp->Pos.y + menu_h);
  const float body_h = vp->Size.y - menu_h - status_h;
  const float model_h = std::min(body_h * 0.52f, 24.0f * ImGui::GetFrameHeightWithSpacing());
  drawModelPanel(app, top, ImVec2(left_w, model_h));
  drawInputsPanel(app, ImVec2(top.x, top.y + model_h), ImVec2(left_w, body_h - model_h), now);
  drawMainArea(app, ImVec2(top.x + left_w, top.y), ImVec2(vp->Size.x - left_w - right_w, body_h));
  if (app.view.show_inspector)
    drawInspector(app, ImVec2(top.x + vp->Size.x - right_w, top.y), ImVec2(right_w, body_h));
  drawStatusBar(app, ImVec2(vp->Pos.x, vp->Pos.y + vp->Size.y - status_h), ImVec2(vp->Size.x, status_h), now);
}

// "attnscope — name.json •": the file and whether it has unsaved changes.
std::string windowTitle(const AppState& app) {
  const std::string name = app.file.empty() ? "untitled" : std::filesystem::path(app.file).filename().string();
  return "attnscope — " + name + (app.dirty ? " •" : "");
}

// The caption under a screenshot: what the image shows.
std::string captionText(const AppState& app, const CaptureSpec& spec) {
  const ModelConfig& m = app.workspace.model;
  char buf[512];
  std::snprintf(buf, sizeof buf, "attnscope · %s · T %d · d_in %d · d_out %d · %d head%s · seed %u · dropout %.2f%s",
                variantTitle(m.variant), static_cast<int>(app.workspace.embeddings.rows()),
                static_cast<int>(app.workspace.embeddings.cols()), m.d_out, headCount(m), headCount(m) == 1 ? "" : "s",
                m.seed, m.dropout, m.training ? "" : " (eval)");
  if (isHeatmapStage(spec.panel)) {  // a single map: what it is, compactly
    std::snprintf(buf, sizeof buf, "%s · head %d of %d · %s · T %d · seed %u%s", variantTitle(m.variant), spec.head + 1,
                  headCount(m), spec.panel.c_str(), static_cast<int>(app.workspace.embeddings.rows()), m.seed,
                  m.dropout > 0 && m.training ? (" · p " + std::to_string(m.dropout).substr(0, 4)).c_str() : "");
  }
  return buf;
}

void drawCaption(const std::string& text, float x, float y, float width, float height) {
  ImGui::SetNextWindowPos(ImVec2(x, y));
  ImGui::SetNextWindowSize(ImVec2(width, height));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 0);
  ImGui::Begin("##caption", nullptr, ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoSavedSettings);
  ImGui::PushFont(fonts().small);
  ImGui::TextWrapped("%s", text.c_str());
  ImGui::PopFont();
  ImGui::End();
  ImGui::PopStyleVar();
}

void recordState(const AppState& app, const std::string& last_screenshot) {
  const ModelConfig& m = app.workspace.model;
  Workspace ws = app.workspace;
  ws.view = viewToJson(app.view);
  layout().state().update({{"variant", variantId(m.variant)},
                      {"d_out", m.d_out},
                      {"num_heads", m.num_heads},
                      {"seed", m.seed},
                      {"token", app.view.token},
                      {"batch", app.view.batch},
                      {"theme", app.view.light_theme ? "light" : "dark"},
                      {"trace_version", app.trace_version},
                      {"computing", app.computing},
                      {"engine_error", app.engine_error},
                      {"last_screenshot", last_screenshot},
                      {"workspace", workspaceToJson(ws)},
                      {"file", app.file},
                      {"dirty", app.dirty},
                      {"can_undo", app.history.canUndo()},
                      {"title", windowTitle(app)}});  // update: panels add their own fields
  // What the app computed, for tests to hold against `attnscope-cli trace` (small inputs only).
  if (app.trace && app.trace->tokens <= 64 && !app.computing) {
    const Trace& t = *app.trace;
    const int b = std::clamp(app.view.batch, 0, static_cast<int>(t.batches.size()) - 1);
    auto rows = [](const Matrix& m) {
      nlohmann::json out = nlohmann::json::array();
      for (int i = 0; i < m.rows(); ++i) out.push_back(std::vector<float>(m.row(i).data(), m.row(i).data() + m.cols()));
      return out;
    };
    nlohmann::json heads = nlohmann::json::array();
    for (const HeadTrace& h : t.batches[b].heads) heads.push_back({{"weights", rows(h.weights)}, {"context", rows(h.context)}});
    layout().state()["trace"] = {{"batch", b}, {"output", rows(t.batches[b].output)}, {"heads", heads}};
  }
}

void handleFileActions(AppState& app, FileUi& files, const MenuActions& act, GLFWwindow* window, double now) {
  if (act.new_workspace) app.replaceWorkspace(bookExample(app.workspace.model.variant));
  if (act.open) files.open();
  if (!act.open_recent.empty()) files.openPath(app, act.open_recent, now);
  if (act.save) files.save(app, now);
  if (act.save_as) files.saveAs();
  if (act.export_trace) files.exportTrace();
  if (act.save_pytorch) files.savePytorch();
  if (act.copy_pytorch) {
    glfwSetClipboardString(window, pytorchScript(app.workspace, app.file.empty() ? "untitled" : app.file).c_str());
    app.showToast("PyTorch code copied: paste it into a notebook or run it with /usr/bin/python3", false, now);
  }
  if (app.pending_export) {  // "Export as …" from a heatmap's menu
    const AppState::MatrixExport e = std::move(*app.pending_export);
    app.pending_export.reset();
    ExportFormat format = ExportFormat::Csv;
    parseExportFormat(e.format, &format);
    files.exportMatrix(e.name + exportExtension(format), [values = e.values, format](const std::string& path) {
      try {
        writeFileAtomically(path, exportMatrix(values, format));
        return std::string();
      } catch (const InputError& err) {
        return std::string(err.what());
      }
    });
  }
}

// --screenshot: the window, a panel, or a heatmap (of one head, or each head) as PNG files.
int headlessCapture(const AppOptions& o, AppState& app,
                    const std::function<std::string(const CaptureSpec&, const std::string&)>& capture) {
  CaptureSpec spec{o.scale, o.panel, o.head - 1, o.caption};
  std::vector<std::pair<int, std::string>> shots;  // head, path
  if (o.each_head) {
    const std::string stem = o.screenshot_path.size() > 4 && o.screenshot_path.substr(o.screenshot_path.size() - 4) == ".png"
                                 ? o.screenshot_path.substr(0, o.screenshot_path.size() - 4)
                                 : o.screenshot_path;
    for (int h = 0; h < headCount(app.workspace.model); ++h) shots.push_back({h, stem + "-h" + std::to_string(h + 1) + ".png"});
  } else {
    shots.push_back({spec.head, o.screenshot_path});
  }
  for (const auto& [head, path] : shots) {
    spec.head = head;
    if (const std::string error = capture(spec, path); !error.empty()) {
      std::cerr << "error: " << error << "\n";
      return 2;
    }
    const RgbImage image = readPngRgb(path);
    std::cout << "saved " << path << " (" << image.width << "×" << image.height << ")\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  AppOptions options;
  if (int code = parseOptions(argc, argv, options); code >= 0) return code;

  AppState app;
  try {
    if (!options.open_path.empty()) app.workspace = loadWorkspace(options.open_path);
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  app.view = viewFromJson(app.workspace.view);
  const bool headless = !options.screenshot_path.empty();
  // Interactive sessions autosave and, started without a file, pick up where the last one ended.
  Autosave autosave(!headless);
  if (!options.open_path.empty() && !isPng(options.open_path))
    app.file = std::filesystem::absolute(options.open_path).string();
  else if (options.open_path.empty())
    autosave.restore(app);
  if (options.theme == "light") app.view.light_theme = true;
  if (!options.screenshot_dir.empty()) app.view.screenshot_dir = options.screenshot_dir;
  if (app.view.screenshot_dir.empty()) app.view.screenshot_dir = defaultScreenshotFolder();

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
  GLFWwindow* window = glfwCreateWindow(options.width, options.height, "attnscope", nullptr, nullptr);
  if (!window) {
    std::cerr << "error: cannot open an OpenGL 3.3 window (" << glfw_error << "). Without a display, run:\n  "
              << kXvfbHint << "\n";
    glfwTerminate();
    return 2;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(headless ? 0 : 1);
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
  const float scale = std::max(1.0f, std::max(xscale, yscale));
  loadFonts(scale);
  applyTheme(app.view.light_theme, scale);
  glfwSetKeyCallback(window, onKey);  // before ImGui's, which chains to it
  io.ConfigFlags &= ~ImGuiConfigFlags_NavEnableKeyboard;  // arrows and Tab belong to the view
  glfwSetWindowCloseCallback(window, [](GLFWwindow*) { keys.quit = true; });  // ask before closing
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");

  // One frame of the UI for a display of w × h (the window, or an offscreen k× render).
  FileUi files;
  bool quit_now = false;
  std::string last_screenshot, title;
  bool capturing = false;
  auto buildFrame = [&](float w, float h, float caption_h, float caption_x, float caption_w, double now,
                        MenuActions* act) {
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    if (capturing) {  // the offscreen size, and no hover effects from the real mouse
      io.DisplaySize = ImVec2(w, h);
      io.DisplayFramebufferScale = ImVec2(1, 1);
      io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
    }
    ImGui::NewFrame();
    layout().beginFrame();
    const MenuActions a = drawMainMenu(app, files.settings().recent, now);
    if (act) *act = a;
    drawFrame(app, now, caption_h);
    if (caption_h > 0) drawCaption(app.caption, caption_x, h - caption_h, caption_w, caption_h);
    if (!capturing) files.draw(app, now, &quit_now);
    if (!options.dump_layout_path.empty()) recordState(app, last_screenshot);  // tests only: it costs
    ImGui::Render();
  };
  float ui_scale = scale;
  CaptureHooks hooks;
  hooks.base_scale = scale;
  hooks.set_scale = [&](float s) {  // fonts rasterized at s, sizes scaled by s
    if (s == ui_scale) return;
    ui_scale = s;
    loadFonts(s);
    ImGui_ImplOpenGL3_DestroyFontsTexture();
    ImGui_ImplOpenGL3_CreateFontsTexture();
    applyTheme(app.view.light_theme, s);
  };
  hooks.frame = [&](float w, float h, float caption_h, float caption_x, float caption_w) {
    buildFrame(w, h, caption_h, caption_x, caption_w, glfwGetTime(), nullptr);
  };
  // Captures `spec` into `path` with the current workspace in the PNG; "" or the reason.
  auto capture = [&](const CaptureSpec& spec, const std::string& path) {
    Workspace current = app.workspace;
    current.view = viewToJson(app.view);
    app.caption = spec.caption ? captionText(app, spec) : "";
    const ViewState saved = app.view;
    if (spec.panel == "pipeline") app.view.tab = "pipeline";
    if (isHeatmapStage(spec.panel)) {  // that head alone, so the map is as large as it gets
      app.view.head = spec.head;
      app.view.tab = "heatmaps";
    }
    int w = 0, h = 0;
    glfwGetWindowSize(window, &w, &h);
    capturing = true;
    const std::string error = capturePng(spec, w, h, hooks, path, dumpWorkspace(current));
    capturing = false;
    app.view = saved;
    return error;
  };

  int ready_frames = 0, exit_code = 0;
  const double start = glfwGetTime();
  while (!glfwWindowShouldClose(window)) {
    glfwPollEvents();
    const double now = glfwGetTime();
    app.updateEngine();
    MenuActions act;
    int win_w = 0, win_h = 0;
    glfwGetWindowSize(window, &win_w, &win_h);
    buildFrame(static_cast<float>(win_w), static_cast<float>(win_h), 0, 0, 0, now, &act);
    if (act.theme_changed) {
      ui_scale = 0;  // re-apply fonts and theme
      hooks.set_scale(scale);
    }
    glfwSetWindowShouldClose(window, 0);  // closing goes through the unsaved-changes prompt
    if (keys.quit || act.quit) {
      if (headless) quit_now = true;
      else files.requestQuit(app, &quit_now);
    }
    if (quit_now) glfwSetWindowShouldClose(window, 1);
    handleFileActions(app, files, act, window, now);
    const std::string wanted_title = windowTitle(app);
    if (wanted_title != title) glfwSetWindowTitle(window, (title = wanted_title).c_str());
    autosave.update(app, now);
    const bool shot = keys.screenshot || act.screenshot;
    if (keys.save) files.save(app, now);
    if (keys.open) files.open();
    applyKeys(app);
    keys = {};
    // A drag or a typed value ends: the next edit is a new undo step.
    if (!ImGui::IsAnyMouseDown() && !io.WantTextInput) app.history.endGesture();

    int fb_w = 0, fb_h = 0;
    glfwGetFramebufferSize(window, &fb_w, &fb_h);
    glViewport(0, 0, fb_w, fb_h);
    const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
    glClearColor(bg.x, bg.y, bg.z, 1);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());

    if (!app.pending_capture_panel.empty()) {  // "Save this map as PNG" from a heatmap's menu
      act.capture = CaptureSpec{static_cast<float>(app.view.screenshot_scale), app.pending_capture_panel,
                                app.pending_capture_head, app.view.caption};
      app.pending_capture_panel.clear();
    }
    if (shot || !act.capture.panel.empty()) {
      CaptureSpec spec = act.capture;
      if (shot) spec = CaptureSpec{static_cast<float>(app.view.screenshot_scale), "", 0, app.view.caption};
      std::string error;
      const std::string path = timestampedPath(app.view.screenshot_dir, &error);
      if (error.empty()) error = capture(spec, path);
      if (error.empty()) last_screenshot = path;
      app.showToast(error.empty() ? "Saved " + path : "Screenshot failed: " + error, !error.empty(), now);
    }
    if (headless) {
      const bool settled = !app.computing && (app.trace || !app.engine_error.empty());
      ready_frames = settled ? ready_frames + 1 : 0;
      if (ready_frames >= options.frames) {
        exit_code = headlessCapture(options, app, capture);
        glfwSetWindowShouldClose(window, 1);
      } else if (now - start > 600) {
        std::cerr << "error: the engine did not finish within 600 s\n";
        exit_code = 1;
        glfwSetWindowShouldClose(window, 1);
      }
    }
    glfwSwapBuffers(window);
    layout().endFrame(options.dump_layout_path);
    collectHeatmapTextures();
  }

  releaseHeatmapTextures();
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return exit_code;
}
