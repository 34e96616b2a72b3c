// ViewState: what the window shows and how — selection, head, colours, columns, theme. The app's
// own state, saved in a workspace's "view"; never part of the computation.
#pragma once
#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "display/colormap.h"
#include "display/map_look.h"
#include "engine/stages.h"

namespace attnscope {

// A column of the heatmap grid: a stage of every head, or a map of the whole module.
struct GridColumn {
  const char* id;     // "weights", "output": the view's "columns"
  const char* title;  // in menus
  const char* label;  // its toggle in the grid's header
  bool per_head;      // a Stage (stageTable) or a ModuleMap (moduleMapTable)
  int index;          // which Stage or ModuleMap
};
// The tabs of the main area, in their order: the view's "tab" is one of the ids.
// What a tab shows decides when it is there: a trained model's layers only while one is open, the
// chapter's editable parameters only while none is (a model's are read only); attention maps given
// as they are (no model to run, no stages but the weights) have the layers alone.
enum class TabFor { Both, Model, Chapter, Always };
enum class Showing { Chapter, Model, GivenMaps };  // what the views show now
struct MainTab {
  const char* id;     // "heatmaps": the view's tab, --panel, the layout dump's "tab_heatmaps"
  const char* title;  // on the tab
  TabFor shown_for = TabFor::Both;
  bool in_lessons = true;  // shown while a lesson is open (false: only while the lesson trains a run)
  bool shown(Showing now) const {
    if (shown_for == TabFor::Always) return true;
    if (now == Showing::GivenMaps) return shown_for == TabFor::Model;
    return shown_for == TabFor::Both || (shown_for == TabFor::Model) == (now == Showing::Model);
  }
};
const std::array<MainTab, 7>& mainTabs();
bool isMainTab(const std::string& id);
// Whether tab `id` is there (MainTab::shown); false for no tab.
bool mainTabShown(const std::string& id, Showing now);

// The heads' stages in table order, then the module's maps.
const std::vector<GridColumn>& gridColumns();

struct ViewState {
  Colormap colormap = Colormap::Viridis;           // for maps without negative values
  bool diverging_for_signed = true;                // maps with negative values: coolwarm centred on 0
  bool shared_scale = false;                       // one colour range per stage across all heads
  ColourScale colour_scale = ColourScale::Linear;  // linear, log (maps ≥ 0) or per row
  // The attention weights on their own range (false), or on the fixed range of a probability,
  // 0 to 1 (after dropout 0 to 1/(1−p)): nearly uniform weights (0.045–0.074) then look weak, as
  // they are, not like strong attention. A lesson's default (LessonPanel::begin).
  bool weights_fixed = false;
  bool lock_range = false;  // keep the colour ranges of the moment it was locked;
                            // not saved (the ranges belong to this session's results)
  std::vector<std::array<ValueRange, kStageCount>> locked_heads;  // … per head and stage then
  std::array<ValueRange, kModuleMapCount> locked_module{};        // … and of the module's maps
  bool light_theme = false;                                       // light (slides, print) or dark
  int batch = 0;                                                  // batch element shown
  int head = -1;                                                  // head shown; −1 = all heads
  int token = 1;                                          // selected query token: x² "journey", as the notebook
  int key = -1;                                           // key column picked in the inspector; −1 = none
  std::array<bool, kStageCount> show = defaultColumns();  // heatmap columns, by Stage
  std::array<bool, kModuleMapCount> show_module = defaultModuleColumns();  // … by ModuleMap
  std::string screenshot_dir;    // where F12 saves; empty = ~/Pictures/attnscope
  int screenshot_scale = 1;      // F12 renders at 1×, 2× or 3×
  bool caption = false;          // F12 adds a caption line
  std::string tab = "heatmaps";  // the main area's view: "heatmaps", "pipeline", "lines" or "parameters" (Weights)
  // The Lines view (docs/DESIGN.md §3.4): which stage its lines show ("weights" or
  // "dropped_weights"), how many keys per query above kLinesAllKeysUpTo tokens, the heads switched
  // off (0-based), and whether only the selected query token's lines are drawn.
  std::string lines_stage = "weights";
  int lines_top_k = 5;
  std::vector<int> lines_hidden_heads;
  bool lines_isolate = false;
  // A trained model's next tokens: softmax(logits / temperature); 0 is greedy (the top token 1).
  double temperature = 1.0;
  bool show_inspector = true;          // the inspector column on the right
  bool show_model = true;              // the model panel (left, top)
  bool show_inputs = true;             // the inputs panel (left, below the model)
  bool show_status = true;             // the status bar at the bottom
  bool show_statistics = true;         // the head statistics panel under the main area
  bool presentation = false;           // hides the side panels at once (model, inputs, inspector)
  bool watch = false;                  // reload the workspace's file, or the model's, when another program rewrites it
                                       // and the head statistics: the maps as large as they get
  int text_size = 100;                 // text and UI size in percent (100–250), for projectors; figures too
  std::vector<std::string> highlight;  // maps a lesson step (or the view's `focus`) is about (ids); the others dimmed.
                                       // Empty: none dimmed. The lesson's, never saved in a workspace

  // The tables' `shown` columns: the maps from the scores to the dropped weights.
  static std::array<bool, kStageCount> defaultColumns();
  static std::array<bool, kModuleMapCount> defaultModuleColumns();
  bool shows(const GridColumn& c) const {
    return c.per_head ? show[static_cast<std::size_t>(c.index)] : show_module[static_cast<std::size_t>(c.index)];
  }
  // What is on screen once `presentation` has had its say.
  bool modelShown() const { return show_model && !presentation; }
  bool inputsShown() const { return show_inputs && !presentation; }
  bool inspectorShown() const { return show_inspector && !presentation; }
  bool statisticsShown() const { return show_statistics && !presentation; }
  float textScale() const { return static_cast<float>(text_size) / 100.0f; }
};

// Up to this many tokens the Lines view draws every key of every query; above, the top k.
constexpr int kLinesAllKeysUpTo = 48;
// The Lines view's rows are at least this tall (pixels at 100 % text): below it the lists scroll.
constexpr float kLeastLinesPitch = 4;
constexpr int kLinesMaxTopK = 64;
constexpr double kMaxTemperature = 2.0;
bool linesHeadHidden(const ViewState& v, int head);

// The text sizes the View menu and Ctrl +/− step through, in percent.
const std::array<int, 6>& textSizeSteps();
constexpr int kMinTextSize = 100, kMaxTextSize = 250;
// The next step above (direction +1) or below (−1) `percent`, within the bounds.
int stepTextSize(int percent, int direction);

nlohmann::json viewToJson(const ViewState& v);
// The "view" a workspace is saved with (save, autosave, a screenshot's workspace): v's fields, and
// what the workspace's own view holds that ViewState does not — the preset's note (`preset`), which
// describes the preset until the first edit drops it (Document), and must survive a save.
nlohmann::json savedView(const ViewState& v, const nlohmann::json& workspace_view);
// The "columns" value of v with column `id` switched on or off (for the "view" command).
nlohmann::json columnsWith(const ViewState& v, const std::string& id, bool on);
nlohmann::json columnsWith(const ViewState& v, const std::vector<std::string>& ids, bool on);
// Reads what it understands of a workspace's "view"; anything else keeps its default.
ViewState viewFromJson(const nlohmann::json& j);
// Sets one field by its JSON name ("theme": "light", "columns": ["weights"], …), as the "view"
// command does; throws InputError naming the field. The names are viewFieldNames(): viewToJson's,
// and a lesson's focus, the range lock and the screenshot folder, which it does not write.
void setViewField(ViewState& v, const std::string& field, const nlohmann::json& value);
std::vector<std::string> viewFieldNames();  // every field the `view` command sets, in one table's order
// The view's colour choices, as every map's look takes them (display/map_look.h).
LookChoices lookChoices(const ViewState& v);

}  // namespace attnscope
