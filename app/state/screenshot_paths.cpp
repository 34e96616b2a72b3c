#include "state/screenshot_paths.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <vector>

namespace attnscope {

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
