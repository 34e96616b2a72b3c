// torch.save's zip format written (docs/DESIGN.md §2.6 "Files of tensors"): the bytes
// torch.save(state_dict, path) writes for an OrderedDict of float32 CPU tensors, so that
// torch.load(path) — with weights_only=True too — gives the same dict and model.load_state_dict
// takes it. Data only: the pickle (protocol 2, torch.save's) names collections.OrderedDict,
// torch._utils._rebuild_tensor_v2 and torch.FloatStorage, nothing else, and each tensor's values
// are a storage of their own, data/<key>.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace attnscope {

// A named float32 tensor to save: row-major (C order) values, `shape` empty for a scalar.
struct NamedFloats {
  std::string name;
  std::vector<std::int64_t> shape;
  const float* data = nullptr;  // shape's product of values (none for a zero-sized tensor)
};

// The folder torch.save puts a file's entries in: the file's name without its directory and its
// last extension ("model.pth" → "model", "a.b.pt" → "a.b"), "archive" when that leaves nothing
// (torch's is "archive" for a buffer).
std::string torchArchiveName(const std::string& path);

// The zip torch.save writes: <archive>/data.pkl, then <archive>/data/<key> for each tensor in the
// order torch writes them (its keys "0", "1", … sorted as strings), then <archive>/version "3\n";
// stored, each entry's data at a multiple of 64 bytes (ZipLayout, formats/zip_archive.h). The
// dict's keys are `tensors`' names in their order; names must differ.
//
// A value of the root module's metadata: a non-negative int or a string.
struct MetadataValue {
  MetadataValue(std::int64_t n) : number(n) {}                         // NOLINT: {"n_head", 2}
  MetadataValue(std::string s) : text(std::move(s)), is_text(true) {}  // NOLINT: {"vocabulary", "[…]"}
  std::int64_t number = 0;
  std::string text;
  bool is_text = false;
};

// `root_metadata` (default none): entries of the root module's `_metadata` — the attribute
// Module.state_dict() sets on its dict, which torch.save pickles (BUILD) and load_state_dict hands to
// each module by its prefix, ignoring keys it does not know — e.g. {{"version", 1}, {"n_head", 2}}:
// sd._metadata == OrderedDict([('', {'version': 1, 'n_head': 2})]).
std::string torchSaveBytes(const std::vector<NamedFloats>& tensors, const std::string& archive = "archive",
                           const std::vector<std::pair<std::string, MetadataValue>>& root_metadata = {});

}  // namespace attnscope
