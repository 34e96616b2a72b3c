// Where the assets live (presets, colormaps, lessons) and the preset workspaces by name.
#pragma once
#include <string>
#include <vector>

namespace attnscope {

// The data folder (presets, colormaps, lessons): $ATTNSCOPE_ASSETS if set; else, for a program of
// the build tree, <build>/share/attnscope (a link to the source's assets/); else, installed,
// <exe dir>/../share/attnscope (found through /proc/self/exe). DESIGN.md §1.
std::string assetsDir();
// "" when assetsDir() holds the data a window draws with (the colormaps' tables), else one line
// saying where it was looked for and how to point at it (a copy of the program moved out of its
// tree found none, and the app aborted on an uncaught error).
std::string missingAssets();
// Names of assets/presets/*.json without the extension, sorted.
std::vector<std::string> presetNames();
// A preset as the Presets menu lists it: its "view": {"preset": {order, title, description}}.
struct PresetInfo {
  std::string name;         // file name without .json, e.g. "multihead"
  std::string title;        // "4b · MultiHeadAttention, seed 123"
  std::string description;  // what to look at
  int order = 1000;         // chapter order
};
// Every preset, in chapter order; a preset without metadata is listed by its name, last.
std::vector<PresetInfo> presetCatalog();

// The path of preset `name`; throws InputError listing the presets when there is none.
std::string presetPath(const std::string& name);
// Whether `path` is a file of the app's own presets folder (links followed): such a file opens
// untitled, as the `preset` command loads it, so that Save never writes into the app's data.
bool isPresetFile(const std::string& path);

}  // namespace attnscope
