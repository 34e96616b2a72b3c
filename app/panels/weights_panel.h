// The Weights tab (docs/DESIGN.md §3.4): the module's parameters — W_query,
// W_key, W_value (per head for the wrapper), their biases and out_proj — under their state_dict
// names and in torch's layouts, each as a map and as a table of numbers that edit like the
// embeddings (drag, double-click to type, undo). Edited tensors become the workspace's own
// "parameters"; "Back to the seeded initialization" removes them. An editor: it reads the
// document (the values as they stand: the user's over the seeded draw) and pushes commands.
#pragma once
#include <imgui.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "display/colormap.h"
#include "engine/named_tensor.h"
#include "panels/panel.h"

namespace attnscope {

class WeightsPanel {
 public:
  void draw(const PanelContext& ctx);  // in the main area's tab, below the tab bar
  void reset() { version_ = 0; }       // another workspace

 private:
  // Tensor `index`: its map and its table, `width` wide.
  void card(const PanelContext& ctx, std::size_t index, float width);
  void refresh(const Document& doc);  // the values of the document's version

  std::uint64_t version_ = 0;  // the document version `tensors_` are of
  // Every parameter, state_dict order, as they stand; shared with the colouring thread, which
  // colours the large maps (GPT-2's 768 × 768) off the UI thread.
  std::shared_ptr<const std::vector<NamedTensor>> tensors_ = std::make_shared<const std::vector<NamedTensor>>();
  std::vector<bool> own_;           // … whether each is the user's (else the seeded draw)
  std::vector<ValueRange> ranges_;  // … and each one's finite range, measured once per version
  // Row and column labels per tensor (q0, q1, … / d0, d1, …), kept while the heatmaps use them.
  std::vector<std::vector<std::string>> row_labels_, col_labels_;
};

}  // namespace attnscope
