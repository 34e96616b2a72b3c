#include "panels/status_bar.h"

#include "shell/layout_dump.h"
#include "shell/theme.h"

namespace attnscope {

void drawStatusBar(AppState& app, ImVec2 pos, ImVec2 size, double now) {
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  ImGui::Begin("##status", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings);
  layout().panel("status", pos, ImVec2(pos.x + size.x, pos.y + size.y));
  const ModelConfig& m = app.workspace.model;
  const int threads = app.exec.parallel ? resolveThreads(app.exec.threads) : 1;
  ImGui::Text("engine %.2f ms  ·  frame %.1f ms  ·  T %d  ·  d_in %d  ·  d_out %d  ·  heads %d  ·  batch %d  ·  %s, %d thread%s",
              app.engine_ms, 1000.0f / ImGui::GetIO().Framerate, static_cast<int>(app.workspace.embeddings.rows()),
              static_cast<int>(app.workspace.embeddings.cols()), m.d_out, headCount(m), m.batch_size,
              app.exec.parallel ? "OpenMP" : "serial", threads, threads == 1 ? "" : "s");
  if (!app.toast.empty() && now < app.toast_until) {
    const float w = ImGui::CalcTextSize(app.toast.c_str()).x;
    ImGui::SameLine(std::max(ImGui::GetWindowWidth() - w - 16, ImGui::GetCursorPosX() + 16));
    ImGui::PushStyleColor(ImGuiCol_Text, app.toast_is_error ? ImGui::ColorConvertU32ToFloat4(theme().selection)
                                                            : ImGui::GetStyleColorVec4(ImGuiCol_Text));
    ImGui::TextUnformatted(app.toast.c_str());
    ImGui::PopStyleColor();
    layout().widget("toast");
  }
  ImGui::End();
}

}  // namespace attnscope
