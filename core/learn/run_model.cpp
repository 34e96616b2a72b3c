#include "learn/run_model.h"

#include <utility>

#include "engine/errors.h"
#include "formats/tensor_file.h"

namespace attnscope {

std::vector<std::string> taskTokenLabels(const TrainTask& task) {
  if (task.kind == TaskKind::Text) return task.token_labels;
  std::vector<std::string> labels;
  labels.reserve(static_cast<std::size_t>(task.vocab));
  for (int id = 0; id < task.vocab; ++id) labels.push_back(std::to_string(id));
  return labels;
}

std::shared_ptr<const GptModel> runGptModel(const TrainTask& task, const std::vector<ParamTensor>& layout,
                                            std::shared_ptr<const std::vector<float>> values, const std::string& name) {
  std::size_t size = 0;
  for (const ParamTensor& t : layout) size = std::max(size, t.offset + t.size);
  if (values == nullptr || values->size() != size) throw InputError("the run's parameters do not fit its model");
  std::vector<std::pair<std::string, FloatTensor>> tensors;
  for (const NamedFloats& t : stateDictTensors(layout, task.seq_len, values->data(), nullptr)) {  // no masks: buffers
    FloatTensor f;
    f.data = t.data;
    f.shape = t.shape;
    f.owner = values;
    tensors.emplace_back(t.name, std::move(f));
  }
  GptLoadOptions options;
  options.num_heads = task.heads;
  options.reference_mlp = false;  // the app runs the fast path only
  // The loader made the model (not const) and nobody else holds it yet: named here, not copied.
  auto model = std::const_pointer_cast<GptModel>(
      gptModelFromTensors(*TensorFile::ofTensors(std::move(tensors), name), "", options));
  model->name = name;
  model->token_labels = taskTokenLabels(task);
  model->notes.clear();  // an attention-only model's note says what the Learn tab shows already
  return model;
}

}  // namespace attnscope
