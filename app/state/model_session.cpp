#include "state/model_session.h"

#include "engine/count_text.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>

#include "engine/errors.h"
#include "formats/utf8.h"
#include "lm/model_pass.h"
#include "state/snapshot.h"

namespace attnscope {

std::string ModelSession::text() const {
  return model_ && model_->tokenizer ? model_->tokenizer->decode(body()) : std::string();
}

nlohmann::json ModelSession::saved() const {
  if (!model_ || run_) return nullptr;
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(model_->path, ec);
  return {{"path", ec ? model_->path : absolute.lexically_normal().string()},
          {"num_heads", model_->config.heads},
          {"ids", body()},
          {"prepend_eot", prepend_eot_},
          {"layer", layer_}};
}

std::vector<int> ModelSession::body() const {
  return prepend_eot_ && !ids_.empty() ? std::vector<int>(ids_.begin() + 1, ids_.end()) : ids_;
}

namespace {
// One file however its path is spelled ("./m.pth", "/home/a/m.pth").
std::string readingKey(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : p.string();
}
}  // namespace

bool sameModelFile(const std::string& a, const std::string& b) { return readingKey(a) == readingKey(b); }

bool ModelSession::isAt(const std::string& path) const { return model_ && sameModelFile(path, model_->path); }

void ModelSession::open(std::shared_ptr<const GptModel> model, int max_tokens, std::optional<bool> prepend_eot,
                        const std::optional<Reading>& start) {
  rememberReading();
  given_.reset();
  model_ = std::move(model);
  ++lineage_;
  run_ = false;
  forgetTextHistory();
  max_tokens_ = std::min(model_->config.context_length, max_tokens);
  layer_ = 0;
  // Closed and opened again (to show the chapter in between, say): the text it read, not the first
  // one again, which the user would have to type anew. A file changed since may refuse it.
  const auto before = read_before_.find(readingKey(model_->weights_path));
  if (start || before != read_before_.end()) {
    const Reading& r = start ? *start : before->second;
    const bool eot = prepend_eot.value_or(r.prepend_eot) && model_->tokenizer;
    if (refusal(r.body, eot).empty()) {
      set(r.body, eot);
      layer_ = std::clamp(r.layer, 0, std::max(0, layers() - 1));
      return;
    }
  }
  try {
    if (model_->tokenizer)
      set(model_->tokenizer->encode(kFirstText), prepend_eot.value_or(false));
    else
      set({0, 1, 2, 3, 4, 5}, false);
  } catch (const InputError&) {  // a vocabulary or context too small for the first text, or without its characters
    std::vector<int> first(static_cast<std::size_t>(std::min({6, model_->config.vocab_size, max_tokens_})));
    std::iota(first.begin(), first.end(), 0);
    set(first, false);
  }
}

void ModelSession::rememberReading() {
  if (model_ && !run_ && !model_->weights_path.empty())
    read_before_[readingKey(model_->weights_path)] = {body(), prepend_eot_, layer_};
}

void ModelSession::openGiven(std::shared_ptr<const GivenAttention> given) {
  rememberReading();
  model_.reset();
  given_ = std::move(given);
  ++lineage_;
  run_ = false;
  forgetTextHistory();
  max_tokens_ = given_->tokens;
  layer_ = 0;
  prepend_eot_ = false;
  std::map<std::string, int> id_of;  // the same text, the same token (as passOfMaps tells them)
  ids_.clear();
  for (const std::string& label : given_->labels)
    ids_.push_back(id_of.emplace(label, static_cast<int>(id_of.size())).first->second);
  tokens_ = given_->labels;
  ++version_;
}

void ModelSession::openRun(std::shared_ptr<const GptModel> model, std::vector<int> ids) {
  rememberReading();
  given_.reset();
  model_ = std::move(model);
  ++lineage_;
  run_ = true;
  forgetTextHistory();
  max_tokens_ = model_->config.context_length;
  layer_ = 0;
  set(std::move(ids), false);
}

bool ModelSession::replaceModel(std::shared_ptr<const GptModel> model) {
  if (!run_ || !model_ || model == nullptr) return false;
  const GptConfig &a = model_->config, &b = model->config;
  if (a.vocab_size != b.vocab_size || a.context_length != b.context_length || a.d_model != b.d_model ||
      a.layers != b.layers || a.heads != b.heads || a.mlp_width != b.mlp_width || a.mlp != b.mlp ||
      a.qkv_bias != b.qkv_bias || a.tied_head != b.tied_head || a.layer_norm_eps != b.layer_norm_eps)
    return false;
  model_ = std::move(model);
  ++version_;
  return true;
}

void ModelSession::close() {
  rememberReading();
  model_.reset();
  given_.reset();
  run_ = false;
  forgetTextHistory();
  ids_.clear();
  tokens_.clear();
  ++version_;
}

void ModelSession::setLayer(int layer) {
  if (!isOpen()) requireModel();
  checkLayerAndHead(layer, -1, layers(), 1);
  if (layer != layer_) ++version_;
  layer_ = layer;
}

namespace {
const char* const kNoTokenizer =
    "text: this model has no tokenizer (vocab.json and merges.txt, or encoder.json and vocab.bpe, beside it): "
    "give token ids instead";
}  // namespace

void ModelSession::setText(const std::string& text, std::optional<bool> prepend_eot) {
  requireModel();
  if (!model_->tokenizer) throw InputError(kNoTokenizer);
  edit(model_->tokenizer->encode(text), prepend_eot.value_or(prepend_eot_));
}

std::string ModelSession::textRefusal(const std::string& text) const {
  if (!model_) return "no model is open";
  if (!model_->tokenizer) return kNoTokenizer;
  try {  // a trained text's tokens refuse a character or token the model never saw
    return refusal(model_->tokenizer->encode(text), prepend_eot_);
  } catch (const InputError& e) {
    return e.what();
  }
}

std::vector<int> ModelSession::textHead(const std::string& text) const {
  if (!model_ || !model_->tokenizer) return {};
  std::vector<int> body;
  try {
    body = model_->tokenizer->encode(text);
  } catch (const InputError&) {
    return {};
  }
  const std::size_t reads = static_cast<std::size_t>(std::max(0, max_tokens_ - (prepend_eot_ ? 1 : 0)));
  if (body.size() <= reads || reads == 0) return {};
  body.resize(reads);
  // Whole characters: a character of byte-level tokens cut at the context's end would leave the
  // text ending in bytes that are no UTF-8 (shown as �).
  while (!body.empty() && firstNonUtf8(model_->tokenizer->decode(body)) != std::string::npos) body.pop_back();
  if (body.empty() || !refusal(body, prepend_eot_).empty()) return {};  // refused for another reason too
  return body;
}

void ModelSession::setIds(std::vector<int> ids, std::optional<bool> prepend_eot) {
  requireModel();
  edit(std::move(ids), prepend_eot.value_or(prepend_eot_));
}

void ModelSession::append(int id) {
  requireModel();
  if (tokenCount() >= maxTokens())  // (edit would name a 1025-token text the user never typed)
    throw InputError("append_token: the text is as long as the model's context (" + std::to_string(maxTokens()) +
                     " tokens): nothing can follow it");
  std::vector<int> ids = body();
  ids.push_back(id);
  edit(std::move(ids), prepend_eot_);
}

void ModelSession::repeat() {
  requireModel();
  const std::vector<int> once = body();
  std::vector<int> twice = once;
  twice.insert(twice.end(), once.begin(), once.end());
  edit(std::move(twice), prepend_eot_);
}

void ModelSession::setPrependEot(bool on) {
  requireModel();
  edit(body(), on);
}

void ModelSession::edit(std::vector<int> body, bool prepend_eot) {
  TextStep before = current();
  if (body == before.body && prepend_eot == before.prepend_eot) return;  // nothing changes: no step
  set(std::move(body), prepend_eot);                                     // a refusal throws before anything is recorded
  undo_.push_back(std::move(before));
  if (undo_.size() > static_cast<std::size_t>(kTextUndoSteps)) undo_.erase(undo_.begin());
  redo_.clear();
}

void ModelSession::undoText() { stepText(undo_, redo_, "undo"); }
void ModelSession::redoText() { stepText(redo_, undo_, "redo"); }

void ModelSession::stepText(std::vector<TextStep>& from, std::vector<TextStep>& to, const char* what) {
  requireModel();
  if (from.empty()) throw InputError(std::string(what) + ": nothing to " + what + " in the model's text");
  // Every step was a text the model read, so set() takes it back.
  TextStep step = std::move(from.back());
  from.pop_back();
  to.push_back(current());
  set(std::move(step.body), step.prepend_eot);
}

void ModelSession::forgetTextHistory() {
  undo_.clear();
  redo_.clear();
}

void ModelSession::requireModel() const {
  if (given_)
    throw InputError(
        "these attention maps came as they are (attnscope.show_attention): their text cannot change "
        "here; send others from the notebook");
  if (!model_) throw InputError("no model is open: File › Open model… first");
}

// Of the same lineage and text: a run's newer step keeps the logits of the step before on screen,
// beside that step's maps, until its own come (no blank list at each snapshot).
const float* logitsShown(const Snapshot* s, const ModelSession& m, int position) {
  return s != nullptr && s->model && m.isOpen() && s->model_lineage == m.lineage() && s->model->ids == m.ids()
             ? s->logitsAt(position)
             : nullptr;
}

std::string mapsOrigin(const Snapshot& s, const std::string& sep, bool every_layer) {
  if (!s.model) return describeModel(s.inputs->model);
  const ModelPass& pass = *s.model;
  const std::string name = pass.model                                 ? modelName(*pass.model)
                           : pass.given && !pass.given->title.empty() ? pass.given->title
                                                                      : "attention maps";
  if (every_layer) return name + sep + countOf(pass.layers(), "layer") + " × " + countOf(pass.headsPerLayer(), "head");
  return name + sep + "layer " + std::to_string(s.layer + 1) + " of " + std::to_string(pass.layers());
}

std::string seedPart(const Snapshot& s, const std::string& sep, const std::string& space) {
  return s.model ? "" : sep + "seed" + space + std::to_string(s.inputs->model.seed);
}

const ModelPass* passShown(const Snapshot* s, const ModelSession& m) {
  return s != nullptr && s->model && m.isOpen() && s->model_lineage == m.lineage() ? s->model.get() : nullptr;
}

std::string ModelSession::refusal(const std::vector<int>& body, bool prepend_eot) const {
  const int eot = model_->tokenizer ? model_->tokenizer->endOfText() : -1;
  if (prepend_eot && eot < 0)
    return "prepend_eot: this model's vocabulary has no <|endoftext|> (or no tokenizer is beside it)";
  const std::size_t first = prepend_eot ? 1 : 0, count = body.size() + first;
  if (count == 0) return "text: empty — the model needs at least one token";
  if (static_cast<int>(count) > max_tokens_)
    return "text: " + std::to_string(count) + " tokens, more than the model reads (" + std::to_string(max_tokens_) +
           ")";
  const int V = model_->config.vocab_size;
  for (std::size_t t = 0; t < body.size(); ++t)
    if (body[t] < 0 || body[t] >= V)  // counted from 1, as the panels count the tokens
      return "token " + std::to_string(t + first + 1) + " is id " + std::to_string(body[t]) +
             ", outside the vocabulary (0 … " + std::to_string(V - 1) + ")";
  return "";
}

void ModelSession::set(std::vector<int> body, bool prepend_eot) {
  if (const std::string why = refusal(body, prepend_eot); !why.empty()) throw InputError(why);
  if (prepend_eot) body.insert(body.begin(), model_->tokenizer->endOfText());
  std::vector<std::string> tokens;
  tokens.reserve(body.size());
  for (int id : body) tokens.push_back(tokenLabel(*model_, id));
  ids_ = std::move(body);
  tokens_ = std::move(tokens);
  prepend_eot_ = prepend_eot;
  ++version_;
}

}  // namespace attnscope
