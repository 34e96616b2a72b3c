// A training run's model as the model view opens it (docs/DESIGN.md §3.9): the parameters of a
// step, read by lm/gpt_model.h's one loader as the book's state_dict from memory, so every view
// that shows a trained model — the Layers tab, Heatmaps with every stage, Lines, Inspector,
// Compare, the next tokens — shows the run as it learns, with nothing of its own.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "learn/train_model.h"
#include "learn/train_task.h"
#include "lm/gpt_model.h"

namespace attnscope {

// The names of the task's V tokens as the views label them: the text task's characters (or GPT-2
// tokens), else the ids as numbers ("0" … "63").
std::vector<std::string> taskTokenLabels(const TrainTask& task);

// The task's model holding `values`, laid out by `layout` (its TrainModel's tensors), named `name`.
// The embeddings and the head are read where they lie in `values` (which the model keeps); each
// block's weights are copied into the engine's packed form, as any model file's are. Throws
// InputError when a value is not finite. Attention-only runs open as the book's attention-only
// blocks.
std::shared_ptr<const GptModel> runGptModel(const TrainTask& task, const std::vector<ParamTensor>& layout,
                                            std::shared_ptr<const std::vector<float>> values, const std::string& name);

}  // namespace attnscope
