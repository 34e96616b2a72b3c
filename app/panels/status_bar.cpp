#include "panels/status_bar.h"

#include "shell/layout_dump.h"
#include "shell/theme.h"

namespace attnscope {

void StatusBar::draw(const PanelContext& ctx, ImVec2 pos, ImVec2 size) {
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  ImGui::Begin("##status", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings);
  layout().panel("status", pos, ImVec2(pos.x + size.x, pos.y + size.y));
  if (const Snapshot* snap = ctx.snapshot.get()) {
    const Workspace& in = *snap->inputs;
    const ModelConfig& m = in.model;
    const int threads = snap->exec.parallel ? resolveThreads(snap->exec.threads) : 1;
    ImGui::Text("engine %.2f ms  ·  frame %.1f ms  ·  T %d  ·  d_in %d  ·  d_out %d  ·  heads %d  ·  batch %d  ·  %s, %d thread%s%s",
                snap->milliseconds, ctx.frame_ms, static_cast<int>(in.embeddings.rows()),
                static_cast<int>(in.embeddings.cols()), m.d_out, headCount(m), m.batch_size,
                snap->exec.parallel ? "OpenMP" : "serial", threads, threads == 1 ? "" : "s",
                ctx.computing ? "  ·  computing…" : "");
  } else {
    ImGui::TextUnformatted(ctx.computing ? "computing…" : "no result yet");
  }
  const Toast& toast = ctx.toast;
  if (!toast.text.empty() && ctx.now < toast.until) {
    const float w = ImGui::CalcTextSize(toast.text.c_str()).x;
    ImGui::SameLine(std::max(ImGui::GetWindowWidth() - w - 16, ImGui::GetCursorPosX() + 16));
    ImGui::PushStyleColor(ImGuiCol_Text, toast.error ? ImGui::ColorConvertU32ToFloat4(theme().selection)
                                                     : ImGui::GetStyleColorVec4(ImGuiCol_Text));
    ImGui::TextUnformatted(toast.text.c_str());
    ImGui::PopStyleColor();
    layout().widget("toast");
  }
  ImGui::End();
}

}  // namespace attnscope
