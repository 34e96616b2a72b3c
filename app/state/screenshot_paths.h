// Where screenshots go: the folder and time-stamped names. (capture.h renders them.)
#pragma once
#include <string>

namespace attnscope {

// "attnscope-20261122-013045.png" in `folder` (created if needed); "" and `error` set on failure.
std::string timestampedPath(const std::string& folder, std::string* error);

// ~/Pictures/attnscope (or ./ when HOME is unset).
std::string defaultScreenshotFolder();

}  // namespace attnscope
