#include "panels/status_bar.h"

#include <imgui_internal.h>  // GetTopMostPopupModal

#include <algorithm>
#include <cfloat>
#include <string>
#include <vector>

#include "display/number_text.h"
#include "widgets/layout_dump.h"
#include "widgets/theme.h"

namespace attnscope {

namespace {
float paddingY() { return ImGui::GetStyle().FramePadding.y * 1.5f; }

// One fact of the status line; the line drops the least important ones (highest `drop_order`)
// that do not fit the window's width (a projector's 1280 px at 175 % text), never cutting one.
struct StatusPart {
  std::string text;
  int drop_order = 0;  // 0: always shown
};

// The parts joined by " · ", as many as fit `width`, the ones dropped last kept in their place.
std::string statusLine(std::vector<StatusPart> parts, float width) {
  const std::string sep = "  ·  ";
  const auto join = [&] {
    std::string line;
    for (const StatusPart& p : parts) line += (line.empty() ? "" : sep) + p.text;
    return line;
  };
  std::string line = join();
  while (ImGui::CalcTextSize(line.c_str()).x > width) {
    auto last = std::max_element(parts.begin(), parts.end(),
                                 [](const StatusPart& a, const StatusPart& b) { return a.drop_order < b.drop_order; });
    if (last == parts.end() || last->drop_order == 0) break;
    parts.erase(last);
    line = join();
  }
  return line;
}
}  // namespace

float StatusBar::height() { return ImGui::GetTextLineHeight() + 2 * paddingY(); }

void StatusBar::draw(const PanelContext& ctx, ImVec2 pos, ImVec2 size, bool statistics_hidden) {
  tileNextWindow(pos, size);
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(ImGui::GetStyle().WindowPadding.x, paddingY()));
  ImGui::Begin("##status", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                   kTiledWindow);
  ImGui::PopStyleVar();
  layout().panel("status", pos, ImVec2(pos.x + size.x, pos.y + size.y));
  if (const Snapshot* snap = ctx.snapshot.get(); snap && snap->model && snap->model->given) {
    const GivenAttention& g = *snap->model->given;  // maps as they came: what they are, no engine
    const std::vector<StatusPart> parts = {
        {"layer " + std::to_string(snap->layer + 1) + " of " + std::to_string(g.layers), 0},
        {"T " + std::to_string(g.tokens), 0},
        {"heads " + std::to_string(g.heads), 0},
        {"attention maps as they came (nothing recomputed)", 1},
        {"frame " + formatFixed(static_cast<float>(ctx.frame_ms), 1) + " ms", 6},
    };
    ImGui::TextUnformatted(statusLine(parts, ImGui::GetContentRegionAvail().x).c_str());
  } else if (snap) {
    const Workspace& in = *snap->inputs;
    const ModelConfig& m = in.model;
    const int threads = snap->exec.parallel ? resolveThreads(snap->exec.threads) : 1;
    std::vector<StatusPart> parts = {
        {"engine " + formatFixed(static_cast<float>(snap->milliseconds), 2) + " ms", 0},
        {"frame " + formatFixed(static_cast<float>(ctx.frame_ms), 1) + " ms", 6},
        {"T " + std::to_string(in.embeddings.rows()), 0},
        {"d_in " + std::to_string(in.embeddings.cols()), 3},
        {"d_out " + std::to_string(m.d_out), 2},
        {"heads " + std::to_string(headCount(m)), 0},
        {"batch " + std::to_string(m.batch_size), 4},
        {std::string(snap->exec.parallel ? "parallel, " : "serial, ") + std::to_string(threads) +
             (threads == 1 ? " thread" : " threads"),
         5},
    };
    // A trained model's layer says which it is: every view shows that layer.
    if (snap->model)
      parts.insert(parts.begin() + 2, {"layer " + std::to_string(snap->layer + 1) + " of " +
                                           std::to_string(snap->model->layers()),
                                       0});
    if (ctx.computing) parts.push_back({"computing…", 0});
    if (statistics_hidden) parts.push_back({"no room for the head statistics", 1});
    const std::string line = statusLine(std::move(parts), ImGui::GetContentRegionAvail().x);
    ImGui::TextUnformatted(line.c_str());
    // Tests: whether the bar says so (not the line: its frame time changes every frame, and a dump
    // that never holds still is never "settled").
    layout().state()["status_says_no_room"] = line.find("no room for the head statistics") != std::string::npos;
  } else {
    ImGui::TextUnformatted(ctx.waitingText());
  }
  layout().widget("status_text");
  const float text_end = ImGui::GetItemRectMax().x - pos.x;  // where the status line's text ends
  const Toast& toast = ctx.toast;
  if (!toast.text.empty() && ctx.now < toast.until) {
    // At the right, beside the status text when it fits there; a long one (at a projector's 1280 px,
    // a large text size) in a box just above the bar, wrapped: never over the status text. While the
    // window asks a question, in the box too: the question's dimming covers the bar (a refusal of
    // Ctrl+Q over "Unsaved changes" was dimmed there, unread).
    const float w = ImGui::CalcTextSize(toast.text.c_str()).x, gap = px(16);
    const float x = ImGui::GetWindowWidth() - ImGui::GetStyle().WindowPadding.x - w;
    if (x >= text_end + gap && (ImGui::GetTopMostPopupModal() == nullptr || ctx.capture.rendering)) {
      ImGui::SameLine(x);
      ImGui::PushStyleColor(ImGuiCol_Text, toast.error ? ImGui::ColorConvertU32ToFloat4(theme().selection)
                                                       : ImGui::GetStyleColorVec4(ImGuiCol_Text));
      ImGui::TextUnformatted(toast.text.c_str());
      ImGui::PopStyleColor();
      layout().widget("toast");
    } else {
      drawToast(ctx, ImVec2(pos.x + size.x, pos.y + px(8)), std::min(size.x, std::max(size.x * 0.6f, px(480))));
    }
  }
  ImGui::End();
}

void StatusBar::drawToast(const PanelContext& ctx, ImVec2 corner, float width) {
  const Toast& toast = ctx.toast;
  if (toast.text.empty() || ctx.now >= toast.until) return;
  // A screenshot shows the work, as it never shows a dialog: a box over the panels ("Opened …" at
  // 150 % and more) would sit on the slide. In the status bar a message stays, as it is shown.
  if (ctx.capture.rendering) return;
  // On the foreground: above every window, whichever was clicked last.
  ImDrawList* draw = ImGui::GetForegroundDrawList();
  ImFont* font = ImGui::GetFont();
  const float size = ImGui::GetFontSize(), pad = px(8);
  const float wrap = std::max(width - 4 * pad, px(100));
  const ImVec2 text = font->CalcTextSizeA(size, FLT_MAX, wrap, toast.text.c_str());
  const ImVec2 max(corner.x - pad, corner.y - pad);
  const ImVec2 min(max.x - text.x - 2 * pad, max.y - text.y - 2 * pad);
  draw->AddRectFilled(min, max, ImGui::GetColorU32(ImGuiCol_PopupBg), px(4));
  draw->AddRect(min, max, ImGui::GetColorU32(ImGuiCol_Border), px(4));
  draw->AddText(font, size, ImVec2(min.x + pad, min.y + pad),
                toast.error ? theme().selection : ImGui::GetColorU32(ImGuiCol_Text), toast.text.c_str(), nullptr, wrap);
  layout().panel("toast", min, max);
}

}  // namespace attnscope
