// PNG files with text chunks (libpng): screenshots carry their workspace as an
// "attnscope-workspace" chunk, so opening the PNG restores the state it shows.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attnscope {

constexpr const char* kWorkspaceChunk = "attnscope-workspace";

// Writes `rgb` (height rows of width × 3 bytes, top row first) as an 8-bit RGB PNG with one
// compressed text chunk `key` = `text` (none if text is empty), atomically (temporary file, then
// rename). Returns "" on success, else the reason.
std::string writePng(const std::string& path, int width, int height, const std::vector<std::uint8_t>& rgb,
                     const std::string& key, const std::string& text);

// Whether the file starts with the PNG signature.
bool isPng(const std::string& path);

// The text chunk `key` of a PNG (tEXt, zTXt or iTXt); nullopt if it has none. Reads the chunks
// only, never the pixels. Throws InputError naming the path if the file is not a readable PNG or
// the text (compressed or not) is larger than `max_bytes`.
std::optional<std::string> readPngText(const std::string& path, const std::string& key,
                                       std::size_t max_bytes = std::size_t{64} << 20);

// Size and pixels of a PNG as 8-bit RGB (tests and tools).
struct RgbImage {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;
};
RgbImage readPngRgb(const std::string& path);

}  // namespace attnscope
