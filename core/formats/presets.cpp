#include "formats/presets.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/errors.h"

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

std::vector<PresetInfo> presetCatalog() {
  std::vector<PresetInfo> out;
  for (const std::string& name : presetNames()) {
    PresetInfo info{name, name, "", 1000};
    std::ifstream in(fs::path(assetsDir()) / "presets" / (name + ".json"));
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);  // no throw: a bad file shows by name
    if (j.is_object() && j.contains("view") && j["view"].is_object() && j["view"].contains("preset")) {
      const nlohmann::json& p = j["view"]["preset"];
      info.title = p.value("title", name);
      info.description = p.value("description", "");
      info.order = p.value("order", 1000);
    }
    out.push_back(info);
  }
  std::stable_sort(out.begin(), out.end(), [](const PresetInfo& a, const PresetInfo& b) { return a.order < b.order; });
  return out;
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
