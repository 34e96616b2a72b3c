// App, part two: screenshots of what it shows, and the layout dump's state (tests).
#include <imgui.h>
#include <imgui_internal.h>  // the windows' order: front_window

#include <cmath>
#include <cstdio>

#include "display/vector_figure.h"
#include "formats/workspace_file.h"
#include "shell/app.h"
#include "state/model_session.h"
#include "widgets/fonts.h"
#include "widgets/heatmap.h"
#include "widgets/layout_dump.h"

namespace attnscope {

std::string App::captionText(const CaptureSpec& spec) const {
  const Snapshot* snap = ctl_.shown().get();
  if (!snap) return "attnscope";
  const Workspace& in = *snap->inputs;
  const ModelConfig& m = in.model;
  const int T = static_cast<int>(in.embeddings.rows()), H = headCount(m);
  char buf[512];
  // A name and its number stay on one line when the caption wraps ("T 6", never "T" then "6"): a
  // no-break space, which the wrapping does not break at.
  if (isHeatmapStage(spec.panel)) {  // a single map: what it is, compactly
    const std::string head = H > 1 ? " · head\u00a0" + std::to_string(spec.head + 1) + "\u00a0of\u00a0" +
                                         std::to_string(H)
                                   : "";
    std::snprintf(buf, sizeof buf, "%s%s · %s · T\u00a0%d%s", mapsOrigin(*snap, " · ").c_str(), head.c_str(),
                  captureSubject(spec.panel, m).c_str(), T,
                  seedPart(*snap, " · ", "\u00a0").c_str());  // the stage's title, never its id
  } else if (snap->model) {                                   // a trained model: its name, layer and width, no seed
    std::snprintf(buf, sizeof buf, "attnscope · %s · T\u00a0%d · d\u00a0%d",
                  mapsOrigin(*snap, " · ", spec.panel == "layers").c_str(), T,  // the Layers tab: every layer
                  static_cast<int>(in.embeddings.cols()));
  } else {
    std::snprintf(buf, sizeof buf, "attnscope · %s · T\u00a0%d · d_in\u00a0%d · d_out\u00a0%d · seed\u00a0%u",
                  describeModel(m).c_str(), T, static_cast<int>(in.embeddings.cols()), m.d_out, m.seed);
  }
  return buf;
}

// One map as an SVG or PDF figure, drawn from the snapshot with the grid's choices.
std::string App::vectorFigure(const CaptureSpec& spec, const std::string& path) const {
  const Snapshot* snap = ctl_.shown().get();
  const ViewState& view = ctl_.view();
  if (!snap || !snap->trace) return "nothing computed yet";
  FigureOptions options;
  options.scale = view.textScale();  // the text size, as a PNG of the map has it
  Stage stage = Stage::Weights;
  ModuleMap module = ModuleMap::Output;
  if (spec.panel == "lines") return writeLinesFigure(linesFigure(*snap, view, spec.caption), path, options);
  if (parseModuleMap(spec.panel, &module))  // the module's maps: one per batch element
    return writeVectorFigure(moduleFigure(*snap, view, module, spec.caption), path, options);
  if (!parseStage(spec.panel, &stage)) return "no map '" + spec.panel + "'";
  const auto& heads = snap->shown().heads;
  if (spec.head < 0 || spec.head >= static_cast<int>(heads.size()) ||
      !heads[static_cast<std::size_t>(spec.head)].hasMaps())
    return "no maps of head " + std::to_string(spec.head + 1) + " (the model has " + std::to_string(heads.size()) + ")";
  return writeVectorFigure(heatmapFigure(*snap, view, stage, spec.head, spec.caption, zoomWindow()), path, options);
}

std::string App::capture(const CaptureSpec& spec, const std::string& path) {
  if (std::string error = captureTargetError(path, spec.panel); !error.empty()) return error;
  if (isMainTab(spec.panel) && !mainTabShown(spec.panel, ctl_.model().showing()))
    return ctl_.model().isOpen() ? "no " + spec.panel + " tab while a trained model is open (its weights are read only)"
                                 : "no " + spec.panel + " tab without a trained model (--model PATH)";
  if (isVectorFigurePath(path)) return vectorFigure(spec, path);  // drawn from the data, not the screen
  if (!hooks_.offscreen_frame || !hooks_.size) return "no window to render with";
  const Snapshot* snap = ctl_.shown().get();
  Workspace shown = snap ? *snap->inputs : ctl_.document().workspace();  // the PNG carries what it shows
  shown.view = savedView(ctl_.view(), shown.view);
  caption_ = spec.caption ? captionText(spec) : "";
  // The capture draws its own view of the controller's: that tab, that head, that map alone.
  capture_view_ = ctl_.view();
  ViewState& shot = *capture_view_;
  if (spec.panel != "heatmaps" && isMainTab(spec.panel)) shot.tab = spec.panel;  // that tab's view
  if (isHeatmapStage(spec.panel)) {  // that head alone, so the map is as large as it gets
    shot.head = spec.head;
    shot.highlight.clear();  // and never dimmed by a lesson's step
    shot.tab = "heatmaps";
    Stage stage = Stage::Weights;
    ModuleMap module = ModuleMap::Output;
    if (parseModuleMap(spec.panel, &module)) {
      // A map of the module (the output, …): that map alone, whether or not its column is shown —
      // hidden by default, as the figure's SVG and PDF need no column either.
      shot.show.fill(false);
      shot.show_module.fill(false);
      shot.show_module[static_cast<std::size_t>(module)] = true;
    } else {
      parseStage(spec.panel, &stage);
      heatmap_grid_.reveal(spec.head, stage);  // and in view, where the grid scrolls for the numbers
    }
  }
  int w = 0, h = 0;
  hooks_.size(&w, &h);
  textures_.setSynchronous(true);  // every map in colour, no placeholders
  CaptureHooks hooks;
  hooks.frame = [this](const CaptureFrame& frame) { hooks_.offscreen_frame(frame, [&] { draw(now_, frame); }); };
  hooks.set_scale = [this](float s) {
    if (hooks_.set_style) hooks_.set_style(s, ctl_.view().light_theme);
  };
  hooks.base_scale = uiScale();  // a figure has the text size of the window, k× larger
  hooks.selection = hooks_.selection;
  if (isHeatmapStage(spec.panel)) {
    // One map is laid out as at 100 % in a window that much larger: the whole map fits at any text
    // size (in the window itself large text may leave room for part of it only), its text that large.
    w = static_cast<int>(std::lround(w * shot.textScale()));
    h = static_cast<int>(std::lround(h * shot.textScale()));
  }
  // A trained model's layer is no workspace to open again (its weights alone are megabytes): the PNG
  // carries the chapter's workspace with the model's file, text, layer and head, which opening it
  // opens again (Controller::savedModel); a run's model and given maps have no file, and it none.
  std::string carried;
  if (!ctl_.model().isOpen()) {
    carried = dumpWorkspace(shown);
  } else if (const nlohmann::json model = ctl_.savedModel(); !model.is_null()) {
    Workspace chapter = ctl_.document().workspace();
    chapter.view = savedView(ctl_.chapterView(), chapter.view);
    chapter.view["trained_model"] = model;
    carried = dumpWorkspace(chapter);
  }
  const std::string error = capturePng(spec, w, h, hooks, path, carried);
  textures_.setSynchronous(false);
  heatmap_grid_.reveal(-1, Stage::Weights);
  capture_view_.reset();
  caption_.clear();
  return error;
}

void App::recordState() const {
  const Document& doc = ctl_.document();
  const ViewState& v = ctl_.view();
  const Workspace& ws = doc.workspace();
  const ModelConfig& m = ws.model;
  Workspace saved = ws;
  saved.view = savedView(v, ws.view);
  nlohmann::json& state = layout().state();
  // The tooltips shown this frame, as panels "tooltip", "tooltip_1" … (tests: what they cover).
  int tooltips = 0;
  for (const ImGuiWindow* w : GImGui->Windows)
    if (w->Active && (w->Flags & ImGuiWindowFlags_Tooltip) != 0)
      layout().panel(tooltips++ == 0 ? "tooltip" : "tooltip_" + std::to_string(tooltips - 1), w->Pos,
                     ImVec2(w->Pos.x + w->Size.x, w->Pos.y + w->Size.y));
  state.update(
      {{"variant", variantId(m.variant)},
       {"d_out", m.d_out},
       {"num_heads", m.num_heads},
       {"seed", m.seed},
       {"token", v.token},
       {"batch", v.batch},
       {"head", v.head},
       {"theme", v.light_theme ? "light" : "dark"},
       {"version", doc.version()},
       {"computing", ctl_.computing()},
       {"settled", ctl_.settled()},
       {"engine_error", ctl_.engineError()},
       {"last_screenshot", ctl_.lastScreenshot()},
       {"workspace", workspaceToJson(saved)},
       {"file", doc.file()},
       {"dirty", ctl_.unsaved()},  // the document's edits or a model's text
       {"can_undo", doc.history().canUndo()},
       {"history_bytes", doc.history().bytes()},
       {"pinned", ctl_.pinned() != nullptr},
       {"title", ctl_.windowTitle()},
       {"toast", ctl_.toast().text},
       {"toast_error", ctl_.toast().error},
       {"prompt", ctl_.promptedCommand()},
       {"typing", ImGui::GetIO().WantTextInput},  // a text field has the keyboard
       {"after_save", ctl_.commandAfterSave()},
       {"text_size", v.text_size},
       {"ui_scale", uiScale()},
       {"font_px",
        {{"ui", fonts().ui ? fonts().ui->FontSize : 0.0f}, {"cells", fonts().small ? fonts().small->FontSize : 0.0f}}},
       {"fullscreen", isFullscreen()},
       {"window", {ImGui::GetMainViewport()->Size.x, ImGui::GetMainViewport()->Size.y}},
       {"shown_panels",
        {{"model", v.modelShown()},
         {"inputs", v.inputsShown()},
         {"inspector", v.inspectorShown()},
         {"status", v.show_status},
         {"statistics", v.statisticsShown()},
         {"presentation", v.presentation}}}});  // update: panels add their own fields
  state["shown_panels"]["lesson"] = ctl_.lesson().open();
  // The window drawn over the others (no popup, tooltip or child): the tiled panels stay behind Help.
  for (int i = GImGui->Windows.Size - 1; i >= 0; --i)
    if (const ImGuiWindow* w = GImGui->Windows[i];
        w->Active && !(w->Flags & (ImGuiWindowFlags_ChildWindow | ImGuiWindowFlags_Popup | ImGuiWindowFlags_Tooltip))) {
      state["front_window"] = w->Name;
      break;
    }
  lesson_.recordState(state);  // lesson_step (1-based, 0 = none), lesson_maps, …
  const ModelSession& model = ctl_.model();
  if (const LearnSession& run = ctl_.learn(); run.open())  // a model training (docs/DESIGN.md §3.9)
    state["learn"] = {{"task", trainTaskJson(run.task())},
                      {"steps_done", run.stepsDone()},
                      {"step_shown",
                       run.snapshotAt(ctl_.learnStepShown()) ? run.snapshotAt(ctl_.learnStepShown())->step : -1},
                      {"following", ctl_.learnStepShown() < 0},
                      {"horizon", ctl_.learnHorizon()},
                      {"playing", run.playing()},
                      {"shown", model.isRun()}};
  if (model.isOpen() && model.model()) {
    nlohmann::json& j = state["model"];
    j = {{"path", model.model()->path},
         {"name", modelName(*model.model())},
         {"run", model.isRun()},
         {"layers", model.model()->config.layers},
         {"heads", model.model()->config.heads},
         {"layer", model.layer()},
         {"ids", model.ids()},
         {"tokens", model.tokens()},
         {"text", model.text()},
         {"prepend_eot", model.prependEot()},
         {"can_undo", model.canUndoText()},
         {"can_redo", model.canRedoText()},
         {"temperature", v.temperature}};
    const Snapshot* s = ctl_.shown().get();
    if (s && s->model && s->model_version == model.version()) {
      j["shown_layer"] = s->layer;
      j["reused_rows"] = s->model->reused_rows;  // rows the pass took from the one before (lm/model_pass.h)
      j["whole_attention"] = s->model->whole_attention;  // … computing their attention again
      if (const float* logits = logitsShown(s, model, v.token)) {
        nlohmann::json next = nlohmann::json::array();
        for (const NextToken& t : topNextTokens(logits, model.model()->config.vocab_size, v.temperature, 10))
          next.push_back({{"id", t.id}, {"probability", t.probability}});
        j["next_tokens"] = next;
      }
      nlohmann::json labels = nlohmann::json::array();
      for (const HeadThumbnail& t : s->model->heads) {
        const HeadLabelInfo* label = headLabel(t.scores);
        labels.push_back(label ? nlohmann::json(label->id) : nlohmann::json());
      }
      j["labels"] = labels;
    }
  }
  if (!ctl_.shown().get()) return;
  // What is on screen: the snapshot's tokens, and (small inputs) its numbers, for tests to hold
  // against `attnscope-cli trace`.
  const Snapshot& s = *ctl_.shown().get();
  state["tokens"] = s.tokens();
  state["trace_version"] = s.serial;
  state["snapshot_version"] = s.version;
  if (s.tokenCount() <= 128) {
    auto rows = [](const Matrix& mat) {
      nlohmann::json out = nlohmann::json::array();
      for (int i = 0; i < mat.rows(); ++i)
        out.push_back(std::vector<float>(mat.row(i).data(), mat.row(i).data() + mat.cols()));
      return out;
    };
    nlohmann::json heads = nlohmann::json::array();
    for (const HeadTrace& h : s.shown().heads)
      heads.push_back({{"weights", rows(h.weights)}, {"context", rows(h.context)}});
    state["trace"] = {{"batch", s.batch}, {"output", rows(s.shown().output)}, {"heads", heads}};
  }
}

}  // namespace attnscope
