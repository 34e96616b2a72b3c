#include "model_panel.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "layout_dump.h"
#include "theme.h"

namespace attnscope {

namespace {

// Disables the controls between begin and end when `why` is non-empty, and says why on hover.
struct Applicability {
  explicit Applicability(const char* why) : why_(why) {
    if (why_) ImGui::BeginDisabled();
  }
  ~Applicability() {
    if (why_) ImGui::EndDisabled();
  }
  // Call after each control.
  void explain() const {
    if (why_ && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", why_);
  }

 private:
  const char* why_;
};

// num_heads values the seed accepts: divisors of d_out for multihead, 1 … 64 for the wrapper.
std::vector<int> validHeadCounts(const ModelConfig& m) {
  std::vector<int> out;
  for (int h = 1; h <= 64; ++h)
    if (m.variant != Variant::MultiHead || m.d_out % h == 0) out.push_back(h);
  return out;
}

void label(const char* text) {
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(text);
  ImGui::SameLine(ImGui::GetWindowWidth() * 0.36f);
  ImGui::SetNextItemWidth(-1);
}

void headsStepper(AppState& app) {
  ModelConfig& m = app.workspace.model;
  const std::vector<int> valid = isMultiHead(m.variant) ? validHeadCounts(m) : std::vector<int>{1};
  auto at = std::find(valid.begin(), valid.end(), m.num_heads);
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("num_heads");
  ImGui::SameLine(ImGui::GetWindowWidth() * 0.36f);
  const bool can_down = at != valid.end() && at != valid.begin();
  const bool can_up = at != valid.end() && at + 1 != valid.end();
  ImGui::BeginDisabled(!can_down);
  if (ImGui::Button(" − ##heads")) {
    m.num_heads = *(at - 1);
    app.changed();
  }
  ImGui::EndDisabled();
  layout().widget("num_heads_minus");
  ImGui::SameLine();
  ImGui::Text("%d", m.num_heads);
  layout().widget("num_heads");
  ImGui::SameLine();
  ImGui::BeginDisabled(!can_up);
  if (ImGui::Button(" + ##heads")) {
    m.num_heads = *(at + 1);
    app.changed();
  }
  ImGui::EndDisabled();
  layout().widget("num_heads_plus");
}

}  // namespace

void drawModelPanel(AppState& app, ImVec2 pos, ImVec2 size) {
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  ImGui::Begin("Model", nullptr, ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse);
  layout().panel("model", pos, ImVec2(pos.x + size.x, pos.y + size.y));
  ModelConfig& m = app.workspace.model;
  const int d_in = static_cast<int>(app.workspace.embeddings.cols());

  ImGui::SetNextItemWidth(-1);
  if (ImGui::BeginCombo("##variant", variantTitle(m.variant))) {
    for (Variant v : {Variant::Simple, Variant::SelfAttentionV1, Variant::SelfAttentionV2, Variant::Causal,
                      Variant::MultiHeadWrapper, Variant::MultiHead}) {
      if (ImGui::Selectable(variantTitle(v), m.variant == v) && m.variant != v) {
        // Each step as the notebook runs it: its seed, widths and batch.
        m = defaultConfig(v);
        if (v == Variant::Simple) m.d_out = d_in;
        app.changed();
      }
    }
    ImGui::EndCombo();
  }
  layout().widget("variant");
  ImGui::Separator();

  const bool simple = m.variant == Variant::Simple;
  {
    Applicability a(simple ? "Simple self-attention has no projection: its width is d_in" : nullptr);
    label("d_out");
    int d_out = m.d_out;
    if (ImGui::SliderInt("##d_out", &d_out, 1, 64, "%d", ImGuiSliderFlags_AlwaysClamp) && d_out != m.d_out) {
      m.d_out = d_out;
      if (m.variant == Variant::MultiHead && m.d_out % m.num_heads != 0) {
        const auto valid = validHeadCounts(m);  // the largest valid count not above the old one
        m.num_heads = *std::prev(std::upper_bound(valid.begin(), valid.end(), m.num_heads));
      }
      app.changed();
    }
    a.explain();
    layout().widget("d_out");
  }
  {
    Applicability a(isMultiHead(m.variant) ? nullptr : "This step has a single head (steps 4a and 4b have several)");
    headsStepper(app);
    a.explain();
  }
  if (m.variant == Variant::MultiHead) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("head_dim = d_out / num_heads = %d. The seed asserts \"d_out must be divisible by "
                       "num_heads\": only such counts are offered.", m.d_out / m.num_heads);
    ImGui::PopStyleColor();
  } else if (m.variant == Variant::MultiHeadWrapper)
    ImGui::TextDisabled("%d heads of width %d, concatenated: %d columns", m.num_heads, m.d_out,
                        m.num_heads * m.d_out);
  {
    Applicability a(hasDropout(m.variant) ? nullptr : "Dropout appears in step 3 (causal attention) and later");
    label("dropout p");
    float p = static_cast<float>(m.dropout);
    if (ImGui::SliderFloat("##dropout", &p, 0.0f, 0.95f, "%.2f", ImGuiSliderFlags_AlwaysClamp)) {
      m.dropout = std::round(p * 100.0) / 100.0;  // the values a notebook would type
      app.changed();
    }
    a.explain();
    layout().widget("dropout");
    bool training = m.training;
    if (ImGui::Checkbox("training mode (dropout active)", &training)) {
      m.training = training;
      app.changed();
    }
    a.explain();
    layout().widget("training");
  }
  {
    Applicability a(simple ? "Simple self-attention has no random parameters" : nullptr);
    label("seed");
    ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize("re-roll").x -
                            ImGui::GetStyle().FramePadding.x * 2 - ImGui::GetStyle().ItemSpacing.x);
    std::uint32_t seed = m.seed;
    if (ImGui::InputScalar("##seed", ImGuiDataType_U32, &seed, nullptr, nullptr, "%u",
                           ImGuiInputTextFlags_EnterReturnsTrue) && seed != m.seed) {
      m.seed = seed;
      app.changed();
    }
    a.explain();
    layout().widget("seed");
    ImGui::SameLine();
    if (ImGui::Button("re-roll")) {
      static std::mt19937 pick(static_cast<std::uint32_t>(
          std::chrono::steady_clock::now().time_since_epoch().count()));
      std::uint32_t next;
      do next = static_cast<std::uint32_t>(pick() % 100000);
      while (next == m.seed);
      m.seed = next;
      app.changed();
    }
    a.explain();
    layout().widget("reroll");
  }
  {
    Applicability a(hasLinearLayers(m.variant) ? nullptr
                                               : "qkv_bias needs nn.Linear layers (step 2b and later)");
    bool bias = m.qkv_bias;
    if (ImGui::Checkbox("qkv_bias", &bias)) {
      m.qkv_bias = bias;
      app.changed();
    }
    a.explain();
    layout().widget("qkv_bias");
  }
  {
    Applicability a(simple ? "Simple self-attention has no mask" : nullptr);
    bool causal = m.causal;
    if (ImGui::Checkbox("causal mask (hide future tokens)", &causal)) {
      m.causal = causal;
      app.changed();
    }
    a.explain();
    layout().widget("causal");
  }
  label("scale");
  int scale = m.scale == Scale::SqrtDk ? 0 : 1;
  if (ImGui::Combo("##scale", &scale, "÷ √dₖ (the notebook)\0none\0")) {
    m.scale = scale == 0 ? Scale::SqrtDk : Scale::None;
    app.changed();
  }
  layout().widget("scale");
  if (simple) {
    label("normalize");
    int norm = m.normalization == Normalization::Softmax ? 0 : 1;
    if (ImGui::Combo("##normalization", &norm, "softmax\0÷ row sum\0")) {
      m.normalization = norm == 0 ? Normalization::Softmax : Normalization::Sum;
      app.changed();
    }
    layout().widget("normalization");
  }
  label("batch size");
  if (ImGui::SliderInt("##batch", &m.batch_size, 1, 8, "%d", ImGuiSliderFlags_AlwaysClamp)) app.changed();
  layout().widget("batch_size");

  ImGui::Separator();
  ImGui::TextUnformatted("Engine");
  int path = app.exec.parallel ? 1 : 0;
  if (ImGui::RadioButton("serial CPU", &path, 0)) {
    app.exec.parallel = false;
    app.changed();
  }
  layout().widget("exec_serial");
  ImGui::SameLine();
  ImGui::BeginDisabled(!openmpAvailable());
  if (ImGui::RadioButton("OpenMP", &path, 1)) {
    app.exec.parallel = true;
    app.changed();
  }
  ImGui::EndDisabled();
  layout().widget("exec_openmp");
  {
    Applicability a(app.exec.parallel ? nullptr : "Threads apply to the OpenMP path");
    label("threads");
    if (ImGui::SliderInt("##threads", &app.exec.threads, 0, 2 * resolveThreads(0), app.exec.threads == 0 ? "all cores" : "%d",
                         ImGuiSliderFlags_AlwaysClamp))
      app.changed();
    a.explain();
    layout().widget("threads");
  }
  ImGui::Text("engine time %.2f ms%s", app.engine_ms, app.computing ? "  (computing…)" : "");
  ImGui::End();
}

}  // namespace attnscope
