// The inputs panel: the T × d_in embedding table, every cell a drag/typed field that recomputes
// live; rename, add, remove and reorder tokens; change d_in; randomize; reset to the book's
// example; type a sentence. Below, the embedding vectors as arrows in 2-D/3-D (drag to rotate).
// An editor: it reads the document being edited and pushes commands.
#pragma once
#include <imgui.h>

#include <cstdint>
#include <string>
#include <vector>

#include "panels/panel.h"
#include "widgets/kept_text.h"

namespace attnscope {

class InputsPanel {
 public:
  void draw(const PanelContext& ctx, ImVec2 pos, ImVec2 size);
  // Another workspace: the plot's default angle, and the sentence field shows its tokens.
  void reset() {
    yaw_ = 0.6f, pitch_ = 0.35f;
    mirrored_ = sentence_, mirrored_tokens_.clear(), mirrored_version_ = ~std::uint64_t{0};
  }

 private:
  void toolbar(const PanelContext& ctx);
  void mirrorTokens(const PanelContext& ctx);
  void table(const PanelContext& ctx, float height);
  void plot(const PanelContext& ctx, ImVec2 size);

  // The sentence field shows the workspace's tokens, one space apart ("Your journey starts with
  // one step" for the book's example; empty, with its hint, when they are too many to read as a
  // sentence: GPT-2's t1 … t1024), and follows them when they change, unless it holds words the
  // user typed and has not made into tokens yet (those stay until "make tokens" or another workspace).
  std::string sentence_;
  KeptField sentence_field_;                            // … as ImGui edits it (an emoji kept)
  std::vector<KeptField> name_fields_;                  // the token names' fields, likewise
  std::string mirrored_;                                // what the field last showed of the tokens
  std::vector<std::string> mirrored_tokens_;            // the tokens it showed
  std::uint64_t mirrored_version_ = ~std::uint64_t{0};  // the document version last looked at
  float values_lo_ = 0, values_hi_ = 0;  // the embeddings' range at that version: the value columns' width
  int missing_glyphs_ = 0;               // characters of the tokens the font cannot draw (shown as ?)
  std::uint32_t seed_ = 123;             // for randomize, new rows and columns, sentence words
  float yaw_ = 0.6f, pitch_ = 0.35f;     // the 3-D plot's rotation
};

}  // namespace attnscope
