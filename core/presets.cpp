#include "presets.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "errors.h"

namespace attnscope {

namespace fs = std::filesystem;

std::string assetsDir() {
  if (const char* env = std::getenv("ATTNSCOPE_ASSETS"); env && *env) return env;
  return ATTNSCOPE_ASSETS_DIR;
}

std::vector<std::string> presetNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(assetsDir()) / "presets", ec))
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string presetPath(const std::string& name) {
  const auto names = presetNames();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw InputError("preset: no preset '" + name + "' (presets: " + list + ")");
  }
  return (fs::path(assetsDir()) / "presets" / (name + ".json")).string();
}

}  // namespace attnscope
