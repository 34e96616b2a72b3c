#include "model/workspace.h"

#include "engine/torch_generator.h"

namespace attnscope {

Matrix makeRandomEmbeddings(const RandomEmbeddings& r) {
  TorchGenerator g(r.seed);
  g.discard(static_cast<std::uint64_t>(r.draws_before));  // what earlier cells drew
  Matrix x(r.rows, r.cols);
  if (r.normal)
    g.fillNormal(x.data(), x.size(), 0.0, 1.0);
  else
    g.fillUniform(x.data(), x.size(), 0.0, 1.0);
  return x;
}

Workspace bookExample(Variant variant) {
  Workspace ws;
  ws.tokens = {"Your", "journey", "starts", "with", "one", "step"};
  ws.embeddings.resize(6, 3);
  ws.embeddings << 0.43f, 0.15f, 0.89f,  // Your     (x^1)
      0.55f, 0.87f, 0.66f,               // journey  (x^2)
      0.57f, 0.85f, 0.64f,               // starts   (x^3)
      0.22f, 0.58f, 0.33f,               // with     (x^4)
      0.77f, 0.25f, 0.10f,               // one      (x^5)
      0.05f, 0.80f, 0.55f;               // step     (x^6)
  ws.model = defaultConfig(variant);
  if (variant == Variant::Simple) ws.model.d_out = 3;
  return ws;
}

std::vector<const Matrix*> inputsOf(const Workspace& ws) {
  std::vector<const Matrix*> inputs = {&ws.embeddings};
  for (const Matrix& m : ws.batch_sequences) inputs.push_back(&m);
  return inputs;
}

const Matrix& inputOf(const Workspace& ws, int b) {
  return b >= 1 && b <= static_cast<int>(ws.batch_sequences.size())
             ? ws.batch_sequences[static_cast<std::size_t>(b - 1)]
             : ws.embeddings;
}

bool batchSequencesFit(const Workspace& ws) {
  if (ws.batch_sequences.empty()) return true;
  if (static_cast<int>(ws.batch_sequences.size()) != ws.model.batch_size - 1) return false;
  for (const Matrix& m : ws.batch_sequences)
    if (m.rows() != ws.embeddings.rows() || m.cols() != ws.embeddings.cols()) return false;
  return true;
}

}  // namespace attnscope
