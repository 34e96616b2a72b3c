// Number and JSON text helpers shared by workspaces, traces and exports.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace attnscope {

// The shortest decimal that reads back as the same float32 (at most 9 significant digits).
std::string formatFloat(float value);
// That decimal as a double, so nlohmann prints 0.43f as 0.43 rather than 0.4300000071525879.
double tidyFloat(float value);
// JSON text that never throws: strings that are not valid UTF-8 (a file name can be any bytes)
// have their bad bytes replaced by U+FFFD instead of failing the whole document.
std::string jsonText(const nlohmann::json& value, int indent = -1);
constexpr int kMaxJsonDepth = 64;  // deeper documents are refused while parsing (formats/json_reading.h)

// JSON indented for people: objects one member a line, arrays of numbers (matrix rows) on one.
std::string prettyJson(const nlohmann::json& value, int indent = 2);
// A value of that document `depth` levels in, without the line end (for writers that stream the
// rest: formats/workspace_file.cpp).
std::string prettyJsonAt(const nlohmann::json& value, int depth, int indent = 2);

}  // namespace attnscope
