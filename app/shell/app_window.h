// AppWindow: the GLFW window, its OpenGL 3.3 context (through glad) and Dear ImGui on it. It
// knows nothing of the App: it hands over the keys pressed (as KeyPress values of the binding
// table, state/key_bindings.h), says when the user closes it, and gives the App its WindowHooks —
// offscreen frames for screenshots, fonts and style at a scale, the clipboard, full screen.
#pragma once
#include <string>
#include <vector>

#include "shell/app.h"
#include "shell/app_options.h"
#include "state/key_bindings.h"

struct GLFWwindow;

namespace attnscope {

class AppWindow {
 public:
  AppWindow() = default;
  AppWindow(const AppWindow&) = delete;
  AppWindow& operator=(const AppWindow&) = delete;
  ~AppWindow();  // ImGui's backends, its context, the window, GLFW: in reverse

  // Opens the window options.width × options.height with fonts and style for `text_scale` ×
  // the monitor's scale; "" or why not (no display, no OpenGL 3.3), with the Xvfb line to try.
  std::string open(const AppOptions& options, float text_scale, bool light, bool vsync);
  WindowHooks hooks();
  float monitorScale() const { return monitor_scale_; }

  // ---- each frame
  // Waits for input, a wake-up (state/ui_wake.h) or `timeout` seconds; true when woken by a wake-up.
  bool wait(double timeout);
  void poll();
  double now() const;
  // The key presses since the last call, and whether a text field had the keyboard at each.
  struct Press {
    KeyPress press;
    bool typing;
  };
  std::vector<Press> takeKeys();
  bool takeCloseRequest();  // the user closed the window: the quit command asks first
  // Starts an ImGui frame; `click_away`: a click outside every window this frame (a field being
  // typed into commits its value, as a Ctrl+S while typing needs).
  void beginFrame(bool click_away);
  // Render and swap; present = false ends ImGui's frame only (a --screenshot run's window, which no
  // one watches: its captures render offscreen, shell/capture.h).
  void endFrame(bool present = true);
  bool mouseDown() const;  // a mouse button is held (a drag: one undo step)
  bool typing() const;     // a text field has the keyboard
  // ImGui is still placing a window of the last frame: one that appeared is measured hidden, then
  // fitted and centred over the next frames (an auto-resized popup takes three or four). Until it is
  // done the window does not sleep, or the popup stays half placed until the next wake-up.
  bool settling() const;
  void setTitle(const std::string& title);
  void size(int* w, int* h) const;
  // Fonts rasterized again at the same scale: new tokens' glyphs (CJK) into the atlas.
  void reloadFonts() { setStyle(ui_scale_, light_); }

 private:
  void setStyle(float ui_scale, bool light);  // fonts rasterized at ui_scale, sizes scaled by it
  std::string setFullscreen(bool on);
  static void onKey(GLFWwindow* window, int key, int scancode, int action, int mods);
  // In front of ImGui's key callback: a key pressed and released between two frames reaches ImGui
  // as held for one frame (ImGui 1.86 reads key state once per frame, and dropped such a tap of
  // Return or Ctrl+A when a frame was slow): the release is given to it before the next frame.
  static void onKeyForImGui(GLFWwindow* window, int key, int scancode, int action, int mods);

  GLFWwindow* window_ = nullptr;
  bool glfw_ = false, imgui_ = false;
  float monitor_scale_ = 1, ui_scale_ = 1;
  bool light_ = false;
  int windowed_[4] = {0, 0, 0, 0};  // x, y, w, h before going full-screen
  std::vector<Press> keys_;
  struct Release {
    int key, scancode, mods;
  };
  std::vector<int> unseen_presses_;      // keys pressed since the last NewFrame
  std::vector<Release> held_releases_;   // their releases, kept from ImGui until it has seen the press
  std::vector<Release> release_before_;  // given to ImGui before the next NewFrame
  bool close_requested_ = false;
};

}  // namespace attnscope
