// Channel messages (editing/channel_message.h, docs/DESIGN.md §3.8 "The channel").
#include "editing/channel_message.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "engine/errors.h"
#include "formats/json_reading.h"
#include "formats/zip_archive.h"  // printableName

namespace attnscope {

namespace {

using nlohmann::json;


float floatAt(const std::uint8_t* p) {
  std::uint32_t bits = static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
                       static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Dimension `dim` onwards of a tensor as nested arrays, from the value at `*at`.
json nested(const ChannelHeader::Tensor& t, std::size_t dim, const std::uint8_t* payload, std::size_t* at) {
  json out = json::array();
  const std::int64_t n = t.shape[dim];
  for (std::int64_t i = 0; i < n; ++i) {
    if (dim + 1 < t.shape.size()) {
      out.push_back(nested(t, dim + 1, payload, at));
    } else {
      const float f = floatAt(payload + t.offset + *at * 4);
      ++*at;
      out.push_back(static_cast<double>(f));
    }
  }
  return out;
}

// Puts the tensors in place of their {"tensor": NAME} arguments, anywhere in `j`.
void substitute(json& j, const std::vector<ChannelHeader::Tensor>& tensors, const std::uint8_t* payload,
                std::set<std::string>& used, int depth) {
  if (depth > 64) throw InputError("nested deeper than 64 levels");
  if (j.is_object() && j.size() == 1 && j.contains("tensor")) {
    if (!j["tensor"].is_string()) throw InputError("{\"tensor\": …}: expected the name of a tensor of the message");
    const std::string name = j["tensor"].get<std::string>();
    for (const ChannelHeader::Tensor& t : tensors)
      if (t.name == name) {
        std::size_t at = 0;
        j = t.shape.empty() ? json(static_cast<double>(floatAt(payload + t.offset))) : nested(t, 0, payload, &at);
        used.insert(name);
        return;
      }
    throw InputError("tensor " + printableName(name) + ": not one of the message's tensors");
  }
  if (j.is_object() || j.is_array())
    for (json& v : j) substitute(v, tensors, payload, used, depth + 1);
}

bool isTensorRef(const json& j) { return j.is_object() && j.size() == 1 && j.contains("tensor"); }

const ChannelHeader::Tensor& tensorNamed(const std::vector<ChannelHeader::Tensor>& tensors, const json& ref) {
  if (!ref["tensor"].is_string()) throw InputError("{\"tensor\": …}: expected the name of a tensor of the message");
  for (const ChannelHeader::Tensor& t : tensors)
    if (t.name == ref["tensor"].get<std::string>()) return t;
  throw InputError("tensor " + printableName(ref["tensor"].get<std::string>()) + ": not one of the message's tensors");
}

// A tensor as a workspace member's numbers (formats/json_reading.h's NumberArray), checked as the
// workspace reader checks that member: embeddings (and a batch's sequences) are T × d_in rows within
// the token and width limits, a parameter a matrix or a bias within the width limit.
NumberArray arrayOf(const ChannelHeader::Tensor& t, const std::uint8_t* payload, const std::string& field,
                    bool embeddings, const Limits& limits) {
  const std::size_t rank = t.shape.size();
  if (rank == 0 || rank > 2 || (embeddings && rank != 2))
    throw InputError(field + ": tensor " + printableName(t.name) + " has " + str(rank) + " dimensions, expected " +
                     (embeddings ? "T × d_in" : "a matrix or a bias"));
  NumberArray a;
  a.rows = rank == 2;
  a.row_count = rank == 2 ? static_cast<std::size_t>(t.shape[0]) : 1;
  a.col_count = static_cast<std::size_t>(t.shape[rank - 1]);
  const std::size_t max_rows = static_cast<std::size_t>(embeddings ? limits.max_tokens : limits.max_dim);
  if (a.row_count > max_rows || a.col_count > static_cast<std::size_t>(limits.max_dim))
    throw InputError(field + ": tensor " + printableName(t.name) + " of " + str(a.row_count) + " × " + str(a.col_count) +
                     " exceeds the limits of " + str(max_rows) + " rows and " +
                     str(static_cast<std::size_t>(limits.max_dim)) + " columns");
  a.values.resize(t.values);
  for (std::size_t i = 0; i < t.values; ++i) a.values[i] = floatAt(payload + t.offset + i * 4);
  return a;
}

// A `workspace` command's members given as tensors — its embeddings, each parameter, each of a
// batch's sequences — go into `arrays` as numbers, the members left as empty arrays: the workspace
// reader takes them from there (formats/workspace_file.h) and they never become decimal text.
void takeWorkspaceArrays(json& ws, const std::vector<ChannelHeader::Tensor>& tensors, const std::uint8_t* payload,
                         const Limits& limits, std::set<std::string>& used,
                         std::map<std::string, NumberArray>& arrays) {
  if (!ws.is_object()) return;
  const auto take = [&](json& member, const std::string& field, bool embeddings) {
    if (!isTensorRef(member)) return;
    const ChannelHeader::Tensor& t = tensorNamed(tensors, member);
    arrays[field] = arrayOf(t, payload, field, embeddings, limits);
    used.insert(t.name);
    member = json::array();
  };
  if (ws.contains("embeddings")) take(ws["embeddings"], "embeddings", true);
  if (ws.contains("parameters") && ws["parameters"].is_object())
    for (auto it = ws["parameters"].begin(); it != ws["parameters"].end(); ++it)
      take(it.value(), "parameters." + it.key(), false);
  if (ws.contains("batch_sequences") && ws["batch_sequences"].is_array())
    for (std::size_t k = 0; k < ws["batch_sequences"].size(); ++k)
      take(ws["batch_sequences"][k], "batch_sequences[" + str(k) + "]", true);
}

}  // namespace

std::size_t channelHeaderLength(const std::uint8_t* first4) {
  const std::size_t n = static_cast<std::size_t>(first4[0]) | static_cast<std::size_t>(first4[1]) << 8 |
                        static_cast<std::size_t>(first4[2]) << 16 | static_cast<std::size_t>(first4[3]) << 24;
  if (n < 2) throw InputError("message: a header of " + str(n) + " bytes (a frame is a u32 length, then JSON)");
  if (n > kMaxChannelHeader)
    throw InputError("message: a header of " + str(n) + " bytes, over the limit of " + str(kMaxChannelHeader) +
                     " (send large numbers as tensors)");
  return n;
}

ChannelHeader parseChannelHeader(const std::string& json_text, const Limits& limits) {
  // Every refusal names the message: the reader names a field nested too deep by its top key alone
  // ("commands: nested deeper than 64 levels"), which a message's reader would not place.
  const json j = [&] {
    try {
      return readJson(json_text, "message", limits.max_memory_bytes);
    } catch (const InputError& e) {
      const std::string what = e.what();
      if (what.rfind("message", 0) == 0) throw;
      throw InputError("message." + what);
    }
  }();
  if (!j.is_object()) throw InputError("message: expected a JSON object {\"commands\": […]}");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "commands" && it.key() != "tensors")
      throw InputError("message." + printableName(it.key()) + ": unknown field (expected commands, tensors)");
  if (!j.contains("commands") || !j["commands"].is_array())
    throw InputError("message.commands: required, an array of commands");
  if (j["commands"].empty()) throw InputError("message.commands: empty");
  ChannelHeader h;
  h.commands = j["commands"];
  if (!j.contains("tensors")) return h;
  const json& list = j["tensors"];
  if (!list.is_array()) throw InputError("message.tensors: expected an array of {\"name\", \"shape\"}");
  if (list.size() > static_cast<std::size_t>(kMaxChannelTensors))
    throw InputError("message.tensors: " + str(list.size()) + " tensors, over the limit of " + str(kMaxChannelTensors));
  const std::size_t budget = static_cast<std::size_t>(limits.max_memory_bytes);
  std::size_t values = 0;
  std::set<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& t = list[i];
    const std::string where = "message.tensors[" + str(i) + "]";
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string() || !t.contains("shape") ||
        !t["shape"].is_array())
      throw InputError(where + ": expected {\"name\": string, \"shape\": [sizes]}");
    if (t.size() != 2 && !(t.size() == 3 && t.contains("dtype") && t["dtype"] == "float32"))
      throw InputError(where + ": only name, shape and dtype \"float32\"");
    ChannelHeader::Tensor tensor;
    tensor.name = t["name"].get<std::string>();
    if (tensor.name.empty() || tensor.name.size() > 256) throw InputError(where + ".name: 1 to 256 characters");
    if (!names.insert(tensor.name).second) throw InputError(where + ".name: " + printableName(tensor.name) + " is given twice");
    if (t["shape"].size() > static_cast<std::size_t>(kMaxTensorRank))
      throw InputError(where + ".shape: at most " + str(kMaxTensorRank) + " dimensions");
    std::size_t numel = 1;
    for (const json& d : t["shape"]) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 1 || d.get<std::int64_t>() > (std::int64_t{1} << 31))
        throw InputError(where + ".shape: sizes are integers from 1 to 2³¹");
      const std::size_t n = static_cast<std::size_t>(d.get<std::int64_t>());
      if (numel > budget / n) throw InputError(where + ": larger than the memory budget");
      numel *= n;
      tensor.shape.push_back(d.get<std::int64_t>());
    }
    tensor.values = numel;
    tensor.offset = values * 4;
    values += numel;
    if (values > budget / (4 + ChannelHeader::kTreeBytesPerValue))
      throw InputError(where + ": the message's tensors need more than the memory budget of " +
                       formatBytes(static_cast<double>(budget)));
    h.tensors.push_back(std::move(tensor));
  }
  h.payload_bytes = values * 4;
  return h;
}

std::vector<Command> channelCommands(const ChannelHeader& header, const std::uint8_t* payload, std::size_t bytes,
                                     const Limits& limits) {
  if (bytes != header.payload_bytes)
    throw InputError("message: " + str(bytes) + " bytes of tensors where the header lists " +
                     str(header.payload_bytes));
  for (const ChannelHeader::Tensor& t : header.tensors)
    for (std::size_t i = 0; i < t.values; ++i) {
      const float f = floatAt(payload + t.offset + i * 4);
      if (!(std::fabs(f) <= std::numeric_limits<float>::max()))
        throw InputError("tensor " + printableName(t.name) + ": value " + str(i) + " is not finite");
    }
  json commands = header.commands;
  std::set<std::string> used;
  std::vector<std::shared_ptr<const std::map<std::string, NumberArray>>> arrays(commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) try {
      json& c = commands[i];
      if (c.is_object() && c.value("do", json()) == "attention" && c.contains("maps") && isTensorRef(c["maps"])) {
        // Attention maps as a tensor: its numbers beside the JSON (Command::arrays "maps", T columns), its
        // shape in "shape".
        const ChannelHeader::Tensor& t = tensorNamed(header.tensors, c["maps"]);
        if (t.shape.size() < 3 || t.shape.size() > 4 || t.shape[t.shape.size() - 1] != t.shape[t.shape.size() - 2])
          throw InputError("maps: tensor " + printableName(t.name) + " is not [heads, T, T] or [layers, heads, T, T]");
        NumberArray a;
        a.rows = true;
        a.col_count = static_cast<std::size_t>(t.shape.back());
        a.row_count = t.values / a.col_count;
        a.values.resize(t.values);
        for (std::size_t k = 0; k < t.values; ++k) a.values[k] = floatAt(payload + t.offset + k * 4);
        arrays[i] = std::make_shared<const std::map<std::string, NumberArray>>(
            std::map<std::string, NumberArray>{{"maps", std::move(a)}});
        c["shape"] = t.shape;
        c["maps"] = json::array();
        used.insert(t.name);
      }
      if (c.is_object() && c.value("do", json()) == "workspace" && c.contains("json")) {
        std::map<std::string, NumberArray> taken;
        takeWorkspaceArrays(c["json"], header.tensors, payload, limits, used, taken);
        if (!taken.empty()) arrays[i] = std::make_shared<const std::map<std::string, NumberArray>>(std::move(taken));
      }
      substitute(c, header.tensors, payload, used, 0);
    } catch (const InputError& e) {
      throw InputError("command " + str(i) + ": " + e.what());
    }
  for (const ChannelHeader::Tensor& t : header.tensors)
    if (!used.count(t.name)) throw InputError("tensor " + printableName(t.name) + ": sent but no command uses it");
  std::vector<Command> out = commandsOf(commands);
  for (std::size_t i = 0; i < out.size(); ++i) out[i].arrays = std::move(arrays[i]);
  return out;
}

std::vector<Command> parseChannelFrame(const std::uint8_t* data, std::size_t size, const Limits& limits) {
  if (size < 4) throw InputError("message: shorter than its 4-byte length");
  const std::size_t h = channelHeaderLength(data);
  if (size - 4 < h) throw InputError("message: the header is cut short");
  const ChannelHeader header = parseChannelHeader(std::string(reinterpret_cast<const char*>(data) + 4, h), limits);
  return channelCommands(header, data + 4 + h, size - 4 - h, limits);
}

std::string channelFrame(const json& header, const std::string& payload) {
  const std::string text = header.dump();
  const std::size_t n = text.size();
  std::string out;
  out.reserve(4 + n + payload.size());
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out + text + payload;
}

}  // namespace attnscope
