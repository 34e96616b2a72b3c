// One pass of a trained model over a text, as the app's model view shows it (docs/DESIGN.md §2.6
// "The model view"): every head's attention weights as a thumbnail, every head's scores, each
// layer's attention input (so that any layer's full trace is one computeTrace away) and the
// residual stream after the last block (so that any position's next tokens are one product away).
//
// Shapes: T tokens, d model width, L layers, H heads, S ≤ kThumbnailCells the thumbnails' side,
// V vocabulary.
//
// A thumbnail is the weights map α (T × T) in S × S blocks, each the largest weight of its block,
// coloured from 0 to the largest weight below the first row (the first row, one key under the
// causal mask, is always 1):
// a head that puts all of a row on one key (the previous token, the sink) stays as bright at
// T = 1024 as at T = 16, where a mean would fade it S/T-fold. With T ≤ S a cell is a weight.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/attention.h"
#include "engine/trace.h"
#include "lm/gpt_forward.h"
#include "lm/gpt_model.h"
#include "lm/head_scores.h"
#include "model/workspace.h"

namespace attnscope {

constexpr int kThumbnailCells = 64;  // S at most: a thumbnail is drawn some 60–120 px wide
// A pass keeps its projections (L × T × 3d floats, which a later pass over a text that begins the
// same attends again) up to this many bytes: GPT-2 small's whole context (113 MB at 1024 tokens),
// medium's up to 398 tokens. One set is held: a pass takes the one before over, block by block
// (GptRequest::prefix_projections), or drops it when it reuses no row (docs/DESIGN.md §2.6).
constexpr std::size_t kKeptProjectionBytes = std::size_t{112} << 20;

struct HeadThumbnail {
  std::vector<float> cells;  // S × S, row-major: the largest weight of each block
  float largest = 0;         // the largest weight below the first row (the first row is always 1 on the
                             // first token): the thumbnail's colour range is [0, largest]
  HeadScores scores;
};

// Attention maps given as they are (a notebook's attnscope.show_attention, from any model): L × H
// maps of T × T, shown without recomputing. Tokens with the same text are the same token.
struct GivenAttention {
  int layers = 0, heads = 0, tokens = 0;
  std::vector<float> maps;          // L·H·T·T, layer-major, each map row-major
  std::vector<std::string> labels;  // T
  std::string title;                // what the sender calls it ("GPTModel"); may be empty
  const float* map(int layer, int head) const {
    return maps.data() + (static_cast<std::size_t>(layer) * heads + static_cast<std::size_t>(head)) *
                             static_cast<std::size_t>(tokens) * static_cast<std::size_t>(tokens);
  }
};

struct ModelPass {
  std::shared_ptr<const GptModel> model;        // the model that ran; null for given maps …
  std::shared_ptr<const GivenAttention> given;  // … which are then here
  std::vector<int> ids;                         // T
  int cells = 0;                                // S = min(T, kThumbnailCells)
  std::vector<HeadThumbnail> heads;             // L × H, layer-major: heads[l * H + h]
  // Each layer's attention input LayerNorm₁(x) (L of T × d) and the residual stream after the last
  // block (T × d; the rows whose next tokens were not asked for before the last MLP), which a later
  // pass over a text that begins the same reuses (runModelPass's `previous`). Its projections are
  // not here but in `projections`, below.
  GptPrefix forward;
  // Within kKeptProjectionBytes, each layer's projections (L, or none), which the next pass that
  // reuses this one's rows takes over (takeProjections), and gives back if it fails or is
  // cancelled: once it is done only its own set is held (GPT-2 small at 600 tokens: 66 MB), not
  // those of every pass a snapshot still holds. Guarded: the UI thread asks whether they are there
  // while the engine's thread takes them. A pass whose projections were taken gives a later one
  // its attention inputs alone (reusablePrefix: its rows projected again).
  bool keepsProjections(int layers) const;
  std::vector<KeptProjections> takeProjections() const;
  void keepProjections(std::vector<KeptProjections> p) const;  // kept, or given back by a pass that failed
  mutable std::mutex projections_mutex;
  mutable std::vector<KeptProjections> projections;
  // With T ≤ kThumbnailCells: each head's rows' parts of its scores (L × H × T, HeadScoreRow), the
  // rest of what such a pass reuses (a thumbnail's row is then a row of weights).
  std::vector<HeadScoreRow> score_rows;
  int kept_layer = -1;      // the layer whose maps the pass traced (KeptLayer::Maps); -1: every layer streamed
  int reused_rows = 0;      // rows taken from `previous` (0: every row computed)
  bool whole_attention = false;     // with reused_rows: every row's attention computed again (PrefixReuse) …
  bool reused_projections = false;  // … the reused rows' from the previous pass's projections
  bool fused = false;            // run on the fast path (only its rows are reused: the reference's differ in bits)
  double milliseconds = 0;  // the forward's time

  int layer_count = 0, head_count = 0;  // L, H
  int layers() const { return layer_count; }
  int headsPerLayer() const { return head_count; }
  const HeadThumbnail& head(int layer, int h) const {
    return heads[static_cast<std::size_t>(layer) * static_cast<std::size_t>(headsPerLayer()) +
                 static_cast<std::size_t>(h)];
  }
  // The block rows [first, end) of the text thumbnail cell i stands for (and columns alike).
  static int blockStart(int i, int T, int S) { return static_cast<int>(static_cast<std::int64_t>(i) * T / S); }
};

// What a pass over `ids` can take from an earlier pass of the same model (runModelPass's
// `previous`): the rows before the first token that differs (at most T − 1), when both kept the same
// layer — a kept layer's weights come from the traced path, the others' from the streamed rows,
// which differ in the last bits, and the rows after them with them.
// - Both texts of at most kThumbnailCells tokens: the rows' projections, thumbnail rows and scores
//   too, and only the rows after them are computed — typing at the end, or appending a token, costs
//   a row.
// - Otherwise (a longer text: a thumbnail's cell is a block of rows, which the new length
//   regroups): their projections (kept within kKeptProjectionBytes; else projected again from the
//   kept attention inputs), LayerNorms, out_proj and MLP; every row's scores and weights are
//   computed again (GptRequest::whole_attention).
struct PrefixReuse {
  int rows = 0;                  // 0: every row computed
  bool whole_attention = false;  // the second case
  bool projections = false;      // the rows' projections taken from the previous pass
};
PrefixReuse reusablePrefix(const ModelPass& previous, const GptModel& model, const std::vector<int>& ids,
                           int keep_layer);
// A pass's work in rows of a whole pass's (its multiply-adds ÷ a row's, under the causal mask):
// T − rows, or with whole_attention the reused rows' attention counted too.
double passWorkRows(const GptConfig& config, int tokens, const PrefixReuse& reuse);

// How runModelPass keeps its layer: every stage of its heads, computed by the traced path during
// the pass (whose outputs, within the last bits of the streamed ones, then feed the layers after
// it: the pass depends on the layer kept); or only the layer's outputs (its concatenated context
// and out_proj, the heads without maps), the layer streamed as every other — the pass's bits then
// do not depend on which layer is shown, so a later pass reuses its rows whatever layer that one
// keeps (reusablePrefix). The app streams every layer and traces the one shown after the pass
// (layerTrace): one set of bits per text and layer (docs/DESIGN.md §3.3).
enum class KeptLayer { Maps, Outputs };

// Runs the model over `ids` (gptForward: every layer's maps, no logits). `keep_layer` ≥ 0 also
// keeps that layer's trace in *kept, as `how` says. Throws as gptForward.
// `previous`: a pass of the same model over an earlier text, whose rows are taken as
// reusablePrefix says; the result has the same bits as a pass of every row. `final_rows`: the
// positions whose next tokens are asked for (GptRequest::final_rows: the others' last MLP is left
// out, and gptLogits of the pass's `forward` finishes one asked for later); empty: every row.
std::shared_ptr<const ModelPass> runModelPass(std::shared_ptr<const GptModel> model, const std::vector<int>& ids,
                                              const ExecutionOptions& exec, const Limits& limits, int keep_layer = -1,
                                              Trace* kept = nullptr, const ModelPass* previous = nullptr,
                                              const std::vector<int>& final_rows = {}, KeptLayer how = KeptLayer::Maps);

// The thumbnails and scores of given maps, as runModelPass makes them from a model's (the same
// reductions, LayerRows); ids from the labels (the same text, the same id). Checks each map:
// finite, no negative weight; throws InputError naming the layer and head.
std::shared_ptr<const ModelPass> passOfMaps(std::shared_ptr<const GivenAttention> given, const ExecutionOptions& exec);

// The trace of `layer` (every stage of its heads) from its attention input: the numbers a pass that
// traced the layer computes (KeptLayer::Maps); a pass that streamed it computed its weights, and
// the outputs that fed the next layer, within the last bits of these. outputs = false: the heads' maps and contexts
// alone (TraceRequest::outputs). The layer's projections are the pass's, lent while it runs (not
// projected again: the same bits); called on the thread that runs the model's passes.
Trace layerTrace(const ModelPass& pass, int layer, const ExecutionOptions& exec, const Limits& limits,
                 bool outputs = true);

// Layer `layer`'s attention as a chapter workspace: its input LayerNorm₁(x) as the embeddings, the
// model's attention (multi-head, causal, eval, batch 1) with the layer's weights as the
// parameters, `tokens` as the labels. Every view of a workspace's trace can then show the layer.
// `weights`: the layer's parameters as another workspace of the same model's layer holds them,
// shared rather than copied again (GPT-2: 9.4 MB, 1 ms a result); null: copied from the model.
Workspace layerWorkspace(const ModelPass& pass, int layer, std::vector<std::string> tokens,
                         std::shared_ptr<const ParameterValues> weights = nullptr);

// A token as the views label it: the vocabulary's spelling (Ġ for a leading space), the model's own
// token_labels (a model trained here), or "#id"; a space or control character in it drawn as
// Unicode's picture of it (␣, ␤, ␉, ␀ …), as GPT-2's Ġ is: a text's " " was an empty chip.
std::string tokenLabel(const GptModel& model, int id);

struct NextToken {
  int id = 0;
  float logit = 0;
  float probability = 0;  // softmax(logits / temperature)
};
// The k most likely next tokens of one position's V logits at `temperature` (> 0; ≤ 0 is taken
// as greedy: the top token 1, the others 0), most likely first; ties by id. Sums in double. The
// logits are finite (a pass with any other throws).
std::vector<NextToken> topNextTokens(const float* logits, int V, double temperature, int k);

}  // namespace attnscope
