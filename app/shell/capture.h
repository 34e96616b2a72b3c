// Screenshots for slides: the window, one panel, or one heatmap, at 1×, 2× or 3×. The UI is
// rendered again offscreen at k× its size with fonts rasterized at k× (crisp text, not an
// upscaled bitmap), cropped, optionally captioned, and written as a PNG that carries the
// workspace ("attnscope-workspace" text chunk). A path ending in .svg or .pdf asks for a vector
// figure of one map instead (display/vector_figure.h), drawn by the hook main provides.
// Figures are clean: no selection outline unless asked for, nothing of the neighbouring panels.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "engine/model_config.h"

namespace attnscope {

struct CaptureSpec {
  float scale = 1;     // 1, 2 or 3
  std::string panel;   // "" or "window"; model, inputs, heatmaps, pipeline, inspector, status; or a
                       // heatmap stage (weights, scores, …) of head `head`
  int head = 0;        // for a heatmap stage
  bool caption = false;  // a line with variant, sizes and seed under the image
  bool selection = false;  // keep the selected token's row and key outlined (--selection)
};

// Panel names and maps a CaptureSpec accepts (for messages and menus): the panels, the heatmap
// columns of the stage table, the 0/1 causal mask ("mask"), a figure of its own, and the module's
// maps (concat, out_proj, output: one per batch element, whatever the head).
const std::vector<std::string>& capturePanels();
// A map that can be captured alone: a head's heatmap column, the mask, or a module map.
bool isHeatmapStage(const std::string& panel);
// Why `path` cannot hold a capture of `panel` ("" if it can): a .png of anything; a .svg or .pdf
// of one map only; any other extension is refused by name.
std::string captureTargetError(const std::string& path, const std::string& panel);
// True while a capture renders without its selection (neither CaptureSpec::selection nor
// CaptureHooks::selection): the views leave the selected row and key unmarked.
bool captureHidesSelection();
// True while any capture renders: the views leave out what only a moment on screen means (the
// fading outlines of the cells an edit just changed).
bool captureRendering();
// What a caption calls a panel: a map by its stage's title ("weights (softmax)", "weights ÷ row
// sum" when the model normalizes by the row sum), never its id; other panels by their names.
std::string captureSubject(const std::string& panel, const ModelConfig& model);

// What main provides: draw one UI frame for a display of the given size, with `caption_h`
// pixels kept free at the bottom for the caption, and rasterize fonts for a UI scale.
struct CaptureHooks {
  // NewFrame … Render; the caption goes in the strip of height caption_h at the bottom, from
  // caption_x, wrapped at caption_w (the crop's columns).
  std::function<void(float width, float height, float caption_h, float caption_x, float caption_w)> frame;
  std::function<void(float ui_scale)> set_scale;                          // fonts + theme
  float base_scale = 1;                                                   // the window's own scale
  bool selection = false;  // the session's --selection: every capture keeps the selection outlined
  // Writes the map `spec` names as an SVG or PDF figure at `path`; "" or the reason.
  std::function<std::string(const CaptureSpec& spec, const std::string& path)> vector_figure;
};

// Renders and writes `path`: a PNG, or for .svg and .pdf the vector figure of one map (through
// hooks.vector_figure; nothing is rendered). Window size in pixels at 1×. Returns "" or the reason.
std::string capturePng(const CaptureSpec& spec, int width, int height, const CaptureHooks& hooks,
                       const std::string& path, const std::string& workspace_json);

}  // namespace attnscope
