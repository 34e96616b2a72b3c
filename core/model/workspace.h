// Workspace: what a user works on (docs/DESIGN.md §2.4) — tokens, embeddings, the model and the
// app's view state. Plain data; formats/workspace_file.h reads, validates and writes it.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/model_config.h"
#include "engine/tensor.h"

namespace attnscope {

// Embeddings given as a generator instead of numbers: torch.manual_seed(seed) then
// torch.rand(rows, cols) ("uniform") or torch.randn(rows, cols) ("normal").
struct RandomEmbeddings {
  bool normal = false;            // randn instead of rand
  std::uint32_t seed = 0;         // torch.manual_seed before drawing
  int rows = 0, cols = 0;         // T × d_in
  std::int64_t draws_before = 0;  // 32-bit draws earlier cells made after the seed (ModelConfig's)
};

struct Workspace {
  std::vector<std::string> tokens;         // T labels, rows of the embeddings
  Matrix embeddings;                       // T × d_in
  std::optional<RandomEmbeddings> random;  // set when the embeddings were generated
  // Batch elements 1 … B−1 when each is a sequence of its own (a notebook's B × T × d_in batch of
  // different sequences; element 0 is `embeddings`, the one the Inputs panel edits): B − 1 matrices
  // of T × d_in. Empty: every element is `embeddings` (the chapter's torch.stack((inputs, inputs))).
  std::vector<Matrix> batch_sequences;
  ModelConfig model;                               // complete: missing fields took the variant's defaults;
                                                   // model.parameters is the document's "parameters"
  nlohmann::json view = nlohmann::json::object();  // the app's own state; the CLI ignores it
};

// T, the tokens (rows of the embeddings), and d_in, their width.
inline int tokenCount(const Workspace& ws) { return static_cast<int>(ws.embeddings.rows()); }
inline int inputWidth(const Workspace& ws) { return static_cast<int>(ws.embeddings.cols()); }

// What each batch element reads, for computeTrace: `embeddings` alone (every element reads it), or
// it and the batch's own sequences, one per element.
std::vector<const Matrix*> inputsOf(const Workspace& ws);
// Batch element b's input: its own sequence, or `embeddings` when every element reads it.
const Matrix& inputOf(const Workspace& ws, int b);
// Whether the batch's own sequences still fit: one per element after the first, each of the
// embeddings' shape. An edit that changes T, d_in or the batch size leaves them behind (the
// Document sets them aside as part of that edit's undo step).
bool batchSequencesFit(const Workspace& ws);

// The book's sentence "Your journey starts with one step" and its 3-d embeddings.
Workspace bookExample(Variant variant = Variant::MultiHead);

// The numbers a RandomEmbeddings stands for, drawn as torch draws them.
Matrix makeRandomEmbeddings(const RandomEmbeddings& spec);

}  // namespace attnscope
