// Messages of the channel into a running app (docs/DESIGN.md §3.8 "The channel"): what
// `attnscope.show` in a notebook, a second `attnscope FILE` and any program of the same user send
// over the app's Unix socket. Data only: a message is commands of the command table
// (editing/command.h) — the same checks and limits as `--commands` — and nothing in it is run.
//
// A message is one frame:
//   u32, little-endian    the header's length H, 2 … kMaxChannelHeader
//   H bytes               a JSON object {"commands": [command objects], "tensors": [{"name": s,
//                         "shape": [d₀, …]}, …]} ("tensors" may be left out)
//   Σ numel × 4 bytes     the tensors' float32 values, little-endian, in the listed order
// An argument {"tensor": NAME} anywhere in a command stands for that tensor as nested lists (rows
// of rows), so a notebook's numbers travel as their float32 bits, never as decimal text. A reply is
// a frame with no tensors: {"ok": true, "commands": n} or {"ok": false, "error": "one line"}.
#pragma once
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "editing/command.h"
#include "engine/model_config.h"

namespace attnscope {

constexpr std::size_t kMaxChannelHeader = std::size_t{64} << 20;  // 64 MiB of JSON
constexpr int kMaxChannelTensors = 64;
constexpr int kMaxTensorRank = 4;

// The header's length from a frame's first 4 bytes; throws InputError outside 2 … kMaxChannelHeader.
std::size_t channelHeaderLength(const std::uint8_t* first4);

// The parsed header and the payload bytes it declares; throws InputError naming what is wrong
// (not JSON, no commands, a tensor's name, shape or size, a payload over the memory budget).
struct ChannelHeader {
  nlohmann::json commands;  // the array
  struct Tensor {
    std::string name;
    std::vector<std::int64_t> shape;
    std::size_t offset = 0;  // in the payload, bytes
    std::size_t values = 0;  // numel
  };
  std::vector<Tensor> tensors;
  std::size_t payload_bytes = 0;
  // Bytes a value of the materialized commands costs in the tree (formats/json_reading.h counts
  // the same way): the tensors become arrays of numbers, 32 bytes a value.
  static constexpr std::size_t kTreeBytesPerValue = 32;
  // What the message holds while it is received and turned into commands: its payload and tree.
  std::size_t memoryBytes() const { return payload_bytes / 4 * (4 + kTreeBytesPerValue); }
};
ChannelHeader parseChannelHeader(const std::string& json_text, const Limits& limits);

// The commands of a message: the tensors put in place of their {"tensor": NAME} arguments, each
// command checked against the table; throws InputError ("command 2 (workspace): …", "tensor x: …").
std::vector<Command> channelCommands(const ChannelHeader& header, const std::uint8_t* payload, std::size_t bytes,
                                     const Limits& limits);

// A whole frame at once (the fuzz target, tests): length, header, payload, nothing after it.
std::vector<Command> parseChannelFrame(const std::uint8_t* data, std::size_t size, const Limits& limits);

// A frame of `header` (a JSON object) followed by `payload`: what a client sends, and the replies.
std::string channelFrame(const nlohmann::json& header, const std::string& payload = std::string());

}  // namespace attnscope
