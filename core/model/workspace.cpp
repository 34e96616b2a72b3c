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

}  // namespace attnscope
