#include "panels/learn_view.h"

#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "engine/errors.h"
#include "widgets/fonts.h"
#include "widgets/kept_text.h"
#include "widgets/layout_dump.h"
#include "widgets/text.h"
#include "widgets/theme.h"
#include "widgets/typed_number.h"

namespace attnscope {

namespace {

// [SECTION] Colours and series ---------------------------------------------------------------------

// One colour per head, as the Lines tab colours it (display/colormap.h headColour).
ImU32 seriesColour(int index, int heads) {
  heads = std::max(heads, 1);
  const Rgb c = attnscope::headColour(index / heads, index % heads, heads);
  return IM_COL32(c.r, c.g, c.b, 255);
}

using Series = LearnView::Series;

// A round step for axis ticks: 1, 2 or 5 × 10ⁿ, about `span / count`.
double niceStep(double span, int count) {
  const double raw = span / std::max(count, 1);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

// [SECTION] A chart ---------------------------------------------------------------------------------

// The index of the value of `xs` (ascending, not empty) nearest to `x`.
std::size_t nearest(const std::vector<float>& xs, float x) {
  const std::size_t i = static_cast<std::size_t>(std::lower_bound(xs.begin(), xs.end(), x) - xs.begin());
  if (i == 0) return 0;
  if (i == xs.size()) return i - 1;
  return xs[i] - x < x - xs[i - 1] ? i : i - 1;
}

// A line chart of `series` over steps 0 … x_max, values y_lo … y_hi, with its title, ticks, a line
// at the step the views show, and a tooltip of the values under the mouse. `map_steps` are the
// timeline's snapshots (ascending, not empty). Returns the snapshot's step clicked (−1: none).
int chart(const char* id, const char* title, ImVec2 size, const std::vector<Series>& series, float x_max, float y_lo,
          float y_hi, int marked_step, const std::vector<std::string>& names, const std::vector<float>& map_steps) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton(id, size);
  const bool hovered = ImGui::IsItemHovered();
  const bool clicked = ImGui::IsItemClicked(ImGuiMouseButton_Left) ||
                       (ImGui::IsItemActive() && ImGui::IsMouseDragging(0));
  ImFont* small = fonts().small;
  const float fs = small->FontSize;
  const ImU32 dim = theme().text_dim, line = theme().grid_line;
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  // The plot's rectangle: room for the title above, the value ticks left, the steps below.
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(y_hi));
  const float left = p0.x + small->CalcTextSizeA(fs, 1e9f, 0, buf).x + px(6);
  const float title_h = title[0] ? ImGui::GetFontSize() + px(4) : px(4);  // no title: where room is short
  const ImVec2 a(left, p0.y + title_h), b(p0.x + size.x - px(6), p0.y + size.y - fs - px(4));
  if (title[0]) dl->AddText(ImVec2(p0.x, p0.y), text, fitText(title, size.x).c_str());
  if (b.x - a.x < px(40) || b.y - a.y < px(12)) return -1;
  dl->AddRect(a, b, line);
  x_max = std::max(x_max, 1.0f);
  const float span = std::max(y_hi - y_lo, 1e-6f);
  auto X = [&](float s) { return a.x + (b.x - a.x) * s / x_max; };
  auto Y = [&](float v) { return b.y - (b.y - a.y) * (std::clamp(v, y_lo, y_hi) - y_lo) / span; };
  // Up to three value ticks, fewer where the plot is short (at 200 % "4", "2" and "0" overlapped),
  // but two at least: the step for one tick's room (5 on the loss's 0 … 4.8) had left "0" alone.
  int count = std::clamp(static_cast<int>((b.y - a.y) / (fs * 1.5f)), 1, 3);
  auto ticksOf = [&](double step) { return std::floor(y_hi / step + 1e-9) - std::ceil(y_lo / step - 1e-9) + 1; };
  while (ticksOf(niceStep(span, count)) < 2 && count < 10) ++count;
  const double y_step = niceStep(span, count);
  nlohmann::json& tick_labels = layout().state()["learn_ticks"][id];  // tests read them
  tick_labels = nlohmann::json::array();
  for (double v = std::ceil(y_lo / y_step) * y_step; v <= y_hi + 1e-9; v += y_step) {
    std::snprintf(buf, sizeof buf, span < 3 ? "%.1f" : "%.0f", v);
    const float y = Y(static_cast<float>(v));
    dl->AddLine(ImVec2(a.x, y), ImVec2(b.x, y), line);
    const float w = small->CalcTextSizeA(fs, 1e9f, 0, buf).x;
    dl->AddText(small, fs, ImVec2(a.x - w - px(3), y - fs / 2), dim, buf);
    tick_labels.push_back(buf);
  }
  const double xs = niceStep(x_max, std::max(2, static_cast<int>((b.x - a.x) / px(90))));
  for (double s = 0; s <= x_max + 1e-9; s += xs) {
    std::snprintf(buf, sizeof buf, "%.0f", s);
    const float x = X(static_cast<float>(s));
    const float w = small->CalcTextSizeA(fs, 1e9f, 0, buf).x;
    dl->AddText(small, fs, ImVec2(std::clamp(x - w / 2, a.x, b.x - w), b.y + px(2)), dim, buf);
  }
  dl->PushClipRect(a, b, true);
  for (const Series& s : series) {  // at most a point per pixel column
    std::vector<ImVec2> points;
    const std::size_t n = s.x.size();
    const std::size_t stride = std::max<std::size_t>(1, n / static_cast<std::size_t>(std::max(1.0f, b.x - a.x)));
    for (std::size_t i = 0; i < n; i += stride) {
      if (std::isnan(s.y[i])) {
        if (points.size() > 1)
          dl->AddPolyline(points.data(), static_cast<int>(points.size()), s.colour, 0, px(s.thickness));
        points.clear();
        continue;
      }
      points.emplace_back(X(s.x[i]), Y(s.y[i]));
    }
    if (n > 0 && (n - 1) % stride != 0 && !std::isnan(s.y[n - 1])) points.emplace_back(X(s.x[n - 1]), Y(s.y[n - 1]));
    if (points.size() > 1)
      dl->AddPolyline(points.data(), static_cast<int>(points.size()), s.colour, 0, px(s.thickness));
    else if (n == 1 && points.size() == 1)  // one record (step 0): a dot, where a line needs two
      dl->AddCircleFilled(points[0], px(s.thickness + 1.5f), s.colour);
  }
  if (marked_step >= 0)
    dl->AddLine(ImVec2(X(static_cast<float>(marked_step)), a.y), ImVec2(X(static_cast<float>(marked_step)), b.y), text,
                px(1));
  dl->PopClipRect();
  // The record nearest the mouse, never one past the newest: right of it nothing was trained (the
  // tooltip said "step 801" at step 266). A click shows the snapshot nearest that record, the step
  // the marker then stands at (§3.9: learn_show shows the snapshot at or before its step).
  const float mouse_step = (ImGui::GetIO().MousePos.x - a.x) / (b.x - a.x) * x_max;
  const auto data = std::find_if(series.begin(), series.end(), [](const Series& s) { return !s.x.empty(); });
  const float step = data == series.end() ? mouse_step : data->x[nearest(data->x, mouse_step)];
  const int maps_step = static_cast<int>(map_steps[nearest(map_steps, step)]);
  if (hovered) {
    ImGui::BeginTooltip();
    std::string tip;
    if (data != series.end()) {
      tip = "step " + std::to_string(static_cast<int>(step));
      ImGui::TextUnformatted(tip.c_str());
    }
    for (std::size_t k = 0; k < series.size(); ++k) {
      const Series& s = series[k];
      if (s.x.empty() || k >= names.size() || names[k].empty()) continue;
      const std::size_t i = nearest(s.x, step);
      const char* value = std::isnan(s.y[i])
                              ? "—"
                              : (std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(s.y[i])), buf);
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(s.colour), "%s  %s", names[k].c_str(), value);
      tip += "\n" + names[k] + "  " + value;
    }
    char hint[64];
    std::snprintf(hint, sizeof hint, "Click: show the maps of step %d", maps_step);
    ImGui::TextDisabled("%s", hint);
    ImGui::EndTooltip();
    tip += (tip.empty() ? "" : "\n") + std::string(hint);
    layout().state()["tooltip"] = {{"chart", id},
                                   {"step", data == series.end() ? -1 : static_cast<int>(step)},
                                   {"maps_step", maps_step},
                                   {"text", tip}};  // tests read it
  }
  return clicked ? maps_step : -1;
}

// Items of a row that wraps: before an item `w` wide, a new line unless it fits after the last.
void flow(float w, bool first) {
  if (first) return;
  const float right = ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + w;
  if (right < ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x) ImGui::SameLine();
}

}  // namespace

// [SECTION] The tab ---------------------------------------------------------------------------------

void LearnView::draw(const PanelContext& ctx) {
  const ImVec2 origin = ImGui::GetCursorScreenPos(), room = ImGui::GetContentRegionAvail();
  layout().panel("learn", origin, ImVec2(origin.x + room.x, origin.y + room.y));
  const LearnSession* run = ctx.learn;
  const bool running = run != nullptr && run->open();
  if (!running) {  // in a child that scrolls: at 1280 × 720 and 200 % Start was below the fold
    ImGui::BeginChild("##learn_form", ImVec2(0, 0), false, ImGuiWindowFlags_NoSavedSettings);
    ImGui::PushTextWrapPos(0);
    ImGui::TextUnformatted(
        "Train a small GPT here and watch its attention form. The model is the book's GPTModel (attention only "
        "for the induction task); the loss, what each head does and its maps update as it learns, exactly as the "
        "PyTorch script of attnscope-cli pytorch-train computes them.");
    ImGui::PopTextWrapPos();
    ImGui::Spacing();
    form(ctx, false);
    ImGui::EndChild();
    return;
  }
  // In a child that scrolls: the charts keep a readable height however short the tab (at 1280 × 720
  // and 200 % the loss was a 30 px strip with the one tick "0", the legend under the status bar).
  ImGui::BeginChild("##learn_run", ImVec2(0, 0), false, ImGuiWindowFlags_NoSavedSettings);
  layout().panel("learn_run", ImGui::GetWindowPos(),
                 ImVec2(ImGui::GetWindowPos().x + ImGui::GetWindowSize().x,
                        ImGui::GetWindowPos().y + ImGui::GetWindowSize().y));
  // A lesson's step drives the run and speaks of its charts: the status, then the charts in the
  // room in view, the buttons and the timeline after them (a scroll away where the tab is short: at
  // 1280 × 720 and 200 % they had pushed "The phase change"'s score chart below the fold).
  if (ctx.lesson_step && !form_open_) {
    status(ctx, true);
    ImGui::Separator();
    charts(ctx, ImGui::GetContentRegionAvail());
    ImGui::Separator();
    buttons(ctx);
    timeline(ctx);
    ImGui::EndChild();
    return;
  }
  buttons(ctx);
  status(ctx, false);
  if (form_open_) {
    // In a child that scrolls too, as tall as it was last frame or the room left: at 1280 × 720 and
    // 200 % Start and Cancel were below the window's edge and nothing scrolled. The timeline and the
    // charts take what the form leaves, and wait while it takes all the room.
    const float room = ImGui::GetContentRegionAvail().y;
    ImGui::BeginChild("##learn_new_run", ImVec2(0, form_h_ > 0 ? std::min(form_h_, room) : room), false,
                      ImGuiWindowFlags_NoSavedSettings);
    layout().panel("learn_new_run", ImGui::GetWindowPos(),
                   ImVec2(ImGui::GetWindowPos().x + ImGui::GetWindowSize().x,
                          ImGui::GetWindowPos().y + ImGui::GetWindowSize().y));
    form(ctx, true);
    form_h_ = ImGui::GetCursorPosY();  // the form's height, scrolled or not
    ImGui::EndChild();
  } else {
    form_h_ = 0;
  }
  if (!form_open_ || ImGui::GetContentRegionAvail().y >= ImGui::GetFrameHeightWithSpacing() * 2) {
    // The timeline above the charts, whose heights give way down to their least: under them it went
    // below the fold at 200 % (and at 150 % with 24 heads' legend).
    timeline(ctx);
    ImGui::Separator();
    charts(ctx, ImGui::GetContentRegionAvail());  // the room in view: the tab scrolls to what is below it
  }
  ImGui::EndChild();
}

void LearnView::form(const PanelContext& ctx, bool running) {
  // The task: a new choice starts from that task's defaults.
  const std::string kind = form_.value("task", "induction");
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Task");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::CalcTextSize("previous_token").x + px(40));
  if (ImGui::BeginCombo("##task", kind.c_str())) {
    for (const TaskInfo& t : taskTable()) {
      if (ImGui::Selectable(t.name, kind == t.name)) form_ = {{"task", t.name}};
      if (ImGui::IsItemHovered()) {  // the hovered task's, wrapped (one line ran off the window's edge)
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(px(420));
        ImGui::Text("%s: %s", t.name, t.teaches);
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
      }
    }
    ImGui::EndCombo();
  }
  layout().widget("learn_task");
  // The task as it would be read: the form shows every field's value, defaults included. Read again
  // only when the form changed (a pasted book of text takes the parser a good part of a second).
  if (form_ != parsed_form_ || parsed_shown_.is_null()) {
    TrainTask task;
    try {
      task = parseTrainTask(form_);
      form_error_.clear();
    } catch (const InputError& e) {
      form_error_ = e.what();
      for (const TaskInfo& info : taskTable())  // the fields shown are the task's, at their defaults
        if (kind == info.name) task = taskDefaults(info.kind);
    }
    parsed_form_ = form_;
    parsed_shown_ = trainTaskJson(task);
  }
  const nlohmann::json& shown = parsed_shown_;
  const float field_w = ImGui::CalcTextSize("0000000").x + ImGui::GetStyle().FramePadding.x * 2;
  struct IntItem {
    const char* key;
    const char* label;
  };
  const IntItem ints[] = {{"layers", "layers"}, {"heads", "heads"}, {"d_model", "width"}, {"seq_len", "tokens"},
                          {"vocab", "vocab"},   {"batch", "batch"}, {"steps", "steps"},   {"seed", "seed"}};
  for (const IntItem& f : ints) {
    if (!shown.contains(f.key)) continue;  // the text task's vocabulary is its text's
    const float w = ImGui::CalcTextSize(f.label).x + ImGui::GetStyle().ItemInnerSpacing.x + field_w;
    flow(w, false);
    int v = form_.contains(f.key) ? form_[f.key].get<int>() : shown[f.key].get<int>();
    ImGui::SetNextItemWidth(field_w);
    ImGui::PushID(f.key);
    if (ImGui::InputInt(f.label, &v, 0, 0)) form_[f.key] = v;
    // The task's own name for it, where the label is another ("width" is d_model): what a learn
    // command or attnscope-cli train takes.
    if (std::strcmp(f.key, f.label) != 0 && ImGui::IsItemHovered())
      ImGui::SetTooltip("%s (%s in a task's JSON: the learn command, attnscope-cli train)", f.label, f.key);
    ImGui::PopID();
  }
  {
    const float w = ImGui::CalcTextSize("learning rate").x + field_w * 1.3f;
    flow(w, false);
    double lr = form_.contains("lr") ? form_["lr"].get<double>() : shown["lr"].get<double>();
    ImGui::SetNextItemWidth(field_w * 1.3f);
    const DecimalCommaAsPoint points(ImGui::GetID("learning rate"));  // "0,001" was 1
    if (ImGui::InputDouble("learning rate", &lr, 0, 0, "%g")) form_["lr"] = lr;
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("learning rate (lr in a task's JSON)");
  }
  {
    flow(ImGui::CalcTextSize("MLP").x + ImGui::GetFrameHeight() * 2, false);
    bool mlp = form_.contains("mlp") ? form_["mlp"].get<bool>() : shown["mlp"].get<bool>();
    if (ImGui::Checkbox("MLP", &mlp)) form_["mlp"] = mlp;
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Off: each block is attention only (no LayerNorm 2, no feed-forward)");
  }
  if (kind == "text") {
    // Its tokens: characters, or GPT-2's (the tokenizer's files in a folder the user names).
    const bool gpt2 = form_.value("tokens", std::string("characters")) == "gpt2";
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("tokens");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::CalcTextSize("GPT-2 tokens").x + px(40));
    if (ImGui::BeginCombo("##tokens", gpt2 ? "GPT-2 tokens" : "characters")) {
      if (ImGui::Selectable("characters", !gpt2)) form_.erase("tokens"), form_.erase("tokenizer");
      if (ImGui::Selectable("GPT-2 tokens", gpt2)) form_["tokens"] = "gpt2";
      ImGui::EndCombo();
    }
    layout().widget("learn_tokens");
    if (gpt2) {  // its own line: a path is long, and so is what the field asks for
      std::string folder = form_.value("tokenizer", std::string());
      ImGui::SetNextItemWidth(-1);
      if (inputTextKept("##tokenizer", "the folder of GPT-2's vocab.json and merges.txt", &folder, tokenizer_field_)) {
        if (!folder.empty())
          form_["tokenizer"] = folder;
        else
          form_.erase("tokenizer");
      }
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "A Hugging Face GPT-2 folder (vocab.json + merges.txt) or OpenAI's (encoder.json + vocab.bpe): the text's "
            "distinct GPT-2 tokens become the model's vocabulary");
      layout().widget("learn_tokenizer");
    }
    std::string text = form_.value("text", std::string());
    ImGui::SetNextItemWidth(-1);
    if (inputTextKept("##text",
                      gpt2 ? "the text to learn (at least seq_len + 2 GPT-2 tokens)"
                           : "the text to learn (at least seq_len + 2 characters)",
                      &text, text_field_))
      form_["text"] = text;
  }
  if (!form_error_.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(235, 110, 100, 255));
    ImGui::TextWrapped("%s", form_error_.c_str());
    ImGui::PopStyleColor();
  }
  ImGui::BeginDisabled(!form_error_.empty());
  if (ImGui::Button(running ? "Start this run instead" : "Start")) {
    ctx.commands.push("learn", {{"task", form_}, {"play", true}});
    form_open_ = false;
  }
  ImGui::EndDisabled();
  layout().widget("learn_start");
  if (running) {
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) form_open_ = false;
    layout().widget("learn_cancel");
  }
}

void LearnView::buttons(const PanelContext& ctx) {
  const LearnSession& run = *ctx.learn;
  if (run.playing()) {
    if (ImGui::Button("Pause")) ctx.commands.push("learn_pause");
  } else {
    ImGui::BeginDisabled(run.finished());
    if (ImGui::Button("Train")) ctx.commands.push("learn_play");
    ImGui::EndDisabled();
  }
  layout().widget("learn_play");
  ImGui::SameLine();
  ImGui::BeginDisabled(run.playing() || run.finished());
  if (ImGui::Button("Step")) ctx.commands.push("learn_step", {{"steps", 1}});
  ImGui::SameLine();
  if (ImGui::Button("+100")) ctx.commands.push("learn_step", {{"steps", 100}});
  ImGui::EndDisabled();
  auto buttonWidth = [](const char* label) {
    return ImGui::CalcTextSize(label).x + ImGui::GetStyle().FramePadding.x * 2;
  };
  flow(buttonWidth("New run…"), false);
  if (ImGui::Button("New run…")) form_open_ = !form_open_;
  layout().widget("learn_new_run_button");
  flow(buttonWidth("Save model…"), false);
  if (ImGui::Button("Save model…")) ctx.commands.push("dialog", {{"which", "save_model"}});
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "The model as it is now, as the book's GPTModel state_dict (.npz, .safetensors, .pth or .pt): "
        "torch.load the .pth (or np.load the .npz) into load_state_dict, or open it with File › Open model");
  layout().widget("learn_save");
}

void LearnView::status(const PanelContext& ctx, bool first) {
  const LearnSession& run = *ctx.learn;
  const TrainTask& t = run.task();
  // The run as it was at a step behind the one trained (a lesson's Back, learn_to) says so, its
  // loss that step's, as the charts end there.
  const bool as_it_was = ctx.learn_horizon >= 0 && ctx.learn_horizon < run.stepsDone();
  const int at = as_it_was ? ctx.learn_horizon : run.stepsDone();
  const auto& losses = run.losses();
  const int before = std::min<int>(at, static_cast<int>(losses.size()));
  char status[256];
  const int n = std::min<int>(25, before);
  double recent = 0;
  for (int i = 0; i < n; ++i) recent += losses[static_cast<std::size_t>(before - 1 - i)];
  // One line where it fits: "step 700 of 1500 · loss 2.601 · 130 steps/s" (the task is the model panel's title).
  int used = std::snprintf(status, sizeof status, "step %d of %d", at, t.steps);
  if (n > 0) used += std::snprintf(status + used, sizeof status - used, " · loss %.3f", recent / n);
  if (run.playing()) {
    std::snprintf(status + used, sizeof status - used, " · %.0f steps/s", run.stepsPerSecond());
  } else if (run.stepping()) {  // to a step asked for (Step, +100, a lesson's learn_to): it had said "paused"
    used += std::snprintf(status + used, sizeof status - used, " · training to %d", run.target());
    if (run.stepsPerSecond() > 0)
      std::snprintf(status + used, sizeof status - used, " · %.0f steps/s", run.stepsPerSecond());
  } else if (as_it_was) {
    std::snprintf(status + used, sizeof status - used, " · trained to %d", run.stepsDone());
  } else {
    std::snprintf(status + used, sizeof status - used, run.finished() ? " · done" : " · paused");
  }
  layout().state()["learn_status"] = status;  // tests read it
  flow(ImGui::CalcTextSize(status).x, first);
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(status);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("%s: %s. The loss is the mean of the last %d steps.", taskInfo(t.kind).name,
                      taskInfo(t.kind).teaches, n);
  if (!run.error().empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(235, 110, 100, 255));
    ImGui::TextWrapped("Stopped: %s", run.error().c_str());
    ImGui::PopStyleColor();
  }
}

void LearnView::charts(const PanelContext& ctx, ImVec2 size) {
  const LearnSession& run = *ctx.learn;
  const TrainTask& t = run.task();
  // The marker stands where the maps are: at the snapshot shown, not at the step asked for (a
  // learn_to or a click ahead of the run stood in empty space while the maps showed the newest).
  const LearnSession::Snapshot* shown = run.snapshotAt(ctx.learn_step_shown);
  if (shown == nullptr) return;  // no model yet: the run is being built
  const int marked = shown->step;
  // Shown as it was at a step (learn_to behind the run: a lesson's Back), the charts end there: they
  // had shown the loss and the scores of the steps the lesson had yet to come to (§3.9).
  const int horizon = ctx.learn_horizon >= 0 ? ctx.learn_horizon : run.stepsDone();
  std::vector<float> map_steps;  // where a click can go
  for (const LearnSession::Snapshot& snap : run.timeline())
    if (snap.step <= horizon || map_steps.empty()) map_steps.push_back(static_cast<float>(snap.step));
  layout().state()["learn_marked"] = marked;
  const float x_max = static_cast<float>(std::max(t.steps, 1));
  const float gap = ImGui::GetStyle().ItemSpacing.y;
  // The loss above, the three scores in a row below; where the tab is narrower, the induction and
  // previous-token scores (what a circuit forming is) side by side, the second picked; narrower
  // still, one picked.
  const int fit = std::clamp(static_cast<int>((size.x + gap) / (px(170) + gap)), 1, 3);
  const bool row = fit == 3;
  const bool compact = size.y < px(300);  // the charts' titles shortened (the tooltip says more)
  // What is not a chart: the legend, and the score's picker where not all are shown; the charts share the rest.
  // The legend's lines as it wraps in the width (one line was reserved: 24 heads took three at 150 %).
  // "heads", then each head's swatch and number, as the legend below draws them.
  std::vector<float> legend_w = {ImGui::CalcTextSize("heads").x};
  for (int l = 0; l < t.layers; ++l)
    for (int h = 0; h < t.heads; ++h)
      legend_w.push_back(ImGui::GetFontSize() + px(8) +
                         ImGui::CalcTextSize((std::to_string(l + 1) + "." + std::to_string(h + 1)).c_str()).x);
  const float legend_h = static_cast<float>(wrappedRows(legend_w, size.x, ImGui::GetStyle().ItemSpacing.x)) *
                         ImGui::GetTextLineHeightWithSpacing();
  const float around = legend_h + 2 * gap + (row ? 0.0f : ImGui::GetFrameHeightWithSpacing());
  // A chart's least height: its title, room for three value ticks (five lines of the ticks' font),
  // the steps below. Where the room in view is a little short of two such charts and the legend, they
  // give up to a quarter of it rather than push the legend out of view: in presentation
  // at 1280 × 720 and 200 % it had stood 32 px below the tab, the charts' lines without their heads.
  const float full = ImGui::GetFontSize() + px(8) + 6 * fonts().small->FontSize;
  const float half = (size.y - around) / 2;
  const float least = half >= 0.75f * full && half < full ? half : full;  // far too short: a scroll away as it was
  const float loss_h = std::max(least, 0.47f * (size.y - around));
  int clicked = -1;
  {
    // The losses' series grow by the steps since the last frame; a new run starts them again.
    const auto& l = run.losses();
    if (loss_run_ != run.runId() || loss_series_.empty() || loss_series_[0].y.size() > l.size()) {
      loss_series_.assign(2, Series{});
      loss_series_[0].colour = IM_COL32(120, 140, 170, 110);  // each step, faint
      loss_series_[0].thickness = 1;
      loss_series_[1].colour = IM_COL32(120, 180, 255, 255);  // the mean of the last 25 steps, bright
      loss_run_ = run.runId();
      loss_sum_ = 0;
      loss_high_ = 0;
    }
    Series &raw = loss_series_[0], &mean = loss_series_[1];
    for (std::size_t i = raw.y.size(); i < l.size(); ++i) {
      loss_sum_ += l[i] - (i >= 25 ? l[i - 25] : 0.0);
      raw.x.push_back(static_cast<float>(i + 1));
      raw.y.push_back(static_cast<float>(l[i]));
      mean.x.push_back(static_cast<float>(i + 1));
      mean.y.push_back(static_cast<float>(loss_sum_ / static_cast<double>(std::min<std::size_t>(i + 1, 25))));
      loss_high_ = std::max(loss_high_, raw.y.back());
    }
    std::vector<Series> cut;  // the steps up to the horizon (a loss's x is its step, from 1)
    if (static_cast<std::size_t>(horizon) < loss_series_[0].x.size())
      for (Series one : loss_series_) {
        one.x.resize(static_cast<std::size_t>(horizon));
        one.y.resize(static_cast<std::size_t>(horizon));
        cut.push_back(std::move(one));
      }
    const std::vector<Series>& s = cut.empty() ? loss_series_ : cut;
    layout().state()["learn_charted"]["loss"] = s[0].x.empty() ? 0 : static_cast<int>(s[0].x.back());  // tests
    // At least ln V, a guess's loss, where the run starts: the chart does not rescale under the first steps.
    const int vocab = t.kind == TaskKind::Text ? static_cast<int>(t.token_labels.size()) : t.vocab;
    const float hi = std::max(loss_high_, static_cast<float>(std::log(std::max(vocab, 2))));
    const int c = chart("##loss", compact ? "Loss" : "Loss (cross-entropy; bright: the mean of the last 25 steps)",
                        ImVec2(size.x, loss_h), s, x_max, 0, std::max(hi, 1.0f) * 1.05f, marked, {"loss", "mean"},
                        map_steps);
    if (c >= 0) clicked = c;
    layout().widget("learn_loss");
  }
  // Per head, each score over the records.
  struct Score {
    const char* title;
    const char* brief;  // where the charts are short
    const char* key;
    float HeadScores::*value;
    bool HeadScores::*has;
  };
  const Score scores[] = {
      {"Induction score", "Induction", "induction", &HeadScores::induction, &HeadScores::has_induction},
      {"Previous-token score", "Previous token", "previous", &HeadScores::previous_token, &HeadScores::has_previous},
      {"First-token score (sink)", "First token", "first", &HeadScores::first_token, nullptr},
  };
  std::vector<std::string> names;
  for (int l = 0; l < t.layers; ++l)
    for (int h = 0; h < t.heads; ++h) names.push_back(std::to_string(l + 1) + "." + std::to_string(h + 1));
  const float rest = std::max(least, size.y - around - loss_h);
  // Which are charted: all three; or induction and the one picked (previous-token unless another
  // was); or the one picked.
  std::vector<int> charted;
  if (fit == 3) {
    charted = {0, 1, 2};
  } else {
    // Two side by side: induction stays, the second is picked (previous-token until one is); one
    // alone: induction until another is picked (it showed previous-token, the lesson's phase change
    // being about induction).
    const int lowest = fit == 2 ? 1 : 0;
    const int shown = std::max(score_shown_ >= 0 ? score_shown_ : lowest, lowest);
    ImGui::SetNextItemWidth(ImGui::CalcTextSize("First-token score (sink)").x + px(40));
    if (ImGui::BeginCombo("##score", scores[shown].title)) {
      for (int k = lowest; k < 3; ++k)
        if (ImGui::Selectable(scores[k].title, k == shown)) score_shown_ = k;
      ImGui::EndCombo();
    }
    layout().widget("learn_score_pick");
    layout().state()["learn_score_shown"] = scores[shown].key;
    if (fit == 2) charted.push_back(0);
    charted.push_back(shown);
  }
  const int n = static_cast<int>(charted.size());
  const ImVec2 each((size.x - static_cast<float>(n - 1) * ImGui::GetStyle().ItemSpacing.x) / static_cast<float>(n),
                    rest);
  for (int i = 0; i < n; ++i) {
    const int k = charted[static_cast<std::size_t>(i)];
    const Score& sc = scores[k];
    std::vector<Series> s;
    for (int i = 0; i < t.layers * t.heads; ++i) {
      Series one;
      one.colour = seriesColour(i, t.heads);
      for (const ScoreRecord& r : run.scores()) {
        if (r.step > horizon) break;
        const HeadScores& hs = r.scores[static_cast<std::size_t>(i / t.heads)][static_cast<std::size_t>(i % t.heads)];
        one.x.push_back(static_cast<float>(r.step));
        one.y.push_back(sc.has == nullptr || hs.*sc.has ? hs.*sc.value : NAN);
      }
      s.push_back(std::move(one));
    }
    layout().state()["learn_charted"]["scores"] = s.empty() || s[0].x.empty() ? 0 : static_cast<int>(s[0].x.back());
    if (i > 0) ImGui::SameLine();
    // Side by side, each says what it is; one alone is named by its picker above.
    const int c = chart(sc.key, n > 1 ? (compact ? sc.brief : sc.title) : "", each, s, x_max, 0, 1, marked, names,
                        map_steps);
    if (c >= 0) clicked = c;
    layout().widget(std::string("learn_") + sc.key);
  }
  // The legend: each head's colour, as the Layers tab numbers heads ("heads 1.1 1.2 …": "head"
  // before each wrapped the four heads of the learning lesson at 200 %, cut at the tab's edge).
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImGui::BeginGroup();
  ImGui::TextDisabled("heads");
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& label = names[i];
    flow(ImGui::GetFontSize() + ImGui::CalcTextSize(label.c_str()).x + px(8), false);
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float sw = ImGui::GetFontSize() * 0.8f;
    dl->AddRectFilled(ImVec2(p.x, p.y + (ImGui::GetFontSize() - sw) / 2),
                      ImVec2(p.x + sw, p.y + (ImGui::GetFontSize() + sw) / 2),
                      seriesColour(static_cast<int>(i), t.heads));
    ImGui::Dummy(ImVec2(sw, ImGui::GetFontSize()));
    ImGui::SameLine(0, px(4));
    ImGui::TextUnformatted(label.c_str());
  }
  ImGui::EndGroup();
  layout().widget("learn_legend");
  if (clicked >= 0 && clicked != ctx.learn_step_shown) ctx.commands.push("learn_show", {{"step", clicked}});
}

void LearnView::timeline(const PanelContext& ctx) {
  const LearnSession& run = *ctx.learn;
  const auto& tl = run.timeline();
  if (tl.empty()) return;
  const bool following = ctx.learn_step_shown < 0;
  int last = static_cast<int>(tl.size()) - 1;  // the newest, or the newest at the run's horizon (charts)
  while (ctx.learn_horizon >= 0 && last > 0 && tl[static_cast<std::size_t>(last)].step > ctx.learn_horizon) --last;
  int index = last;
  if (!following)
    for (int i = 0; i < static_cast<int>(tl.size()); ++i)
      if (tl[static_cast<std::size_t>(i)].step <= ctx.learn_step_shown) index = i;
  bool follow = following;
  if (ImGui::Checkbox("Follow", &follow))
    ctx.commands.push("learn_show", {{"step", follow ? -1 : tl[static_cast<std::size_t>(index)].step}});
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("The views show the newest maps as the model learns");
  ImGui::SameLine();
  // A step set beside another in the Compare tab: pin the one shown as A, then scrub or train on (B).
  char pin[64];
  std::snprintf(pin, sizeof pin, "Pin step %d as A", tl[static_cast<std::size_t>(index)].step);
  if (ImGui::Button(pin)) ctx.commands.push("pin");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("The Compare tab then shows this step (A) beside the step the views show (B), and B − A");
  layout().widget("learn_pin");
  char label[64];
  std::snprintf(label, sizeof label, "maps at step %d", tl[static_cast<std::size_t>(index)].step);
  // Beside the pin where its label and the grab's room on either side fit, else on a line of its
  // own: at 200 % the label read "maps at step 6" for 650.
  const float label_w = ImGui::CalcTextSize(label).x;
  flow(label_w + ImGui::GetStyle().FramePadding.x * 2 + ImGui::GetFrameHeight() * 2, false);
  layout().state()["learn_timeline_label"] = {{"text", label}, {"w", label_w}};  // tests read it
  ImGui::SetNextItemWidth(-1);
  if (ImGui::SliderInt("##timeline", &index, 0, last, label, ImGuiSliderFlags_AlwaysClamp))
    ctx.commands.push("learn_show", {{"step", tl[static_cast<std::size_t>(index)].step}});
  layout().widget("learn_timeline");
}

}  // namespace attnscope
