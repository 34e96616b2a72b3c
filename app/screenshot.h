// Screenshots: read the back buffer and write a PNG that carries the workspace in a text chunk
// ("attnscope-workspace"), so opening the PNG can restore the state.
#pragma once
#include <string>

namespace attnscope {

// Reads the current framebuffer (w × h) after rendering, before the swap. Returns "" on success,
// else the reason (e.g. "cannot write /x/y.png: Permission denied").
std::string saveFramebufferPng(int width, int height, const std::string& path,
                               const std::string& workspace_json);

// "attnscope-20261122-013045.png" in `folder` (created if needed); "" and `error` set on failure.
std::string timestampedPath(const std::string& folder, std::string* error);

// ~/Pictures/attnscope (or ./ when HOME is unset).
std::string defaultScreenshotFolder();

}  // namespace attnscope
