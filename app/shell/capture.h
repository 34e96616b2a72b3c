// Screenshots for slides: the window, one panel, or one heatmap, at 1×, 2× or 3×. The UI is
// rendered again offscreen at k× its size with fonts rasterized at k× (crisp text, not an
// upscaled bitmap), cropped, optionally captioned, and written as a PNG that carries the
// workspace ("attnscope-workspace" text chunk). (A path ending in .svg or .pdf asks for a vector
// figure of one map instead: the App draws it from the data, display/vector_figure.h.)
// Figures are clean: no selection outline unless asked for, nothing of the neighbouring panels.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "engine/model_config.h"
#include "state/capture_targets.h"

namespace attnscope {

// One frame a capture renders offscreen.
struct CaptureFrame {
  float width = 0, height = 0;                        // the offscreen display, pixels
  float caption_h = 0, caption_x = 0, caption_w = 0;  // the caption's strip at the bottom
  CaptureState state;
};

// What the App provides: draw one UI frame for a display of the given size, with `caption_h`
// pixels kept free at the bottom for the caption, and rasterize fonts for a UI scale.
struct CaptureHooks {
  // NewFrame … Render; the caption goes in the strip of height caption_h at the bottom, from
  // caption_x, wrapped at caption_w (the crop's columns).
  std::function<void(const CaptureFrame& frame)> frame;
  std::function<void(float ui_scale)> set_scale;  // fonts + theme
  float base_scale = 1;                           // the window's own scale
  bool selection = false;  // the session's --selection: every capture keeps the selection outlined
};

// Renders and writes the PNG `path`, a target captureTargetError accepted (App::capture checks it).
// Window size in pixels at 1×. Returns "" or the reason.
std::string capturePng(const CaptureSpec& spec, int width, int height, const CaptureHooks& hooks,
                       const std::string& path, const std::string& workspace_json);

}  // namespace attnscope
