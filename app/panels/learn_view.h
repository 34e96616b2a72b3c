// The Learn tab (docs/DESIGN.md §3.9): a small GPT training live. The task and its sizes (a new
// run on "Start"), play / pause / one step, the steps per second; the loss curve; each head's
// previous-token, induction and first-token scores on the probe over the steps; and the timeline
// of the probe's maps — a click on any chart, or the slider, shows the maps of that step in every
// view (learn_show), "Follow" the newest again. Draws from the LearnSession the controller keeps.
#pragma once
#include <imgui.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "panels/panel.h"
#include "widgets/kept_text.h"

namespace attnscope {

class LearnView {
 public:
  struct Series {             // a chart's line
    std::vector<float> x, y;  // y NaN: no value there (an undefined score)
    ImU32 colour = 0;
    float thickness = 2;
  };
  void draw(const PanelContext& ctx);

 private:
  void form(const PanelContext& ctx, bool running);  // the task and its sizes
  void buttons(const PanelContext& ctx);             // Train or Pause, Step, +100, New run…, Save model…
  // "step 700 of 1000 · loss 3.070 · paused", and why it stopped; beside the buttons where it fits
  // unless `first`.
  void status(const PanelContext& ctx, bool first);
  void charts(const PanelContext& ctx, ImVec2 size);
  void timeline(const PanelContext& ctx);

  nlohmann::json form_ = {{"task", "induction"}};  // the task being set up (the run's own is the session's)
  KeptField tokenizer_field_;                      // its tokenizer folder's field
  std::string form_error_;                         // why it would be refused, as parseTrainTask says
  KeptField text_field_;                           // the text's field as ImGui edits it (an emoji kept)
  nlohmann::json parsed_form_, parsed_shown_;      // the form last read, and the task it read as (every field)
  bool form_open_ = false;                         // "New run…" unfolded while a run goes on
  float form_h_ = 0;                               // … the height it took last frame (0: not drawn yet)
  int score_shown_ = -1;                           // where the tab is narrow: the score picked (-1: none yet)
  // The loss chart's series (each step, the mean of the last 25), extended by the new steps only.
  std::vector<Series> loss_series_;
  std::uint64_t loss_run_ = 0;
  double loss_sum_ = 0;  // of the last 25 losses
  float loss_high_ = 0;
};

}  // namespace attnscope
