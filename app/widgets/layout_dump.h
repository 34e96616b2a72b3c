// LayoutRecorder: where this frame drew its panels, heatmaps and controls, and what state it
// showed. `--dump-layout FILE` writes it as JSON whenever it changes, so GUI tests can click real
// controls and sample real pixels instead of guessing coordinates.
#pragma once
#include <imgui.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attnscope {

class LayoutRecorder {
 public:
  void beginFrame();
  void panel(const std::string& name, ImVec2 min, ImVec2 max);
  void widget(const std::string& name);                        // the last ImGui item
  void rect(const std::string& name, ImVec2 min, ImVec2 max);  // a widget's part, as widgets[name]
  void heatmap(nlohmann::json entry);
  nlohmann::json& state() {
    frame_made_ = false;  // written through the reference: the frame below is made again
    return state_;
  }
  // The frame as JSON: {"panels", "widgets", "heatmaps", "state"}, made when first asked after a
  // change (a capture, a dump): the rects of every frame (~170 widgets) are kept as they are, not
  // as JSON objects, which had cost each frame 0.6 ms.
  const nlohmann::json& frame() const;
  // Writes the frame to `path` (atomically) if it differs from the last one written. With `compare`
  // (a headless run) the frame is compared with the one before even without a path: held().
  void endFrame(const std::string& path, bool compare = false);
  // Whether the last frame recorded was the frame before it again: the layout holds still.
  bool held() const { return held_; }

 private:
  struct NamedRect {
    std::string name;
    ImVec2 min, max;
  };
  // This frame's first `count` entries; the strings' memory is kept for the next frame's.
  struct Rects {
    std::vector<NamedRect> entries;
    std::size_t count = 0;
    void add(const std::string& name, ImVec2 min, ImVec2 max);
    nlohmann::json json() const;  // by name; a name recorded twice keeps its last rect
  };
  Rects panels_, widgets_;
  nlohmann::json heatmaps_ = nlohmann::json::array(), state_ = nlohmann::json::object();
  mutable nlohmann::json frame_;
  mutable bool frame_made_ = false;
  std::string written_;
  std::string last_;
  bool held_ = false;
};

LayoutRecorder& layout();
nlohmann::json rectJson(ImVec2 min, ImVec2 max);

}  // namespace attnscope
