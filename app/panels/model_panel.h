// The model panel: variant, d_out, num_heads, dropout, seed, training, qkv_bias, causal, scale,
// batch size and the execution path. Controls that do not apply to the variant are disabled and
// say why on hover. An editor: it reads the document and pushes `set`/`model`/`engine` commands.
#pragma once
#include <imgui.h>

#include <cstdint>
#include <random>

#include "panels/panel.h"

namespace attnscope {

class ModelPanel {
 public:
  ModelPanel();
  void draw(const PanelContext& ctx, ImVec2 pos, ImVec2 size);
  // The height its controls took in the last frame, padding included (0 before the first).
  float contentHeight() const { return content_h_; }

 private:
  float content_h_ = 0;
  std::mt19937 reroll_;  // picks seeds for "re-roll"
  std::uint32_t seed_typed_ = 0;  // the seed field while it is being typed into
  bool seed_active_ = false;
};

}  // namespace attnscope
