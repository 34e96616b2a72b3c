// ModelSession: the trained model open beside the chapter's workspace, and the text it reads
// (docs/DESIGN.md §3.1 "A trained model"). The controller changes it through the model commands
// (model_open, text, select_layer, …); every change bumps `version`, which the engine request
// carries. Refusals throw InputError and change nothing.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lm/gpt_model.h"
#include "lm/model_pass.h"
#include "state/view_state.h"

namespace attnscope {

struct Snapshot;

// One model file however its path is spelled ("./m.pth", "/home/a/m.pth").
bool sameModelFile(const std::string& a, const std::string& b);

class ModelSession {
 public:
  // The text a model opens with: the chapter's sentence, now read by a trained model.
  static constexpr const char* kFirstText = "Your journey starts with one step";

  // A model, or attention maps given as they are (attnscope.show_attention: no model to run; the
  // text, the next tokens and the views of a layer's stages are not there).
  bool isOpen() const { return model_ != nullptr || given_ != nullptr; }
  const std::shared_ptr<const GptModel>& model() const { return model_; }  // null for given maps
  const std::shared_ptr<const GivenAttention>& given() const { return given_; }
  int layers() const { return model_ ? model_->config.layers : given_ ? given_->layers : 0; }
  Showing showing() const { return given_ ? Showing::GivenMaps : model_ ? Showing::Model : Showing::Chapter; }
  const std::vector<int>& ids() const { return ids_; }                // T: what the model reads
  const std::vector<std::string>& tokens() const { return tokens_; }  // their labels (lm/model_pass.h tokenLabel)
  int tokenCount() const { return static_cast<int>(ids_.size()); }
  bool prependEot() const { return prepend_eot_; }
  int layer() const { return layer_; }
  std::uint64_t version() const { return version_; }
  // Which opening this is: another model, maps or run gets a new one; a run's model at another
  // step (replaceModel) keeps it, so the views keep its last result on screen until the next comes.
  std::uint64_t lineage() const { return lineage_; }
  // A model made here (the Learn tab's run, docs/DESIGN.md §3.9): no text of its own but its ids.
  bool isRun() const { return run_; }
  // The text of the ids (without the leading <|endoftext|> when it is prepended); "" without a tokenizer.
  std::string text() const;
  // The most tokens the model reads: its context, or attnscope's limit when lower.
  int maxTokens() const { return max_tokens_; }

  // What a model reads and where: its text (without a prepended <|endoftext|>), that choice, the layer.
  struct Reading {
    std::vector<int> body;
    bool prepend_eot = false;
    int layer = 0;
  };
  // A model: `start` when given and the model takes it (a saved workspace's), else the text and
  // layer it was last closed with in this session (the weights file's), else its first text
  // (kFirstText, or token ids 0 … 5 without a tokenizer) and layer 0. `prepend_eot` given wins over
  // the remembered choice (else off for a first text).
  void open(std::shared_ptr<const GptModel> model, int max_tokens, std::optional<bool> prepend_eot = std::nullopt,
            const std::optional<Reading>& start = std::nullopt);
  // What a saved workspace keeps of the model to open it again (docs/DESIGN.md §3.1 "A trained model
  // in a workspace"): {"path" (absolute), "num_heads", "ids", "prepend_eot", "layer"}; null unless a
  // model read from a file is open (a run's model and given maps have no file to open again).
  nlohmann::json saved() const;
  // The open model is the one at `path` (a file or a folder), however it is spelled.
  bool isAt(const std::string& path) const;
  // Given maps (a model open before is closed): their tokens, layer 0.
  void openGiven(std::shared_ptr<const GivenAttention> given);
  // A training run's model reading `ids` (its probe), layer 0.
  void openRun(std::shared_ptr<const GptModel> model, std::vector<int> ids);
  // The run's model at another step: the ids and the layer stay. False, and nothing changes, unless
  // a run is open and the model is of its shape (its config whole).
  bool replaceModel(std::shared_ptr<const GptModel> model);
  void close();
  void setLayer(int layer);
  void setText(const std::string& text, std::optional<bool> prepend_eot = std::nullopt);
  // Why setText(text) would refuse it ("text: 305 tokens, more than the model reads (256)"), or "":
  // the Text panel says it while a refused text stays in its field.
  std::string textRefusal(const std::string& text) const;
  // The first tokens of a text longer than the model reads, as many as it reads (less a prepended
  // <|endoftext|>): what "Keep the first N tokens" gives setIds. Empty when the text fits, or is
  // refused for another reason.
  std::vector<int> textHead(const std::string& text) const;
  void setIds(std::vector<int> ids, std::optional<bool> prepend_eot = std::nullopt);  // without the prepended one
  void append(int id);
  void repeat();                // the text twice over
  void setPrependEot(bool on);  // the same ids, with or without <|endoftext|> before them
  bool canRepeat() const { return 2 * static_cast<int>(body().size()) + (prepend_eot_ ? 1 : 0) <= max_tokens_; }

  // The text's own undo: each change above that changes the ids or the <|endoftext|> choice is one
  // step (the chapter's document is set aside while a model is open, so Edit › Undo means this).
  // The last kTextUndoSteps are kept; opening or closing anything forgets them.
  static constexpr int kTextUndoSteps = 200;
  bool canUndoText() const { return !undo_.empty(); }
  bool canRedoText() const { return !redo_.empty(); }
  // What Edit › Undo and Redo act on: the chapter's document while no model is open, the text while
  // a model is, nothing while maps given as they came are shown.
  enum class UndoTarget { Document, Text, Nothing };
  UndoTarget undoTarget() const {
    return !isOpen() ? UndoTarget::Document : model() ? UndoTarget::Text : UndoTarget::Nothing;
  }
  void undoText();  // InputError when there is nothing to undo (or no model: given maps, none)
  void redoText();

 private:
  std::vector<int> body() const;  // the ids without the prepended <|endoftext|>
  void requireModel() const;      // InputError unless a model is open
  void set(std::vector<int> body, bool prepend_eot);
  std::string refusal(const std::vector<int>& body, bool prepend_eot) const;  // set()'s, or ""
  // set(), recorded as one undo step when the text changed.
  void edit(std::vector<int> body, bool prepend_eot);
  void forgetTextHistory();
  void rememberReading();  // the open model's text and layer, for when its file is opened again

  std::map<std::string, Reading> read_before_;  // by weights file: what each model last read here

  struct TextStep {
    std::vector<int> body;  // without the prepended <|endoftext|>
    bool prepend_eot = false;
  };
  TextStep current() const { return {body(), prepend_eot_}; }
  // Takes the newest step off `from` (undo_ or redo_), keeping the text as it is on `to`.
  void stepText(std::vector<TextStep>& from, std::vector<TextStep>& to, const char* what);

  std::shared_ptr<const GptModel> model_;
  std::shared_ptr<const GivenAttention> given_;
  std::vector<int> ids_;
  std::vector<std::string> tokens_;
  bool prepend_eot_ = false;
  int layer_ = 0;
  int max_tokens_ = 0;
  std::uint64_t version_ = 0;
  std::uint64_t lineage_ = 0;
  bool run_ = false;
  std::vector<TextStep> undo_, redo_;  // oldest first
};

// The next-token logits at `position` of the snapshot on screen when it answers the session as it
// is now (a newer text or another model: null until its result comes).
const float* logitsShown(const Snapshot* s, const ModelSession& m, int position);

// What a caption says the maps are of: a trained model's name and layer ("gpt2 · layer 3 of 12",
// parts joined by `sep`), else the chapter's step (describeModel: "Multi-head attention, 4 heads");
// and the seed of the chapter's random weights (sep + "seed 123", `space` between the two), none
// for a trained model's, which are its own (a GPT-2 figure's caption named the workspace's seed).
// `every_layer`: a view of all of them (the Layers tab): "gpt2 · 12 layers × 12 heads".
std::string mapsOrigin(const Snapshot& s, const std::string& sep, bool every_layer = false);
std::string seedPart(const Snapshot& s, const std::string& sep, const std::string& space = " ");

// The snapshot's model pass when it belongs to the model open now (an earlier text of it is
// shown while the newest computes; another model's never), else null.
const ModelPass* passShown(const Snapshot* s, const ModelSession& m);

}  // namespace attnscope
