#include "panels/panel.h"

#include <imgui.h>

#include <string>

#include "widgets/layout_dump.h"
#include "widgets/theme.h"

namespace attnscope {

const char* PanelContext::waitingText() const { return computing ? "computing…" : "no result yet"; }

void drawWaiting(const PanelContext& ctx) {
  if (ctx.engine_error.empty()) {
    ImGui::TextUnformatted(ctx.waitingText());
    return;
  }
  ImGui::PushStyleColor(ImGuiCol_Text, theme().selection);
  ImGui::TextWrapped("Not computed: %s", ctx.engine_error.c_str());
  ImGui::PopStyleColor();
  layout().widget("engine_error_said");
}

void drawMapsMissing(const PanelContext& ctx, int head) {
  const std::string h = std::to_string(head + 1);
  const std::string said = ctx.computing              ? "computing head " + h + "…"
                           : ctx.engine_error.empty() ? "Head " + h + "'s maps were not computed."
                                                      : "Head " + h + "'s maps were not computed: " + ctx.engine_error;
  layout().state()["maps_missing"].push_back({{"head", head + 1}, {"said", said}});  // tests: what each view said
  if (ctx.computing) {
    ImGui::TextDisabled("%s", said.c_str());
    return;
  }
  ImGui::PushStyleColor(ImGuiCol_Text, theme().selection);
  ImGui::TextWrapped("%s", said.c_str());
  ImGui::PopStyleColor();
  layout().widget("maps_not_computed");
}

const Snapshot* beginMainTab(const PanelContext& ctx, const char* panel) {
  // The panel is the whole main window, tab bar and padding included (as captures crop it).
  const ImVec2 wp = ImGui::GetWindowPos(), ws = ImGui::GetWindowSize();
  layout().panel(panel, wp, ImVec2(wp.x + ws.x, wp.y + ws.y));
  if (!ctx.snapshot) drawWaiting(ctx);
  return ctx.snapshot.get();
}

void tileNextWindow(ImVec2 pos, ImVec2 size) {
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  ImGui::SetNextWindowBgAlpha(0);  // not ImGuiWindowFlags_NoBackground: that drops the borders too
}

void beginPanelWindow(const char* title, const char* id, ImVec2 pos, ImVec2 size, ImGuiWindowFlags flags) {
  tileNextWindow(pos, size);
  ImGui::Begin(title, nullptr, flags | kTiledWindow);
  layout().panel(id, pos, ImVec2(pos.x + size.x, pos.y + size.y));
}

}  // namespace attnscope
