// LayoutRecorder: where this frame drew its panels, heatmaps and controls, and what state it
// showed. `--dump-layout FILE` writes it as JSON whenever it changes, so GUI tests can click real
// controls and sample real pixels instead of guessing coordinates.
#pragma once
#include <imgui.h>

#include <nlohmann/json.hpp>
#include <string>

namespace attnscope {

class LayoutRecorder {
 public:
  void beginFrame();
  void panel(const std::string& name, ImVec2 min, ImVec2 max);
  void widget(const std::string& name);                        // the last ImGui item
  void rect(const std::string& name, ImVec2 min, ImVec2 max);  // a widget's part, as widgets[name]
  void heatmap(nlohmann::json entry);
  nlohmann::json& state() { return frame_["state"]; }
  const nlohmann::json& frame() const { return frame_; }
  // Writes the frame to `path` (atomically) if it differs from the last one written. With `compare`
  // (a headless run) the frame is compared with the one before even without a path: held().
  void endFrame(const std::string& path, bool compare = false);
  // Whether the last frame recorded was the frame before it again: the layout holds still.
  bool held() const { return held_; }

 private:
  nlohmann::json frame_;
  std::string written_;
  std::string last_;
  bool held_ = false;
};

LayoutRecorder& layout();
nlohmann::json rectJson(ImVec2 min, ImVec2 max);

}  // namespace attnscope
