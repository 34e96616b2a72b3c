// The Compare tab (docs/DESIGN.md §3.4): a pinned result A beside the current one
// B. Every shown map appears three times in a row — A, B and B − A on a diverging scale centred on
// 0 — with the largest |Δ| and where it is; A and B share one colour range, so a small change looks
// small. A line above lists what differs between the two workspaces. A view: it draws the two
// snapshots it is given (PanelContext::snapshot and ::pinned) and owns only the differences it
// worked out from them.
#pragma once
#include <imgui.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "display/comparison.h"
#include "panels/panel.h"

namespace attnscope {

class CompareView {
 public:
  void draw(const PanelContext& ctx);
  void reset() {
    differences_.clear(), workspace_differences_.clear(), token_difference_ = {}, aligned_ = false, b_own_ = false,
                                                          chapter_text_ = false, same_tokens_ = false,
                                                          same_dims_ = false, names_size_ = 0, pair_ = {0, 0};
  }

 private:
  // A new pair of results: what it worked out for the old one goes, what differs is found once.
  void follow(const Snapshot& a, const Snapshot& b);
  // B − A of one map: worked out once per pair of results, for the rows drawn.
  // `map`: a Stage, or 100 + a ModuleMap.
  // With a text's tokens inserted or removed (aligned_), a map whose rows or columns are tokens
  // compares by the tokens both texts have (alignedDifference).
  std::shared_ptr<const MapDifference> difference(int head_a, int head, int map, const StageMap& a, const StageMap& b,
                                                  bool token_rows, bool token_cols);
  bool alignable(const StageMap& a, const StageMap& b, bool token_rows, bool token_cols) const;
  std::pair<std::uint64_t, std::uint64_t> pair_{0, 0};  // (A, B) serials the differences belong to
  std::map<std::tuple<int, int, int>, std::shared_ptr<const MapDifference>> differences_;  // (A's head, B's, map) →
  std::vector<std::string> workspace_differences_;                                   // workspaceDifferences of the pair
  bool aligned_ = false;  // the same model's texts, tokens inserted or removed: maps compare by tokens
  bool chapter_text_ = false;  // … or the chapter's, differing in their text alone (differsInTextAlone)
  bool same_tokens_ = false, same_dims_ = false;  // A's and B's rows' names, tokens or d0 …: one band serves
  bool b_own_ = false;    // B has tokens A has not (an aligned B − A's dark cells)
  // The widest of A's and B's token names, as they are and starting with their positions ("40 Ġthe"),
  // at the small font's size names_size_ (0: not measured for this pair): once, not per row and frame.
  float names_w_[2] = {0, 0};
  float names_size_ = 0;
  TokenDifference token_difference_;                                                 // tokenDifference of its texts
};

}  // namespace attnscope
