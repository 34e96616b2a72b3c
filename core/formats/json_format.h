// Number and JSON text helpers shared by workspaces, traces and exports.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace attnscope {

// The shortest decimal that reads back as the same float32 (at most 9 significant digits).
std::string formatFloat(float value);
// That decimal as a double, so nlohmann prints 0.43f as 0.43 rather than 0.4300000071525879.
double tidyFloat(float value);
// JSON indented for people: objects one member a line, arrays of numbers (matrix rows) on one.
std::string prettyJson(const nlohmann::json& value, int indent = 2);

}  // namespace attnscope
