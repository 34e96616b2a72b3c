#include "widgets/layout_dump.h"

#include "engine/errors.h"
#include "formats/atomic_file.h"
#include "formats/json_format.h"
#include "formats/workspace_file.h"

namespace attnscope {

LayoutRecorder& layout() {
  static LayoutRecorder recorder;
  return recorder;
}

nlohmann::json rectJson(ImVec2 min, ImVec2 max) {
  return {{"x", min.x}, {"y", min.y}, {"w", max.x - min.x}, {"h", max.y - min.y}};
}

void LayoutRecorder::beginFrame() {
  frame_ = {{"panels", nlohmann::json::object()},
            {"widgets", nlohmann::json::object()},
            {"heatmaps", nlohmann::json::array()},
            {"state", nlohmann::json::object()}};
}

void LayoutRecorder::panel(const std::string& name, ImVec2 min, ImVec2 max) {
  frame_["panels"][name] = rectJson(min, max);
}

void LayoutRecorder::widget(const std::string& name) {
  frame_["widgets"][name] = rectJson(ImGui::GetItemRectMin(), ImGui::GetItemRectMax());
}

void LayoutRecorder::rect(const std::string& name, ImVec2 min, ImVec2 max) {
  frame_["widgets"][name] = rectJson(min, max);
}

void LayoutRecorder::heatmap(nlohmann::json entry) { frame_["heatmaps"].push_back(std::move(entry)); }

void LayoutRecorder::endFrame(const std::string& path, bool compare) {
  if (path.empty() && !compare) return;
  std::string text = jsonText(frame_, 1);
  held_ = text == last_;
  if (!held_) last_ = text;
  if (path.empty() || text == written_) return;
  try {
    writeFileAtomically(path, text);
    written_ = std::move(text);
  } catch (const InputError&) {
    // A test harness that removed its folder; nothing for the user to see.
  }
}

}  // namespace attnscope
