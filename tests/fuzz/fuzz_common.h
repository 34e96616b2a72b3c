// Shared by the fuzz targets (tests/fuzz/fuzz_*.cpp): how a finding is reported, the limits the
// targets run with, and the invariants every accepted workspace must satisfy.
//
// A finding prints one line "attnscope fuzz finding: …" and aborts: libFuzzer saves the input as
// a crash file, and fuzz_replay (the ctest driver) reports the file as failed. InputError (and,
// where the engine runs, ComputeError) is the documented way to refuse an input and is never a
// finding; any other exception is.
#pragma once
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <typeinfo>

#include "editing/history.h"
#include "engine/errors.h"
#include "engine/model_config.h"
#include "formats/workspace_file.h"

namespace attnscope::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "attnscope fuzz finding: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

[[noreturn]] inline void unexpected(const char* call, const std::exception& e) {
  finding(std::string(call) + " threw " + typeid(e).name() + " (not InputError): " + e.what());
}

#define FUZZ_CHECK(cond, message)                                                       \
  do {                                                                                  \
    if (!(cond))                                                                        \
      ::attnscope::fuzz::finding(std::string(__FILE__ ":") + std::to_string(__LINE__) + \
                                 ": " #cond " failed: " + std::string(message));        \
  } while (0)

// Lower than the app's: every accepted input stays cheap (the default limits accept a random
// 4096 × 4096 recipe, 16 M values per execution), the code paths are the same.
inline Limits workspaceLimits() {
  Limits l;  // fields set one by one: Limits may gain members
  l.max_tokens = 512;
  l.max_dim = 512;
  l.max_file_bytes = std::int64_t{1} << 20;
  return l;
}

// For the engine and the editing targets: small enough for thousands of executions a second.
inline Limits smallLimits() {
  Limits l;
  l.max_tokens = 64;
  l.max_dim = 64;
  l.max_heads = 8;
  l.max_batch = 4;
  l.max_attention_cells = std::int64_t{1} << 16;
  l.max_file_bytes = std::int64_t{1} << 16;
  return l;
}

// The same limits without the file-size bound: a saved document may be longer than the text it
// was read from (0 becomes 0.0, rows are spaced), and reading it back must not fail for that.
inline Limits reloadLimits(Limits l) {
  l.max_file_bytes = std::numeric_limits<std::int64_t>::max() / 64;
  return l;
}

// The fuzzer's bytes as a workspace; nullopt when parseWorkspace refuses them (InputError).
inline std::optional<Workspace> parseOrRefuse(const std::uint8_t* data, std::size_t size, const Limits& limits) {
  try {
    return parseWorkspace(std::string(reinterpret_cast<const char*>(data), size), limits);
  } catch (const InputError&) {
    return std::nullopt;
  } catch (const std::exception& e) {
    unexpected("parseWorkspace", e);
  }
}

inline bool sameBits(const Matrix& a, const Matrix& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
  if (a.size() == 0) return true;
  return std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<std::size_t>(a.size())) == 0;
}

inline std::string shape(const Matrix& m) { return std::to_string(m.rows()) + " x " + std::to_string(m.cols()); }

// What every workspace the code accepts or builds must satisfy (docs/DESIGN.md §2.4).
inline void checkConsistent(const Workspace& ws, const Limits& limits, const char* where) {
  const std::string at = std::string(where) + ": ";
  FUZZ_CHECK(ws.embeddings.rows() >= 1 && ws.embeddings.cols() >= 1, at + "embeddings " + shape(ws.embeddings));
  FUZZ_CHECK(static_cast<Eigen::Index>(ws.tokens.size()) == ws.embeddings.rows(),
             at + std::to_string(ws.tokens.size()) + " tokens for " + shape(ws.embeddings) + " embeddings");
  FUZZ_CHECK(ws.embeddings.rows() <= limits.max_tokens && ws.embeddings.cols() <= limits.max_dim,
             at + "embeddings " + shape(ws.embeddings) + " beyond the limits");
  FUZZ_CHECK(ws.embeddings.allFinite(), at + "non-finite embedding");
  FUZZ_CHECK(ws.view.is_object(), at + "view is " + ws.view.type_name());
  try {
    validateModel(ws.model, static_cast<int>(ws.embeddings.rows()), static_cast<int>(ws.embeddings.cols()), limits);
  } catch (const InputError& e) {
    finding(at + "the model does not validate: " + e.what() + "\nmodel: " + modelToJson(ws.model).dump());
  }
  if (ws.random) {
    FUZZ_CHECK(ws.random->rows == ws.embeddings.rows() && ws.random->cols == ws.embeddings.cols(),
               at + "random recipe " + std::to_string(ws.random->rows) + " x " + std::to_string(ws.random->cols) +
                   " for embeddings " + shape(ws.embeddings));
    FUZZ_CHECK(sameBits(makeRandomEmbeddings(*ws.random), ws.embeddings),
               at + "the embeddings are not the ones the random recipe makes (an edit kept the recipe?)");
  }
}

// Two workspaces are the same document: equal in every part History keeps, bit for bit, and
// saved as the same JSON.
inline void checkSame(const Workspace& a, const Workspace& b, const char* where) {
  const std::string at = std::string(where) + ": ";
  FUZZ_CHECK(a.tokens == b.tokens, at + "tokens differ");
  FUZZ_CHECK(sameBits(a.embeddings, b.embeddings),
             at + "embeddings differ (" + shape(a.embeddings) + " vs " + shape(b.embeddings) + ")");
  FUZZ_CHECK(a.random.has_value() == b.random.has_value(), at + "one has a random recipe, the other not");
  FUZZ_CHECK(modelToJson(a.model) == modelToJson(b.model),
             at + "models differ: " + modelToJson(a.model).dump() + " vs " + modelToJson(b.model).dump());
  FUZZ_CHECK(a.view == b.view, at + "views differ: " + a.view.dump() + " vs " + b.view.dump());
  FUZZ_CHECK(workspaceToJson(a) == workspaceToJson(b), at + "workspaceToJson differs");
  FUZZ_CHECK(equalWorkspaces(a, b), at + "equalWorkspaces says they differ");
}

// Saving and loading again gives the same workspace, and saving that gives the same text.
inline void checkRoundTrip(const Workspace& ws, const Limits& limits, const char* where) {
  const std::string at = std::string(where) + ": ";
  std::string saved;
  try {
    saved = dumpWorkspace(ws);
  } catch (const std::exception& e) {
    finding(at + "dumpWorkspace threw " + typeid(e).name() + ": " + e.what());
  }
  Workspace again;
  try {
    again = parseWorkspace(saved, reloadLimits(limits));
  } catch (const std::exception& e) {
    finding(at + "the saved workspace does not load again: " + e.what() + "\n--- saved:\n" + saved.substr(0, 4000));
  }
  checkSame(ws, again, where);
  FUZZ_CHECK(dumpWorkspace(again) == saved, at + "saving the reloaded workspace gives another text");
}

}  // namespace attnscope::fuzz
