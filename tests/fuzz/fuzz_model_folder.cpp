// fuzz_model_folder: a trained model's folder on disk (docs/DESIGN.md §2.6): the readers that start
// from a path — TensorFile::open, loadGptModel on a folder and on a file, the tokenizer files beside
// it — where fuzz_safetensors, fuzz_pth, fuzz_gpt_model and fuzz_bpe give bytes in memory. The input
//
//   NAME CONFIG \x01\x02 MODEL \x01\x02 VOCAB \x01\x02 MERGES
//
// is written into a fresh temporary folder per input (removed afterwards, refused or not): CONFIG as
// config.json, MODEL as the model's file, VOCAB and MERGES as vocab.json + merges.txt (or, with NAME's
// bit 3, OpenAI's encoder.json + vocab.bpe). An empty CONFIG, VOCAB or MERGES is a file not written
// (blank text reaches "config.json: empty"); MODEL is always written. MODEL is binary and may hold
// the separator itself: it is everything between the first separator and the second-to-last (with
// three or more; the seeds always have three). NAME's bits 0–2 choose the model's file (kNames).
//
// Checked, with fuzz_gpt_model's limits (1 MiB file, 1 MiB per tensor, 1000 tensors, 4 MiB model):
//   (a) TensorFile::open(PATH) against TensorFile::fromBytes(MODEL, "fuzz"): both refuse, each with
//       one InputError line starting with its own source (PATH: / PATH[entry]: and fuzz: / fuzz[),
//       or both accept with the same format, metadata and tensors (name, dtype, shape), and floats()
//       of each tensor either refused by both or the same shape and bits from both;
//   (b) loadGptModel on the folder and on the file's path, as the CLI and the app open a model: a
//       refusal is one InputError line naming a file of the folder (it starts with the folder); an
//       accepted model is consistent (fuzz_gpt_model's checks); where the folder's lookup finds the
//       file, the two opens agree (both refuse, or the same config, embeddings, tokens, notes), and
//       where it cannot, the folder is refused; the file's model is gptModelFromTensors of (a)'s
//       bytes with CONFIG, and where only that accepts, the loader's refusal is one it alone makes
//       (a blank config.json, the tokenizer files, the metadata's characters);
//   (c) an accepted model's tokenizer on a short fixed text: ids in 0 … V − 1 and decode(encode(text))
//       is the text, or one InputError line (a model trained here on characters refuses one it never
//       saw); a GPT-2 tokenizer read from VOCAB/MERGES is fromContents of the same bytes (it accepts,
//       and encodes the text alike), and is the model's exactly when its ids fit the embedding.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "formats/tensor_file.h"
#include "fuzz_common.h"
#include "lm/gpt2_tokenizer.h"
#include "lm/gpt_model.h"

namespace {

namespace fs = std::filesystem;
using namespace attnscope;
using fuzz::finding;

const std::string kSeparator = "\x01\x02";
const std::string kPrefix = "attnscope-fuzz-model-folder-";
// What an accepted model's tokenizer encodes: words, a contraction, digits, an accent, a symbol of
// three bytes, a line break and <|endoftext|>, which a vocabulary that has it reads as one token.
const std::string kText = "Hello, world! It's 42 caf\xc3\xa9s \xe2\x98\x95\n<|endoftext|> the end";

// The model's file by NAME & 7: the five names the folder's lookup tries (loadGptModel), a name it
// does not (the folder is refused, the file opens), model.npz behind a folder and a dangling link
// that take the lookup's first names, and Hugging Face's cache's layout (the name a link to a blob).
const char* const kNames[] = {"model.safetensors", "pytorch_model.bin",   "model.pth", "model.pt",
                              "model.npz",         "weights.safetensors", "model.npz", "pytorch_model.bin"};
constexpr int kNotLookedFor = 5, kBehindOthers = 6, kLinkToBlob = 7;

struct Input {
  int which = 0;
  bool openai_names = false;
  std::string config, model, vocab, merges;  // empty: not written (but the model)
};

Input split(const std::string& input) {
  Input in;
  in.which = static_cast<unsigned char>(input[0]) & 7;
  in.openai_names = (static_cast<unsigned char>(input[0]) & 8) != 0;
  const std::string rest = input.substr(1);
  const std::size_t first = rest.find(kSeparator);
  if (first == std::string::npos) {
    in.config = rest;
    return in;
  }
  in.config = rest.substr(0, first);
  const std::size_t last = rest.rfind(kSeparator);
  if (last == first) {
    in.model = rest.substr(first + 2);
    return in;
  }
  // Right to left from here: MERGES and VOCAB are text, MODEL may hold the separator.
  const std::size_t before = rest.rfind(kSeparator, last - 2);  // at least `first`
  if (before == first) {
    in.model = rest.substr(first + 2, last - first - 2);
    in.vocab = rest.substr(last + 2);
    return in;
  }
  in.model = rest.substr(first + 2, before - first - 2);
  in.vocab = rest.substr(before + 2, last - before - 2);
  in.merges = rest.substr(last + 2);
  return in;
}

void writeFile(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) finding("cannot write " + p.string());
}

// Folders of earlier processes that ended without removing theirs (a finding aborts): their process is gone.
void removeStaleFolders(const fs::path& tmp) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(tmp, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + kPrefix.size(), nullptr, 10);
    if (pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) fs::remove_all(entry.path(), ec);
  }
}

// One input's folder under $TMPDIR (else /tmp), removed with everything in it when the input is done.
struct TemporaryFolder {
  fs::path path;
  TemporaryFolder() {
    static const fs::path tmp = [] {
      std::error_code ec;
      fs::path t = fs::temp_directory_path(ec);
      if (ec) t = "/tmp";
      removeStaleFolders(t);
      return t;
    }();
    std::string pattern = (tmp / (kPrefix + std::to_string(getpid()) + "-XXXXXX")).string();
    if (!mkdtemp(pattern.data())) finding("mkdtemp failed for " + pattern + ": " + std::strerror(errno));
    path = pattern;
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;
};

// Writes the input's files; returns the model file's path as a user would give it.
fs::path writeFolder(const Input& in, const fs::path& folder) {
  if (!in.config.empty()) writeFile(folder / "config.json", in.config);
  if (!in.vocab.empty()) writeFile(folder / (in.openai_names ? "encoder.json" : "vocab.json"), in.vocab);
  if (!in.merges.empty()) writeFile(folder / (in.openai_names ? "vocab.bpe" : "merges.txt"), in.merges);
  const fs::path model = folder / kNames[in.which];
  std::error_code ec;
  if (in.which == kBehindOthers) {
    fs::create_directory(folder / "model.safetensors", ec);
    if (!ec) fs::create_symlink("nothing-here.bin", folder / "pytorch_model.bin", ec);
  } else if (in.which == kLinkToBlob) {
    fs::create_directory(folder / "blobs", ec);
    if (!ec) fs::create_symlink("blobs/3f2a9c", model, ec);
    if (!ec) writeFile(folder / "blobs" / "3f2a9c", in.model);
  }
  if (ec) finding("cannot lay out " + folder.string() + ": " + ec.message());
  if (in.which != kLinkToBlob) writeFile(model, in.model);
  return model;
}

bool startsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// A refusal's message: one line, starting with `source` (then ':' or a .npz's "[entry]").
void checkRefusal(const std::string& m, const std::string& source, const char* who) {
  FUZZ_CHECK(m.find('\n') == std::string::npos, std::string(who) + ": a refusal is one line: " + m);
  FUZZ_CHECK(startsWith(m, source + ":") || startsWith(m, source + "["),
             std::string(who) + ": the refusal does not start with " + source + ": " + m);
}

std::shared_ptr<const TensorFile> openOrRefuse(const std::string& path, const std::string& bytes,
                                               const TensorFileLimits& limits, bool from_bytes, std::string* refusal) {
  try {
    return from_bytes ? TensorFile::fromBytes(bytes, "fuzz", limits) : TensorFile::open(path, limits);
  } catch (const InputError& e) {
    *refusal = e.what();
    checkRefusal(*refusal, from_bytes ? "fuzz" : path, from_bytes ? "TensorFile::fromBytes" : "TensorFile::open");
  } catch (const std::exception& e) {
    fuzz::unexpected(from_bytes ? "TensorFile::fromBytes" : "TensorFile::open", e);
  }
  return nullptr;
}

// (a): the file read from disk is the file read from its bytes.
std::shared_ptr<const TensorFile> checkOpenIsFromBytes(const std::string& path, const std::string& bytes,
                                                       const TensorFileLimits& limits) {
  std::string refused_path, refused_bytes;
  const auto disk = openOrRefuse(path, bytes, limits, false, &refused_path);
  const auto memory = openOrRefuse(path, bytes, limits, true, &refused_bytes);
  FUZZ_CHECK((disk == nullptr) == (memory == nullptr),
             "open and fromBytes disagree: open " + (disk ? "accepts" : "refuses (" + refused_path + ")") +
                 ", fromBytes " + (memory ? "accepts" : "refuses (" + refused_bytes + ")"));
  if (!disk) return nullptr;
  FUZZ_CHECK(disk->format() == memory->format(), "format " + disk->format() + " vs " + memory->format());
  FUZZ_CHECK(disk->metadata() == memory->metadata(), "the metadata differs");
  FUZZ_CHECK(disk->tensors().size() == memory->tensors().size(),
             std::to_string(disk->tensors().size()) + " tensors vs " + std::to_string(memory->tensors().size()));
  for (std::size_t i = 0; i < disk->tensors().size(); ++i) {
    const TensorInfo &a = disk->tensors()[i], &b = memory->tensors()[i];
    FUZZ_CHECK(a.name == b.name && a.dtype == b.dtype && a.shape == b.shape,
               "tensor " + std::to_string(i) + " is listed otherwise: " + a.name + " " + a.dtype + " vs " + b.name +
                   " " + b.dtype);
    FloatTensor x, y;
    std::string why_x, why_y;
    try {
      x = disk->floats(a.name);
    } catch (const InputError& e) {
      checkRefusal(why_x = e.what(), path, "TensorFile::open's floats");
    } catch (const std::exception& e) {
      fuzz::unexpected("TensorFile::open's floats", e);
    }
    try {
      y = memory->floats(b.name);
    } catch (const InputError& e) {
      checkRefusal(why_y = e.what(), "fuzz", "TensorFile::fromBytes' floats");
    } catch (const std::exception& e) {
      fuzz::unexpected("TensorFile::fromBytes' floats", e);
    }
    FUZZ_CHECK(why_x.empty() == why_y.empty(),
               a.name + ": floats() from the path " + (why_x.empty() ? "gives values" : "refuses (" + why_x + ")") +
                   ", from the bytes " + (why_y.empty() ? "gives values" : "refuses (" + why_y + ")"));
    if (!why_x.empty()) continue;
    FUZZ_CHECK(x.shape == a.shape && y.shape == a.shape, a.name + ": floats() has another shape");
    FUZZ_CHECK(x.elements() == 0 ||
                   (x.data && y.data && std::memcmp(x.data, y.data, static_cast<std::size_t>(x.elements()) * 4) == 0),
               a.name + ": floats() from the path and from the bytes differ");
  }
  return memory;
}

struct Loaded {
  std::shared_ptr<const GptModel> model;
  std::string refusal;
};

// (b): loadGptModel as the CLI's model-trace and the app call it, on the folder or the file.
Loaded load(const std::string& path, const std::string& folder, const GptLoadOptions& options) {
  Loaded r;
  try {
    r.model = loadGptModel(path, options);
  } catch (const InputError& e) {
    r.refusal = e.what();
    FUZZ_CHECK(r.refusal.find('\n') == std::string::npos, "loadGptModel(" + path + "): not one line: " + r.refusal);
    // Every file it reads is in the folder, so every refusal names the folder or a file in it.
    FUZZ_CHECK(startsWith(r.refusal, folder + ":") || startsWith(r.refusal, folder + "/"),
               "loadGptModel(" + path + "): the refusal names no file of the folder: " + r.refusal);
    return r;
  } catch (const std::exception& e) {
    fuzz::unexpected("loadGptModel", e);
  }
  const GptModel& m = *r.model;
  const GptConfig& c = m.config;
  FUZZ_CHECK(c.vocab_size >= 1 && c.d_model >= 1 && c.context_length >= 1, "sizes");
  FUZZ_CHECK(c.layers >= 1 && static_cast<int>(m.blocks.size()) == c.layers, "blocks");
  FUZZ_CHECK(c.heads >= 1 && c.d_model % c.heads == 0, "heads divide the width");
  FUZZ_CHECK(m.token_embedding.elements() == std::int64_t{c.vocab_size} * c.d_model, "token embedding");
  FUZZ_CHECK(m.position_embedding.elements() == std::int64_t{c.context_length} * c.d_model, "position embedding");
  FUZZ_CHECK(m.output_head.elements() == std::int64_t{c.vocab_size} * c.d_model, "head");
  FUZZ_CHECK(m.token_labels.empty() || static_cast<int>(m.token_labels.size()) == c.vocab_size, "token names");
  FUZZ_CHECK(m.path == path, "the model's path is " + m.path);
  return r;
}

bool sameFloats(const FloatTensor& a, const FloatTensor& b) {
  return a.shape == b.shape &&
         (a.elements() == 0 || std::memcmp(a.data, b.data, static_cast<std::size_t>(a.elements()) * 4) == 0);
}

void checkSameModel(const GptModel& a, const GptModel& b, const std::string& what) {
  const GptConfig &x = a.config, &y = b.config;
  FUZZ_CHECK(x.vocab_size == y.vocab_size && x.context_length == y.context_length && x.d_model == y.d_model &&
                 x.layers == y.layers && x.heads == y.heads && x.mlp_width == y.mlp_width && x.mlp == y.mlp &&
                 x.qkv_bias == y.qkv_bias && x.tied_head == y.tied_head && x.layout == y.layout &&
                 x.heads_from == y.heads_from && std::memcmp(&x.layer_norm_eps, &y.layer_norm_eps, sizeof(float)) == 0,
             what + ": another config");
  FUZZ_CHECK(sameFloats(a.token_embedding, b.token_embedding), what + ": the token embeddings differ");
  FUZZ_CHECK(sameFloats(a.position_embedding, b.position_embedding), what + ": the position embeddings differ");
  FUZZ_CHECK(sameFloats(a.output_head, b.output_head), what + ": the heads differ");
  FUZZ_CHECK(a.token_labels == b.token_labels && a.token_kind == b.token_kind, what + ": the token names differ");
}

// (c): the model's tokenizer on kText.
void checkTokenizer(const GptModel& m, const Input& in, const std::string& path) {
  const int V = m.config.vocab_size;
  std::vector<int> ids;
  if (m.tokenizer) {
    bool refused = false;
    try {
      ids = m.tokenizer->encode(kText);
    } catch (const InputError& e) {
      refused = true;
      FUZZ_CHECK(std::string(e.what()).find('\n') == std::string::npos,
                 std::string("encode: not one line: ") + e.what());
    } catch (const std::exception& e) {
      fuzz::unexpected("encode", e);
    }
    if (!refused) {
      for (int id : ids) FUZZ_CHECK(id >= 0 && id < V, "id " + std::to_string(id) + " of " + std::to_string(V));
      std::string back;
      try {
        back = m.tokenizer->decode(ids);
      } catch (const std::exception& e) {
        fuzz::unexpected("decode of encode's ids", e);
      }
      FUZZ_CHECK(back == kText, "decode(encode(text)) is not the text: " + back);
    }
  }
  // A GPT-2 tokenizer from the files written: the same as from their bytes.
  if (!m.token_labels.empty()) return;  // its own names' tokenizer (characters, or GPT-2's files as a subset)
  if (in.vocab.empty() || in.merges.empty()) {
    FUZZ_CHECK(m.tokenizer == nullptr, path + ": a GPT-2 tokenizer without its two files");
    return;
  }
  std::shared_ptr<const Gpt2Tokenizer> t;
  try {
    t = Gpt2Tokenizer::fromContents(in.vocab, in.merges, "fuzz");
  } catch (const InputError& e) {
    finding(path + ": the loader read the tokenizer files that fromContents refuses: " + e.what());
  } catch (const std::exception& e) {
    fuzz::unexpected("Gpt2Tokenizer::fromContents", e);
  }
  FUZZ_CHECK((m.tokenizer != nullptr) == (t->vocabularySize() <= V),
             path + ": a tokenizer of " + std::to_string(t->vocabularySize()) + " ids for " + std::to_string(V) +
                 " rows is " + (m.tokenizer ? "kept" : "dropped"));
  if (m.tokenizer) FUZZ_CHECK(t->encode(kText) == ids, path + ": the files' tokenizer and their bytes' differ");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const Input in = split(std::string(reinterpret_cast<const char*>(data), size));
  const TemporaryFolder tmp;
  const std::string folder = tmp.path.string();
  const std::string path = writeFolder(in, tmp.path).string();

  GptLoadOptions options;  // fuzz_gpt_model's: every accepted model stays cheap
  options.limits.max_file_bytes = std::int64_t{1} << 20;
  options.limits.max_tensor_bytes = std::int64_t{1} << 20;
  options.limits.max_tensors = 1000;
  options.max_model_bytes = std::int64_t{4} << 20;
  options.reference_mlp = false;  // as model-trace and the app load it

  // (a)
  const std::shared_ptr<const TensorFile> tensors = checkOpenIsFromBytes(path, in.model, options.limits);

  // (b)
  const Loaded by_file = load(path, folder, options);
  const Loaded by_folder = load(folder, folder, options);
  if (in.which == kNotLookedFor) {
    FUZZ_CHECK(!by_folder.model && by_folder.refusal.find("no model file") != std::string::npos,
               "a folder without a model file it looks for: " +
                   (by_folder.model ? std::string("opened") : by_folder.refusal));
  } else {
    FUZZ_CHECK((by_file.model == nullptr) == (by_folder.model == nullptr),
               "the folder " + (by_folder.model ? "opens" : "is refused (" + by_folder.refusal + ")") +
                   " but its model file " + (by_file.model ? "opens" : "is refused (" + by_file.refusal + ")"));
    if (by_file.model) {
      checkSameModel(*by_file.model, *by_folder.model, "the folder and its file");
      FUZZ_CHECK(by_file.model->notes == by_folder.model->notes, "the folder and its file: other notes");
      FUZZ_CHECK((by_file.model->tokenizer == nullptr) == (by_folder.model->tokenizer == nullptr),
                 "the folder and its file: a tokenizer in one only");
      FUZZ_CHECK(by_folder.model->weights_path == path, "the folder's model file: " + by_folder.model->weights_path);
    }
  }
  // The loader is gptModelFromTensors of the file's tensors and config.json, then the tokenizer.
  if (tensors) {
    Loaded direct;
    try {
      direct.model = gptModelFromTensors(*tensors, in.config, options);
    } catch (const InputError& e) {
      direct.refusal = e.what();
      FUZZ_CHECK(direct.refusal.find('\n') == std::string::npos, "a refusal is one line: " + direct.refusal);
    } catch (const std::exception& e) {
      fuzz::unexpected("gptModelFromTensors", e);
    }
    if (by_file.model) {
      FUZZ_CHECK(direct.model != nullptr, "the loader opens what gptModelFromTensors refuses: " + direct.refusal);
      checkSameModel(*by_file.model, *direct.model, "the loader and gptModelFromTensors");
    } else if (direct.model) {
      const std::string& m = by_file.refusal;
      const bool blank = in.config.find_first_not_of(" \t\r\n") == std::string::npos;
      FUZZ_CHECK((blank && startsWith(m, folder + "/config.json: empty")) || startsWith(m, folder + "/vocab.json") ||
                     startsWith(m, folder + "/merges.txt") || startsWith(m, folder + "/encoder.json") ||
                     startsWith(m, folder + "/vocab.bpe") || startsWith(m, path + ": its metadata's"),
                 "gptModelFromTensors accepts what the loader refuses not for its config.json or tokenizer: " + m);
    }
  } else {
    FUZZ_CHECK(!by_file.model, "the loader opens a file TensorFile refuses");
  }

  // (c)
  if (by_file.model) checkTokenizer(*by_file.model, in, path);
  return 0;
}
