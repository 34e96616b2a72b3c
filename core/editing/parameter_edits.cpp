#include "editing/parameter_edits.h"

#include <cmath>
#include <memory>

#include "engine/errors.h"
#include "engine/parameters.h"

namespace attnscope {

namespace {


// The module's names, for messages: "W_query.weight, W_key.weight, …".
std::string nameList(const std::vector<NamedTensor>& all) {
  std::string names;
  for (const NamedTensor& t : all) names += (names.empty() ? "" : ", ") + t.name;
  return names;
}

// `own` (the user's tensors, any order) with `changed` put in, in the order of `all`.
std::shared_ptr<const ParameterValues> merged(const std::vector<NamedTensor>& all, const ParameterValues* own,
                                              const std::vector<NamedTensor>& changed) {
  auto out = std::make_shared<ParameterValues>();
  for (const NamedTensor& slot : all) {
    const NamedTensor* pick = nullptr;
    for (const NamedTensor& t : changed)
      if (t.name == slot.name) pick = &t;
    if (!pick && own)
      for (const NamedTensor& t : *own)
        if (t.name == slot.name) pick = &t;
    if (pick) out->push_back(*pick);
  }
  return out;
}

}  // namespace

std::vector<NamedTensor> currentParameters(const ModelConfig& m, int d_in) {
  if (!hasProjections(m.variant)) return {};
  return stateDict(m, *drawParameters(m, d_in).parameters);
}

bool isOwnParameter(const ModelConfig& m, const std::string& name) {
  if (!m.parameters) return false;
  for (const NamedTensor& t : *m.parameters)
    if (t.name == name) return true;
  return false;
}

void setParameterValue(Workspace& ws, const std::string& name, int row, int col, double value) {
  const ModelConfig& m = ws.model;
  if (!hasProjections(m.variant))
    throw InputError(std::string("name: ") + seedClassName(m.variant) +
                     " has no trainable parameters (Q = K = V = X); choose step 2a or later");
  const std::vector<NamedTensor> all = currentParameters(m, static_cast<int>(ws.embeddings.cols()));
  const NamedTensor* found = nullptr;
  for (const NamedTensor& t : all)
    if (t.name == name) found = &t;
  if (!found)
    throw InputError("name: '" + name + "' is not a parameter of " + seedClassName(m.variant) + " here (" +
                     nameList(all) + ")");
  const long long rows = found->value.rows(), cols = found->value.cols();
  if (row < 0 || row >= rows)
    throw InputError("row: " + name +
                     (found->is_vector ? " is a bias: row 0 only" : " has " + str(rows) + " rows, numbered from 0") +
                     ", got " + str(row));
  if (col < 0 || col >= cols)
    throw InputError("col: " + name + " has " + str(cols) + " columns, numbered from 0, got " + str(col));
  if (!std::isfinite(value) || std::fabs(value) >= 3.4028235677973366e38)  // rounds to ±∞ as a float32
    throw InputError("value: not a finite number as float32");
  NamedTensor edited = *found;
  edited.value(row, col) = static_cast<float>(value);
  ws.model.parameters = merged(all, m.parameters.get(), {edited});
}

void setParameterTensors(Workspace& ws, const std::vector<NamedTensor>& tensors) {
  const ModelConfig& m = ws.model;
  if (!hasProjections(m.variant))
    throw InputError(std::string("parameters: ") + seedClassName(m.variant) +
                     " has no trainable parameters (Q = K = V = X); choose step 2a or later");
  const int d_in = static_cast<int>(ws.embeddings.cols());
  ModelConfig check = m;  // names, shapes and values checked as a workspace's parameters are
  check.parameters = std::make_shared<const ParameterValues>(tensors);
  checkParameterValues(check, d_in);
  ws.model.parameters = merged(currentParameters(m, d_in), m.parameters.get(), tensors);
}

}  // namespace attnscope
