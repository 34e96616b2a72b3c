// The left column while a trained model is open (docs/DESIGN.md §3.4 "Layers"), in place of the
// chapter's model and inputs panels: what the model is and the layer shown (drawModel), and the
// text it reads with its tokens and the next tokens it predicts at the selected token, at a
// temperature, with "append the top token" (drawText). Editors: they read the model session and
// push commands (text, select_layer, append_token, view temperature).
#pragma once
#include <imgui.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lm/model_pass.h"
#include "panels/panel.h"
#include "widgets/kept_text.h"

namespace attnscope {

class ModelTextPanel {
 public:
  // `compact`: the model's shape as the name's tooltip, the layer's explanation as the slider's, the
  // notes under the layer's row (the column is short: at 1280 × 800 and 175 % the panel took 40 % and
  // the next tokens were below the fold).
  void drawModel(const PanelContext& ctx, ImVec2 pos, ImVec2 size, bool compact = false);
  void drawText(const PanelContext& ctx, ImVec2 pos, ImVec2 size);
  // The Text panel hidden (presentation, F10): its field (where it fits), tokens and next tokens in
  // a column `size` of the Layers tab, beside the grid (LayersView::draw). Not with given maps: no
  // next tokens.
  void drawBeside(const PanelContext& ctx, ImVec2 size);
  void reset() { mirrored_version_ = ~std::uint64_t{0}; }
  // The field's text typed and not applied ("" when it shows the model's text), as of the last
  // drawText: the controller keeps it for the autosave (Controller::setModelDraft).
  const std::string& draft() const { return held_ ? text_ : kNone; }
  // drawModel's content, measured in the last frame: whole, and compact.
  float modelHeight() const { return model_h_; }
  float compactModelHeight() const { return model_compact_h_; }

 private:
  void drawGiven(const PanelContext& ctx, ImVec2 pos, ImVec2 size, bool compact);  // given maps: what, the layer, Close
  void tokenChips(const PanelContext& ctx, float height);  // the tokens; a click selects one
  void runText(const PanelContext& ctx);                   // a training run's: its probe, the next tokens
  // held: the field holds a text the model refused, which appending would replace: no appending
  // till it is fixed or given up (Back to the text shown).
  // field_hidden: in the column beside the Layers grid, without the field (no room for it).
  void nextTokens(const PanelContext& ctx, bool held = false, bool field_hidden = false);
  void mirror(const PanelContext& ctx);               // the field follows the model's text
  bool holdsText(const ModelSession& session) const;  // the field holds a text not the model's
  struct Held {  // heldText: the field's text not the model's, and what is said under the field
    bool held = false, refused = false;
    std::string note;                    // why it is not the model's
    std::string keep_label, back_label;  // keep: a too long text's head ("" for none)
    bool keep_own_line = false;          // keep above back, not beside it
    float height = 0;                    // the note's and the buttons' rows
  };
  Held heldText(const ModelSession& session);
  void drawHeld(const PanelContext& ctx, const Held& held);
  void textField(const PanelContext& ctx, float lines, bool hint_as_tooltip, bool whole_lines = false);
  const char* fieldHint() const;

  float model_h_ = 0, model_compact_h_ = 0;
  std::string text_;                                    // the field, as typed
  KeptField field_;                                     // … as ImGui edits it (an emoji kept)
  std::uint64_t mirrored_version_ = ~std::uint64_t{0};  // the session version the field shows
  // The text is shown wrapped, as a projector needs it (ImGui's multiline field does not wrap);
  // a click makes it the field, which goes back to the wrapped text when it loses the focus.
  bool editing_ = false;
  int sent_at_ = 0;  // the frame the field's text was last sent as a text command
  // A text held in the field (not the model's), with or without <|endoftext|>, in which opening:
  // why the model refuses it, "" if it does not (ModelSession::textRefusal).
  std::string refused_text_;
  bool refused_eot_ = false;
  std::uint64_t refused_lineage_ = 0;
  std::string refused_why_;
  std::vector<int> refused_head_;  // a too long text's first tokens the model reads (ModelSession::textHead)
  bool focus_field_ = false;  // the field takes the keyboard in the frame after the click
  bool held_ = false;         // the field holds a text that is not the model's (draft)
  int beside_lines_ = 1;      // the lines the text takes wrapped in the column beside the grid
  inline static const std::string kNone;
  // The opening (ModelSession::lineage) and the model's text the field last followed: a new opening
  // takes the text a restored session had typed and not applied (PanelContext::model_draft), a new
  // text of the model's replaces the field's.
  std::uint64_t mirrored_lineage_ = 0;
  std::string mirrored_text_;
  // The selected chip scrolled into the list's view for (session version, token): once per change,
  // so a user's own scrolling stays.
  std::uint64_t chips_version_ = ~std::uint64_t{0};
  int chips_token_ = -1;
  int reveal_frames_ = 0;  // frames left that scroll the list to the selected token
  float chips_h_ = 0;      // the list's height last frame
  float chip_row_y_ = -1;  // the selected chip's top in the list last frame
  ImGuiID chips_list_ = 0;  // that list's window (the Text panel's, or the column's beside the grid)
  // The next tokens for (snapshot serial, position, temperature), made once.
  std::vector<NextToken> next_;
  std::uint64_t next_serial_ = 0;
  int next_position_ = -1;
  std::uint64_t end_serial_ = ~std::uint64_t{0};  // the last token's most likely next (end_top_), of that result
  int end_top_ = 0;
  double next_temperature_ = -1;
};

}  // namespace attnscope
