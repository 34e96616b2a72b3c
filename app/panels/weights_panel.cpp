#include "panels/weights_panel.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

#include "display/colormap.h"
#include "display/number_text.h"
#include "display/parameter_axes.h"
#include "editing/parameter_edits.h"
#include "engine/parameters.h"
#include "widgets/fonts.h"
#include "widgets/heatmap.h"
#include "widgets/layout_dump.h"
#include "widgets/theme.h"
#include "widgets/typed_number.h"
#include "widgets/value_cell.h"

namespace attnscope {

namespace {

// The shape, short for a card's title ("2×3"), and in words for its tooltip ("2 × 3 (d_out × d_in)").
std::string shapeShort(const NamedTensor& t) {
  return t.is_vector ? str(t.value.cols()) : str(t.value.rows()) + "×" + str(t.value.cols());
}

// How the hovered number is used, as the notebook's code uses it.
std::string describeCell(const NamedTensor& t, const ParameterKind& k, int i, int j, const ModelConfig& m) {
  const std::string v = formatFixed(t.value(i, j));
  const std::string out = k.out;
  if (t.is_vector) return t.name + "[" + str(j) + "] = " + v + "\nadded to " + out + str(j) + " of every token";
  if (k.bare)
    return t.name + "[" + str(i) + ", " + str(j) + "] = " + v + "\nhow much input d" + str(i) + " adds to " + out +
           str(j) + " of every token: " + out + " = x @ " + k.base;
  std::string s = t.name + "[" + str(i) + ", " + str(j) + "] = " + v + "\nhow much ";
  if (k.base == "out_proj")
    s += "context column c" + str(j) + " adds to output o" + str(i) + ": out = context @ W.T + b";
  else
    s += "input d" + str(j) + " adds to " + out + str(i) + " of every token: " + out + " = x @ W.T" +
         (m.qkv_bias ? " + b" : "");
  if (m.variant == Variant::MultiHead && k.base != "out_proj" && m.num_heads > 1) {
    const int width = m.d_out / m.num_heads;
    s += "\n(row " + str(i) + " belongs to head " + str(i / width + 1) + ")";
  }
  return s;
}

// The panel's first line: the module as the notebook builds it.
std::string constructorText(const ModelConfig& m, int d_in) {
  std::string args = "d_in=" + str(d_in) + ", d_out=" + str(m.d_out);
  if (isMultiHead(m.variant)) args += ", num_heads=" + str(m.num_heads);
  if (hasLinearLayers(m.variant)) args += std::string(", qkv_bias=") + (m.qkv_bias ? "True" : "False");
  return std::string(seedClassName(m.variant)) + "(" + args + ") after torch.manual_seed(" + str(m.seed) + ")";
}

// How the tensors are laid out, in a sentence a learner can check against the notebook.
std::string layoutText(const ModelConfig& m) {
  if (m.variant == Variant::SelfAttentionV1)
    return "As the state_dict holds them: SelfAttention_v1 keeps each W as d_in × d_out (torch.rand) and computes "
           "q = x @ W_query.";
  std::string s =
      "As the state_dict holds them: nn.Linear keeps its weight as d_out × d_in and computes q = x @ W.T"
      " (the Heatmaps tab shows W_q transposed, as x @ W uses it).";
  if (m.variant == Variant::MultiHead && m.num_heads > 1) {
    const int width = m.d_out / m.num_heads;
    s += " MultiHeadAttention splits the d_out rows into heads:";
    for (int h = 0; h < m.num_heads && h < 8; ++h)
      s += (h ? ", " : " ") + std::string(width > 1 ? "rows " : "row ") + str(h * width) +
           (width > 1 ? "–" + str(h * width + width - 1) : "") + " head " + str(h + 1);
    if (m.num_heads > 8) s += ", …";
    s += ".";
  }
  if (m.variant == Variant::MultiHeadWrapper)
    s += " The wrapper holds one CausalAttention per head: heads.0 … heads." + str(m.num_heads - 1) +
         " (Tab or the head selector shows one).";
  return s;
}

// The width a table of `cols` value columns takes beside its label column `label_w` wide.
float tableWidth(int cols, float label_w, float value_w) {
  const float cell = value_w + ImGui::GetStyle().CellPadding.x * 2;
  return label_w + ImGui::GetStyle().CellPadding.x * 2 + static_cast<float>(shownValueColumns(cols, 1)) * cell;
}

}  // namespace

void WeightsPanel::refresh(const Document& doc) {
  if (version_ == doc.version() && version_ != 0) return;
  version_ = doc.version();
  const Workspace& w = doc.workspace();
  tensors_ = std::make_shared<const std::vector<NamedTensor>>(
      currentParameters(w.model, static_cast<int>(w.embeddings.cols())));
  own_.clear();
  ranges_.clear();
  row_labels_.clear();
  col_labels_.clear();
  for (const NamedTensor& t : *tensors_) {
    const ParameterKind k = kindOf(t);
    own_.push_back(isOwnParameter(w.model, t.name));
    ranges_.push_back(finiteRange(t.value));
    ParameterAxes axes = parameterAxes(t, k);
    row_labels_.push_back(std::move(axes.rows));
    col_labels_.push_back(std::move(axes.cols));
  }
}

void WeightsPanel::card(const PanelContext& ctx, std::size_t index, float width) {
  const NamedTensor& t = (*tensors_)[index];
  const ModelConfig& m = ctx.document.workspace().model;
  const ParameterKind k = kindOf(t);
  const int rows = static_cast<int>(t.value.rows()), cols = static_cast<int>(t.value.cols());
  ImGui::PushID(t.name.c_str());
  ImGui::BeginGroup();
  // The map: a cell per number, coloured as the Heatmaps tab colours a signed map.
  const float fs = fonts().small->FontSize, ui = ImGui::GetTextLineHeight();
  const float label_w = fonts().small->CalcTextSizeA(fs, FLT_MAX, 0, row_labels_[index].back().c_str()).x + px(4);
  const float cell = std::clamp((width - label_w) / static_cast<float>(cols), 1.0f, px(34));
  const float map_h = std::min(ui + fs + px(4) + cell * rows + heatmapColorbarHeight(), px(300));
  HeatmapSpec spec;
  spec.id = "param_" + t.name;
  spec.title = t.name + "  " + shapeShort(t) + (own_[index] ? "  · yours" : "");
  spec.values = StageMap(t.value);
  spec.owner = tensors_;                        // a new version replaces tensors_, never these values
  LookChoices choices = lookChoices(ctx.view);  // the view's colormap (display/map_look.h), linear
  choices.scale = ColourScale::Linear;
  const ValueRange range = ranges_[index];
  spec.look = colouredBy(range, false, choices);
  spec.row_labels = &row_labels_[index];
  spec.col_labels = &col_labels_[index];
  spec.version = version_;
  spec.look.cell_text = [](float v) { return formatFixed(v, 3); };
  spec.describe = [&t, k, &m](int i, int j) {
    return describeCell(t, k, i, j, m) + "\n" + t.name + ": " + shapeWords(t, k);
  };
  spec.dump = {{"parameter", t.name}, {"own", static_cast<bool>(own_[index])}};
  // As wide as the card, for the title: the height sets the cells' size.
  drawHeatmap(ctx.textures, spec, ImVec2(width, map_h));

  // The table: the same numbers, each a drag field (double-click to type), as the inputs' cells.
  const int shown = shownValueColumns(cols, 1);
  const float row_h = ImGui::GetFrameHeightWithSpacing();
  // Every row when they fit (a horizontal scrollbar only when the columns do not), else 220 px of them.
  const float value_w = valueColumnWidth(range.lo, range.hi);
  const float wide = tableWidth(cols, label_w, value_w) > width ? ImGui::GetStyle().ScrollbarSize : 0.0f;
  const float table_h = std::min((rows + 1.0f) * row_h + ImGui::GetStyle().CellPadding.y * 2 + wide, px(220));
  const ImGuiTableFlags flags = ImGuiTableFlags_ScrollY | ImGuiTableFlags_ScrollX | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  if (ImGui::BeginTable("values", shown + 1, flags, ImVec2(width, table_h))) {
    ImGui::TableSetupScrollFreeze(1, 1);
    ImGui::TableSetupColumn("", 0, label_w);
    for (int j = 0; j < shown; ++j)
      ImGui::TableSetupColumn(col_labels_[index][static_cast<std::size_t>(j)].c_str(), 0, value_w);
    ImGui::TableHeadersRow();
    ImGuiListClipper clipper;
    clipper.Begin(rows);
    while (clipper.Step())
      for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
        ImGui::PushID(i);
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextDisabled("%s", row_labels_[index][static_cast<std::size_t>(i)].c_str());
        for (int j = 0; j < shown; ++j) {
          ImGui::TableNextColumn();
          ImGui::PushID(j);
          float v = t.value(i, j);
          std::string refused;
          // Kept by the cell while typed into, called maybe a frame later: nothing of this frame's.
          const auto set = [queue = &ctx.commands, name = t.name, i, j](float value) {  // a drag: one undo step
            queue->push("set_parameter", {{"name", name}, {"row", i}, {"col", j}, {"value", value}},
                        "parameter " + name + " " + str(i) + "," + str(j));
          };
          if (valueCell(v, 4, nullptr, &refused, set)) set(v);
          if (!refused.empty())
            ctx.commands.refuse(typedRefusal(refused, t.name + "[" + str(i) + "][" + str(j) + "]", cellText(v, 4)));
          if (ImGui::IsItemHovered() && !ImGui::IsItemActive())
            ImGui::SetTooltip("%s", describeCell(t, k, i, j, m).c_str());
          layout().widget("param_" + t.name + "_" + str(i) + "_" + str(j));
          ImGui::PopID();
        }
        ImGui::PopID();
      }
    ImGui::EndTable();
  }
  if (shown < cols)
    ImGui::TextDisabled("showing %s0–%d of %d columns", col_labels_[index][0].substr(0, 1).c_str(), shown - 1, cols);
  ImGui::EndGroup();
  ImGui::PopID();
}

void WeightsPanel::draw(const PanelContext& ctx) {
  const ImVec2 wp = ImGui::GetWindowPos(), ws = ImGui::GetWindowSize();
  layout().panel("parameters", wp, ImVec2(wp.x + ws.x, wp.y + ws.y));
  const Workspace& w = ctx.document.workspace();
  const ModelConfig& m = w.model;
  const int d_in = static_cast<int>(w.embeddings.cols());
  nlohmann::json& state = layout().state()["weights_panel"];
  ImGui::PushTextWrapPos(0);
  if (!hasProjections(m.variant)) {  // nothing to show, and why: as the model panel says why a control is off
    const char* why =
        "Simple self-attention (step 1) has no trainable weights: the queries, keys and values are the inputs "
        "themselves, Q = K = V = X, and the scores are x_i · x_j. Choose step 2a or later in the Model panel to see "
        "W_query, W_key and W_value.";
    ImGui::TextUnformatted(why);
    ImGui::PopTextWrapPos();
    state = {{"tensors", nlohmann::json::array()}, {"note", why}};
    return;
  }
  refresh(ctx.document);

  // The module, whose values these are; then whose they are, and the way back to the seeded ones.
  ImGui::TextUnformatted(constructorText(m, d_in).c_str());
  std::string owned;
  int own_count = 0;
  for (std::size_t i = 0; i < tensors_->size(); ++i)
    if (own_[i]) owned += (own_count++ ? ", " : "") + (*tensors_)[i].name;
  const std::string tensor_count = str(own_count) + " of " + str(static_cast<long long>(tensors_->size())) + " tensors";
  const std::string status = own_count == 0
                                 ? "The seeded initialization: what the constructor draws. Drag a number, or "
                                   "double-click it to type your own; "
                                   "it is saved with the workspace."
                                 : "Your own values in " + tensor_count + " (" + owned +
                                       "), saved with the workspace as \"parameters\"; the others are the seeded draw.";
  const ImVec4 status_colour = ImGui::ColorConvertU32ToFloat4(own_count ? theme().selection : theme().text_dim);
  // How the state_dict lays the numbers out. Each explanation that would take more than a tenth of
  // the tab (three lines of 650 px at 1280 × 800 and 175 %: the numbers below the fold) is folded:
  // the status into one short line, the layout behind a "(?)" — at the status's end when it is
  // folded too, else beside the buttons where it fits (past the tab's edge it was out of sight, and
  // its text wrapped a letter a line below the buttons), else under them.
  const std::string how = layoutText(m);
  const float room = ImGui::GetContentRegionAvail().x, tenth = ImGui::GetWindowHeight() * 0.1f;
  const bool fold_how = ImGui::CalcTextSize(how.c_str(), nullptr, false, room).y > tenth;
  const bool fold_status = ImGui::CalcTextSize(status.c_str(), nullptr, false, room).y > tenth;
  const auto hint = [&](const char* text, const ImVec4& colour, const std::string& says) {
    ImGui::TextColored(colour, "%s", text);
    if (ImGui::IsItemHovered()) {
      ImGui::BeginTooltip();
      ImGui::PushTextWrapPos(ImGui::GetFontSize() * 30);
      ImGui::TextUnformatted(says.c_str());
      ImGui::PopTextWrapPos();
      ImGui::EndTooltip();
    }
  };
  if (fold_status) {
    const std::string short_status = (own_count == 0 ? "Seeded values" : "Your values in " + tensor_count) + " (?)";
    hint(short_status.c_str(), status_colour, fold_how ? status + "\n\n" + how : status);
    layout().widget(fold_how ? "weights_layout_hint" : "weights_status_hint");
  } else {
    ImGui::TextColored(status_colour, "%s", status.c_str());
  }
  ImGui::BeginDisabled(own_count == 0);
  if (ImGui::Button("Back to the seeded initialization")) ctx.commands.push("reset_parameters");
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip(
        own_count ? "Removes your values: torch.manual_seed(%u) and the constructor's draws again (one undo step)"
                  : "These are the seeded values (torch.manual_seed(%u)): nothing to go back to",
        m.seed);
  layout().widget("weights_reset");
  const float spacing = ImGui::GetStyle().ItemSpacing.x;
  const auto fits = [&](const char* label, float padding) {  // beside the last item, inside the tab
    return ImGui::GetItemRectMax().x + spacing + ImGui::CalcTextSize(label).x + padding <=
           ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  };
  if (fits("Paste parameters", ImGui::GetStyle().FramePadding.x * 2)) ImGui::SameLine();
  if (ImGui::Button("Paste parameters")) ctx.commands.push("paste_parameters");  // the clipboard's state_dict
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "print(m.state_dict()) copied from your notebook (OrderedDict([('W_query.weight', tensor(…)), …]));\n"
        "print it in full first: torch.set_printoptions(profile=\"full\", precision=8) (4 decimals otherwise)");
  layout().widget("weights_paste");
  if (fold_how && !fold_status) {
    if (fits("(?)", 0)) ImGui::SameLine();
    hint("(?)", ImGui::GetStyle().Colors[ImGuiCol_TextDisabled], how);
    layout().widget("weights_layout_hint");
  } else if (!fold_how) {
    ImGui::TextDisabled("%s", how.c_str());
    layout().widget("weights_layout_text");
  }
  ImGui::PopTextWrapPos();
  ImGui::Separator();

  // The cards, flowing left to right: W_query, W_key, W_value (and their biases) of each head, out_proj.
  nlohmann::json listed = nlohmann::json::array();
  ImGui::BeginChild("weights_cards", ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
  const float avail = ImGui::GetContentRegionAvail().x;
  const float gap = ImGui::GetStyle().ItemSpacing.x * 3;
  std::string group = "-";
  float line_end = 0;  // the right edge of the last card on this line
  for (std::size_t index = 0; index < tensors_->size(); ++index) {
    const NamedTensor& t = (*tensors_)[index];
    const ParameterKind k = kindOf(t);
    if (!k.head.empty() && ctx.view.head >= 0 && k.head != "heads." + str(ctx.view.head) + ".") continue;
    if (k.head != group) {  // a wrapper's head starts a line of its own, titled
      group = k.head;
      if (!group.empty()) {
        if (line_end > 0) ImGui::Spacing();
        ImGui::TextUnformatted(("head " + str(std::stoi(group.substr(6)) + 1) + " · " +
                                group.substr(0, group.size() - 1) + " (CausalAttention)")
                                   .c_str());
        line_end = 0;
      }
    }
    const int cols = static_cast<int>(t.value.cols());
    const float table_w = px(40) +
                          static_cast<float>(shownValueColumns(cols, 1)) *
                              (px(56) + ImGui::GetStyle().CellPadding.x * 2) +
                          ImGui::GetStyle().ScrollbarSize;
    const float width = std::min(avail, std::max(table_w, px(250)));
    if (line_end > 0 && line_end + gap + width <= avail)
      ImGui::SameLine(0, gap);
    else
      line_end = 0;
    card(ctx, index, width);
    line_end += (line_end > 0 ? gap : 0) + width;
    listed.push_back({{"name", t.name},
                      {"rows", t.value.rows()},
                      {"cols", t.value.cols()},
                      {"own", static_cast<bool>(own_[index])}});
  }
  ImGui::EndChild();
  state = {{"tensors", listed}, {"module", constructorText(m, d_in)}, {"status", status}, {"own", own_count}};
}

}  // namespace attnscope
