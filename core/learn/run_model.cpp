#include "learn/run_model.h"

#include <utility>

#include "engine/errors.h"
#include "formats/tensor_file.h"
#include "learn/train_model.h"

namespace attnscope {

std::vector<std::string> taskTokenLabels(const TrainTask& task) {
  if (task.kind == TaskKind::Text) return task.token_labels;
  std::vector<std::string> labels;
  labels.reserve(static_cast<std::size_t>(task.vocab));
  for (int id = 0; id < task.vocab; ++id) labels.push_back(std::to_string(id));
  return labels;
}

std::shared_ptr<const GptModel> runGptModel(const TrainTask& task, std::shared_ptr<const std::vector<float>> values,
                                            const std::string& name) {
  const TrainModel layout(task);
  if (values == nullptr || values->size() != layout.values.size())
    throw InputError("the run's parameters do not fit its model");
  std::vector<std::pair<std::string, FloatTensor>> tensors;
  for (const ParamTensor& t : layout.tensors) {
    FloatTensor f;
    f.data = values->data() + t.offset;
    f.shape.assign(t.shape.begin(), t.shape.end());
    f.owner = values;
    tensors.emplace_back(t.name, std::move(f));
  }
  GptLoadOptions options;
  options.num_heads = task.heads;
  options.reference_mlp = false;  // the app runs the fast path only
  auto model = std::make_shared<GptModel>(*gptModelFromTensors(*TensorFile::ofTensors(std::move(tensors), name), "", options));
  model->name = name;
  model->token_labels = taskTokenLabels(task);
  model->notes.clear();  // an attention-only model's note says what the Learn tab shows already
  return model;
}

}  // namespace attnscope
