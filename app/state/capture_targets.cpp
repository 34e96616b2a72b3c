#include "state/capture_targets.h"

#include <algorithm>

#include "display/vector_figure.h"
#include "engine/stages.h"
#include "state/view_state.h"

namespace attnscope {

namespace {

// A stage that can be one map's figure: a heatmap column, or the 0/1 causal mask, which the grid
// shows only for its figure.
bool figureStage(const StageInfo& s) { return s.heatmap || s.stage == Stage::Mask; }

// The maps that can be figures, by id: a head's (the stage table), then the module's.
const std::vector<std::string>& figureMaps() {
  static const std::vector<std::string> maps = [] {
    std::vector<std::string> m;
    for (const StageInfo& s : stageTable())
      if (figureStage(s)) m.push_back(s.id);
    for (const ModuleMapInfo& info : moduleMapTable()) m.push_back(info.id);
    return m;
  }();
  return maps;
}

}  // namespace

const std::vector<std::string>& panelNames() {
  static const std::vector<std::string> panels = [] {
    std::vector<std::string> p = {"model", "inputs"};
    for (const MainTab& tab : mainTabs()) p.push_back(tab.id);
    for (const char* side : {"inspector", "statistics", "status"}) p.push_back(side);
    return p;
  }();
  return panels;
}

const std::vector<std::string>& capturePanels() {
  static const std::vector<std::string> panels = [] {  // the window, the panels, then every map
    std::vector<std::string> p = {"window"};
    p.insert(p.end(), panelNames().begin(), panelNames().end());
    for (const std::string& m : figureMaps()) p.push_back(m);
    return p;
  }();
  return panels;
}

bool isHeatmapStage(const std::string& panel) {
  return std::find(figureMaps().begin(), figureMaps().end(), panel) != figureMaps().end();
}

std::string captureSubject(const std::string& panel, const ModelConfig& model) {
  Stage s;
  ModuleMap m;
  if (parseModuleMap(panel, &m)) return moduleMapInfo(m).title;
  if (!parseStage(panel, &s)) return panel.empty() ? "window" : panel;
  if (s == Stage::Weights && model.normalization == Normalization::Sum) return "weights ÷ row sum";
  return stageInfo(s).title;
}

std::string captureTargetError(const std::string& path, const std::string& panel) {
  FigureFormat format;
  if (!figureFormatOf(path, &format)) {
    const std::string name = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
    const std::size_t dot = name.find_last_of('.');
    const std::string kind = dot == std::string::npos ? "has no extension" : "is a '" + name.substr(dot) + "' file";
    return path + " " + kind + ": a screenshot is .png, a figure of one map .png, .svg or .pdf";
  }
  if (format == FigureFormat::Png || isHeatmapStage(panel) || panel == "lines") return "";
  std::string maps;
  for (const std::string& m : figureMaps()) maps += (maps.empty() ? "" : ", ") + m;
  return "an SVG or PDF figure shows one map (panel " + maps + ") or the lines (panel lines), not '" +
         (panel.empty() ? "window" : panel) + "': save that as .png";
}

}  // namespace attnscope
