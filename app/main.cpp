// attnscope: the desktop app. GLFW window, OpenGL 3.3 core through glad, Dear ImGui 1.86.
// The main loop follows ImGui's example: poll, new frame, UI, render, swap; shutdown in reverse.
#include <glad/gl.h>
// glad before GLFW: it provides the GL declarations
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "app_options.h"
#include "app_state.h"
#include "errors.h"
#include "fonts.h"
#include "heatmap.h"
#include "heatmap_grid.h"
#include "inputs_panel.h"
#include "inspector_panel.h"
#include "layout_dump.h"
#include "main_menu.h"
#include "model_panel.h"
#include "pipeline_view.h"
#include "screenshot.h"
#include "status_bar.h"
#include "theme.h"

using namespace attnscope;

namespace {

std::string glfw_error;

// Keys the app acts on, caught in GLFW's callback: ImGui 1.86 reads key state once per frame and
// misses a press and release that fall between two frames (as xdotool sends them).
struct KeyRequests {
  bool screenshot = false, quit = false, undo = false, redo = false;
  int token_step = 0;  // arrows: move the selected query token
  int head_step = 0;   // Tab / Shift+Tab: cycle the shown head
} keys;

void onKey(GLFWwindow*, int key, int, int action, int mods) {
  if (action != GLFW_PRESS && action != GLFW_REPEAT) return;
  const bool ctrl = mods & GLFW_MOD_CONTROL, shift = mods & GLFW_MOD_SHIFT;
  if (key == GLFW_KEY_F12 && action == GLFW_PRESS) keys.screenshot = true;
  if (key == GLFW_KEY_Q && ctrl) keys.quit = true;
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
  try {
    cli.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return cli.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << e.what() << " (see attnscope --help)\n";
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
void drawFrame(AppState& app, double now) {
  const ImGuiViewport* vp = ImGui::GetMainViewport();
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

void recordState(const AppState& app, const std::string& last_screenshot) {
  const ModelConfig& m = app.workspace.model;
  Workspace ws = app.workspace;
  ws.view = viewToJson(app.view);
  layout().state() = {{"variant", variantId(m.variant)},
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
                      {"workspace", workspaceToJson(ws)}};
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
  if (options.theme == "light") app.view.light_theme = true;
  if (!options.screenshot_dir.empty()) app.view.screenshot_dir = options.screenshot_dir;
  if (app.view.screenshot_dir.empty()) app.view.screenshot_dir = defaultScreenshotFolder();
  const bool headless = !options.screenshot_path.empty();

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
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");

  int ready_frames = 0, exit_code = 0;
  bool shot_requested = false;
  std::string last_screenshot;
  const double start = glfwGetTime();
  while (!glfwWindowShouldClose(window)) {
    glfwPollEvents();
    const double now = glfwGetTime();
    app.updateEngine(now);

    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    layout().beginFrame();
    const MenuActions act = drawMainMenu(app, now);
    if (act.theme_changed) applyTheme(app.view.light_theme, scale);
    drawFrame(app, now);
    if (keys.screenshot || act.screenshot) shot_requested = true;
    if (keys.quit || act.quit) glfwSetWindowShouldClose(window, 1);
    applyKeys(app);
    keys = {};
    if (!ImGui::IsAnyMouseDown()) app.history.endGesture();  // a drag ends: the next edit is a new step
    recordState(app, last_screenshot);
    ImGui::Render();

    int fb_w = 0, fb_h = 0;
    glfwGetFramebufferSize(window, &fb_w, &fb_h);
    glViewport(0, 0, fb_w, fb_h);
    const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
    glClearColor(bg.x, bg.y, bg.z, 1);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());

    Workspace current = app.workspace;
    current.view = viewToJson(app.view);
    if (shot_requested) {
      shot_requested = false;
      std::string error;
      const std::string path = timestampedPath(app.view.screenshot_dir, &error);
      if (error.empty()) error = saveFramebufferPng(fb_w, fb_h, path, dumpWorkspace(current));
      if (error.empty()) last_screenshot = path;
      app.showToast(error.empty() ? "Saved " + path : "Screenshot failed: " + error, !error.empty(), now);
    }
    if (headless) {
      const bool settled = !app.computing && (app.trace || !app.engine_error.empty());
      ready_frames = settled ? ready_frames + 1 : 0;
      if (ready_frames >= options.frames) {
        const std::string error = saveFramebufferPng(fb_w, fb_h, options.screenshot_path, dumpWorkspace(current));
        if (error.empty()) {
          std::cout << "saved " << options.screenshot_path << " (" << fb_w << "×" << fb_h << ")\n";
        } else {
          std::cerr << "error: " << error << "\n";
          exit_code = 2;
        }
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
