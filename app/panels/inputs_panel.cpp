#include "panels/inputs_panel.h"

#include <imgui_stdlib.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include "display/label_placement.h"
#include "display/number_text.h"
#include "editing/token_table.h"
#include "widgets/fonts.h"
#include "widgets/layout_dump.h"
#include "widgets/text.h"
#include "widgets/theme.h"
#include "widgets/typed_number.h"
#include "widgets/value_cell.h"

namespace attnscope {

namespace {

// The next item beside the last one when `width` more pixels fit on the line, else on a new line
// (narrow panels, large text sizes).
void besideIfFits(float width, float spacing = -1) {
  const ImGuiStyle& style = ImGui::GetStyle();
  const float gap = spacing < 0 ? style.ItemSpacing.x : spacing;
  if (ImGui::GetItemRectMax().x + gap + width <= ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x)
    ImGui::SameLine(0, gap);
}

float buttonWidth(const char* text) {
  return ImGui::CalcTextSize(text, nullptr, true).x + ImGui::GetStyle().FramePadding.x * 2;
}

// The tokens as the sentence field shows them: as typed (joinSentence: "step." not "step ."), or
// nothing when there are more than a sentence holds (a field that scrolls through 1024 names reads
// as nothing).
constexpr std::size_t kSentenceTokens = 32, kSentenceChars = 200;
std::string sentenceOf(const std::vector<std::string>& tokens) {
  if (tokens.size() > kSentenceTokens) return "";
  std::string text = joinSentence(tokens);
  return text.size() > kSentenceChars ? "" : text;
}

}  // namespace

void InputsPanel::mirrorTokens(const PanelContext& ctx) {
  if (ctx.document.version() == mirrored_version_) return;
  mirrored_version_ = ctx.document.version();
  const Matrix& x = ctx.document.workspace().embeddings;  // the value columns' width follows their range
  values_lo_ = x.size() ? x.minCoeff() : 0.0f;
  values_hi_ = x.size() ? x.maxCoeff() : 0.0f;
  const std::vector<std::string>& tokens = ctx.document.workspace().tokens;
  if (tokens == mirrored_tokens_) return;
  mirrored_tokens_ = tokens;
  missing_glyphs_ = 0;
  for (const std::string& token : tokens) missing_glyphs_ += missingGlyphs(token);
  if (sentence_ != mirrored_) return;  // words being typed: they stay
  sentence_ = mirrored_ = sentenceOf(tokens);
}

void InputsPanel::toolbar(const PanelContext& ctx) {
  const Workspace& ws = ctx.document.workspace();
  CommandQueue& cmd = ctx.commands;
  mirrorTokens(ctx);
  // The sentence field with "make tokens" beside it, or above it when the field would be narrower
  // than half the panel.
  const float avail = ImGui::GetContentRegionAvail().x;
  const float field_w = avail - buttonWidth("make tokens") - ImGui::GetStyle().ItemSpacing.x;
  ImGui::SetNextItemWidth(field_w >= avail * 0.5f ? field_w : avail);
  const bool enter = inputTextKept("##sentence", "type a sentence…", &sentence_, sentence_field_,
                                   ImGuiInputTextFlags_EnterReturnsTrue);
  layout().widget("sentence");
  layout().state()["sentence"] = sentence_;
  if (field_w >= avail * 0.5f) ImGui::SameLine();
  if (ImGui::Button("make tokens") || enter) {
    cmd.push("sentence", {{"text", sentence_}, {"seed", seed_}});
    mirrored_ = sentence_;  // made into tokens: the field shows them from now on
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("One token per word; the same word always gets the same vector (for this d_in and seed)");
  layout().widget("make_tokens");
  layout().state()["missing_glyphs"] = missing_glyphs_;
  if (missing_glyphs_ > 0) {  // CJK, emoji: DejaVu Sans has none
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped(
        "Some tokens have characters no installed font draws here (emoji); the maps write "
        "them as U+1F600. The numbers are not affected.");
    ImGui::PopStyleColor();
  }

  const int d_in = static_cast<int>(ws.embeddings.cols());
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("d_in");
  ImGui::SameLine();
  ImGui::BeginDisabled(d_in <= 1);
  if (ImGui::Button(" − ##d_in")) cmd.push("d_in", {{"value", d_in - 1}, {"seed", seed_}});
  ImGui::EndDisabled();
  layout().widget("d_in_minus");
  ImGui::SameLine();
  ImGui::Text("%d", d_in);
  ImGui::SameLine();
  if (ImGui::Button(" + ##d_in")) cmd.push("d_in", {{"value", d_in + 1}, {"seed", seed_}});
  layout().widget("d_in_plus");
  // randomize and its seed field (at least four digits wide) beside d_in while they fit
  const float seed_w = ImGui::CalcTextSize("0000").x + ImGui::GetStyle().FramePadding.x * 2;
  besideIfFits(buttonWidth("randomize") + ImGui::GetStyle().ItemSpacing.x + seed_w, px(16));
  if (ImGui::Button("randomize")) cmd.push("randomize", {{"seed", seed_}});
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("torch.manual_seed(seed); torch.rand(T, d_in)");
  layout().widget("randomize");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-1);
  ImGui::InputScalar("##inputs_seed", ImGuiDataType_U32, &seed_);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("seed for randomize, new tokens, new columns and sentence words");
  if (ImGui::Button("book example")) cmd.push("book_example");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("\"Your journey starts with one step\" and its 3-d embeddings");
  layout().widget("book_example");
  besideIfFits(buttonWidth("+ token"));
  if (ImGui::Button("+ token")) {
    const int T = static_cast<int>(ws.embeddings.rows());
    cmd.push("add_token", {{"seed", seed_ + static_cast<std::uint32_t>(T)}});
  }
  layout().widget("add_token");
  besideIfFits(buttonWidth("paste"));
  if (ImGui::Button("paste")) cmd.push("paste_embeddings");  // the clipboard's text (Ctrl+Shift+V)
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "Paste embeddings (Ctrl+Shift+V): the clipboard's print(x) of a tensor, a NumPy array,\n"
        "nested lists or CSV, one row per token; the names stay when the count matches");
  layout().widget("paste_embeddings");
}

void InputsPanel::table(const PanelContext& ctx, float height) {
  const Workspace& ws = ctx.document.workspace();
  CommandQueue& cmd = ctx.commands;
  const int selected = ctx.view.token;
  const int T = static_cast<int>(ws.embeddings.rows()), d_in = static_cast<int>(ws.embeddings.cols());
  // ImGui tables take at most 64 columns: wide inputs (GPT-2's 768) show their first 61.
  const int shown_cols = shownValueColumns(d_in, 3);
  const ImGuiTableFlags flags = ImGuiTableFlags_ScrollY | ImGuiTableFlags_ScrollX | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  // Cells padded 1 px (ImGui's default is 4): the book's 3 columns and the row's ↑ ↓ × then fit
  // the panel's width at 1600 × 1000 instead of scrolling × out of view.
  ImGui::PushStyleVar(ImGuiStyleVar_CellPadding,
                      ImVec2(std::min(ImGui::GetStyle().CellPadding.x, px(1)), ImGui::GetStyle().CellPadding.y));
  const bool open = ImGui::BeginTable("embeddings", shown_cols + 3, flags, ImVec2(0, height));
  ImGui::PopStyleVar();
  if (!open) return;
  ImGui::TableSetupScrollFreeze(2, 1);
  ImGui::TableSetupColumn("#");
  ImGui::TableSetupColumn("token", 0, px(60));
  const float value_w = valueColumnWidth(values_lo_, values_hi_);  // the range found once per edit (mirrorTokens)
  for (int c = 0; c < shown_cols; ++c) ImGui::TableSetupColumn(("d" + std::to_string(c)).c_str(), 0, value_w);
  const ImGuiStyle& style = ImGui::GetStyle();  // the three small buttons, 2 px apart
  ImGui::TableSetupColumn("", 0, ImGui::CalcTextSize("↑↓×").x + 6 * style.FramePadding.x + 4);
  ImGui::TableHeadersRow();
  name_fields_.resize(static_cast<std::size_t>(T));
  ImGuiListClipper clipper;
  clipper.Begin(T);
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      ImGui::PushID(i);
      ImGui::TableNextRow();
      if (i == selected) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, ImGui::GetColorU32(ImGuiCol_Header));
      ImGui::TableNextColumn();
      if (ImGui::Selectable(std::to_string(i + 1).c_str(), i == selected)) cmd.push("select_token", {{"index", i}});
      // The row's moves on a right-click too: in a narrow panel the ↑ ↓ × column scrolls out of view.
      if (ImGui::BeginPopupContextItem("row")) {
        if (ImGui::MenuItem("Move up", nullptr, false, i > 0)) cmd.push("move_token", {{"from", i}, {"to", i - 1}});
        if (ImGui::MenuItem("Move down", nullptr, false, i + 1 < T))
          cmd.push("move_token", {{"from", i}, {"to", i + 1}});
        if (ImGui::MenuItem("Remove", nullptr, false, T > 1)) cmd.push("remove_token", {{"index", i}});
        ImGui::EndPopup();
      }
      ImGui::TableNextColumn();
      std::string name = ws.tokens[i];
      ImGui::SetNextItemWidth(-1);
      inputTextKept("##name", nullptr, &name, name_fields_[static_cast<std::size_t>(i)]);
      if (ImGui::IsItemDeactivatedAfterEdit()) cmd.push("rename_token", {{"index", i}, {"name", name}});
      if (i == 1) layout().widget("token_name_1");
      for (int c = 0; c < shown_cols; ++c) {
        ImGui::TableNextColumn();
        ImGui::PushID(c);
        float v = ws.embeddings(i, c);
        std::string shown, refused;
        // Kept by the cell while typed into, called maybe a frame later: nothing of this frame's.
        const auto set = [queue = &cmd, i, c](float value) {  // a drag is one undo step
          queue->push("set_cell", {{"row", i}, {"col", c}, {"value", value}},
                      "cell " + std::to_string(i) + "," + std::to_string(c));
        };
        if (valueCell(v, 4, &shown, &refused, set)) set(v);
        if (!refused.empty())
          cmd.refuse(
              typedRefusal(refused, "token " + std::to_string(i + 1) + ", d" + std::to_string(c), cellText(v, 4)));
        if (i < 8 && c < 8)
          layout().state()["inputs_text"][std::to_string(i) + "," + std::to_string(c)] = shown;  // tests
        if (ImGui::IsItemActivated()) cmd.push("select_token", {{"index", i}});
        layout().widget("cell_" + std::to_string(i) + "_" + std::to_string(c));
        ImGui::PopID();
      }
      ImGui::TableNextColumn();
      ImGui::BeginDisabled(i == 0);
      if (ImGui::SmallButton("↑")) cmd.push("move_token", {{"from", i}, {"to", i - 1}});
      ImGui::EndDisabled();
      ImGui::SameLine(0, 2);
      ImGui::BeginDisabled(i + 1 == T);
      if (ImGui::SmallButton("↓")) cmd.push("move_token", {{"from", i}, {"to", i + 1}});
      ImGui::EndDisabled();
      ImGui::SameLine(0, 2);
      ImGui::BeginDisabled(T == 1);
      if (ImGui::SmallButton("×")) cmd.push("remove_token", {{"index", i}});
      if (i == 0) layout().widget("remove_token_0");
      ImGui::EndDisabled();
      if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("remove this token");
      ImGui::PopID();
    }
  }
  ImGui::EndTable();
  if (d_in > shown_cols) ImGui::TextDisabled("showing d0–d%d of %d columns", shown_cols - 1, d_in);
  if (const int others = static_cast<int>(ws.batch_sequences.size()); others > 0) {
    ImGui::TextDisabled("sequence 1 of the batch's %d", others + 1);  // the tooltip says the rest
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(
          "The batch holds %d different sequences (from a notebook's B × T × d_in tensor); this "
          "table is the first.\nInspector and Pipeline show the selected element's own. An edit of "
          "T, d_in or the batch size\nsets the others aside: every element then reads this table "
          "(Ctrl+Z brings them back).",
          others + 1);
  }
}

// The embedding vectors as arrows from the origin: 3-D (drag to rotate) for d_in ≥ 3, using the
// first three components; 2-D for d_in = 2; a line for d_in = 1.
void InputsPanel::plot(const PanelContext& ctx, ImVec2 size) {
  const Workspace& ws = ctx.document.workspace();
  const int T = static_cast<int>(ws.embeddings.rows()), d_in = static_cast<int>(ws.embeddings.cols());
  const int dims = std::min(d_in, 3);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("plot", size);
  layout().widget("plot");
  if (ImGui::IsItemActive() && dims == 3) {
    yaw_ += ImGui::GetIO().MouseDelta.x * 0.01f;
    pitch_ = std::clamp(pitch_ + ImGui::GetIO().MouseDelta.y * 0.01f, -1.5f, 1.5f);
  }
  draw->AddRect(p0, ImVec2(p0.x + size.x, p0.y + size.y), ImGui::GetColorU32(ImGuiCol_Border));
  // In double: embeddings may be as large as float32 goes (a user's or a paste's 3e38), whose squares
  // and sums overflow float, and a non-finite point would reach ImGui's rounded rectangles.
  double radius = 1e-6;
  for (int i = 0; i < T; ++i) radius = std::max(radius, ws.embeddings.row(i).head(dims).cast<double>().norm());
  // The view: rotated (3-D), then scaled and moved so that the origin, the axes and every point fill
  // the plot, less a margin for the names; it follows the rotation smoothly while dragged.
  const double cy = std::cos(yaw_), sy = std::sin(yaw_), cp = std::cos(pitch_), sp = std::sin(pitch_);
  struct Flat {
    double x, y;
  };
  auto view = [&](double x, double y, double z) {  // d0 → right, d1 → depth, d2 → up; screen y down
    if (dims < 3) return Flat{x, -y};
    const double rx = x * cy - y * sy, depth = x * sy + y * cy;
    return Flat{rx, -(z * cp - depth * sp)};
  };
  Flat ends[3], lo{0, 0}, hi{0, 0};  // the axes' ends, and the box of everything drawn
  std::vector<Flat> flat(T);         // each point, seen from the current angle
  auto extend = [&](Flat v) {
    lo = {std::min(lo.x, v.x), std::min(lo.y, v.y)}, hi = {std::max(hi.x, v.x), std::max(hi.y, v.y)};
    return v;
  };
  for (int a = 0; a < dims; ++a) ends[a] = extend(view(a == 0 ? radius : 0, a == 1 ? radius : 0, a == 2 ? radius : 0));
  for (int i = 0; i < T; ++i) {
    const auto r = ws.embeddings.row(i);
    flat[i] = extend(view(r(0), dims > 1 ? r(1) : 0, dims > 2 ? r(2) : 0));
  }
  const float margin_x = px(44), top = fonts().small->FontSize + px(12), bottom = px(18);
  const double fit_w = std::max(size.x - 2 * margin_x, 1.0f), fit_h = std::max(size.y - top - bottom, 1.0f);
  const double s = std::min(hi.x - lo.x > 0 ? fit_w / (hi.x - lo.x) : 1e30,
                            hi.y - lo.y > 0 ? fit_h / (hi.y - lo.y) : 1e30);
  const Flat c{p0.x + size.x / 2 - s * (lo.x + hi.x) / 2, p0.y + top + fit_h / 2 - s * (lo.y + hi.y) / 2};
  auto screen = [&](Flat v) { return ImVec2(static_cast<float>(c.x + s * v.x), static_cast<float>(c.y + s * v.y)); };
  const ImVec2 origin = screen({0, 0});
  const ImU32 axis = theme().text_dim;
  const char* names[] = {"d0", "d1", "d2"};
  LabelLayout placement{px(4), px(14), px(3), {p0.x + 2, p0.y + 2, p0.x + size.x - 2, p0.y + size.y - 2}, {}, {}};
  for (int a = 0; a < dims; ++a) {
    const ImVec2 e = screen(ends[a]);
    draw->AddLine(origin, e, axis, 1.0f);
    draw->AddText(e, axis, names[a]);
    placement.lines.push_back({origin.x, origin.y, e.x, e.y});
    const ImVec2 t = ImGui::CalcTextSize(names[a]);
    placement.taken.push_back({e.x, e.y, e.x + t.x, e.y + t.y});
  }
  // The points and arrows, then the names where they cover no other name or point: the selected
  // token's first, always shown; beyond 64 tokens (a cloud, names over points unreadable) only it.
  // A point's name and values are on hover too, for the names left out.
  ImFont* font = fonts().small;
  std::vector<PointLabel> labels(T);
  std::vector<std::string> names_shown(T);
  std::vector<int> order;
  if (ctx.view.token >= 0 && ctx.view.token < T) order.push_back(ctx.view.token);
  for (int k = 0; k <= T; ++k) {  // the selected one last, over the others
    const int i = k < T ? k : ctx.view.token;
    const bool sel = i == ctx.view.token;
    if (i < 0 || i >= T || (sel && k < T)) continue;
    const ImU32 col = sel ? theme().selection : IM_COL32(86, 156, 214, 255);
    const ImVec2 p = screen(flat[i]);
    if (T <= 64) {
      draw->AddLine(origin, p, (col & 0x00FFFFFF) | (sel ? 0xFF000000 : 0x90000000), sel ? 2.0f : 1.0f);
      placement.lines.push_back({origin.x, origin.y, p.x, p.y});
    }
    draw->AddCircleFilled(p, sel ? 4.5f : 3.0f, col);
    const bool named = sel || T <= 64;
    ImVec2 text(0, 0);
    if (named) {  // measured only where a name may be drawn (not a cloud's 1024 every frame)
      names_shown[i] = fitText(font, font->FontSize, ws.tokens[i], px(120));  // as the maps shorten a long one
      text = font->CalcTextSizeA(font->FontSize, FLT_MAX, 0, names_shown[i].c_str());
    }
    labels[i] = {p.x, p.y, text.x, text.y, named, sel, T <= 64};
    if (!sel) order.push_back(i);
  }
  const auto spots = placeLabels(labels, order, placement);
  for (int i = 0; i < T; ++i)
    if (spots[i] &&
        spots[i]->distanceTo(labels[i].x, labels[i].y) > placement.gap + 1)  // a name further off: a line to it
      draw->AddLine(ImVec2(labels[i].x, labels[i].y),
                    ImVec2(std::clamp(labels[i].x, spots[i]->x0, spots[i]->x1),
                           std::clamp(labels[i].y, spots[i]->y0, spots[i]->y1)),
                    (axis & 0x00FFFFFF) | 0x90000000, 1.0f);
  nlohmann::json shown = nlohmann::json::array();  // for tests: where each name went
  int unnamed = 0;
  for (int i = 0; i < T; ++i) {
    if (!spots[i] || !std::isfinite(spots[i]->x0 + spots[i]->y0 + spots[i]->x1 + spots[i]->y1)) {
      unnamed += labels[i].named ? 1 : 0;
      continue;
    }
    // On the window's colour: a line the name had to cross (or a cloud beneath it) passes under it.
    draw->AddRectFilled(ImVec2(spots[i]->x0 - 1, spots[i]->y0), ImVec2(spots[i]->x1 + 1, spots[i]->y1),
                        (ImGui::GetColorU32(ImGuiCol_WindowBg) & 0x00FFFFFF) | (T > 64 ? 0xFF000000 : 0xD0000000),
                        2.0f);
    draw->AddText(font, font->FontSize, ImVec2(spots[i]->x0, spots[i]->y0),
                  i == ctx.view.token ? theme().selection : axis, names_shown[i].c_str());
    shown.push_back(
        {{"token", i}, {"rect", rectJson(ImVec2(spots[i]->x0, spots[i]->y0), ImVec2(spots[i]->x1, spots[i]->y1))}});
  }
  layout().state()["inputs_plot"] = {{"rect", rectJson(p0, ImVec2(p0.x + size.x, p0.y + size.y))}, {"names", shown}};

  if (ImGui::IsItemHovered() && !ImGui::IsItemActive()) {
    const ImVec2 m = ImGui::GetIO().MousePos;
    int nearest = -1;
    float best = px(8) * px(8);
    for (int i = 0; i < T; ++i) {
      const float dx = labels[i].x - m.x, dy = labels[i].y - m.y;
      if (dx * dx + dy * dy < best) best = dx * dx + dy * dy, nearest = i;
    }
    if (nearest >= 0) {
      const auto r = ws.embeddings.row(nearest);
      std::string values;
      for (int a = 0; a < dims; ++a) values += (a ? ", " : "") + formatFixed(r(a), 4);
      ImGui::SetTooltip("%d  %s  [%s%s]", nearest + 1, ws.tokens[nearest].c_str(), values.c_str(),
                        d_in > dims ? ", …" : "");
    }
  }
  // The note above the plot; names left out are said, not silently dropped.
  std::string note = d_in > 3    ? "first 3 of " + std::to_string(d_in) + " components · drag to rotate"
                     : dims == 3 ? "drag to rotate"
                                 : "";
  if (unnamed > 0)
    note += (note.empty() ? "" : " · ") + std::to_string(unnamed) + (unnamed == 1 ? " name" : " names") +
            " left out: hover a point";
  draw->AddText(font, font->FontSize, ImVec2(p0.x + 4, p0.y + 3), axis,
                fitText(font, font->FontSize, note, size.x - 8).c_str());
}

void InputsPanel::draw(const PanelContext& ctx, ImVec2 pos, ImVec2 size) {
  beginPanelWindow("Inputs", "inputs", pos, size);
  toolbar(ctx);
  // The table first (every row when there is room, at least a few), then the plot in what is left,
  // up to a square of the panel's width; no plot when too little is left (a short window: a tiny plot only overlaps its
  // labels).
  const int T = static_cast<int>(ctx.document.workspace().embeddings.rows());
  const bool wide = shownValueColumns(static_cast<int>(ctx.document.workspace().embeddings.cols()), 3) <
                    ctx.document.workspace().embeddings.cols();  // a note under the table says so …
  const int notes = (wide ? 1 : 0) + (ctx.document.workspace().batch_sequences.empty() ? 0 : 1);  // … and of a batch
  const float avail = ImGui::GetContentRegionAvail().y - notes * ImGui::GetTextLineHeightWithSpacing();
  const float width = ImGui::GetContentRegionAvail().x;
  const float rows_h = (T + 1.6f) * ImGui::GetFrameHeightWithSpacing() + ImGui::GetStyle().ScrollbarSize;
  const float min_table = ImGui::GetFrameHeightWithSpacing() * 3.6f;
  float table_h = std::min(rows_h, std::max(avail * 0.6f, avail - width * 0.8f - 8));
  const float spacing = ImGui::GetStyle().ItemSpacing.y;
  if (avail - table_h - spacing - 4 < px(120))
    table_h = std::min(rows_h, avail - 4);  // no room for the plot: all to the table
  table(ctx, std::max(table_h, min_table));
  const float plot_h = ImGui::GetContentRegionAvail().y - 4;
  if (plot_h >= px(120)) plot(ctx, ImVec2(ImGui::GetContentRegionAvail().x, plot_h));
  ImGui::End();
}

}  // namespace attnscope
