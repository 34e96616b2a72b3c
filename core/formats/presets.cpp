#include "formats/presets.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/errors.h"
#include "formats/file_reading.h"
#include "formats/json_reading.h"

namespace attnscope {

namespace fs = std::filesystem;

namespace {

// Whether `inner` is `outer` or a folder below it (both absolute and normal).
bool isWithin(const fs::path& inner, const fs::path& outer) {
  const fs::path rel = inner.lexically_relative(outer);
  return !rel.empty() && *rel.begin() != "..";
}

}  // namespace

// DESIGN.md §1: $ATTNSCOPE_ASSETS; else a program of the build tree (the app, the CLI, the test
// programs below it) reads the build's share/attnscope, a link to the source's assets/ made at
// configure time; else the program is installed and reads <exe dir>/../share/attnscope, wherever
// the prefix was installed or moved to. An installed program never looks at the build or source
// tree, and a build-tree program never picks up an install that happens to sit beside the build.
std::string assetsDir() {
  if (const char* env = std::getenv("ATTNSCOPE_ASSETS"); env && *env) return env;
  std::error_code ec;
  fs::path build = fs::weakly_canonical(fs::path(ATTNSCOPE_BUILD_DIR), ec);  // as /proc/self/exe names it
  if (ec) build = fs::path(ATTNSCOPE_BUILD_DIR);
  const fs::path build_data = build / "share" / "attnscope";
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);  // the kernel's path: links resolved
  if (ec || exe.empty()) return build_data.string();            // no /proc: only the build tree is known
  if (isWithin(exe.parent_path(), build)) return build_data.string();
  return (exe.parent_path().parent_path() / "share" / "attnscope").string();
}

std::string missingAssets() {
  const std::string dir = assetsDir();
  std::error_code ec;
  if (fs::is_regular_file(fs::path(dir) / "colormaps" / "viridis.csv", ec)) return "";
  return "attnscope's data (colormaps, presets, lessons) is not in " + dir +
         ": run the program from its build or installed tree (bin/ beside share/attnscope), or set "
         "ATTNSCOPE_ASSETS to that share/attnscope folder";
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
    // Only its view's note is read, from a regular file of a workspace's size at most (a FIFO in the
    // folder must not block the menu); a file that cannot be read shows by its name.
    const fs::path path = fs::path(assetsDir()) / "presets" / (name + ".json");
    std::error_code ec;
    nlohmann::json j;
    try {
      j = readJsonWithNumbers(readFileWithin(path.string(), Limits{}.max_workspace_bytes), path.string(), Limits{},
                              NumberArrays::Workspace)
              .tree;
    } catch (const InputError&) {
    }
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

bool isPresetFile(const std::string& path) {
  std::error_code ec;
  const fs::path folder = fs::weakly_canonical(fs::path(assetsDir()) / "presets", ec);
  if (ec || path.empty()) return false;
  const fs::path file = fs::weakly_canonical(path, ec);
  if (ec) return false;
  const fs::path rel = file.lexically_relative(folder);
  return !rel.empty() && *rel.begin() != ".." && rel != ".";
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
