#include "panels/model_panel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "state/view_state.h"
#include "widgets/layout_dump.h"
#include "widgets/text.h"
#include "widgets/theme.h"
#include "widgets/typed_number.h"

namespace attnscope {

namespace {

// Disables the controls while alive when `why` is set, and says why on hover.
struct Applicability {
  explicit Applicability(const char* why) : why_(why) {
    if (why_) ImGui::BeginDisabled();
  }
  ~Applicability() {
    if (why_) ImGui::EndDisabled();
  }
  void explain() const {  // call after each control
    if (why_ && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", why_);
  }

 private:
  const char* why_;
};

// num_heads values the seed accepts: divisors of d_out for multihead, 1 … the limit for the wrapper.
std::vector<int> validHeadCounts(const ModelConfig& m) {
  std::vector<int> out;
  for (int h = 1; h <= Limits{}.max_heads; ++h)
    if (m.variant != Variant::MultiHead || m.d_out % h == 0) out.push_back(h);
  return out;
}

// Where the controls start: a little over a third of the panel, or further when the widest label
// needs it (large text sizes), but never past half.
float controlsX() {
  float widest = 0;
  for (const char* l : {"d_out", "num_heads", "dropout p", "seed", "draws before", "masking", "scale", "normalize",
                        "batch size", "engine", "threads"})
    widest = std::max(widest, ImGui::CalcTextSize(l).x);
  const float w = ImGui::GetWindowWidth();
  return std::min(std::max(w * 0.36f, ImGui::GetStyle().WindowPadding.x + widest + ImGui::GetStyle().ItemSpacing.x * 2),
                  w * 0.5f);
}

// A label with its control beside it at controlsX(), or under it when the label reaches past that
// (a very narrow panel).
void besideLabel() {
  const float x = controlsX();
  if (ImGui::GetItemRectMax().x - ImGui::GetWindowPos().x + ImGui::GetStyle().ItemSpacing.x <= x) ImGui::SameLine(x);
}

void label(const char* text) {
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(text);
  besideLabel();
  ImGui::SetNextItemWidth(-1);
}

// A tooltip on the last item (disabled ones too).
void hint(const char* text) {
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", text);
}

// `set {field, value}`: one model field, as an undoable edit; drags pass their gesture.
void set(const PanelContext& ctx, const char* field, nlohmann::json value, const char* gesture = "") {
  ctx.commands.push("set", {{"field", field}, {"value", std::move(value)}}, gesture);
}

// A slider's `set field` of the value it gives, a drag one undo step (the field as its gesture);
// kept by a slider typed into, so it holds nothing of the frame's.
std::function<void(int)> setter(const PanelContext& ctx, const char* field) {
  return [queue = &ctx.commands, field](int v) { queue->push("set", {{"field", field}, {"value", v}}, field); };
}

// A model flag as a checkbox, recorded for the layout dump under its field name.
void flag(const PanelContext& ctx, const char* field, const char* text, bool ModelConfig::*member,
          const Applicability& a) {
  bool value = ctx.document.workspace().model.*member;
  if (ImGui::Checkbox(text, &value)) set(ctx, field, value);
  a.explain();
  layout().widget(field);
}

// A whole number typed into a field of the given width: the new value once typing ends (Enter or
// focus elsewhere) and it differs from `current`, else -1. While typing, the field keeps its own.
template <class Field>
std::int64_t typedNumber(const char* id, float width, Field& f, std::int64_t current, std::int64_t hi) {
  if (!f.active) f.typed = current;
  ImGui::SetNextItemWidth(width);
  ImGui::InputScalar(id, ImGuiDataType_S64, &f.typed, nullptr, nullptr, "%lld");
  f.active = ImGui::IsItemActive();
  f.typed = std::clamp<std::int64_t>(f.typed, 0, hi);
  return ImGui::IsItemDeactivatedAfterEdit() && f.typed != current ? f.typed : -1;
}

// Whose dropout masks: one click switches between torch with MKL on an Intel CPU and torch's own
// stream (docs/DESIGN.md §2.2 "Two dropout streams"). Beside the training flag while it fits.
void dropoutStreamButton(const PanelContext& ctx, const ModelConfig& m) {
  const bool mkl = m.dropout_rng == DropoutStream::Mkl;
  const char* text = mkl ? "masks: MKL" : "masks: no MKL";
  const float w = ImGui::CalcTextSize(text).x + ImGui::GetStyle().FramePadding.x * 2;
  if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x * 3 + w <=
      ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x)
    ImGui::SameLine(0, ImGui::GetStyle().ItemSpacing.x * 3);
  if (ImGui::Button(text)) set(ctx, "dropout_rng", dropoutStreamId(mkl ? DropoutStream::Default : DropoutStream::Mkl));
  layout().widget("dropout_rng");
  const DropoutStream other = mkl ? DropoutStream::Default : DropoutStream::Mkl;
  hint((std::string("Dropout masks of ") + dropoutStreamTitle(m.dropout_rng) + ".\nClick for those of " +
        dropoutStreamTitle(other) + ": same p, other dropped weights.")
           .c_str());
}

void headsStepper(const PanelContext& ctx) {
  const ModelConfig& m = ctx.document.workspace().model;
  const std::vector<int> valid = isMultiHead(m.variant) ? validHeadCounts(m) : std::vector<int>{1};
  const auto at = std::find(valid.begin(), valid.end(), m.num_heads);
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("num_heads");
  besideLabel();
  auto step = [&](const char* id, const char* text, bool enabled, int to) {
    ImGui::BeginDisabled(!enabled);
    if (ImGui::Button(text)) set(ctx, "num_heads", to);
    ImGui::EndDisabled();
    layout().widget(id);
  };
  const bool known = at != valid.end();
  step("num_heads_minus", " − ##heads", known && at != valid.begin(), known && at != valid.begin() ? *(at - 1) : 1);
  ImGui::SameLine();
  ImGui::Text("%d", m.num_heads);
  layout().widget("num_heads");
  ImGui::SameLine();
  step("num_heads_plus", " + ##heads", known && at + 1 != valid.end(), known && at + 1 != valid.end() ? *(at + 1) : 1);
}

void variantCombo(const PanelContext& ctx) {
  const ModelConfig& m = ctx.document.workspace().model;
  ImGui::SetNextItemWidth(-1);
  if (ImGui::BeginCombo("##variant", variantTitle(m.variant))) {
    for (const VariantName& v : variantNames()) {
      // Each step as the notebook runs it: its seed, widths and batch (setModelFields).
      if (ImGui::Selectable(v.title, m.variant == v.value) && m.variant != v.value) set(ctx, "variant", v.id);
    }
    ImGui::EndCombo();
  }
  layout().widget("variant");
}

}  // namespace

// The generator as notebook cells leave it: draws earlier cells made after manual_seed(seed) before
// this module is built, and a manual_seed right before the forward's dropout. Folded unless used.
void ModelPanel::generatorSection(const PanelContext& ctx, const ModelConfig& m) {
  const bool used = m.draws_before > 0 || m.dropout_seed.has_value();
  if (used) ImGui::SetNextItemOpen(true, ImGuiCond_Once);
  // Not indented: its labels line up with the others.
  const bool open = ImGui::TreeNodeEx("generator",
                                      ImGuiTreeNodeFlags_SpanAvailWidth | ImGuiTreeNodeFlags_NoTreePushOnOpen);
  layout().widget("generator");
  hint(
      "torch's generator as the notebook's cells leave it: draws made before the module is built, a seed before the "
      "forward");
  if (!open) return;
  {
    Applicability a(m.variant == Variant::Simple ? "Simple self-attention draws nothing" : nullptr);
    label("draws before");
    if (const std::int64_t typed = typedNumber("##draws_before", -1, draws_before_, m.draws_before,
                                               Limits{}.max_draws_before);
        typed >= 0)
      set(ctx, "draws_before", typed);
    a.explain();
    layout().widget("draws_before");
    hint(
        "32-bit draws of torch's generator after torch.manual_seed(seed), before the module is built: what earlier "
        "cells drew. The notebook's CausalAttention [36] follows one MKL dropout: 1; its wrapper [38] follows [36]: "
        "19.");
  }
  {
    Applicability a(hasDropout(m.variant) ? nullptr : "Dropout appears in step 3 (causal attention) and later");
    bool reseed = m.dropout_seed.has_value();
    if (ImGui::Checkbox("seed before forward", &reseed))
      set(ctx, "dropout_seed", reseed ? nlohmann::json(m.seed) : nlohmann::json());
    a.explain();
    layout().widget("dropout_seed_on");
    hint("torch.manual_seed(S) right before the forward, as cells [31] and [32] do: the dropout masks start from S");
    if (reseed) {
      ImGui::SameLine();
      if (const std::int64_t typed = typedNumber("##dropout_seed", -1, dropout_seed_, *m.dropout_seed, 4294967295LL);
          typed >= 0)
        set(ctx, "dropout_seed", typed);
      a.explain();
      layout().widget("dropout_seed");
    }
  }
}

ModelPanel::ModelPanel()
    : reroll_(static_cast<std::uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count())) {}

void ModelPanel::draw(const PanelContext& ctx, ImVec2 pos, ImVec2 size) {
  beginPanelWindow("Model", "model", pos, size);
  variantCombo(ctx);
  ImGui::Separator();
  const ModelConfig& m = ctx.document.workspace().model;
  const bool simple = m.variant == Variant::Simple;
  {
    Applicability a(simple ? "Simple self-attention has no projection: its width is d_in" : nullptr);
    label("d_out");
    // The document fits num_heads to d_out (and brings the user's count back when d_out allows,
    // with a note): a drag from 2 to 14 passes 3, which 2 does not divide.
    sliderIntTyped("##d_out", m.d_out, 1, 64, "%d", ImGuiSliderFlags_AlwaysClamp, ctx.commands, "d_out",
                   setter(ctx, "d_out"));
    a.explain();
    layout().widget("d_out");
  }
  {
    Applicability a(isMultiHead(m.variant) ? nullptr : "This step has a single head (steps 4a and 4b have several)");
    headsStepper(ctx);
    a.explain();
  }
  if (m.variant == Variant::MultiHead) {
    // Beside the stepper while it fits (a row less at 1280 × 720); the formula and why only some
    // counts are offered show on hover.
    const std::string note = "head_dim = " + std::to_string(m.d_out / m.num_heads);
    const float gap = ImGui::GetStyle().ItemSpacing.x * 2;
    if (ImGui::GetItemRectMax().x + gap + ImGui::CalcTextSize(note.c_str()).x <=
        ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x)
      ImGui::SameLine(0, gap);
    ImGui::TextDisabled("%s", note.c_str());
    layout().widget("head_dim");
    hint(("head_dim = d_out / num_heads = " + std::to_string(m.d_out) + " / " + std::to_string(m.num_heads) +
          ". The seed asserts \"d_out must be divisible by num_heads\": only such counts are offered.")
             .c_str());
  } else if (m.variant == Variant::MultiHeadWrapper) {
    textDisabledWrapped("%d heads of width %d, concatenated: %d columns", m.num_heads, m.d_out, m.num_heads * m.d_out);
  }
  {
    Applicability a(hasDropout(m.variant) ? nullptr : "Dropout appears in step 3 (causal attention) and later");
    label("dropout p");
    sliderFloatTyped("##dropout", static_cast<float>(m.dropout), 0.0f, 1.0f, "%.2f", ImGuiSliderFlags_AlwaysClamp,
                     ctx.commands, "dropout p", [queue = &ctx.commands, now = m.dropout](float p) {
                       const double rounded = std::round(p * 100.0) / 100.0;  // the values a notebook would type
                       if (rounded != now) queue->push("set", {{"field", "dropout"}, {"value", rounded}}, "dropout");
                     });
    a.explain();
    layout().widget("dropout");
    flag(ctx, "training", "training mode", &ModelConfig::training, a);
    if (hasDropout(m.variant))
      hint("module.train(): dropout acts only in training mode (eval mode keeps every weight)");
    dropoutStreamButton(ctx, m);
    a.explain();
  }
  {
    Applicability a(simple ? "Simple self-attention has no random parameters" : nullptr);
    label("seed");
    // A typed seed applies on Enter or when the field loses focus (a click elsewhere), as one edit.
    const float seed_w = ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize("re-roll").x -
                         ImGui::GetStyle().FramePadding.x * 2 - ImGui::GetStyle().ItemSpacing.x;
    if (const std::int64_t typed = typedNumber("##seed", seed_w, seed_, m.seed, 4294967295LL); typed >= 0)
      set(ctx, "seed", typed);
    a.explain();
    layout().widget("seed");
    ImGui::SameLine();
    if (ImGui::Button("re-roll")) {
      std::uint32_t next;
      do next = static_cast<std::uint32_t>(reroll_() % 100000);
      while (next == m.seed);
      set(ctx, "seed", next);
    }
    a.explain();
    layout().widget("reroll");
  }
  generatorSection(ctx, m);
  flag(ctx, "qkv_bias", "qkv_bias", &ModelConfig::qkv_bias,
       Applicability(hasLinearLayers(m.variant) ? nullptr : "qkv_bias needs nn.Linear layers (step 2b and later)"));
  // causal beside qkv_bias while it fits: one row less on a short screen
  const float causal_w = ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x +
                         ImGui::CalcTextSize("causal mask").x;
  if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x * 3 + causal_w <=
      ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x) {
    ImGui::SameLine(0, ImGui::GetStyle().ItemSpacing.x * 3);
  }
  flag(ctx, "causal", "causal mask", &ModelConfig::causal,
       Applicability(simple ? "Simple self-attention has no mask" : nullptr));
  if (!simple) hint("hide future tokens: −∞ above the diagonal before softmax");
  if (!simple && m.causal) {  // the notebook's two ways: −∞ on the scores, or × tril on the weights
    label("masking");
    int route = m.causal_route == CausalRoute::Tril ? 1 : 0;
    const std::string items = std::string(causalRouteTitle(CausalRoute::NegInf)) + '\0' +
                              causalRouteTitle(CausalRoute::Tril) + '\0';
    if (ImGui::Combo("##causal_route", &route, items.c_str())) {
      set(ctx, "causal_route", causalRouteId(route == 1 ? CausalRoute::Tril : CausalRoute::NegInf));
      if (route == 1)  // the route's own maps, shown at once
        ctx.commands.push("view",
                          {{"field", "columns"},
                           {"value", columnsWith(ctx.view, {"unmasked_weights", "tril", "tril_weights"}, true)}});
    }
    layout().widget("causal_route");
    hint(
        "−∞ above the diagonal before the softmax, as the classes do ([29]–[30]); or the notebook's first way "
        "([26]–[28]): the softmax over every key, × tril, ÷ each row's sum. The same weights, up to rounding.");
  }
  label("scale");
  int scale = m.scale == Scale::SqrtDk ? 0 : 1;
  if (ImGui::Combo("##scale", &scale, "÷ √dₖ (the notebook)\0none\0"))
    set(ctx, "scale", scaleId(scale == 0 ? Scale::SqrtDk : Scale::None));
  layout().widget("scale");
  if (simple) {
    label("normalize");
    int norm = m.normalization == Normalization::Softmax ? 0 : 1;
    if (ImGui::Combo("##normalization", &norm, "softmax\0÷ row sum\0"))
      set(ctx, "normalization", normalizationId(norm == 0 ? Normalization::Softmax : Normalization::Sum));
    layout().widget("normalization");
  }
  label("batch size");
  sliderIntTyped("##batch", m.batch_size, 1, 8, "%d", ImGuiSliderFlags_AlwaysClamp, ctx.commands, "batch size",
                 setter(ctx, "batch_size"));
  layout().widget("batch_size");

  ImGui::Separator();
  const ExecutionOptions& exec = ctx.exec;
  int path = exec.parallel ? 1 : 0;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("engine");
  besideLabel();
  if (ImGui::RadioButton("serial", &path, 0)) ctx.commands.push("engine", {{"parallel", false}});
  layout().widget("exec_serial");
  // parallel beside serial while it fits, else under it (large text sizes)
  const float parallel_w = ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x +
                           ImGui::CalcTextSize("parallel").x;
  if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + parallel_w <=
      ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x)
    ImGui::SameLine();
  else
    ImGui::SetCursorPosX(controlsX());
  if (ImGui::RadioButton("parallel", &path, 1)) ctx.commands.push("engine", {{"parallel", true}});
  layout().widget("exec_parallel");
  {
    Applicability a(exec.parallel ? nullptr : "Threads apply to the parallel path");
    label("threads");
    sliderIntTyped("##threads", exec.threads, 0, 2 * resolveThreads(0), exec.threads == 0 ? "all cores" : "%d",
                   ImGuiSliderFlags_AlwaysClamp, ctx.commands, "threads", [queue = &ctx.commands](int threads) {
                     queue->push("engine", {{"threads", threads}});
                   });
    a.explain();
    layout().widget("threads");
  }
  ImGui::Text("engine time %.2f ms%s", ctx.snapshot ? ctx.snapshot->milliseconds : 0.0,
              ctx.computing ? "  (computing…)" : "");
  content_h_ = ImGui::GetCursorPosY() - ImGui::GetStyle().ItemSpacing.y + ImGui::GetStyle().WindowPadding.y;
  ImGui::End();
}

}  // namespace attnscope
