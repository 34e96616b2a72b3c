// fuzz_channel: messages of the channel into a running app (core/editing/channel_message.h). The
// input is one frame as a client sends it — a u32 length, the JSON header, the tensors' float32
// bytes — read by parseChannelFrame under small limits (8 MiB). A refusal is an InputError of one
// line naming the message, a tensor or a command. An accepted frame gives commands of the command
// table only; no {"tensor": …} argument is left; and the commands, framed again as JSON without
// tensors, read back to the same commands.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "editing/channel_message.h"
#include "fuzz_common.h"

namespace {

bool hasTensorRef(const nlohmann::json& j) {
  if (j.is_object() && j.size() == 1 && j.contains("tensor")) return true;
  if (j.is_object() || j.is_array())
    for (const nlohmann::json& v : j)
      if (hasTensorRef(v)) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attnscope;
  Limits limits = fuzz::smallLimits();
  limits.max_memory_bytes = std::int64_t{8} << 20;
  std::vector<Command> commands;
  try {
    commands = parseChannelFrame(data, size, limits);
  } catch (const InputError& e) {
    const std::string what = e.what();
    FUZZ_CHECK(what.find('\n') == std::string::npos, "a refusal of more than one line: " + what);
    FUZZ_CHECK(what.rfind("message", 0) == 0 || what.rfind("tensor ", 0) == 0 || what.rfind("command ", 0) == 0,
               "a refusal that names neither the message, a tensor nor a command: " + what);
    return 0;
  } catch (const std::exception& e) {
    fuzz::unexpected("parseChannelFrame", e);
  }
  FUZZ_CHECK(!commands.empty(), "a message accepted without commands");
  nlohmann::json again = nlohmann::json::array();
  for (const Command& c : commands) {
    FUZZ_CHECK(findCommand(c.name) != nullptr, "a command outside the table: " + c.name);
    FUZZ_CHECK(!hasTensorRef(c.args), "a {\"tensor\": …} argument left in " + c.name);
    again.push_back(commandToJson(c));
  }
  const std::string frame = channelFrame({{"commands", again}});
  std::vector<Command> back;
  try {
    back = parseChannelFrame(reinterpret_cast<const std::uint8_t*>(frame.data()), frame.size(), limits);
  } catch (const std::exception& e) {
    fuzz::finding(std::string("the accepted commands, framed again, are refused: ") + e.what());
  }
  FUZZ_CHECK(back.size() == commands.size(), "framed again: another number of commands");
  for (std::size_t i = 0; i < back.size(); ++i)
    FUZZ_CHECK(back[i].name == commands[i].name && back[i].args == commands[i].args,
               "framed again: command " + std::to_string(i) + " differs");
  return 0;
}
