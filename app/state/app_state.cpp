#include "state/app_state.h"

#include <algorithm>

#include "engine/errors.h"

namespace attnscope {

const char* stageId(Stage s) {
  switch (s) {
    case Stage::Scores: return "scores";
    case Stage::Scaled: return "scaled_scores";
    case Stage::Masked: return "masked_scores";
    case Stage::Weights: return "weights";
    case Stage::DropoutMask: return "dropout_mask";
    case Stage::Dropped: return "dropped_weights";
    case Stage::Context: return "context";
  }
  return "?";
}

const char* stageTitle(Stage s) {
  switch (s) {
    case Stage::Scores: return "scores  Q·Kᵀ";
    case Stage::Scaled: return "scaled  ÷ √dₖ";
    case Stage::Masked: return "causal mask → −∞";
    case Stage::Weights: return "weights (softmax)";
    case Stage::DropoutMask: return "dropout mask";
    case Stage::Dropped: return "weights after dropout";
    case Stage::Context: return "context  weights·V";
  }
  return "?";
}

nlohmann::json viewToJson(const ViewState& v) {
  nlohmann::json columns = nlohmann::json::array();
  for (int s = 0; s < kStageCount; ++s)
    if (v.show[s]) columns.push_back(stageId(static_cast<Stage>(s)));
  return {{"colormap", colormapId(v.colormap)},
          {"diverging_for_signed", v.diverging_for_signed},
          {"shared_scale", v.shared_scale},
          {"theme", v.light_theme ? "light" : "dark"},
          {"batch", v.batch},
          {"head", v.head},
          {"token", v.token},
          {"columns", columns},
          {"tab", v.tab},
          {"screenshot_scale", v.screenshot_scale},
          {"caption", v.caption},
          {"inspector", v.show_inspector}};
}

ViewState viewFromJson(const nlohmann::json& j) {
  ViewState v;
  if (!j.is_object()) return v;
  Colormap c;
  if (j.contains("colormap") && j["colormap"].is_string() &&
      parseColormap(j["colormap"].get<std::string>(), &c))
    v.colormap = c;
  auto flag = [&j](const char* key, bool* out) {
    if (j.contains(key) && j[key].is_boolean()) *out = j[key].get<bool>();
  };
  flag("diverging_for_signed", &v.diverging_for_signed);
  flag("shared_scale", &v.shared_scale);
  if (j.contains("theme") && j["theme"].is_string()) v.light_theme = j["theme"] == "light";
  if (j.contains("batch") && j["batch"].is_number_integer()) v.batch = std::max(0, j["batch"].get<int>());
  if (j.contains("head") && j["head"].is_number_integer()) v.head = std::max(-1, j["head"].get<int>());
  if (j.contains("token") && j["token"].is_number_integer()) v.token = std::max(0, j["token"].get<int>());
  flag("inspector", &v.show_inspector);
  flag("caption", &v.caption);
  if (j.contains("screenshot_scale") && j["screenshot_scale"].is_number_integer())
    v.screenshot_scale = std::clamp(j["screenshot_scale"].get<int>(), 1, 3);
  if (j.contains("tab") && (j["tab"] == "heatmaps" || j["tab"] == "pipeline")) v.tab = j["tab"].get<std::string>();
  if (j.contains("columns") && j["columns"].is_array()) {
    v.show.fill(false);
    for (const auto& c : j["columns"])
      for (int s = 0; s < kStageCount; ++s)
        if (c == stageId(static_cast<Stage>(s))) v.show[s] = true;
  }
  return v;
}

void AppState::updateEngine() {
  if (inputs_changed_) {
    inputs_changed_ = false;
    view.batch = std::clamp(view.batch, 0, workspace.model.batch_size - 1);
    // Only the shown batch element keeps its intermediates: the GPT-2 preset stays small.
    TraceRequest what;
    what.all_batches = false;
    what.batches = {view.batch};
    worker_.request(workspace, exec, what);
  }
  if (auto result = worker_.poll()) {
    engine_ms = result->milliseconds;
    engine_error = result->error;
    if (result->trace) {
      trace = result->trace;
      ++trace_version;
    }
  }
  computing = worker_.busy();
  const int tokens = static_cast<int>(workspace.embeddings.rows());
  view.token = std::clamp(view.token, 0, tokens - 1);
  if (view.head >= headCount(workspace.model)) view.head = -1;
}

bool AppState::edit(const std::string& tag, const std::function<void(Workspace&)>& change, double now) {
  Workspace next = workspace;
  try {
    change(next);
  } catch (const InputError& e) {
    showToast(e.what(), true, now);
    return false;
  }
  history.record(workspace, tag);
  workspace = std::move(next);
  dirty = true;
  changed();
  return true;
}

void AppState::undo() {
  if (!history.canUndo()) return;
  workspace = history.undo(workspace);
  dirty = true;
  changed();
}

void AppState::redo() {
  if (!history.canRedo()) return;
  workspace = history.redo(workspace);
  dirty = true;
  changed();
}

void AppState::replaceWorkspace(Workspace ws) {
  history.record(workspace);
  workspace = std::move(ws);
  file.clear();  // a preset or a new workspace is untitled until saved
  dirty = true;
  view.batch = 0;
  view.key = -1;
  view.zoom = 1;
  changed();
}

void AppState::showToast(const std::string& text, bool error, double now) {
  toast = text;
  toast_is_error = error;
  toast_until = now + (error ? 6.0 : 3.0);
}

}  // namespace attnscope
