#include "state/view_state.h"

#include <algorithm>
#include <cmath>

#include "engine/errors.h"

namespace attnscope {

const std::array<MainTab, 7>& mainTabs() {
  static const std::array<MainTab, 7> tabs = {
      {{"layers", "Layers", TabFor::Model},  // a trained model's every layer and head (docs/DESIGN.md §3.4 "Layers")
       {"heatmaps", "Heatmaps"},
       {"pipeline", "Pipeline"},
       {"lines", "Lines"},
       {"parameters", "Weights", TabFor::Chapter},  // the parameters (--panel weights is a heatmap)
       {"compare", "Compare"},
       {"learn", "Learn", TabFor::Always, false}}};  // a model training live (docs/DESIGN.md §3.9)
  return tabs;
}

bool isMainTab(const std::string& id) {
  return std::any_of(mainTabs().begin(), mainTabs().end(), [&](const MainTab& t) { return id == t.id; });
}

bool mainTabShown(const std::string& id, Showing now) {
  return std::any_of(mainTabs().begin(), mainTabs().end(),
                     [&](const MainTab& t) { return id == t.id && t.shown(now); });
}

const std::vector<GridColumn>& gridColumns() {
  static const std::vector<GridColumn> columns = [] {
    std::vector<GridColumn> c;
    for (const StageInfo& s : stageTable())
      if (s.heatmap) c.push_back({s.id, s.title, s.label, true, static_cast<int>(s.stage)});
    for (const ModuleMapInfo& m : moduleMapTable())
      c.push_back({m.id, m.title, m.label, false, static_cast<int>(m.map)});
    return c;
  }();
  return columns;
}

std::array<bool, kStageCount> ViewState::defaultColumns() {
  std::array<bool, kStageCount> show{};
  for (const StageInfo& s : stageTable()) show[static_cast<int>(s.stage)] = s.heatmap && s.shown;
  return show;
}

std::array<bool, kModuleMapCount> ViewState::defaultModuleColumns() {
  std::array<bool, kModuleMapCount> show{};
  for (const ModuleMapInfo& m : moduleMapTable()) show[static_cast<int>(m.map)] = m.shown;
  return show;
}

nlohmann::json columnsWith(const ViewState& v, const std::string& id, bool on) {
  return columnsWith(v, std::vector<std::string>{id}, on);
}

nlohmann::json columnsWith(const ViewState& v, const std::vector<std::string>& ids, bool on) {
  nlohmann::json out = nlohmann::json::array();
  for (const GridColumn& c : gridColumns())
    if (std::find(ids.begin(), ids.end(), c.id) != ids.end() ? on : v.shows(c)) out.push_back(c.id);
  return out;
}

nlohmann::json viewToJson(const ViewState& v) {
  nlohmann::json columns = nlohmann::json::array();
  for (const GridColumn& c : gridColumns())
    if (v.shows(c)) columns.push_back(c.id);
  return {{"colormap", colormapId(v.colormap)},
          {"diverging_for_signed", v.diverging_for_signed},
          {"shared_scale", v.shared_scale},
          {"colour_scale", colourScaleId(v.colour_scale)},
          {"weights_range", v.weights_fixed ? "fixed" : "data"},
          {"theme", v.light_theme ? "light" : "dark"},
          {"batch", v.batch},
          {"head", v.head},
          {"token", v.token},
          {"columns", columns},
          {"tab", v.tab},
          {"screenshot_scale", v.screenshot_scale},
          {"caption", v.caption},
          {"inspector", v.show_inspector},
          {"model_panel", v.show_model},
          {"inputs_panel", v.show_inputs},
          {"status_bar", v.show_status},
          {"statistics", v.show_statistics},
          {"presentation", v.presentation},
          {"watch", v.watch},
          {"text_size", v.text_size},
          {"lines_stage", v.lines_stage},
          {"lines_top_k", v.lines_top_k},
          {"lines_hidden_heads", v.lines_hidden_heads},
          {"lines_isolate", v.lines_isolate},
          {"temperature", v.temperature}};
}

bool linesHeadHidden(const ViewState& v, int head) {
  return std::find(v.lines_hidden_heads.begin(), v.lines_hidden_heads.end(), head) != v.lines_hidden_heads.end();
}

nlohmann::json savedView(const ViewState& v, const nlohmann::json& workspace_view) {
  nlohmann::json out = viewToJson(v);
  out.erase("watch");  // this session's, not the file's: a file opened never starts watching by itself
  if (workspace_view.is_object() && workspace_view.contains("preset")) out["preset"] = workspace_view["preset"];
  return out;
}

const std::array<int, 6>& textSizeSteps() {
  static const std::array<int, 6> steps = {100, 125, 150, 175, 200, 250};
  return steps;
}

int stepTextSize(int percent, int direction) {
  const auto& steps = textSizeSteps();
  if (direction > 0) {
    for (int s : steps)
      if (s > percent) return s;
    return kMaxTextSize;
  }
  for (auto it = steps.rbegin(); it != steps.rend(); ++it)
    if (*it < percent) return *it;
  return kMinTextSize;
}

namespace {

[[noreturn]] void failView(const std::string& field, const std::string& why) {
  throw InputError("view." + field + ": " + why);
}

bool boolean(const std::string& f, const nlohmann::json& v) {
  if (!v.is_boolean()) failView(f, "expected true or false");
  return v.get<bool>();
}

int integer(const std::string& f, const nlohmann::json& v, int lo, int hi) {
  if (!v.is_number_integer()) failView(f, "expected an integer");
  const auto i = v.get<std::int64_t>();
  if (i < lo || i > hi) failView(f, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  return static_cast<int>(i);
}

// A text size: a whole percentage within the bounds, or a step up or down from the current one.
int textSize(const std::string& f, const nlohmann::json& v, int current) {
  if (v == "larger") return stepTextSize(current, 1);
  if (v == "smaller") return stepTextSize(current, -1);
  const bool whole = v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                               v.get<double>() == std::floor(v.get<double>()));
  if (whole && v.get<double>() >= kMinTextSize && v.get<double>() <= kMaxTextSize)
    return static_cast<int>(v.get<double>());
  failView(f, "expected a percentage from " + std::to_string(kMinTextSize) + " to " + std::to_string(kMaxTextSize) +
              " (e.g. 150), or \"larger\" or \"smaller\"; got " + v.dump());
}

}  // namespace

void setViewField(ViewState& v, const std::string& f, const nlohmann::json& value) {
  if (f == "colormap") {
    Colormap c;
    if (!value.is_string() || !parseColormap(value.get<std::string>(), &c))
      failView(f, "expected viridis, cividis or coolwarm");
    v.colormap = c;
  } else if (f == "diverging_for_signed") {
    v.diverging_for_signed = boolean(f, value);
  } else if (f == "shared_scale") {
    v.shared_scale = boolean(f, value);
  } else if (f == "colour_scale") {
    if (!value.is_string() || !parseColourScale(value.get<std::string>(), &v.colour_scale))
      failView(f, "expected \"linear\", \"log\" or \"row\"");
  } else if (f == "weights_range") {
    if (value != "fixed" && value != "data") failView(f, "expected \"fixed\" (0 to 1) or \"data\" (the map's own range)");
    v.weights_fixed = value == "fixed";
  } else if (f == "lock_range") {
    v.lock_range = boolean(f, value);  // the app fills the locked ranges from the result on screen
  } else if (f == "theme") {
    if (value != "light" && value != "dark") failView(f, "expected \"light\" or \"dark\"");
    v.light_theme = value == "light";
  } else if (f == "batch") {
    v.batch = integer(f, value, 0, 1 << 20);
  } else if (f == "head") {
    v.head = integer(f, value, -1, 1 << 20);
  } else if (f == "token") {
    v.token = integer(f, value, 0, 1 << 20);
  } else if (f == "columns") {
    if (!value.is_array()) failView(f, "expected an array of map names");
    std::array<bool, kStageCount> show{};
    std::array<bool, kModuleMapCount> show_module{};
    for (const auto& c : value) {
      const auto known = std::find_if(gridColumns().begin(), gridColumns().end(), [&](const GridColumn& g) {
        return c.is_string() && c.get<std::string>() == g.id;
      });
      if (known == gridColumns().end()) failView(f, "not a heatmap column: " + c.dump());
      (known->per_head ? show[static_cast<std::size_t>(known->index)]
                       : show_module[static_cast<std::size_t>(known->index)]) = true;
    }
    v.show = show;
    v.show_module = show_module;
  } else if (f == "tab") {
    if (!value.is_string() || !isMainTab(value.get<std::string>()))
      failView(f,
           "expected \"layers\", \"heatmaps\", \"pipeline\", \"lines\", \"parameters\" (the Weights tab) or "
           "\"compare\"");
    v.tab = value.get<std::string>();
  } else if (f == "lines_stage") {
    if (value != "weights" && value != "dropped_weights") failView(f, "expected \"weights\" or \"dropped_weights\"");
    v.lines_stage = value.get<std::string>();
  } else if (f == "lines_top_k") {
    v.lines_top_k = integer(f, value, 1, kLinesMaxTopK);
  } else if (f == "lines_hidden_heads") {
    if (!value.is_array()) failView(f, "expected an array of 0-based head indices");
    std::vector<int> hidden;
    for (const auto& h : value) {
      const int i = integer(f, h, 0, 1 << 20);
      if (std::find(hidden.begin(), hidden.end(), i) == hidden.end()) hidden.push_back(i);
    }
    std::sort(hidden.begin(), hidden.end());
    v.lines_hidden_heads = hidden;
  } else if (f == "lines_isolate") {
    v.lines_isolate = boolean(f, value);
  } else if (f == "temperature") {
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0 ||
        value.get<double>() > kMaxTemperature)
      failView(f, "expected a number from 0 (greedy) to " + std::to_string(static_cast<int>(kMaxTemperature)));
    v.temperature = value.get<double>();
  } else if (f == "screenshot_scale") {
    v.screenshot_scale = integer(f, value, 1, 3);
  } else if (f == "caption") {
    v.caption = boolean(f, value);
  } else if (f == "inspector") {
    v.show_inspector = boolean(f, value);
  } else if (f == "model_panel") {
    v.show_model = boolean(f, value);
  } else if (f == "inputs_panel") {
    v.show_inputs = boolean(f, value);
  } else if (f == "status_bar") {
    v.show_status = boolean(f, value);
  } else if (f == "statistics") {
    v.show_statistics = boolean(f, value);
  } else if (f == "presentation") {
    v.presentation = boolean(f, value);
  } else if (f == "watch") {
    v.watch = boolean(f, value);
  } else if (f == "text_size") {
    v.text_size = textSize(f, value, v.text_size);
  } else if (f == "focus") {  // the maps to lay the grid out for, as a lesson step's (docs/DESIGN.md §3.7 "Focus")
    if (!value.is_array()) failView(f, "expected an array of map names, [] for none");
    std::vector<std::string> ids;
    for (const auto& c : value) {
      const bool known = c.is_string() &&
                         std::any_of(gridColumns().begin(), gridColumns().end(),
                                     [&](const GridColumn& g) { return c.get<std::string>() == g.id; });
      if (!known) failView(f, "not a heatmap column: " + c.dump());
      if (std::find(ids.begin(), ids.end(), c.get<std::string>()) == ids.end()) ids.push_back(c.get<std::string>());
    }
    v.highlight = ids;
  } else if (f == "screenshot_dir") {
    if (!value.is_string()) failView(f, "expected a folder");
    v.screenshot_dir = value.get<std::string>();
  } else {
    failView(f,
         "unknown view field (one of colormap, diverging_for_signed, shared_scale, colour_scale, weights_range, "
         "lock_range, theme, batch, head, token, "
         "columns, tab, screenshot_scale, caption, inspector, model_panel, inputs_panel, status_bar, statistics, "
         "presentation, watch, "
         "text_size, lines_stage, lines_top_k, lines_hidden_heads, lines_isolate, temperature, screenshot_dir, focus)");
  }
}

ViewState viewFromJson(const nlohmann::json& j) {
  ViewState v;
  if (!j.is_object()) return v;
  for (auto it = j.begin(); it != j.end(); ++it) {
    // A machine's folder, a lock on this session's ranges, watching the file: not the workspace's.
    if (it.key() == "screenshot_dir" || it.key() == "lock_range" || it.key() == "watch") continue;
    try {
      setViewField(v, it.key(), it.value());
    } catch (const InputError&) {
      // A view is a convenience: what cannot be read keeps its default.
    }
  }
  return v;
}

LookChoices lookChoices(const ViewState& v) {
  LookChoices c;
  c.colormap = v.colormap;
  c.scale = v.colour_scale;
  c.diverging_for_signed = v.diverging_for_signed;
  c.weights_fixed = v.weights_fixed;
  return c;
}

}  // namespace attnscope
