// The model a task trains (docs/DESIGN.md §2.7): the book's GPTModel (chapter 4) — token and
// position embeddings, blocks of LayerNorm₁, the chapter's causal MultiHeadAttention (qkv_bias
// optional), residual, LayerNorm₂, feed-forward with GELU (tanh form), residual; the final
// LayerNorm and out_head — with an attention-only option (no LayerNorm₂ and feed-forward), its
// parameters named as the book's state_dict names them, initialized from torch's generator as
// torch builds the modules, and its loss's gradient by hand: every stage's backward pass, as
// torch's autograd defines it.
//
// Shapes: B sequences × T tokens, d = d_model, H heads of width w = d / H, F = 4d the MLP's width,
// V the vocabulary, L blocks. Rows of every activation are the B·T positions, batch-major.
//
// The readable serial reference: plain loops and Eigen products, one thread; the fast path runs
// parts of the batch on threads of their own with the same code (lossAndGradients).
#pragma once
#include <string>
#include <vector>

#include "engine/tensor.h"
#include "formats/torch_save.h"
#include "engine/torch_generator.h"
#include "learn/train_task.h"

namespace attnscope {

struct ParamTensor {
  std::string name;        // the state_dict's key: "trf_blocks.0.att.W_query.weight"
  std::vector<int> shape;  // torch's: a Linear's weight is out × in
  std::size_t offset = 0, size = 0;
};

class TrainModel {
 public:
  // The layout of the task's model, every value zero.
  explicit TrainModel(const TrainTask& task);
  // torch.manual_seed(seed); GPTModel(cfg): nn.Embedding's normal_(0, 1), nn.Linear's
  // kaiming_uniform_(a = √5) and bias uniform, LayerNorm's ones and zeros, in the order the
  // modules are built (which is the state_dict's order).
  void initialize(TorchGenerator& g);

  int layers, heads, d, head_width, context, vocab;
  bool mlp, qkv_bias;
  std::vector<ParamTensor> tensors;  // the state_dict's order
  std::vector<float> values;         // every parameter, flat, each tensor at its offset
  std::size_t parameterCount() const { return values.size(); }

  // Indices into `tensors`; -1 where the model has none (biases without qkv_bias, the MLP's parts
  // in an attention-only model).
  struct Block {
    int wq, bq, wk, bk, wv, bv, wo, bo, w1, b1, w2, b2, norm1_scale, norm1_shift, norm2_scale, norm2_shift;
  };
  int tok_emb, pos_emb, final_scale, final_shift, out_head;
  std::vector<Block> blocks;

  // Tensor i of a flat buffer laid out as `values` (the parameters, their gradients, the
  // optimizer's moments) as a matrix (rows × columns; a vector is one row).
  Eigen::Map<Matrix> view(std::vector<float>& buffer, int i) const;
  Eigen::Map<const Matrix> view(const std::vector<float>& buffer, int i) const;
};

// The mean cross-entropy of the batch's scored targets (F.cross_entropy) and, when `gradients`
// is not null, its gradient with respect to every parameter (laid out as model.values, written
// whole). Training mode when `dropout` > 0 and `generator` is given: the masks are drawn first, as
// torch's forward draws them (drop_emb, then per block the attention weights, the shortcut after
// attention and after the MLP), and the backward uses those masks.
//
// `parts` = 1 is the serial reference. The fast path splits the batch into `parts` runs of whole
// sequences, each on a thread of the engine's team (engine/thread_team.h) with gradients of its
// own, summed in part order: the same numbers on any machine for a given `parts`, and within
// rounding of the reference (tests/unit/training_test.cpp). kTrainParts is what runs use.
double lossAndGradients(const TrainModel& model, const TrainBatch& batch, std::vector<float>* gradients,
                        double dropout = 0, TorchGenerator* generator = nullptr, int parts = 1);
inline constexpr int kTrainParts = 2;  // the machine's two cores; a part's gradients are one more copy

// The model's state_dict as torch.save(model.state_dict()) holds it — every parameter by its name,
// and each block's `att.mask` buffer (the context's upper triangle of ones) — written to `path`
// by the extension: .npz (np.load gives the arrays; torch.from_numpy each into load_state_dict),
// .safetensors, or .pth / .pt (the zip torch.save writes, formats/torch_save.h: torch.load gives
// the state_dict); anything else is refused naming the four. The file opens in the model view
// (lm/gpt_model.h: the book's layout, attention-only blocks too). Atomic (formats/atomic_file.h).
void saveTrainModel(const TrainModel& model, const std::string& path, const TokenNames& tokens = {});
void checkTrainModelPath(const std::string& path);  // saveTrainModel's refusals of the path alone
// The same of parameters laid out by `layout` (a TrainModel's tensors) in `values`, with the causal
// masks of a context of `context` tokens (a run's snapshot: nothing copied into a TrainModel).
// `heads` > 0: the file says it as "n_head", which the loader reads where no config.json or caller
// gives it — a .safetensors in its __metadata__, a .pth in the state_dict's _metadata of the root
// module (beside its "version": 1; load_state_dict ignores a key it does not know). A .npz has no
// place for it that load_state_dict would not refuse: its heads are given when it is opened.
// `tokens` (a text task's; default none) go beside "n_head": "vocabulary", their names id by id as a
// JSON list in a string, and "tokens", their kind, so that the model reopens showing its tokens, not
// ids, and takes a typed text.
void saveStateDict(const std::vector<ParamTensor>& layout, int context, const float* values, const std::string& path,
                   int heads = 0, const TokenNames& tokens = {});

// The one list of a state_dict's tensors, in torch's order: every parameter of `layout` (pointing
// into `values`) and, when `masks` is given, each block's `att.mask` buffer (the context's upper
// triangle of ones, held in *masks) where torch's state_dict holds it — a module's own buffers
// before its children's parameters, so `att.mask` precedes `att.W_query.weight`.
std::vector<NamedFloats> stateDictTensors(const std::vector<ParamTensor>& layout, int context, const float* values,
                                          std::vector<float>* masks);

// Every layer's heads' attention weights on one sequence (eval mode): maps[l][h] is T × T.
std::vector<std::vector<Matrix>> attentionMaps(const TrainModel& model, const std::vector<int>& ids);

}  // namespace attnscope
