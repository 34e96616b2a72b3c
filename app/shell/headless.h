// The app run unattended: --commands feeds its script into the controller's queue, one command a
// frame; --screenshot captures once the result is on screen. The same loop and command path as a
// user's window (docs/DESIGN.md §3.2).
#pragma once
#include <string>
#include <vector>

#include "shell/app.h"
#include "shell/app_options.h"

namespace attnscope {

// --commands FILE: its commands, numbered for error messages, one a frame.
class CommandScript {
 public:
  explicit CommandScript(std::vector<Command> commands);
  // Reads and checks FILE whole (InputError naming the file and the command).
  static CommandScript read(const std::string& path);
  // Feeds the next command once the controller has applied the previous one.
  void feed(Controller& ctl);
  // feed() would push a command now.
  bool canFeed(const Controller& ctl) const { return next_ < commands_.size() && ctl.commands().empty(); }
  bool done(const Controller& ctl) const { return next_ == commands_.size() && ctl.idle(); }

 private:
  std::vector<Command> commands_;
  std::size_t next_ = 0;
};

// --screenshot: the window, a panel, or a heatmap (of one head, or each head) as PNG files, or a
// heatmap as SVG or PDF figures; prints "saved PATH (W×H)" for each. The exit code.
int headlessCapture(const AppOptions& o, App& app);

}  // namespace attnscope
