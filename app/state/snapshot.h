// Snapshot: one finished computation and everything it was computed from (docs/DESIGN.md §3.1).
// Views draw only from the snapshot in hand (plus their own UI state), so its token labels,
// embeddings and maps always agree, however far the document has moved on. Immutable once built,
// shared by pointer between the engine worker and the UI thread.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "display/colormap.h"
#include "engine/attention.h"
#include "engine/head_statistics.h"
#include "engine/stages.h"
#include "formats/workspace_file.h"
#include "lm/model_pass.h"

namespace attnscope {

struct Snapshot {
  std::uint64_t serial = 0;  // unique per result
  // The result that computed each part: textures of a part re-upload only when it changes (the
  // second part of a split request keeps the first part's outputs and heads).
  std::uint64_t outputs_serial = 0;         // inputs range, concatenated context, output
  std::vector<std::uint64_t> head_serial;   // per head of `batch` (0: no maps yet)
  std::uint64_t version = 0;                // the document version it was computed from
  std::shared_ptr<const Workspace> inputs;  // tokens, embeddings, model as they were
  int batch = 0;                            // the batch element whose intermediates were kept
  ExecutionOptions exec;                    // the path it ran on
  std::shared_ptr<const Trace> trace;       // the whole forward pass; heads only for `batch`
  double milliseconds = 0;                  // time of computeTrace
  bool complete = true;                     // every head of `batch` has its maps; false while
                                            // the heads off screen are still computing

  // Display data, derived on the worker thread (a 1024 × 1024 map is too much to scan per frame).
  std::vector<std::array<ValueRange, kStageCount>> ranges;  // per head of `batch`, per stage
  ValueRange inputs_range;                                  // X
  std::array<ValueRange, kModuleMapCount> module_ranges{};  // by ModuleMap: concat, out_proj, output
  std::vector<std::string> dims;                            // "d0", "d1", … labels of an input's columns
  std::vector<std::vector<std::string>> head_dims;          // per head of `batch`: its columns' labels
                                                            // (display/map_look.h headFirstColumn)
  // Per head of `batch`: entropy, largest weight, row sums after dropout (engine/head_statistics.h);
  // rows() == 0 for a head whose maps are still computing.
  std::vector<HeadStatistics> statistics;
  // The statistics of head h, or null while its maps compute.
  const HeadStatistics* statisticsOf(int h) const {
    return h >= 0 && h < static_cast<int>(statistics.size()) && statistics[static_cast<std::size_t>(h)].rows() > 0
               ? &statistics[static_cast<std::size_t>(h)]
               : nullptr;
  }

  // A trained model's layer (docs/DESIGN.md §3.1 "A trained model"): `inputs` is then the layer as a
  // chapter workspace (its attention input, its weights), `trace` the layer's; `model` holds every
  // layer's thumbnails and scores for the model view. Null without a model.
  std::shared_ptr<const ModelPass> model;
  std::uint64_t model_version = 0;   // the ModelSession version it answers
  std::uint64_t model_lineage = 0;   // and its lineage (a run's model at another step: the same)
  int layer = 0;                     // the layer of `trace`
  std::vector<int> logit_positions;  // the positions whose next-token logits are held: the selected, the last
  Matrix logits;                     // one row of V per position
  // Every thumbnail's cells as colormap indices on [0, its largest] (L·H·S·S, in model->heads'
  // order): the atlas is coloured from these with a table lookup (widgets/thumbnail_atlas.h).
  std::vector<std::uint8_t> thumbnail_indices;
  // The next-token logits at `position`, or null when not held.
  const float* logitsAt(int position) const {
    for (std::size_t i = 0; i < logit_positions.size(); ++i)
      if (logit_positions[i] == position) return logits.row(static_cast<Eigen::Index>(i)).data();
    return nullptr;
  }

  // The tokens as the views draw them: the workspace's, with characters beyond what the UI's font can
  // draw (ImGui draws 16-bit characters only: emoji) written as U+1F600, so that two such tokens
  // never both read "?". Empty: the workspace's tokens as they are.
  std::vector<std::string> drawn_tokens;
  const std::vector<std::string>& tokens() const { return drawn_tokens.empty() ? inputs->tokens : drawn_tokens; }
  int tokenCount() const { return static_cast<int>(inputs->tokens.size()); }
  const BatchTrace& shown() const { return trace->batches[static_cast<std::size_t>(batch)]; }
};

}  // namespace attnscope
