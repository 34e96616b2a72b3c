#include "formats/json_format.h"

#include <charconv>
#include <cstdlib>

namespace attnscope {

std::string jsonText(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string formatFloat(float value) {
  char buf[32];
  const auto result = std::to_chars(buf, buf + sizeof buf, value);  // shortest round-trip form
  return std::string(buf, result.ptr);
}

double tidyFloat(float value) { return std::strtod(formatFloat(value).c_str(), nullptr); }

namespace {

bool isFlat(const nlohmann::json& array) {
  for (const auto& e : array)
    if (e.is_structured()) return false;
  return true;
}

void write(const nlohmann::json& v, int indent, int depth, std::string& out) {
  const std::string pad(static_cast<std::size_t>(indent * (depth + 1)), ' ');
  const std::string close_pad(static_cast<std::size_t>(indent * depth), ' ');
  if (v.is_object() && !v.empty()) {
    out += "{\n";
    std::size_t i = 0;
    for (auto it = v.begin(); it != v.end(); ++it, ++i) {
      out += pad + jsonText(nlohmann::json(it.key())) + ": ";
      write(it.value(), indent, depth + 1, out);
      out += i + 1 < v.size() ? ",\n" : "\n";
    }
    out += close_pad + "}";
  } else if (v.is_array() && !v.empty() && !isFlat(v)) {
    out += "[\n";
    for (std::size_t i = 0; i < v.size(); ++i) {
      out += pad;
      write(v[i], indent, depth + 1, out);
      out += i + 1 < v.size() ? ",\n" : "\n";
    }
    out += close_pad + "]";
  } else if (v.is_array()) {
    out += "[";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + jsonText(v[i]);
    out += "]";
  } else {
    out += jsonText(v);
  }
}

}  // namespace

std::string prettyJson(const nlohmann::json& value, int indent) {
  std::string out;
  write(value, indent, 0, out);
  return out + "\n";
}

std::string prettyJsonAt(const nlohmann::json& value, int depth, int indent) {
  std::string out;
  write(value, indent, depth, out);
  return out;
}

}  // namespace attnscope
