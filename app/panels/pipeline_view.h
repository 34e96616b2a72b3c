// The pipeline: X → Q, K, V → scores → scaled → masked → softmax → dropout → context → concat →
// out_proj → output, left to right as small heatmaps with their shapes and the operation on each
// arrow. Click a step to enlarge it below; steps the variant lacks are greyed with the reason.
// A view: it draws the snapshot only.
#pragma once
#include <imgui.h>

#include <string>

#include "panels/panel.h"

namespace attnscope {

class PipelineView {
 public:
  void draw(const PanelContext& ctx);
  void reset() { enlarged_ = "weights"; }

 private:
  void drawSteps(const PanelContext& ctx, const Snapshot& snapshot, ImVec2 size);
  std::string enlarged_ = "weights";  // the step shown large below the row
  bool scroll_to_enlarged_ = false;   // a thumbnail was clicked: its enlarged map scrolls into view
};

}  // namespace attnscope
