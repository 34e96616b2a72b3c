#include "panels/panel.h"

#include <imgui.h>

#include "widgets/layout_dump.h"

namespace attnscope {

const char* PanelContext::waitingText() const { return computing ? "computing…" : "no result yet"; }

const Snapshot* beginMainTab(const PanelContext& ctx, const char* panel) {
  // The panel is the whole main window, tab bar and padding included (as captures crop it).
  const ImVec2 wp = ImGui::GetWindowPos(), ws = ImGui::GetWindowSize();
  layout().panel(panel, wp, ImVec2(wp.x + ws.x, wp.y + ws.y));
  if (!ctx.snapshot) ImGui::TextUnformatted(ctx.waitingText());
  return ctx.snapshot.get();
}

}  // namespace attnscope
