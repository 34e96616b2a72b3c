// The model panel: variant, d_out, num_heads, dropout (and whose masks: torch with or without MKL),
// seed, training, qkv_bias, causal, scale, batch size, the generator as notebook cells leave it
// (draws before the module, a seed before the forward) and the execution path. Controls that do not apply to the
// variant are disabled and say why on hover. An editor: it reads the document and pushes `set`/`model`/`engine`
// commands.
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
  void generatorSection(const PanelContext& ctx, const ModelConfig& m);

  float content_h_ = 0;
  std::mt19937 reroll_;  // picks seeds for "re-roll"
  // A number field while it is being typed into: it applies on Enter or when focus leaves.
  struct TypedField {
    std::int64_t typed = 0;
    bool active = false;
  };
  TypedField seed_, dropout_seed_, draws_before_;
};

}  // namespace attnscope
