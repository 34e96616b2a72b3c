#include "shell/app_window.h"

#include <glad/gl.h>
// glad before GLFW: it provides the GL declarations
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#include <imgui_internal.h>  // ImGuiWindow's hidden and auto-fit frames: settling()

#include <algorithm>
#include <cfloat>
#include <optional>
#include <utility>

#include "state/ui_wake.h"
#include "widgets/fonts.h"
#include "widgets/kept_text.h"
#include "widgets/theme.h"

namespace attnscope {

namespace {

std::string glfw_error;  // GLFW's last message: its error callback takes no user data

// The binding table's key for a GLFW key: + and − as the keyboard layout places them, or the keypad's.
std::optional<Key> tableKey(int key, int scancode) {
  switch (key) {
    case GLFW_KEY_S: return Key::S;
    case GLFW_KEY_O: return Key::O;
    case GLFW_KEY_Q: return Key::Q;
    case GLFW_KEY_Z: return Key::Z;
    case GLFW_KEY_Y: return Key::Y;
    case GLFW_KEY_V: return Key::V;
    case GLFW_KEY_P: return Key::P;
    case GLFW_KEY_F10: return Key::F10;
    case GLFW_KEY_F11: return Key::F11;
    case GLFW_KEY_F12: return Key::F12;
    case GLFW_KEY_SPACE: return Key::Space;
    case GLFW_KEY_LEFT: return Key::Left;
    case GLFW_KEY_RIGHT: return Key::Right;
    case GLFW_KEY_UP: return Key::Up;
    case GLFW_KEY_DOWN: return Key::Down;
    case GLFW_KEY_PAGE_UP: return Key::PageUp;
    case GLFW_KEY_PAGE_DOWN: return Key::PageDown;
    case GLFW_KEY_TAB: return Key::Tab;
    case GLFW_KEY_KP_ADD: return Key::Plus;
    case GLFW_KEY_KP_SUBTRACT: return Key::Minus;
    case GLFW_KEY_KP_0: return Key::Zero;
    default: break;
  }
  const char* name = glfwGetKeyName(key, scancode);
  const std::string k = name ? name : "";
  if (k == "+" || k == "=" || (k.empty() && key == GLFW_KEY_EQUAL)) return Key::Plus;
  if (k == "-" || (k.empty() && key == GLFW_KEY_MINUS)) return Key::Minus;
  if (k == "0" || (k.empty() && key == GLFW_KEY_0)) return Key::Zero;
  return std::nullopt;
}

}  // namespace

// Keys are caught in GLFW's callback: ImGui 1.86 reads key state once per frame and misses a
// press and release that fall between two frames (as xdotool sends them).
void AppWindow::onKey(GLFWwindow* window, int key, int scancode, int action, int mods) {
  if (action != GLFW_PRESS && action != GLFW_REPEAT) return;
  auto* self = static_cast<AppWindow*>(glfwGetWindowUserPointer(window));
  const std::optional<Key> k = tableKey(key, scancode);
  if (!self || !k) return;
  unsigned m = (mods & GLFW_MOD_CONTROL ? kCtrl : 0u) | (mods & GLFW_MOD_SHIFT ? kShift : 0u) |
               (mods & GLFW_MOD_ALT ? kAlt : 0u);
  if (*k == Key::Plus) m &= ~kShift;  // "+" takes Shift on many layouts (Shift+= on a US keyboard)
  const bool typing = ImGui::GetCurrentContext() && ImGui::GetIO().WantTextInput;
  self->keys_.push_back({{*k, m, action == GLFW_REPEAT}, typing});
}

void AppWindow::onKeyForImGui(GLFWwindow* window, int key, int scancode, int action, int mods) {
  if (auto* self = static_cast<AppWindow*>(glfwGetWindowUserPointer(window))) {
    const auto same = [key](const Release& r) { return r.key == key; };
    if (action == GLFW_PRESS) {  // down again: a release still held back is out of date
      auto& held = self->held_releases_;
      auto& before = self->release_before_;
      held.erase(std::remove_if(held.begin(), held.end(), same), held.end());
      before.erase(std::remove_if(before.begin(), before.end(), same), before.end());
      self->unseen_presses_.push_back(key);
    } else if (action == GLFW_RELEASE && std::find(self->unseen_presses_.begin(), self->unseen_presses_.end(), key) !=
                                             self->unseen_presses_.end()) {
      self->held_releases_.push_back({key, scancode, mods});
      return;
    }
  }
  ImGui_ImplGlfw_KeyCallback(window, key, scancode, action, mods);
}

std::string AppWindow::open(const AppOptions& options, float text_scale, bool light, bool vsync) {
  glfwSetErrorCallback([](int, const char* text) { glfw_error = text; });
  if (!glfwInit()) return "no display (" + glfw_error + "). To render without one, run under Xvfb:\n  " + kXvfbHint;
  glfw_ = true;
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);
  // WM_CLASS "attnscope": how an X11 desktop ties the window to the desktop entry (StartupWMClass)
  // and its icon, whatever the window title says.
  glfwWindowHintString(GLFW_X11_CLASS_NAME, "attnscope");
  glfwWindowHintString(GLFW_X11_INSTANCE_NAME, "attnscope");
  window_ = glfwCreateWindow(options.width, options.height, "attnscope", nullptr, nullptr);
  if (!window_) return "cannot open an OpenGL 3.3 window (" + glfw_error + "). Without a display, run:\n  " + kXvfbHint;
  windowed_[2] = options.width;
  windowed_[3] = options.height;
  glfwMakeContextCurrent(window_);
  glfwSwapInterval(vsync ? 1 : 0);
  if (!gladLoadGL(glfwGetProcAddress)) return "cannot load OpenGL 3.3 functions";

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  imgui_ = true;
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // the layout is computed, not remembered
  float xscale = 1, yscale = 1;
  glfwGetWindowContentScale(window_, &xscale, &yscale);
  monitor_scale_ = std::max(1.0f, std::max(xscale, yscale));  // the monitor's; × the view's text size
  ui_scale_ = monitor_scale_ * text_scale;
  light_ = light;
  loadFonts(ui_scale_);
  applyTheme(light_, ui_scale_);
  io.ConfigFlags &= ~ImGuiConfigFlags_NavEnableKeyboard;  // arrows and Tab belong to the view
  glfwSetWindowUserPointer(window_, this);
  glfwSetKeyCallback(window_, onKey);                      // before ImGui's, which chains to it
  glfwSetWindowCloseCallback(window_, [](GLFWwindow* w) {  // ask before closing: the quit command's prompt
    static_cast<AppWindow*>(glfwGetWindowUserPointer(w))->close_requested_ = true;
    glfwSetWindowShouldClose(w, 0);
  });
  ImGui_ImplGlfw_InitForOpenGL(window_, true);
  glfwSetKeyCallback(window_, onKeyForImGui);  // in front of ImGui's (which it calls)
  // A typed character above U+FFFF (an emoji) goes into the field being edited as its stand-in
  // (widgets/kept_text.h): ImGui's 16-bit characters would make it U+FFFD.
  glfwSetCharCallback(window_, [](GLFWwindow* w, unsigned c) {
    if (const unsigned stand_in = c > 0xFFFF ? typedStandIn(c) : 0; stand_in != 0)
      ImGui::GetIO().AddInputCharacter(stand_in);
    else
      ImGui_ImplGlfw_CharCallback(w, c);
  });
  // Tab cycles the heads (the binding table), never ImGui's focus: its tabbing walked from a typed
  // cell into the next cell's text field, which then kept the arrows and Tab.
  io.KeyMap[ImGuiKey_Tab] = -1;
  ImGui_ImplOpenGL3_Init("#version 330 core");
  // The engine and the colouring thread wake the loop when a result is ready.
  setWakeHandler([] { glfwPostEmptyEvent(); });
  return "";
}

AppWindow::~AppWindow() {
  if (window_) setWakeHandler(nullptr);  // before the window goes: a late result wakes nothing
  if (imgui_) {
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
  }
  if (window_) glfwDestroyWindow(window_);
  if (glfw_) glfwTerminate();
}

void AppWindow::setStyle(float ui_scale, bool light) {
  ui_scale_ = ui_scale;
  light_ = light;
  loadFonts(ui_scale);
  ImGui_ImplOpenGL3_DestroyFontsTexture();
  ImGui_ImplOpenGL3_CreateFontsTexture();
  applyTheme(light, ui_scale);
}

WindowHooks AppWindow::hooks() {
  WindowHooks h;
  h.monitor_scale = monitor_scale_;
  h.offscreen_frame = [](const CaptureFrame& frame, const std::function<void()>& ui) {
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = ImVec2(frame.width, frame.height);  // the offscreen size, and no hover effects from the real mouse
    io.DisplayFramebufferScale = ImVec2(1, 1);
    io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
    // A capture's frames follow each other in milliseconds: ImGui's animations (a tab bar
    // scrolling to a far tab at 200 %, 0.3 s) would outlast the frames a capture waits to settle.
    // Each counts as a tenth of a second.
    io.DeltaTime = std::max(io.DeltaTime, 0.1f);
    ImGui::NewFrame();
    ui();
    ImGui::Render();
  };
  h.set_style = [this](float ui_scale, bool light) {
    if (ui_scale != ui_scale_ || light != light_) setStyle(ui_scale, light);
  };
  h.size = [this](int* w, int* h) { size(w, h); };
  h.clipboard = [this](const std::string& text) { glfwSetClipboardString(window_, text.c_str()); };
  h.clipboard_text = [this]() -> std::string {  // X11: asks the selection's owner (xclip, a browser, …)
    const char* text = glfwGetClipboardString(window_);
    return text ? text : "";
  };
  h.fullscreen = [this] { return glfwGetWindowMonitor(window_) != nullptr; };
  h.set_fullscreen = [this](bool on) { return setFullscreen(on); };
  return h;
}

// Full screen on the monitor that holds most of the window (a projector beside the laptop), and
// back to the window's place and size.
std::string AppWindow::setFullscreen(bool on) {
  if (on == (glfwGetWindowMonitor(window_) != nullptr)) return "";
  if (!on) {
    glfwSetWindowMonitor(window_, nullptr, windowed_[0], windowed_[1], windowed_[2], windowed_[3], GLFW_DONT_CARE);
    return "";
  }
  glfwGetWindowPos(window_, &windowed_[0], &windowed_[1]);
  glfwGetWindowSize(window_, &windowed_[2], &windowed_[3]);
  int count = 0;
  GLFWmonitor** monitors = glfwGetMonitors(&count);
  GLFWmonitor* best = nullptr;
  long best_area = -1;
  for (int i = 0; i < count; ++i) {
    const GLFWvidmode* mode = glfwGetVideoMode(monitors[i]);
    if (!mode) continue;
    int mx = 0, my = 0;
    glfwGetMonitorPos(monitors[i], &mx, &my);
    const long w = std::max(0, std::min(windowed_[0] + windowed_[2], mx + mode->width) - std::max(windowed_[0], mx));
    const long h = std::max(0, std::min(windowed_[1] + windowed_[3], my + mode->height) - std::max(windowed_[1], my));
    if (w * h > best_area) best = monitors[i], best_area = w * h;
  }
  const GLFWvidmode* mode = best ? glfwGetVideoMode(best) : nullptr;
  if (!mode) return "no monitor to fill (" + (glfw_error.empty() ? std::string("none reported") : glfw_error) + ")";
  glfwSetWindowMonitor(window_, best, 0, 0, mode->width, mode->height, mode->refreshRate);
  return glfwGetWindowMonitor(window_) ? "" : "the window system refused (" + glfw_error + ")";
}

bool AppWindow::wait(double timeout) {
  const unsigned wakes = wakeCount();
  glfwWaitEventsTimeout(timeout);
  return wakeCount() != wakes;
}

void AppWindow::poll() { glfwPollEvents(); }

double AppWindow::now() const { return glfwGetTime(); }

std::vector<AppWindow::Press> AppWindow::takeKeys() { return std::exchange(keys_, {}); }

bool AppWindow::takeCloseRequest() { return std::exchange(close_requested_, false); }

void AppWindow::beginFrame(bool click_away) {
  // The releases of keys the last frame saw pressed (onKeyForImGui).
  for (const Release& r : release_before_) ImGui_ImplGlfw_KeyCallback(window_, r.key, r.scancode, GLFW_RELEASE, r.mods);
  release_before_ = std::move(held_releases_);
  held_releases_.clear();
  unseen_presses_.clear();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  if (click_away) {
    ImGuiIO& io = ImGui::GetIO();
    io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
    io.MouseDown[ImGuiMouseButton_Left] = true;  // (the next frame reads the real button again)
  }
  ImGui::NewFrame();
}

void AppWindow::endFrame(bool present) {
  ImGui::Render();
  if (!present) return;
  int fb_w = 0, fb_h = 0;
  glfwGetFramebufferSize(window_, &fb_w, &fb_h);
  glViewport(0, 0, fb_w, fb_h);
  const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
  glClearColor(bg.x, bg.y, bg.z, 1);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  glfwSwapBuffers(window_);
}

bool AppWindow::mouseDown() const { return ImGui::IsAnyMouseDown(); }

bool AppWindow::typing() const { return ImGui::GetIO().WantTextInput; }

bool AppWindow::settling() const {
  for (const ImGuiWindow* w : GImGui->Windows)
    if (w->Active && (w->Appearing || w->AutoFitFramesX > 0 || w->AutoFitFramesY > 0 ||
                      w->HiddenFramesCanSkipItems > 0 || w->HiddenFramesCannotSkipItems > 0))
      return true;
  return false;
}

void AppWindow::setTitle(const std::string& title) { glfwSetWindowTitle(window_, title.c_str()); }

void AppWindow::size(int* w, int* h) const { glfwGetWindowSize(window_, w, h); }

}  // namespace attnscope
