#include "shell/capture.h"

#include <backends/imgui_impl_opengl3.h>
#include <glad/gl.h>
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "engine/stages.h"
#include "formats/png_image.h"
#include "state/capture_targets.h"
#include "widgets/layout_dump.h"

namespace attnscope {

namespace {

// What a frame drew, as one number (FNV-1a over every vertex, index and command's clip rect and
// texture): two frames alike have settled.
std::uint64_t drawnHash(const ImDrawData* data) {
  std::uint64_t h = 1469598103934665603ull;
  const auto add = [&h](const void* bytes, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(bytes);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  for (int l = 0; data && l < data->CmdListsCount; ++l) {
    const ImDrawList* list = data->CmdLists[l];
    add(list->VtxBuffer.Data, static_cast<std::size_t>(list->VtxBuffer.Size) * sizeof(ImDrawVert));
    add(list->IdxBuffer.Data, static_cast<std::size_t>(list->IdxBuffer.Size) * sizeof(ImDrawIdx));
    for (const ImDrawCmd& cmd : list->CmdBuffer) {
      add(&cmd.ClipRect, sizeof(cmd.ClipRect));
      add(&cmd.TextureId, sizeof(cmd.TextureId));
    }
  }
  return h;
}

// An offscreen RGBA framebuffer; released when it goes out of scope.
struct Framebuffer {
  GLuint fbo = 0, color = 0;
  Framebuffer(int w, int h) {
    glGenFramebuffers(1, &fbo);
    glGenRenderbuffers(1, &color);
    glBindRenderbuffer(GL_RENDERBUFFER, color);
    glRenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, w, h);
    glBindFramebuffer(GL_FRAMEBUFFER, fbo);
    glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, color);
  }
  ~Framebuffer() {
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    glDeleteRenderbuffers(1, &color);
    glDeleteFramebuffers(1, &fbo);
  }
  bool complete() const { return glCheckFramebufferStatus(GL_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE; }
};

struct Rect {
  int x = 0, y = 0, w = 0, h = 0;
};

// A layout rectangle in framebuffer pixels, grown by `m` on every side, within the framebuffer.
Rect pixelRect(const nlohmann::json& r, float m, int fb_w, int fb_h) {
  const int x0 = std::clamp(static_cast<int>(std::floor(r["x"].get<float>() - m)), 0, fb_w);
  const int y0 = std::clamp(static_cast<int>(std::floor(r["y"].get<float>() - m)), 0, fb_h);
  const int x1 = std::clamp(static_cast<int>(std::ceil(r["x"].get<float>() + r["w"].get<float>() + m)), 0, fb_w);
  const int y1 = std::clamp(static_cast<int>(std::ceil(r["y"].get<float>() + r["h"].get<float>() + m)), 0, fb_h);
  return {x0, y0, x1 - x0, y1 - y0};
}

// Where `spec.panel` was drawn in the last frame, in framebuffer pixels, and the part of it that
// belongs to the panel (`clip`): a map's crop has a margin, and beside a map at the grid's edge
// that margin holds the main area's window border (a 1-px grey line down the left edge) or the
// panel next to it. The capture paints what lies outside `clip` in the background colour.
bool findRect(const CaptureSpec& spec, int fb_w, int fb_h, Rect* out, std::string* error, Rect* clip = nullptr) {
  const nlohmann::json& frame = layout().frame();
  nlohmann::json r;
  if (spec.panel.empty() || spec.panel == "window") {
    *out = {0, 0, fb_w, fb_h};
    if (clip) *clip = *out;
    return true;
  }
  if (isHeatmapStage(spec.panel)) {
    for (const auto& m : frame["heatmaps"])  // a head's map, or the module's (of every head)
      if (m.value("stage", "") == spec.panel && (m.value("module", false) || m.value("head", -1) == spec.head) &&
          m.value("in_view", true) && m.contains("tile"))
        r = m.contains("content") ? m["content"] : m["tile"];  // what it drew: no blank under the colorbar
    ModuleMap module;
    if (r.is_null() && parseModuleMap(spec.panel, &module)) {  // App::capture shows it whatever the columns
      *error = "no " + spec.panel + " map: this step has none (concat needs several heads, out_proj step 4b)";
      return false;
    }
    if (r.is_null()) {
      *error = "no " + spec.panel + " map for head " + std::to_string(spec.head + 1) +
               " in view (is the column shown, and does the model have that head?)";
      return false;
    }
  } else if (frame["panels"].contains(spec.panel)) {
    r = frame["panels"][spec.panel];
  } else {
    *error = "no panel '" + spec.panel + "' on screen";
    return false;
  }
  // A heatmap's tile gets a margin, so labels at its edges are not cut.
  const float m = isHeatmapStage(spec.panel) ? 8 * spec.scale : 0;
  *out = pixelRect(r, m, fb_w, fb_h);
  if (out->w <= 0 || out->h <= 0) {
    *error = "the panel '" + spec.panel + "' is empty";
    return false;
  }
  if (clip) {  // a map: only what the heatmap panel drew
    const bool in_grid = m > 0 && frame["panels"].contains("heatmaps");
    *clip = in_grid ? pixelRect(frame["panels"]["heatmaps"], 0, fb_w, fb_h) : *out;
  }
  return true;
}

}  // namespace

std::string capturePng(const CaptureSpec& spec, int width, int height, const CaptureHooks& hooks,
                       const std::string& path, const std::string& workspace_json) {
  const float k = spec.scale;
  if (!(k >= 1 && k <= 4)) return "--scale must be between 1 and 4";
  const int fb_w = static_cast<int>(std::lround(width * k));
  // One caption line under the window; two (wrapped) under a narrower panel or map.
  const int lines = spec.panel.empty() || spec.panel == "window" ? 1 : 3;
  const int caption_h = spec.caption ? static_cast<int>(std::lround((12 + 16 * lines) * k * hooks.base_scale)) : 0;
  const int fb_h = static_cast<int>(std::lround(height * k)) + caption_h;
  GLint max_size = 0;
  glGetIntegerv(GL_MAX_RENDERBUFFER_SIZE, &max_size);
  if (fb_w > max_size || fb_h > max_size)
    return "the image would be " + std::to_string(fb_w) + "×" + std::to_string(fb_h) + ", over this GPU's limit of " +
           std::to_string(max_size);

  hooks.set_scale(hooks.base_scale * k);
  std::vector<unsigned char> rgba(static_cast<std::size_t>(fb_w) * fb_h * 4);
  std::string error;
  Rect rect, clip;
  std::uint8_t background[3] = {0, 0, 0};
  {
    const CaptureState state{true, !spec.selection && !hooks.selection, isHeatmapStage(spec.panel)};
    Framebuffer target(fb_w, fb_h);
    if (!target.complete()) error = "cannot create an offscreen framebuffer";
    // Until two frames draw alike, at least three and at most kMostFrames: tables and wrapped text
    // settle after the first, the caption follows the crop found in the frame before, and a map's
    // numbers follow its fit of the frame before (three frames caught a trained model's 9 × 9 map
    // bare under "numbers rounded to 2 decimals", settled with its numbers five frames later).
    constexpr int kMostFrames = 16;
    Rect crop{0, 0, fb_w, fb_h};
    std::uint64_t drawn = 0;
    for (int i = 0; i < kMostFrames && error.empty(); ++i) {
      hooks.frame({static_cast<float>(fb_w), static_cast<float>(fb_h), static_cast<float>(caption_h),
                   static_cast<float>(crop.x), static_cast<float>(crop.w), state});
      const std::uint64_t now = drawnHash(ImGui::GetDrawData());
      const bool settled = i >= 2 && now == drawn;
      drawn = now;
      std::string ignored;
      findRect(spec, fb_w, fb_h - caption_h, &crop, &ignored);
      glBindFramebuffer(GL_FRAMEBUFFER, target.fbo);
      glViewport(0, 0, fb_w, fb_h);
      const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
      glClearColor(bg.x, bg.y, bg.z, 1);
      glClear(GL_COLOR_BUFFER_BIT);
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
      const float channels[3] = {bg.x, bg.y, bg.z};
      for (int c = 0; c < 3; ++c)
        background[c] = static_cast<std::uint8_t>(std::lround(std::clamp(channels[c], 0.0f, 1.0f) * 255));
      if (settled) break;
      if (i == kMostFrames - 1)  // a layout that changes every frame: a bug, said for the tests to catch
        std::fprintf(stderr,
                     "attnscope: layout error: the window did not hold still over %d frames; %s shows the last\n",
                     kMostFrames, path.c_str());
    }
    if (error.empty() && findRect(spec, fb_w, fb_h - caption_h, &rect, &error, &clip)) {
      glPixelStorei(GL_PACK_ALIGNMENT, 1);
      glReadPixels(0, 0, fb_w, fb_h, GL_RGBA, GL_UNSIGNED_BYTE, rgba.data());
    }
  }
  hooks.set_scale(hooks.base_scale);
  if (!error.empty()) return error;

  // The caption strip as tall as its text and a margin (it was sized for the most lines it may wrap into).
  int strip_h = caption_h;
  if (caption_h > 0 && layout().frame()["widgets"].contains("caption_text")) {
    const nlohmann::json& text = layout().frame()["widgets"]["caption_text"];
    const float bottom = text["y"].get<float>() + text["h"].get<float>() - static_cast<float>(fb_h - caption_h);
    strip_h = std::clamp(static_cast<int>(std::ceil(bottom + 8 * k * hooks.base_scale)), 1, caption_h);
  }
  // Crop (GL rows start at the bottom), drop alpha, and append the caption strip.
  const int out_h = rect.h + strip_h;
  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(rect.w) * out_h * 3);
  auto copyRow = [&](int src_y_top, int dst_y) {
    const unsigned char* src = rgba.data() + (static_cast<std::size_t>(fb_h - 1 - src_y_top) * fb_w + rect.x) * 4;
    std::uint8_t* dst = rgb.data() + static_cast<std::size_t>(dst_y) * rect.w * 3;
    for (int x = 0; x < rect.w; ++x) std::copy(src + x * 4, src + x * 4 + 3, dst + x * 3);
  };
  for (int y = 0; y < rect.h; ++y) {
    copyRow(rect.y + y, y);
    const int fy = rect.y + y;
    for (int x = 0; x < rect.w; ++x) {  // the margin beyond the panel: background, not its neighbours
      const int fx = rect.x + x;
      if (fx >= clip.x && fx < clip.x + clip.w && fy >= clip.y && fy < clip.y + clip.h) continue;
      std::copy(background, background + 3, rgb.data() + (static_cast<std::size_t>(y) * rect.w + x) * 3);
    }
  }
  for (int y = 0; y < strip_h; ++y) copyRow(fb_h - caption_h + y, rect.h + y);
  return writePng(path, rect.w, out_h, rgb, kWorkspaceChunk, workspace_json);
}

}  // namespace attnscope
