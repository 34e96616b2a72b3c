// Edits of the module's parameters, as the Weights tab offers them (docs/DESIGN.md §2.4,
// §3.4): the user's own values are the model's `parameters` (state_dict names, torch layouts),
// over the seeded initialization. Each edit is all-or-nothing, as the token table's are.
#pragma once
#include <string>
#include <vector>

#include "engine/named_tensor.h"
#include "formats/workspace_file.h"

namespace attnscope {

// Every parameter of the module as it stands, in state_dict() order: the user's values where the
// model has them, else the seeded draw. Empty for 'simple'.
std::vector<NamedTensor> currentParameters(const ModelConfig& m, int d_in);

// Whether the module's parameter `name` holds the user's values (rather than the seeded ones).
bool isOwnParameter(const ModelConfig& m, const std::string& name);

// Sets element (row, col) of the parameter `name` (a state_dict name of the module; a bias is one
// row, row 0). The first edit of a tensor copies it whole from the seeded draw into the user's
// parameters, which stay in state_dict order. Throws InputError naming the argument: an unknown
// name (listing the module's), a row or column out of range, a value that is not finite as float32.
void setParameterValue(Workspace& ws, const std::string& name, int row, int col, double value);

// Whole tensors in place of theirs (a pasted state_dict): each must name one of the module's
// parameters with its shape (validated as a workspace's parameters are); the others keep what
// they had. State_dict order.
void setParameterTensors(Workspace& ws, const std::vector<NamedTensor>& tensors);

}  // namespace attnscope
