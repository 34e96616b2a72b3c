// What a screenshot or figure can show (docs/DESIGN.md §3.6): the panels and maps a CaptureSpec
// names, which file types hold which, and what a caption calls them. Headless: the rendering is
// shell/capture.h's; the views learn that a capture renders from PanelContext::capture.
#pragma once
#include <string>
#include <vector>

#include "engine/model_config.h"

namespace attnscope {

struct CaptureSpec {
  float scale = 1;         // 1, 2 or 3
  std::string panel;       // "" or "window"; model, inputs, heatmaps, pipeline, inspector, status; or a
                           // heatmap stage (weights, scores, …) of head `head`
  int head = 0;            // for a heatmap stage
  bool caption = false;    // a line with variant, sizes and seed under the image
  bool selection = false;  // keep the selected token's row and key outlined (--selection)
};

// Panel names and maps a CaptureSpec accepts (for messages and menus): the panels, the heatmap
// columns of the stage table, the 0/1 causal mask ("mask"), a figure of its own, and the module's
// maps (concat, out_proj, output: one per batch element, whatever the head).
// The panels a capture can show alone: the side panels, the main area's tabs (mainTabs), the head
// statistics and the status bar.
const std::vector<std::string>& panelNames();
const std::vector<std::string>& capturePanels();
// A map that can be captured alone: a head's heatmap column, the mask, or a module map.
bool isHeatmapStage(const std::string& panel);
// Why `path` cannot hold a capture of `panel` ("" if it can): a .png of anything; a .svg or .pdf
// of one map only; any other extension is refused by name.
std::string captureTargetError(const std::string& path, const std::string& panel);
// What a caption calls a panel: a map by its stage's title ("weights (softmax)", "weights ÷ row
// sum" when the model normalizes by the row sum), never its id; other panels by their names.
std::string captureSubject(const std::string& panel, const ModelConfig& model);

// How the frame being drawn is seen: on screen (all false) or by a capture. While a capture renders
// the views leave out what only a moment on screen means (the fading outlines of the cells an edit
// just changed); without its selection (neither CaptureSpec::selection nor the session's
// --selection) they leave the selected row and key unmarked too. A map captured alone keeps its own
// title (on screen one head's one map has it in the card's heading).
struct CaptureState {
  bool rendering = false;
  bool hides_selection = false;
  bool one_map = false;
};

}  // namespace attnscope
