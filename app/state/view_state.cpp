#include "state/view_state.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>

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

bool linesHeadHidden(const ViewState& v, int head) {
  return std::find(v.lines_hidden_heads.begin(), v.lines_hidden_heads.end(), head) != v.lines_hidden_heads.end();
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

// [SECTION] The view's fields ----------------------------------------------------------------------
// One row a field: its JSON name (the `view` command's, a workspace's "view"), how a value is read
// and checked (an InputError naming the field), how it is written (null: never written — a lesson's
// focus, a lock on this session's ranges, a machine's folder) and whether a workspace file keeps it
// (watching the file, the lock and the folder are this session's).

std::vector<std::string> columnIds(const nlohmann::json& value, const std::string& f, const char* expected) {
  if (!value.is_array()) failView(f, expected);
  std::vector<std::string> ids;
  for (const auto& c : value) {
    const bool known = c.is_string() && std::any_of(gridColumns().begin(), gridColumns().end(),
                                                    [&](const GridColumn& g) { return c.get<std::string>() == g.id; });
    if (!known) failView(f, "not a heatmap column: " + c.dump());
    if (std::find(ids.begin(), ids.end(), c.get<std::string>()) == ids.end()) ids.push_back(c.get<std::string>());
  }
  return ids;
}

using Json = nlohmann::json;
struct ViewField {
  const char* name;
  std::function<void(ViewState& v, const std::string& f, const Json& value)> set;
  std::function<Json(const ViewState& v)> get;  // null: not written
  bool in_file = true;                          // read from and saved with a workspace
};

// The rows of a plain true/false field and of a whole number within [lo, hi], by their member.
ViewField flagField(const char* name, bool ViewState::*member, bool in_file = true) {
  return {name, [member](ViewState& v, const std::string& f, const Json& value) { v.*member = boolean(f, value); },
          [member](const ViewState& v) -> Json { return v.*member; }, in_file};
}
ViewField countField(const char* name, int ViewState::*member, int lo, int hi) {
  return {name,
          [member, lo, hi](ViewState& v, const std::string& f, const Json& value) {
            v.*member = integer(f, value, lo, hi);
          },
          [member](const ViewState& v) -> Json { return v.*member; }};
}

const std::vector<ViewField>& viewFields() {
  static const std::vector<ViewField> fields = {
      {"colormap",
       [](ViewState& v, const std::string& f, const Json& value) {
         Colormap c;
         if (!value.is_string() || !parseColormap(value.get<std::string>(), &c))
           failView(f, "expected viridis, cividis or coolwarm");
         v.colormap = c;
       },
       [](const ViewState& v) -> Json { return colormapId(v.colormap); }},
      flagField("diverging_for_signed", &ViewState::diverging_for_signed),
      flagField("shared_scale", &ViewState::shared_scale),
      {"colour_scale",
       [](ViewState& v, const std::string& f, const Json& value) {
         if (!value.is_string() || !parseColourScale(value.get<std::string>(), &v.colour_scale))
           failView(f, "expected \"linear\", \"log\" or \"row\"");
       },
       [](const ViewState& v) -> Json { return colourScaleId(v.colour_scale); }},
      {"weights_range",
       [](ViewState& v, const std::string& f, const Json& value) {
         if (value != "fixed" && value != "data")
           failView(f, "expected \"fixed\" (0 to 1) or \"data\" (the map's own range)");
         v.weights_fixed = value == "fixed";
       },
       [](const ViewState& v) -> Json { return v.weights_fixed ? "fixed" : "data"; }},
      // (the app fills the locked ranges from the result on screen)
      {"lock_range", [](ViewState& v, const std::string& f, const Json& value) { v.lock_range = boolean(f, value); },
       nullptr, false},
      {"theme",
       [](ViewState& v, const std::string& f, const Json& value) {
         if (value != "light" && value != "dark") failView(f, "expected \"light\" or \"dark\"");
         v.light_theme = value == "light";
       },
       [](const ViewState& v) -> Json { return v.light_theme ? "light" : "dark"; }},
      countField("batch", &ViewState::batch, 0, 1 << 20),
      countField("head", &ViewState::head, -1, 1 << 20),
      countField("token", &ViewState::token, 0, 1 << 20),
      {"columns",
       [](ViewState& v, const std::string& f, const Json& value) {
         std::array<bool, kStageCount> show{};
         std::array<bool, kModuleMapCount> show_module{};
         for (const std::string& id : columnIds(value, f, "expected an array of map names")) {
           const GridColumn& g = *std::find_if(gridColumns().begin(), gridColumns().end(),
                                               [&](const GridColumn& c) { return c.id == id; });
           (g.per_head ? show[static_cast<std::size_t>(g.index)]
                       : show_module[static_cast<std::size_t>(g.index)]) = true;
         }
         v.show = show;
         v.show_module = show_module;
       },
       [](const ViewState& v) -> Json {
         Json columns = Json::array();
         for (const GridColumn& c : gridColumns())
           if (v.shows(c)) columns.push_back(c.id);
         return columns;
       }},
      {"tab",
       [](ViewState& v, const std::string& f, const Json& value) {
         if (!value.is_string() || !isMainTab(value.get<std::string>())) {
           std::string names;  // from the tabs' table: "parameters" (the Weights tab)
           for (const MainTab& t : mainTabs()) {
             std::string title = t.title;
             std::transform(title.begin(), title.end(), title.begin(),
                            [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
             names += std::string(names.empty()              ? ""
                                  : &t == &mainTabs().back() ? " or "
                                                             : ", ") +
                      "\"" + t.id + "\"" + (title == t.id ? "" : std::string(" (the ") + t.title + " tab)");
           }
           failView(f, "expected " + names);
         }
         v.tab = value.get<std::string>();
       },
       [](const ViewState& v) -> Json { return v.tab; }},
      countField("screenshot_scale", &ViewState::screenshot_scale, 1, 3),
      flagField("caption", &ViewState::caption),
      flagField("inspector", &ViewState::show_inspector),
      flagField("model_panel", &ViewState::show_model),
      flagField("inputs_panel", &ViewState::show_inputs),
      flagField("status_bar", &ViewState::show_status),
      flagField("statistics", &ViewState::show_statistics),
      flagField("presentation", &ViewState::presentation),
      // (a file opened never starts watching by itself)
      flagField("watch", &ViewState::watch, false),
      {"text_size",
       [](ViewState& v, const std::string& f, const Json& value) { v.text_size = textSize(f, value, v.text_size); },
       [](const ViewState& v) -> Json { return v.text_size; }},
      {"lines_stage",
       [](ViewState& v, const std::string& f, const Json& value) {
         if (value != "weights" && value != "dropped_weights")
           failView(f, "expected \"weights\" or \"dropped_weights\"");
         v.lines_stage = value.get<std::string>();
       },
       [](const ViewState& v) -> Json { return v.lines_stage; }},
      countField("lines_top_k", &ViewState::lines_top_k, 1, kLinesMaxTopK),
      {"lines_hidden_heads",
       [](ViewState& v, const std::string& f, const Json& value) {
         if (!value.is_array()) failView(f, "expected an array of 0-based head indices");
         std::vector<int> hidden;
         for (const auto& h : value) {
           const int i = integer(f, h, 0, 1 << 20);
           if (std::find(hidden.begin(), hidden.end(), i) == hidden.end()) hidden.push_back(i);
         }
         std::sort(hidden.begin(), hidden.end());
         v.lines_hidden_heads = hidden;
       },
       [](const ViewState& v) -> Json { return v.lines_hidden_heads; }},
      flagField("lines_isolate", &ViewState::lines_isolate),
      {"temperature",
       [](ViewState& v, const std::string& f, const Json& value) {
         if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0 ||
             value.get<double>() > kMaxTemperature)
           failView(f, "expected a number from 0 (greedy) to " + std::to_string(static_cast<int>(kMaxTemperature)));
         v.temperature = value.get<double>();
       },
       [](const ViewState& v) -> Json { return v.temperature; }},
      // the maps to lay the grid out for, as a lesson step's (docs/DESIGN.md §3.7 "Focus")
      {"focus",
       [](ViewState& v, const std::string& f, const Json& value) {
         v.highlight = columnIds(value, f, "expected an array of map names, [] for none");
       },
       nullptr},
      {"screenshot_dir",
       [](ViewState& v, const std::string& f, const Json& value) {
         if (!value.is_string()) failView(f, "expected a folder");
         v.screenshot_dir = value.get<std::string>();
       },
       nullptr, false},
  };
  return fields;
}

}  // namespace

std::vector<std::string> viewFieldNames() {
  std::vector<std::string> names;
  for (const ViewField& field : viewFields()) names.push_back(field.name);
  return names;
}

void setViewField(ViewState& v, const std::string& f, const nlohmann::json& value) {
  for (const ViewField& field : viewFields())
    if (f == field.name) return field.set(v, f, value);
  std::string names;
  for (const ViewField& field : viewFields()) names += (names.empty() ? "" : ", ") + std::string(field.name);
  failView(f, "unknown view field (one of " + names + ")");
}

nlohmann::json viewToJson(const ViewState& v) {
  nlohmann::json out = nlohmann::json::object();
  for (const ViewField& field : viewFields())
    if (field.get) out[field.name] = field.get(v);
  return out;
}

nlohmann::json savedView(const ViewState& v, const nlohmann::json& workspace_view) {
  nlohmann::json out = nlohmann::json::object();
  for (const ViewField& field : viewFields())
    if (field.get && field.in_file) out[field.name] = field.get(v);
  if (workspace_view.is_object() && workspace_view.contains("preset")) out["preset"] = workspace_view["preset"];
  return out;
}

ViewState viewFromJson(const nlohmann::json& j) {
  ViewState v;
  if (!j.is_object()) return v;
  for (const ViewField& field : viewFields())
    if (field.in_file && j.contains(field.name)) try {
        field.set(v, field.name, j[field.name]);
      } catch (const InputError&) {
        // A view is a convenience: what cannot be read keeps its default.
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
