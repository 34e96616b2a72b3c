// Channel messages (editing/channel_message.h): frames assembled byte by byte here — a u32 length,
// the JSON header, the tensors' float32 bits — give the commands they say, tensors in place of
// their {"tensor": NAME} arguments bit for bit; and every way a frame can be wrong is refused whole
// with one line naming what is wrong.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "editing/channel_message.h"
#include "editing/document.h"
#include "engine/errors.h"

namespace attnscope {
namespace {

using nlohmann::json;

std::string bytesOf(const std::vector<float>& values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), values.data(), out.size());  // this test runs on little-endian x86-64
  return out;
}

std::vector<Command> parse(const std::string& frame, const Limits& limits = {}) {
  return parseChannelFrame(reinterpret_cast<const std::uint8_t*>(frame.data()), frame.size(), limits);
}

// The message must be refused with a message holding `words`.
void refused(const std::string& frame, const std::string& words, const Limits& limits = {}) {
  try {
    parse(frame, limits);
    ADD_FAILURE() << "not refused: " << words;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
  }
}

TEST(ChannelMessage, CommandsAndTensorsInTheirPlace) {
  // A workspace whose embeddings and out_proj.bias come as tensors, then a command whose value does.
  const std::vector<float> x = {0.43f, 0.15f, 0.89f, -0.0f, 1e-30f, 3.4028235e38f}, bias = {0.5f, -0.25f};
  const json header = json::parse(R"({
    "commands": [{"do": "workspace", "json": {"format": "attnscope-workspace", "version": 1,
                                              "embeddings": {"tensor": "x"},
                                              "model": {"variant": "multihead", "d_out": 2, "num_heads": 2},
                                              "parameters": {"out_proj.bias": {"tensor": "b"}}}},
                 {"do": "set", "field": "dropout", "value": {"tensor": "p"}}],
    "tensors": [{"name": "x", "shape": [2, 3]}, {"name": "b", "shape": [2]}, {"name": "p", "shape": [1]}]})");
  const std::vector<Command> commands = parse(channelFrame(header, bytesOf(x) + bytesOf(bias) + bytesOf({0.25f})));
  ASSERT_EQ(commands.size(), 2u);
  // The workspace's numbers travel beside its JSON (Command::arrays), bit for bit, −0 too …
  ASSERT_TRUE(commands[0].arrays);
  const NumberArray& e = commands[0].arrays->at("embeddings");
  EXPECT_TRUE(e.rows && e.row_count == 2 && e.col_count == 3);
  EXPECT_EQ(std::memcmp(e.values.data(), x.data(), sizeof(float) * x.size()), 0);
  const NumberArray& b = commands[0].arrays->at("parameters.out_proj.bias");
  EXPECT_TRUE(!b.rows && b.col_count == 2 && b.values == bias);
  EXPECT_EQ(commands[0].args["json"]["embeddings"], json::array());  // the tree holds an empty array there
  // … and the Document takes them as the workspace's.
  Document d(bookExample(), "", false);
  d.apply(commands[0]);
  ASSERT_EQ(d.workspace().embeddings.rows(), 2);
  EXPECT_EQ(std::memcmp(d.workspace().embeddings.data(), x.data(), sizeof(float) * x.size()), 0);
  // Any other argument given as a tensor is its nested lists.
  EXPECT_EQ(commands[1].args["value"], json::array({0.25}));
}

TEST(ChannelMessage, AFrameOfJsonAlone) {
  const std::vector<Command> c = parse(channelFrame({{"commands", {{{"do", "undo"}}}}}));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].name, "undo");
}

TEST(ChannelMessage, BadFramesAreRefusedWhole) {
  const std::string ok_header = json({{"commands", {{{"do", "undo"}}}}}).dump();
  const auto framed = [](const std::string& text) {
    std::string f(4, '\0');
    const std::size_t n = text.size();
    for (int i = 0; i < 4; ++i) f[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    return f + text;
  };
  refused("", "shorter than its 4-byte length");
  refused(std::string("\x01\x00\x00\x00{", 5), "a header of 1 bytes");
  refused(std::string("\xff\xff\xff\x7f", 4) + "{}", "over the limit");
  refused(framed(ok_header).substr(0, 10), "cut short");
  refused(framed("not json at all"), "not valid JSON");
  refused(framed("[1, 2]"), "expected a JSON object");
  refused(framed(R"({"commands": []})"), "message.commands: empty");
  refused(framed(R"({"do": "undo"})"), "message.do: unknown field");
  refused(framed(R"({"commands": [{"do": "rm -rf /"}]})"), "unknown command");
  refused(framed(R"({"commands": [{"do": "select_head", "index": "one"}]})"), "command 0 (select_head)");
  refused(framed(ok_header) + "trailing", "8 bytes of tensors where the header lists 0");
  // Nested too deep: the message named, not only its top key (fuzz_channel found "momcands: nested
  // deeper than 64 levels").
  refused(framed(R"({"momcands": )" + std::string(70, '[') + std::string(70, ']') + "}"),
          "message.momcands: nested deeper than 64 levels");
  // Tensors: names, shapes, sizes, values, use.
  const auto with = [&](const json& tensors, const std::string& payload, const json& commands) {
    return channelFrame({{"commands", commands}, {"tensors", tensors}}, payload);
  };
  const json uses_x = {{{"do", "paste_embeddings"}, {"text", {{"tensor", "x"}}}}};
  refused(with({{{"name", "x"}, {"shape", {2}}}}, bytesOf({1.0f}), uses_x),
          "4 bytes of tensors where the header lists 8");
  refused(with({{{"name", "x"}, {"shape", {0}}}}, "", uses_x), "sizes are integers from 1");
  refused(with({{{"name", "x"}, {"shape", {1, 1, 1, 1, 1}}}}, bytesOf({1.0f}), uses_x), "at most 4 dimensions");
  refused(with({{{"name", "x"}, {"shape", {1}}}, {{"name", "x"}, {"shape", {1}}}}, bytesOf({1.0f, 2.0f}), uses_x),
          "x is given twice");
  refused(with({{{"name", "x"}, {"shape", {1}}, {"dtype", "float64"}}}, bytesOf({1.0f}), uses_x), "dtype \"float32\"");
  refused(with({{{"name", "x"}, {"shape", {65536, 65536}}}}, "", uses_x), "memory budget");
  refused(with({{{"name", "x"}, {"shape", {1}}}}, bytesOf({std::numeric_limits<float>::quiet_NaN()}), uses_x),
          "tensor x: value 0 is not finite");
  refused(with({{{"name", "y"}, {"shape", {1}}}}, bytesOf({1.0f}), uses_x),
          "tensor x: not one of the message's tensors");
  refused(with({{{"name", "x"}, {"shape", {1}}}, {{"name", "unused"}, {"shape", {1}}}}, bytesOf({1.0f, 2.0f}), uses_x),
          "tensor unused: sent but no command uses it");
  json many = json::array();
  for (int i = 0; i < kMaxChannelTensors + 1; ++i) many.push_back({{"name", "t" + std::to_string(i)}, {"shape", {1}}});
  refused(with(many, "", uses_x), "over the limit of 64");
  Limits small;
  small.max_memory_bytes = 1 << 20;
  refused(with({{{"name", "x"}, {"shape", {100000}}}}, "", uses_x), "memory budget", small);
}

}  // namespace
}  // namespace attnscope
