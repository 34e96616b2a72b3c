// The two ways the engine refuses work. Both carry one human sentence; the CLI prints it as
// "error: …" and exits 2, the app shows it inline and keeps the last good state.
#pragma once
#include <stdexcept>
#include <string>

namespace attnscope {

// Bad input: a workspace, a field or an argument that cannot be used. The message names the field.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Valid input whose computation cannot be shown honestly (e.g. scores overflow float32).
struct ComputeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Not a refusal: the caller asked the computation to stop (ExecutionOptions::cancel).
struct Cancelled : std::runtime_error {
  Cancelled() : std::runtime_error("cancelled") {}
};

}  // namespace attnscope
