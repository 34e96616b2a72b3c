// Screenshots for slides: the window, one panel, or one heatmap, at 1×, 2× or 3×. The UI is
// rendered again offscreen at k× its size with fonts rasterized at k× (crisp text, not an
// upscaled bitmap), cropped, optionally captioned, and written as a PNG that carries the
// workspace ("attnscope-workspace" text chunk).
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace attnscope {

struct CaptureSpec {
  float scale = 1;     // 1, 2 or 3
  std::string panel;   // "" or "window"; model, inputs, heatmaps, pipeline, inspector, status; or a
                       // heatmap stage (weights, scores, …) of head `head`
  int head = 0;        // for a heatmap stage
  bool caption = false;  // a line with variant, sizes and seed under the image
};

// Panel names and heatmap stages a CaptureSpec accepts (for messages and menus).
const std::vector<std::string>& capturePanels();
bool isHeatmapStage(const std::string& panel);

// What main provides: draw one UI frame for a display of the given size, with `caption_h`
// pixels kept free at the bottom for the caption, and rasterize fonts for a UI scale.
struct CaptureHooks {
  // NewFrame … Render; the caption goes in the strip of height caption_h at the bottom, from
  // caption_x, wrapped at caption_w (the crop's columns).
  std::function<void(float width, float height, float caption_h, float caption_x, float caption_w)> frame;
  std::function<void(float ui_scale)> set_scale;                          // fonts + theme
  float base_scale = 1;                                                   // the window's own scale
};

// Renders and writes `path`. Window size in pixels at 1×. Returns "" or the reason.
std::string capturePng(const CaptureSpec& spec, int width, int height, const CaptureHooks& hooks,
                       const std::string& path, const std::string& workspace_json);

}  // namespace attnscope
