// Undo/redo as deltas: a step keeps (before, after) of the workspace parts an edit changed, a few
// changed embedding cells as a cell list, and the history drops its oldest steps beyond a byte
// budget.
#include "editing/history.h"

#include <cassert>
#include <cstring>
#include <utility>

#include "formats/workspace_file.h"

namespace attnscope {

using history_detail::Cell;
using history_detail::Change;
using history_detail::EmbeddingsChange;
using history_detail::Step;

namespace {

// bytes() charges each step this much for its own bookkeeping, so that even tiny steps count.
constexpr std::size_t kStepBytes = 64;

// Floats compare by their bits: −0 vs 0 is a change the user can see (and must get back), and a
// NaN equals itself, so an unchanged NaN cell is not an edit.
bool sameBits(float a, float b) {
  std::uint32_t x, y;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return x == y;
}
bool sameBits(double a, double b) {
  std::uint64_t x, y;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return x == y;
}

// Field by field: ModelConfig has no operator==. A field added to ModelConfig must be added here,
// or edits of only that field go unrecorded.
// The user's own parameters: the same names with the same values, bit for bit, in any order (a
// saved workspace lists them by name; null = none). Names are unique (validateModel).
bool sameParameters(const std::shared_ptr<const ParameterValues>& a, const std::shared_ptr<const ParameterValues>& b) {
  if (a == b) return true;
  const std::size_t na = a ? a->size() : 0, nb = b ? b->size() : 0;
  if (na != nb) return false;
  for (std::size_t i = 0; i < na; ++i) {
    const NamedTensor& x = (*a)[i];
    const NamedTensor* y = nullptr;
    for (const NamedTensor& t : *b)
      if (t.name == x.name) y = &t;
    if (!y || x.is_vector != y->is_vector || x.value.rows() != y->value.rows() || x.value.cols() != y->value.cols() ||
        std::memcmp(x.value.data(), y->value.data(), sizeof(float) * static_cast<std::size_t>(x.value.size())) != 0)
      return false;
  }
  return true;
}

bool sameModel(const ModelConfig& a, const ModelConfig& b) {
  // Every field as the workspace prints it, so a new field cannot be missed; dropout also by its
  // bits (-0 and 0 print alike); the user's parameters are not in the JSON.
  return sameBits(a.dropout, b.dropout) && modelToJson(a) == modelToJson(b) &&
         sameParameters(a.parameters, b.parameters);
}

// Bytes of the user's parameters a model holds.
std::size_t parameterBytes(const ModelConfig& m) {
  std::size_t n = 0;
  if (m.parameters)
    for (const NamedTensor& t : *m.parameters)
      n += sizeof(float) * static_cast<std::size_t>(t.value.size()) + t.name.size();
  return n;
}

bool sameRandom(const std::optional<RandomEmbeddings>& a, const std::optional<RandomEmbeddings>& b) {
  if (!a || !b) return !a && !b;
  return a->normal == b->normal && a->seed == b->seed && a->rows == b->rows && a->cols == b->cols &&
         a->draws_before == b->draws_before;
}

bool sameTokens(const std::vector<std::string>& a, const std::vector<std::string>& b) { return a == b; }
bool sameSequences(const std::vector<Matrix>& a, const std::vector<Matrix>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].rows() != b[i].rows() || a[i].cols() != b[i].cols() ||
        std::memcmp(a[i].data(), b[i].data(), sizeof(float) * static_cast<std::size_t>(a[i].size())) != 0)
      return false;
  return true;
}
bool sameJson(const nlohmann::json& a, const nlohmann::json& b) { return a == b; }

// At most this many cells of a rows × cols matrix go into a cell list. A listed cell costs 16
// bytes against 8 for a cell of the two whole matrices, so at 1/16 of the cells a list costs at
// most 1/8 of the matrices; beyond that the matrices are simpler and not much dearer.
std::size_t maxListedCells(Eigen::Index rows, Eigen::Index cols) { return static_cast<std::size_t>(rows * cols) / 16; }

bool inside(const Matrix& m, const Cell& c) { return c.row >= 0 && c.col >= 0 && c.row < m.rows() && c.col < m.cols(); }

// The change from `a` to `b`, or nothing when they are bitwise equal.
std::optional<EmbeddingsChange> diffEmbeddings(const Matrix& a, const Matrix& b) {
  EmbeddingsChange change;
  change.rows = b.rows();
  change.cols = b.cols();
  if (a.rows() == b.rows() && a.cols() == b.cols()) {
    const std::size_t n = static_cast<std::size_t>(a.size());
    if (n == 0 || std::memcmp(a.data(), b.data(), n * sizeof(float)) == 0) return std::nullopt;
    const std::size_t most = maxListedCells(a.rows(), a.cols());
    const std::size_t cols = static_cast<std::size_t>(a.cols());
    const float *x = a.data(), *y = b.data();  // row-major: index k is (k / cols, k % cols)
    bool fits = true;
    for (std::size_t k = 0; k < n && fits; ++k) {
      if (sameBits(x[k], y[k])) continue;
      if (change.cells.size() == most) {
        fits = false;
      } else {
        change.cells.push_back(
            Cell{static_cast<std::int32_t>(k / cols), static_cast<std::int32_t>(k % cols), x[k], y[k]});
      }
    }
    if (fits) return change;
    change.cells = {};  // release the partial list
  }
  change.dense = true;
  change.before = a;
  change.after = b;
  return change;
}

// The embeddings as they were before `change`, rebuilt from those it left (`left`).
Matrix embeddingsBefore(const EmbeddingsChange& change, const Matrix& left) {
  if (change.dense) return change.before;
  Matrix m = left;
  for (const Cell& c : change.cells)
    if (inside(m, c)) m(c.row, c.col) = c.before;
  return m;
}

Step diff(const Workspace& before, const Workspace& after) {
  Step step;
  if (!sameModel(before.model, after.model)) step.model = Change<ModelConfig>{before.model, after.model};
  if (!sameTokens(before.tokens, after.tokens))
    step.tokens = Change<std::vector<std::string>>{before.tokens, after.tokens};
  if (!sameRandom(before.random, after.random))
    step.random = Change<std::optional<RandomEmbeddings>>{before.random, after.random};
  if (!sameJson(before.view, after.view)) step.view = Change<nlohmann::json>{before.view, after.view};
  if (!sameSequences(before.batch_sequences, after.batch_sequences))
    step.batch_sequences = Change<std::vector<Matrix>>{before.batch_sequences, after.batch_sequences};
  step.embeddings = diffEmbeddings(before.embeddings, after.embeddings);
  return step;
}

// Extends a step's part by a later change of it: the step keeps its `before`, takes the newest
// `after`, and forgets the part when the two are equal again.
template <class T, class Same>
void mergePart(std::optional<Change<T>>& step, std::optional<Change<T>>& later, Same same) {
  if (!later) return;
  if (!step) {
    step = std::move(later);
    return;
  }
  step->after = std::move(later->after);
  if (same(step->before, step->after)) step.reset();
}

// Extends a step's embeddings by `later`, the change from `left` (what the step left) to `now`.
std::optional<EmbeddingsChange> mergeEmbeddings(std::optional<EmbeddingsChange> step, EmbeddingsChange later,
                                                const Matrix& left, const Matrix& now) {
  if (!step) return later;
  if (!step->dense && !later.dense && step->rows == later.rows && step->cols == later.cols) {
    // Both cell lists are sorted by (row, col): merge them in one pass, a cell in both keeping
    // the step's before and the later after.
    const auto key = [](const Cell& c) { return std::make_pair(c.row, c.col); };
    std::vector<Cell> merged;
    merged.reserve(step->cells.size() + later.cells.size());
    const std::vector<Cell>& mine = step->cells;
    const std::vector<Cell>& theirs = later.cells;
    auto s = mine.begin(), l = theirs.begin();
    while (s != mine.end() || l != theirs.end()) {
      Cell c;
      if (l == theirs.end() || (s != mine.end() && key(*s) < key(*l))) {
        c = *s++;
      } else if (s == mine.end() || key(*l) < key(*s)) {
        c = *l++;
      } else {
        c = *s++;
        c.after = (l++)->after;
      }
      if (!sameBits(c.before, c.after)) merged.push_back(c);
    }
    if (merged.empty()) return std::nullopt;
    if (merged.size() <= maxListedCells(step->rows, step->cols)) {
      step->cells = std::move(merged);
      return step;
    }
  }
  // The list grew too long, or a shape changed: compare the matrices before the step and now.
  return diffEmbeddings(embeddingsBefore(*step, left), now);
}

// Merges `later` (the change from `before` to `after`; its parts are moved from) into `step`.
void extend(Step& step, Step& later, const Workspace& before, const Workspace& after) {
  mergePart(step.model, later.model, sameModel);
  mergePart(step.tokens, later.tokens, sameTokens);
  mergePart(step.random, later.random, sameRandom);
  mergePart(step.view, later.view, sameJson);
  mergePart(step.batch_sequences, later.batch_sequences, sameSequences);
  if (later.embeddings)
    step.embeddings = mergeEmbeddings(std::move(step.embeddings), std::move(*later.embeddings), before.embeddings,
                                      after.embeddings);
}

// Puts the step's `after` values (forward) or `before` values into `ws`.
void apply(const Step& step, Workspace& ws, bool forward) {
  const auto pick = [forward](const auto& change) -> const auto& { return forward ? change.after : change.before; };
  if (step.model) ws.model = pick(*step.model);
  if (step.tokens) ws.tokens = pick(*step.tokens);
  if (step.random) ws.random = pick(*step.random);
  if (step.view) ws.view = pick(*step.view);
  if (step.batch_sequences) ws.batch_sequences = pick(*step.batch_sequences);
  if (const auto& e = step.embeddings) {
    if (e->dense) {
      ws.embeddings = pick(*e);
    } else {
      // A shape other than the step's means `ws` is not the state the steps left (a caller bug);
      // cells outside it are skipped rather than written out of bounds.
      assert(ws.embeddings.rows() == e->rows && ws.embeddings.cols() == e->cols);
      for (const Cell& c : e->cells)
        if (inside(ws.embeddings, c)) ws.embeddings(c.row, c.col) = forward ? c.after : c.before;
    }
  }
}

std::size_t tokenBytes(const std::vector<std::string>& tokens) {
  std::size_t n = sizeof tokens;
  for (const std::string& t : tokens) n += sizeof t + t.size();
  return n;
}

std::size_t jsonBytes(const nlohmann::json& j) {
  // `replace`: a string that is not valid UTF-8 must not make record throw.
  return sizeof j + j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size();
}

// The payload a step holds, approximately: what bytes() reports and the budget limits.
std::size_t measure(const Step& step) {
  std::size_t n = kStepBytes;
  if (step.model) n += 2 * sizeof(ModelConfig) + parameterBytes(step.model->before) + parameterBytes(step.model->after);
  if (step.tokens) n += tokenBytes(step.tokens->before) + tokenBytes(step.tokens->after);
  if (step.random) n += 2 * sizeof(std::optional<RandomEmbeddings>);
  if (step.view) n += jsonBytes(step.view->before) + jsonBytes(step.view->after);
  if (step.batch_sequences)
    for (const auto* side : {&step.batch_sequences->before, &step.batch_sequences->after})
      for (const Matrix& m : *side) n += sizeof(float) * static_cast<std::size_t>(m.size());
  if (step.file_name) n += step.file_name->before.size() + step.file_name->after.size();
  if (const auto& e = step.embeddings)
    n += e->dense ? static_cast<std::size_t>(e->before.size() + e->after.size()) * sizeof(float)
                  : e->cells.size() * sizeof(Cell);
  return n;
}

}  // namespace

bool equalWorkspaces(const Workspace& a, const Workspace& b) { return diff(a, b).empty(); }

History::History(std::size_t budget_bytes) : budget_(budget_bytes) {}

void History::record(const Workspace& before, const Workspace& after, const std::string& gesture,
                     const std::optional<std::array<std::string, 2>>& file_name) {
  Step change = diff(before, after);
  if (change.empty()) return;
  if (file_name) change.file_name = Change<std::string>{(*file_name)[0], (*file_name)[1]};
  clearRedo();  // a new edit forks the timeline: what was undone cannot come back
  const bool continues = !gesture.empty() && gesture == open_gesture_ && !file_name;
  open_gesture_ = gesture;
  if (continues && gesture_step_ == GestureStep::Dropped) return;
  if (continues && gesture_step_ == GestureStep::OnTop && !undo_.empty()) {
    Step& step = undo_.back();
    extend(step, change, before, after);
    bytes_ -= step.bytes;
    if (step.empty()) {  // the gesture came back to where it began
      undo_.pop_back();
      gesture_step_ = GestureStep::None;
      return;
    }
    step.bytes = measure(step);
    bytes_ += step.bytes;
  } else {
    change.bytes = measure(change);
    bytes_ += change.bytes;
    undo_.push_back(std::move(change));
    gesture_step_ = gesture.empty() ? GestureStep::None : GestureStep::OnTop;
  }
  enforceBudget();
  // Oldest first, so the newest step goes only when it alone exceeds the budget.
  if (undo_.empty() && gesture_step_ == GestureStep::OnTop) gesture_step_ = GestureStep::Dropped;
}

void History::endGesture() {
  open_gesture_.clear();
  gesture_step_ = GestureStep::None;
}

bool History::canUndo() const { return !undo_.empty(); }
bool History::canRedo() const { return !redo_.empty(); }

namespace {

// The file name a step left (`forward`: put before it) back as it was before (after) the step.
void applyFileName(const Step& step, std::string* file, bool forward) {
  if (!file || !step.file_name) return;
  const Change<std::string>& c = *step.file_name;
  if (*file == (forward ? c.before : c.after)) *file = forward ? c.after : c.before;
}

}  // namespace

bool History::undo(Workspace& current, std::string* file) {
  endGesture();
  if (undo_.empty()) return false;
  apply(undo_.back(), current, false);
  applyFileName(undo_.back(), file, false);
  redo_.push_back(std::move(undo_.back()));
  undo_.pop_back();
  return true;
}

bool History::redo(Workspace& current, std::string* file) {
  endGesture();
  if (redo_.empty()) return false;
  apply(redo_.back(), current, true);
  applyFileName(redo_.back(), file, true);
  undo_.push_back(std::move(redo_.back()));
  redo_.pop_back();
  return true;
}

void History::clear() {
  undo_.clear();
  redo_.clear();
  bytes_ = 0;
  endGesture();
}

std::size_t History::bytes() const { return bytes_; }
std::size_t History::undoSteps() const { return undo_.size(); }
std::size_t History::redoSteps() const { return redo_.size(); }

void History::clearRedo() {
  for (const Step& step : redo_) bytes_ -= step.bytes;
  redo_.clear();
}

// Drops the oldest steps first: a delta applies only on the state its newer neighbour left, so
// the history must stay a contiguous run ending at the present. record clears redo before it
// calls this; the redo branch (farthest future first) only keeps the invariant in general.
void History::enforceBudget() {
  while (bytes_ > budget_ && !undo_.empty()) {
    bytes_ -= undo_.front().bytes;
    undo_.pop_front();
  }
  while (bytes_ > budget_ && !redo_.empty()) {
    bytes_ -= redo_.front().bytes;
    redo_.pop_front();
  }
}

}  // namespace attnscope
