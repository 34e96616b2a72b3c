#include "screenshot.h"

#include <glad/gl.h>
#include <png.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <vector>

namespace attnscope {

namespace {

std::string writePng(const std::string& path, int w, int h, const std::vector<unsigned char>& rgba,
                     const std::string& workspace_json) {
  FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) return "cannot write " + path + ": " + std::strerror(errno);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(file);
    std::remove(path.c_str());
    return "cannot write " + path + ": PNG encoding failed";
  }
  png_init_io(png, file);
  png_set_IHDR(png, info, static_cast<png_uint_32>(w), static_cast<png_uint_32>(h), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_text text{};
  std::string key = "attnscope-workspace";
  text.compression = PNG_TEXT_COMPRESSION_zTXt;
  text.key = key.data();
  std::string value = workspace_json;
  text.text = value.data();
  text.text_length = value.size();
  if (!workspace_json.empty()) png_set_text(png, info, &text, 1);
  png_write_info(png, info);
  std::vector<unsigned char> row(static_cast<std::size_t>(w) * 3);
  for (int y = 0; y < h; ++y) {
    // GL's rows start at the bottom: flip, and drop alpha (the window is opaque).
    const unsigned char* src = rgba.data() + static_cast<std::size_t>(h - 1 - y) * w * 4;
    for (int x = 0; x < w; ++x) std::memcpy(&row[x * 3], &src[x * 4], 3);
    png_write_row(png, row.data());
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  if (std::fclose(file) != 0) return "cannot write " + path + ": " + std::strerror(errno);
  return "";
}

}  // namespace

std::string saveFramebufferPng(int width, int height, const std::string& path,
                               const std::string& workspace_json) {
  std::vector<unsigned char> rgba(static_cast<std::size_t>(width) * height * 4);
  glReadBuffer(GL_BACK);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, rgba.data());
  // Write beside the target, then rename: a failed write never leaves half a PNG.
  const std::string tmp = path + ".tmp";
  std::string error = writePng(tmp, width, height, rgba, workspace_json);
  if (error.empty() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    std::remove(tmp.c_str());
  }
  return error;
}

std::string defaultScreenshotFolder() {
  const char* home = std::getenv("HOME");
  return home && *home ? std::string(home) + "/Pictures/attnscope" : ".";
}

std::string timestampedPath(const std::string& folder, std::string* error) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) {
    *error = "cannot create the folder " + folder + ": " + ec.message();
    return "";
  }
  const std::time_t now = std::time(nullptr);
  char name[64];
  std::strftime(name, sizeof name, "attnscope-%Y%m%d-%H%M%S", std::localtime(&now));
  std::string path = (std::filesystem::path(folder) / (std::string(name) + ".png")).string();
  for (int k = 2; std::filesystem::exists(path); ++k)  // two shots in one second
    path = (std::filesystem::path(folder) / (std::string(name) + "-" + std::to_string(k) + ".png")).string();
  return path;
}

}  // namespace attnscope
