// `attnscope-cli pytorch`: a self-contained Python script that rebuilds a workspace with the seed
// notebook's class definitions (core/pytorch/seed_classes.py, embedded at build time) and prints
// the module's output. Run with Debian's torch it gives the numbers of `attnscope-cli trace`. The
// workspace's own parameters are written exactly (float.hex) and loaded with load_state_dict after
// the seeded constructor, so parameters and dropout masks are the trace's bit for bit.
#pragma once
#include <string>

#include "formats/workspace_file.h"

namespace attnscope {

// `source` names where the workspace came from, for the script's header comment.
std::string pytorchScript(const Workspace& ws, const std::string& source);

}  // namespace attnscope

namespace attnscope {

// A Python string literal of `text` in plain ASCII: printable ASCII as itself (but \ and "), every
// other character escaped (\n, \xNN, \uNNNN, \UNNNNNNNN), bytes that are not UTF-8 as U+FFFD. So
// nothing a user can name — a token, a file name, a task's text — puts a line break, a coding
// declaration's encoding or a byte Python cannot decode into a script (docs/DESIGN.md §2.5).
std::string pythonString(const std::string& text);

}  // namespace attnscope
