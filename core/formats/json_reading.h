// Reading JSON that users give (docs/DESIGN.md §2.4 "Reading a file"): every reader of the app and the
// CLI — workspaces, autosaves, command lists, lessons, presets, settings, parameters — parses through
// here, so each has the same limits:
// - nesting deeper than kMaxJsonDepth is refused while parsing, before anything deep is built
//   (copying or printing a 150 000-deep value overflowed the stack);
// - what the parse holds is counted as it is built and refused past the memory budget;
// - the large numeric arrays (embeddings, parameter tensors) go straight into float32, never into a
//   JSON tree: a tree takes ~16–32 bytes a number, a float 4, so whatever the app saved (whose floats
//   its budget already held) it can read again.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/errors.h"
#include "engine/model_config.h"

namespace attnscope {

// Text that is not JSON: the message ("WHERE: not valid JSON: …"), and where it went wrong for readers
// that point at a line and column (byte, 1-based as nlohmann counts; 0 when unknown).
struct JsonSyntaxError : InputError {
  JsonSyntaxError(const std::string& message, std::size_t byte_in, std::string why_in)
      : InputError(message), byte(byte_in), why(std::move(why_in)) {}
  std::size_t byte;
  std::string why;  // the message without WHERE
};

// A parsed document; throws InputError "WHERE: not valid JSON: …", "FIELD: nested deeper than 64
// levels" (FIELD the top-level member it happens in, else WHERE), or "WHERE: reading it takes more
// than the memory budget of 1 GiB …". `memory_budget` bounds the tree (0: no bound beyond the text).
nlohmann::json readJson(const std::string& text, const std::string& where, std::int64_t memory_budget);

// What a tree of `value` holds in memory as this reader counts it (each value, each object member
// and its key, each string's bytes): the part of a read that is not text or floats.
std::int64_t jsonTreeBytes(const nlohmann::json& value);

// A JSON array of numbers (a vector) or of rows of numbers (a matrix), as float32, row-major.
struct NumberArray {
  bool rows = false;          // a list of rows rather than a flat list of numbers
  std::size_t row_count = 0;  // 1 for a vector
  std::size_t col_count = 0;
  std::vector<float> values;  // row_count × col_count
};

// Which arrays skip the tree: a workspace's "embeddings" and its "parameters" members, or a
// parameters object's members (an object of state_dict names, or a workspace's "parameters").
enum class NumberArrays { Workspace, ParameterObject };

// The tree without those arrays (each is left as an empty array in its place) and the arrays by
// field: "embeddings", "parameters.W_query.weight" (also for a parameters object's members). Their
// elements are checked as they are read, with the messages of the tree's checks below (field and
// index: "embeddings[2][1]: expected a number, got string"; ragged rows; limits).
struct JsonWithNumbers {
  nlohmann::json tree;
  std::map<std::string, NumberArray> arrays;
};
JsonWithNumbers readJsonWithNumbers(const std::string& text, const std::string& where, const Limits& limits,
                                    NumberArrays which);

// The same checks on an array already in a tree (a command's argument): `embeddings` says which
// messages and limits apply (rows of embeddings, or a parameter tensor).
NumberArray numberArrayOf(const nlohmann::json& array, const std::string& field, bool embeddings, const Limits& limits);

}  // namespace attnscope
