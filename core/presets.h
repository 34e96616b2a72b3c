// Where the assets live (presets, fonts, colormaps) and the preset workspaces by name.
#pragma once
#include <string>
#include <vector>

namespace attnscope {

// $ATTNSCOPE_ASSETS if set, else the source tree's assets/ baked in at build time.
std::string assetsDir();
// Names of assets/presets/*.json without the extension, sorted.
std::vector<std::string> presetNames();
// The path of preset `name`; throws InputError listing the presets when there is none.
std::string presetPath(const std::string& name);

}  // namespace attnscope
