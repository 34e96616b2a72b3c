// Figures of a trace's maps (docs/DESIGN.md §2.5, §3.6): each stage of each head, the context, the
// output and the parameters as a FigureSpec, and every one of them written as SVG or PDF.
#pragma once
#include <string>
#include <vector>

#include "display/vector_figure.h"
#include "engine/stages.h"
#include "engine/trace.h"
#include "model/workspace.h"

namespace attnscope {

// The figure of one map as attnscope-cli draws it: the stage's title (with a trained model's layer,
// given as `layer` ≥ 0, and the head and batch element when there are several), tokens on both
// axes, viridis — coolwarm centred on 0 for signed maps, [0, 1] for the 0/1 masks — and the map's
// own range.
FigureSpec stageFigure(const Trace& t, const HeadTrace& h, Stage s, const std::vector<std::string>& tokens, int batch,
                       int head, int layer = -1);
// That figure's title: "weights (softmax)  10×10  ·  layer 3  ·  head 2 of 2" (a saved PNG of one
// map has it too).
std::string stageFigureTitle(const Trace& t, Stage s, int batch, int head, int layer = -1);
// Every map of the trace as a figure (SVG or PDF), one file each, named as exportTrace names
// them. Throws InputError naming the path on failure; returns the number of files written.
int exportTraceFigures(const Workspace& ws, const Trace& trace, const std::string& folder, FigureFormat f);

}  // namespace attnscope
