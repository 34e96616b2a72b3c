// The inputs panel: the T × d_in embedding table, every cell a drag/typed field that recomputes
// live; rename, add, remove and reorder tokens; change d_in; randomize; reset to the book's
// example; type a sentence. Below, the embedding vectors as arrows in 2-D/3-D (drag to rotate).
// An editor: it reads the document being edited and pushes commands.
#pragma once
#include <imgui.h>

#include <cstdint>
#include <string>

#include "panels/panel.h"

namespace attnscope {

class InputsPanel {
 public:
  void draw(const PanelContext& ctx, ImVec2 pos, ImVec2 size);
  void reset() { yaw_ = 0.6f, pitch_ = 0.35f; }  // another workspace: the plot's default angle

 private:
  void toolbar(const PanelContext& ctx);
  void table(const PanelContext& ctx, float height);
  void plot(const PanelContext& ctx, ImVec2 size);

  std::string sentence_ = "Your journey starts with one step";
  std::uint32_t seed_ = 123;          // for randomize, new rows and columns, sentence words
  float yaw_ = 0.6f, pitch_ = 0.35f;  // the 3-D plot's rotation
};

}  // namespace attnscope
