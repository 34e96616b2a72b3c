#include "display/stage_figures.h"

#include "display/map_look.h"
#include "display/number_text.h"
#include "display/parameter_axes.h"
#include "engine/errors.h"
#include "formats/export.h"

namespace attnscope {

namespace {

// A figure of a matrix over tokens that is not a head's stage (the context, the output: token_rows)
// or of a parameter.
FigureSpec matrixFigure(const Matrix& m, std::string title, std::vector<std::string> rows,
                        std::vector<std::string> cols, bool token_rows) {
  FigureSpec f;
  f.values = StageMap(m);
  f.title = std::move(title);
  f.first_row_token = token_rows ? 0 : -1;
  f.row_labels = std::move(rows);
  f.col_labels = std::move(cols);
  f.look = colouredBy(finiteRange(m), false, LookChoices{});
  return f;
}

}  // namespace

std::string stageFigureTitle(const Trace& t, Stage s, int batch, int head, int layer) {
  std::string title = stageHeading(t, s);
  if (layer >= 0) title += "  ·  layer " + std::to_string(layer + 1);
  if (t.heads > 1) title += "  ·  head " + std::to_string(head + 1) + " of " + std::to_string(t.heads);
  if (t.batches.size() > 1)
    title += "  ·  batch " + std::to_string(batch + 1) + " of " + std::to_string(t.batches.size());
  return title;
}

FigureSpec stageFigure(const Trace& t, const HeadTrace& h, Stage s, const std::vector<std::string>& tokens, int batch,
                       int head, int layer) {
  const StageInfo& info = stageInfo(s);
  FigureSpec f;
  f.values = StageMap(t, h, s);
  // Titled and coloured as the app's grid shows the map with the default view (display/map_look.h);
  // a 0/1 map on its full 0–1 range.
  f.title = stageFigureTitle(t, s, batch, head, layer);
  f.row_labels = info.parameter ? dimLabels(f.values.rows()) : tokensOf(tokens, t.tokens);  // W: input dims down
  f.col_labels = info.square ? f.row_labels : dimLabels(f.values.cols(), headFirstColumn(t, head));
  f.first_row_token = info.parameter ? -1 : 0;
  f.first_col_token = info.square ? 0 : -1;
  f.look = stageLook(t, s, info.flags ? ValueRange{0, 1} : finiteRange(f.values), LookChoices{});
  return f;
}

int exportTraceFigures(const Workspace& ws, const Trace& trace, const std::string& folder, FigureFormat f) {
  if (f == FigureFormat::Png) throw InputError("--format: figures of a trace are svg or pdf");
  makeFolder(folder);
  const std::string ext = f == FigureFormat::Svg ? ".svg" : ".pdf";
  int written = 0;
  auto write = [&](const std::string& name, const FigureSpec& figure) {
    const std::string path = joinPath(folder, name + ext);
    if (const std::string error = writeVectorFigure(figure, path); !error.empty())
      throw InputError(path + ": " + error);
    ++written;
  };
  const std::vector<std::string> tokens = tokensOf(ws.tokens, trace.tokens);
  const std::string batches = trace.batches.size() > 1 ? " of " + std::to_string(trace.batches.size()) : "";
  for (std::size_t b = 0; b < trace.batches.size(); ++b) {
    const BatchTrace& bt = trace.batches[b];
    const std::string batch = "b" + std::to_string(b + 1);
    for (std::size_t h = 0; h < bt.heads.size(); ++h)
      for (const StageInfo& stage : stageTable())
        if (!stage.parameter && stageHeld(trace, stage.stage))
          write(mapFileStem(static_cast<int>(b), static_cast<int>(h), stage.stage),
                stageFigure(trace, bt.heads[h], stage.stage, tokens, static_cast<int>(b), static_cast<int>(h)));
    const std::string of = batches.empty() ? "" : "  ·  batch " + std::to_string(b + 1) + batches;
    write(batch + "_context",
          matrixFigure(bt.context, "context  (heads concatenated)" + of, tokens, dimLabels(bt.context.cols()), true));
    write(batch + "_output", matrixFigure(bt.output, "output" + of, tokens, dimLabels(bt.output.cols()), true));
  }
  forEachStateDictEntry(
      trace.model, *trace.parameters, [&](const std::string& name, const Matrix& value, bool is_vector) {
        // Titled with its shape in words, its axes labelled as the Weights tab labels them.
        const NamedTensor shown{name,
                                is_vector ? Matrix(Eigen::Map<const Matrix>(value.data(), 1, value.size())) : value,
                                is_vector};
        const ParameterKind kind = kindOf(shown);
        const ParameterAxes axes = parameterAxes(shown, kind);
        write("param_" + name,
              matrixFigure(shown.value, name + "  " + shapeWords(shown, kind), axes.rows, axes.cols, false));
      });
  return written;
}

}  // namespace attnscope
