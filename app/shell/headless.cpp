#include "shell/headless.h"

#include <filesystem>
#include <iostream>

#include "display/vector_figure.h"
#include "engine/errors.h"
#include "formats/file_reading.h"
#include "formats/png_image.h"

namespace attnscope {

CommandScript::CommandScript(std::vector<Command> commands) : commands_(std::move(commands)) {
  for (std::size_t i = 0; i < commands_.size(); ++i) commands_[i].script_index = static_cast<int>(i);
}

CommandScript CommandScript::read(const std::string& path) {
  const std::string text = readFileWithin(path, Limits{}.max_file_bytes);
  try {
    return CommandScript(parseCommandList(text));
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
}

void CommandScript::feed(Controller& ctl) {
  if (canFeed(ctl)) ctl.commands().push(commands_[next_++]);
}

int headlessCapture(const AppOptions& o, App& app) {
  CaptureSpec spec{o.scale, o.panel, o.head > 0 ? o.head - 1 : app.controller().selectedHead(), o.caption, o.selection};
  std::vector<std::pair<int, std::string>> shots;  // head, path
  if (o.each_head) {
    const std::filesystem::path out(o.screenshot_path);
    const std::string ext = out.extension().string();  // OUT-h1.png, OUT-h1.svg, …
    const std::string stem = (out.parent_path() / out.stem()).string();
    const int heads = app.controller().headsShown();
    for (int h = 0; h < heads; ++h) shots.push_back({h, stem + "-h" + std::to_string(h + 1) + ext});
  } else {
    shots.push_back({spec.head, o.screenshot_path});
  }
  for (const auto& [head, path] : shots) {
    spec.head = head;
    if (const std::string error = app.capture(spec, path); !error.empty()) {
      std::cerr << "error: " << error << "\n";
      return 2;
    }
    if (isVectorFigurePath(path)) {
      std::cout << "saved " << path << "\n";
      continue;
    }
    const RgbImage image = readPngRgb(path);
    std::cout << "saved " << path << " (" << image.width << "×" << image.height << ")\n";
  }
  return 0;
}

}  // namespace attnscope
