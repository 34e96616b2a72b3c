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

void LayoutRecorder::Rects::add(const std::string& name, ImVec2 min, ImVec2 max) {
  if (count == entries.size()) entries.emplace_back();
  NamedRect& e = entries[count++];
  e.name.assign(name);
  e.min = min, e.max = max;
}

nlohmann::json LayoutRecorder::Rects::json() const {
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t i = 0; i < count; ++i) out[entries[i].name] = rectJson(entries[i].min, entries[i].max);
  return out;
}

void LayoutRecorder::beginFrame() {
  panels_.count = widgets_.count = 0;
  heatmaps_ = nlohmann::json::array();
  state_ = nlohmann::json::object();
  frame_made_ = false;
}

void LayoutRecorder::panel(const std::string& name, ImVec2 min, ImVec2 max) {
  panels_.add(name, min, max);
  frame_made_ = false;
}

void LayoutRecorder::widget(const std::string& name) {
  widgets_.add(name, ImGui::GetItemRectMin(), ImGui::GetItemRectMax());
  frame_made_ = false;
}

void LayoutRecorder::rect(const std::string& name, ImVec2 min, ImVec2 max) {
  widgets_.add(name, min, max);
  frame_made_ = false;
}

void LayoutRecorder::heatmap(nlohmann::json entry) {
  heatmaps_.push_back(std::move(entry));
  frame_made_ = false;
}

const nlohmann::json& LayoutRecorder::frame() const {
  if (frame_made_) return frame_;
  frame_ = {{"panels", panels_.json()}, {"widgets", widgets_.json()}, {"heatmaps", heatmaps_}, {"state", state_}};
  frame_made_ = true;
  return frame_;
}

void LayoutRecorder::endFrame(const std::string& path, bool compare) {
  if (path.empty() && !compare) return;
  std::string text = jsonText(frame(), 1);
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
