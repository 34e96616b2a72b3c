// A trained GPT: GPT-2 as Hugging Face ships it, or the book's own GPTModel (chapters 4–5), loaded
// from a file of tensors (formats/tensor_file.h) into one form (docs/DESIGN.md §2.6).
//
// Shapes: V vocabulary, C context length (positions), d model width, L blocks, H heads of width
// w = d / H, F = 4·d the MLP's width.
//
// Both layouts hold the same model: token + position embeddings, L blocks of
//   x = x + out_proj(causal multi-head attention(LayerNorm₁(x)))      (Q, K, V with bias)
//   x = x + proj(GELU_tanh(fc(LayerNorm₂(x))))
// then a final LayerNorm and the output head (GPT-2's is the token embedding, tied). Hugging
// Face's Conv1D layers store their weights in × out (y = x·W + b; c_attn's columns are Q, K, V in
// thirds); the book's nn.Linear out × in. Here every layer is in torch's Linear layout (out × in),
// and each block's attention is the chapter's MultiHeadAttention (engine/parameters.h) with its
// weights given, packed once for the fast path.
#pragma once
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/attention.h"
#include "engine/model_config.h"
#include "engine/packed_linear.h"
#include "engine/parameters.h"
#include "formats/tensor_file.h"
#include "lm/gpt2_tokenizer.h"
#include "lm/vocabulary_tokenizer.h"

namespace attnscope {

struct GptConfig {
  int vocab_size = 0;      // V: rows of the token embedding
  int context_length = 0;  // C: rows of the position embedding
  int d_model = 0;         // d
  int layers = 0;          // L
  int heads = 0;           // H
  int mlp_width = 0;       // F (4·d in GPT-2 and the book); 0 without an MLP
  bool mlp = true;  // false: every block is attention only, no LayerNorm₂ and MLP (attnscope's Learn tab trains such)
  float layer_norm_eps = 1e-5f;
  bool qkv_bias = true;    // GPT-2's c_attn has one; the book's GPT_CONFIG_124M trains without
  bool tied_head = true;   // the output head is the token embedding (GPT-2; the book's out_head is its own)
  std::string layout;      // "huggingface" or "book"
  std::string heads_from;  // where H came from: "config.json", "the caller", "d / 64"
  int headWidth() const { return heads > 0 ? d_model / heads : 0; }
};

// LayerNorm as the book's class: scale · (x − mean) / √(var + eps) + shift, var biased.
struct LayerNormWeights {
  RowVector scale, shift;  // d
};

struct GptBlock {
  LayerNormWeights norm1, norm2;
  GivenModule attention;  // MultiHeadAttention (d → d, H heads, qkv bias as the model) and its packed panels
  Linear fc, proj;        // F × d and d × F, with bias; empty unless GptLoadOptions::reference_mlp
  SlicedLinear fc_packed, proj_packed;
};

struct GptModel {
  GptConfig config;
  ModelConfig attention_config;    // a block's attention as the chapter's module (multihead, causal, eval)
  FloatTensor token_embedding;     // V × d (mapped from the file when it holds float32)
  FloatTensor position_embedding;  // C × d
  std::vector<GptBlock> blocks;    // L
  LayerNormWeights final_norm;
  FloatTensor output_head;                         // V × d: the token embedding when tied
  std::shared_ptr<const Gpt2Tokenizer> tokenizer;  // null when no tokenizer files were found
  std::string tokenizer_files_odd;  // then the files there that are not regular: "vocab.json is a pipe (FIFO)"
  std::string path;                                // what was opened (a folder or a file)
  // A model made here rather than opened (a run of the Learn tab, §3.9): what the app calls it,
  // and its tokens' names (the text task's characters), which no tokenizer gives.
  std::string name;
  std::vector<std::string> token_labels;  // empty, or V of them
  std::string token_kind;                 // with them: "characters" or "gpt2" (the text task's "tokens")
  std::string no_text;                    // with them and no tokenizer: why, and what to put beside it
  std::string weights_path;                        // the file the tensors came from
  std::vector<std::string> notes;  // what a user should know: heads guessed, tensors ignored, no tokenizer
};

struct GptLoadOptions {
  int num_heads = 0;  // 0: config.json's n_head, else d / 64 (a note says so)
  TensorFileLimits limits;
  // What the loaded model may hold (its weights in torch's layout and packed, the embeddings when
  // they are converted), estimated from the shapes before any tensor is read.
  std::int64_t max_model_bytes = Limits{}.max_model_bytes;
  // The same bounds from a budget (Limits::max_model_bytes): the model, and each tensor within it.
  static GptLoadOptions within(const Limits& limits) {
    GptLoadOptions o;
    o.max_model_bytes = limits.max_model_bytes;
    o.limits.max_tensor_bytes = std::min(o.limits.max_tensor_bytes, limits.max_model_bytes);
    return o;
  }
  // Keep the MLP's weights in torch's layout for the reference path (ExecutionOptions::fused =
  // false): the fast path reads only their packed panels, and GPT-2 small's are 226 MB.
  bool reference_mlp = true;
};

// Opens PATH: a Hugging Face folder (config.json, model.safetensors — or pytorch_model.bin —,
// vocab.json, merges.txt) or a file of tensors (.safetensors, .pth/.pt, .npz, .bin) in either
// layout, with the tokenizer files and config.json beside it when they are there. Tensor names
// with or without `transformer.` (HF) and with a checkpoint's `model_state_dict.`, `module.` or
// `_orig_mod.` (the book) are accepted; HF's attention mask buffers and the book's `att.mask` are
// ignored. Throws InputError naming the tensor or field that is missing or of the wrong shape.
std::shared_ptr<const GptModel> loadGptModel(const std::string& path, const GptLoadOptions& options = {});

// select_layer's `layer` and `head` (−1: all heads) against a model of `layers` × `heads`: one
// InputError naming the one out of range (the head first), as the app and a lesson's check say it.
void checkLayerAndHead(int layer, int head, int layers, int heads);

// What the app calls a model: its folder's or file's name ("gpt2"), and with its shape
// ("gpt2 (12 layers × 12 heads, d = 768)").
std::string modelName(const GptModel& model);
std::string modelTitle(const GptModel& model);

// The folder a model path names: the path itself when it is a folder, else the file's ("." for a
// bare file name). The tokenizer files and config.json are looked for there.
std::string modelFolder(const std::string& path);

// The token names a model trained here on a text has in its file's metadata (lm/vocabulary_tokenizer.h);
// the list must be `vocab_size` long (the model's ids). Throws InputError naming `path` for a damaged list.
TokenNames readTokenNames(const TensorFile& file, const std::string& path, std::int64_t vocab_size);

// The rows of the file's token embedding (wte.weight or tok_emb.weight, under any prefix a
// state_dict may carry): the ids the model reads; −1 where it holds neither.
std::int64_t tokenEmbeddingRows(const TensorFile& file);
// Where the tokenizer beside a model of `rows` token ids has more ids than that (another model's):
// what to say ("the tokenizer beside it (FOLDER) has ids up to … : another model's; …"); else "".
std::string anotherModelsTokenizer(const std::string& folder, const Gpt2Tokenizer& tokenizer, std::int64_t rows);

// The same from tensors already open, and config.json's text (empty: none). For tests and tools.
std::shared_ptr<const GptModel> gptModelFromTensors(const TensorFile& tensors, const std::string& config_json,
                                                    const GptLoadOptions& options = {});

}  // namespace attnscope
