// `attnscope-cli pytorch-train TASK`: a self-contained PyTorch script that trains the task's model
// as attnscope does and prints the same JSON (docs/DESIGN.md §2.7). The script is
// learn/train_script.py as it is, with the TASK written in as a Python string literal of its JSON
// (formats/pytorch_script.h's pythonString: nothing a task's text holds reaches the code).
#pragma once
#include <string>

#include "learn/train_task.h"

namespace attnscope {

std::string pytorchTrainScript(const TrainTask& task);

}  // namespace attnscope
