// The two ways the engine refuses work. Both carry one human sentence; the CLI prints it as
// "error: …" and exits 2, the app shows it inline and keeps the last good state.
#pragma once
#include <stdexcept>
#include <string>
#include <type_traits>

namespace attnscope {

// Bad input: a workspace, a field or an argument that cannot be used. The message names the field.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Valid input whose computation cannot be shown honestly (e.g. scores overflow float32).
struct ComputeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "where: why" as an InputError: the field, file or tensor first, then what is wrong with it.
[[noreturn]] inline void fail(const std::string& where, const std::string& why) { throw InputError(where + ": " + why); }
// A count or an index, as the messages write it.
template <typename Integer>
std::string str(Integer v) {
  static_assert(std::is_integral_v<Integer>, "str() writes counts and indices; a real number wants its own format");
  return std::to_string(v);
}

// Not a refusal: the caller asked the computation to stop (ExecutionOptions::cancel).
struct Cancelled : std::runtime_error {
  Cancelled() : std::runtime_error("cancelled") {}
};

}  // namespace attnscope
