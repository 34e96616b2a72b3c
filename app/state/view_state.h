// ViewState: what the window shows and how — selection, head, colours, columns, theme. The app's
// own state, saved in a workspace's "view"; never part of the computation.
#pragma once
#include <array>
#include <nlohmann/json.hpp>
#include <string>

#include "display/colormap.h"
#include "engine/stages.h"

namespace attnscope {

struct ViewState {
  Colormap colormap = Colormap::Viridis;  // for maps without negative values
  bool diverging_for_signed = true;       // maps with negative values: coolwarm centred on 0
  bool shared_scale = false;              // one colour range per stage across all heads
  bool light_theme = false;               // light (slides, print) or dark
  int batch = 0;                          // batch element shown
  int head = -1;                          // head shown; −1 = all heads
  int token = 1;                          // selected query token: x² "journey", as the notebook
  int key = -1;                           // key column picked in the inspector; −1 = none
  std::array<bool, kStageCount> show = defaultColumns();  // heatmap columns, by Stage
  std::string screenshot_dir;             // where F12 saves; empty = ~/Pictures/attnscope
  int screenshot_scale = 1;               // F12 renders at 1×, 2× or 3×
  bool caption = false;                   // F12 adds a caption line
  std::string tab = "heatmaps";           // the main area's view: "heatmaps" or "pipeline"
  bool show_inspector = true;             // the inspector column on the right

  // Every heatmap stage but context.
  static std::array<bool, kStageCount> defaultColumns();
};

nlohmann::json viewToJson(const ViewState& v);
// Reads what it understands of a workspace's "view"; anything else keeps its default.
ViewState viewFromJson(const nlohmann::json& j);
// Sets one field by its JSON name ("theme": "light", "columns": ["weights"], …), as the "view"
// command does; throws InputError naming the field. The names are those of viewToJson.
void setViewField(ViewState& v, const std::string& field, const nlohmann::json& value);

}  // namespace attnscope
