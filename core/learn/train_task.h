// A training task (docs/DESIGN.md §2.7): what to learn, the model's sizes and the optimizer, read
// from a TASK JSON, and the batches it trains on, drawn from torch's generator so that the PyTorch
// script (learn/train_script.h) draws the same ones.
//
// Shapes: B sequences of T tokens over a vocabulary of V; a batch's inputs and targets are B × T
// token ids, row-major; a target of kIgnored is not scored (torch's ignore_index).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "engine/torch_generator.h"
#include "lm/vocabulary_tokenizer.h"

namespace attnscope {

enum class TaskKind { Induction, PreviousToken, Sort, Reverse, Text };
enum class OptimizerKind { AdamW, Sgd };
enum class TextTokens { Characters, Gpt2 };  // what the text task's tokens are

class Gpt2Tokenizer;

struct TrainTask {
  TaskKind kind = TaskKind::Induction;
  // The model: the book's GPTModel (chapter 4) with `layers` blocks of `heads` heads, width
  // d_model, context seq_len; mlp = false drops each block's LayerNorm₂ and feed-forward (an
  // attention-only model, where an induction circuit forms fastest).
  int layers = 2, heads = 2, d_model = 64, seq_len = 32, vocab = 64;
  bool mlp = true, qkv_bias = false;
  double dropout = 0;  // drop_rate: embeddings, attention weights, both shortcuts (training only)
  // The run: batches of `batch` sequences, `steps` optimizer steps from torch.manual_seed(seed).
  int batch = 32, steps = 1000;
  std::uint32_t seed = 123;
  OptimizerKind optimizer = OptimizerKind::AdamW;
  double lr = 1e-3, weight_decay = 0.01, momentum = 0;  // torch's AdamW default decay; SGD's 0
  int score_every = 25;                                 // head scores on the probe every N steps (and after the last)
  // induction: each sequence is a random prefix, then a random chunk of a period drawn from
  // [min_period, max_period] repeated to the end.
  int min_period = 6, max_period = 14;
  // text: the text, one token per character or per GPT-2 token (the tokenizer's files in the folder
  // `tokenizer` names, or the folder of the file it names); the distinct tokens, sorted (code points;
  // GPT-2's ids), are the vocabulary.
  std::string text;
  TextTokens tokens = TextTokens::Characters;
  std::string tokenizer;                  // gpt2: the path, absolute (parseTrainTask resolves it)
  std::vector<std::string> token_labels;  // the vocabulary's labels, V of them (filled by parseTrainTask):
                                          // the characters, or GPT-2's token strings (Ġ for a space)
  std::vector<int> text_ids;              // the text as ids into `token_labels`
};

// A text task's tokens as the model saved from it names them (learn/train_model.h): the labels and
// "characters" or "gpt2"; none for the other tasks, whose tokens are numbers.
TokenNames savedTokens(const TrainTask& task);

// The task table (one row per task): its name in TASK's "task" and what it teaches.
struct TaskInfo {
  TaskKind kind;
  const char* name;
  const char* teaches;
};
const std::vector<TaskInfo>& taskTable();
const TaskInfo& taskInfo(TaskKind kind);
// A task's defaults, every field set as a TASK naming only the task gets it (the text task's text
// and vocabulary empty).
TrainTask taskDefaults(TaskKind kind);

// Where a text task's GPT-2 tokenizer comes from (docs/DESIGN.md §2.7). A relative "tokenizer" path
// is read against `folder` (the TASK file's; empty: the working directory) and kept absolute, so the
// PyTorch script finds the same files wherever it runs. `load_tokenizer`, when set, is given that
// path instead of the files being read (Gpt2Tokenizer::fromFolder of the path's folder): the fuzz
// target's tokenizer lives in memory.
struct TaskFiles {
  std::string folder;
  std::function<std::shared_ptr<const Gpt2Tokenizer>(const std::string& path)> load_tokenizer;
};

// Reads a TASK JSON: "task" names a row of the table, every other field is optional with the
// task's default (fields the task does not use are refused, so is any unknown field, naming it).
// Throws InputError naming the field and the accepted range.
TrainTask parseTrainTask(const nlohmann::json& task, const TaskFiles& files = {});
TrainTask parseTrainTaskText(const std::string& json_text, const TaskFiles& files = {});
// The task of a `learn` command that names none: {"task": "induction"}.
nlohmann::json defaultTaskJson();
// `step` of a run of `task` as learn_to (0 … steps) and learn_show (−1, the newest, too) name it:
// InputError unless it is one.
void checkRunStep(const TrainTask& task, int step, bool newest_allowed);

// A TASK file ("-": standard input) as `attnscope-cli train` and `attnscope --bench-learn` read it:
// at most 8 MiB, a relative "tokenizer" the file's neighbour (standard input's: the working
// folder's); `steps` ≥ 0 replaces the file's steps. Throws InputError (the parser's, unprefixed).
TrainTask readTrainTaskFile(const std::string& path, int steps = -1);
// The task as JSON, every field written (what the PyTorch script embeds and reads back).
nlohmann::json trainTaskJson(const TrainTask& task);

inline constexpr int kIgnored = -100;  // F.cross_entropy's default ignore_index

struct TrainBatch {
  int B = 0, T = 0;
  std::vector<int> inputs, targets;  // B × T
};

// The next batch of the task, drawn from `data` (a torch.Generator seeded with seed + 1 in the
// script; its draws per sequence are in train_task.cpp, each a torch.randint call).
TrainBatch nextBatch(const TrainTask& task, TorchGenerator& data);

// The fixed probe the head scores read (T tokens): a random first half repeated, drawn from
// torch.Generator().manual_seed(seed + 2), so that induction shows; the text task's first T tokens.
std::vector<int> probeSequence(const TrainTask& task);

}  // namespace attnscope
