// Loading a trained GPT (lm/gpt_model.h, docs/DESIGN.md §2.6): which layout the tensors are in,
// their names and shapes checked one by one, Hugging Face's Conv1D weights turned into torch's
// Linear layout, and each block's attention packed once.
#include "lm/gpt_model.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "engine/count_text.h"
#include "engine/errors.h"
#include "engine/gemm.h"
#include "engine/tensor.h"
#include "engine/thread_team.h"
#include "formats/file_reading.h"
#include "formats/json_reading.h"
#include "formats/zip_archive.h"
#include "lm/vocabulary_tokenizer.h"

namespace attnscope {

namespace {

// [SECTION] Names ---------------------------------------------------------------------------------

namespace fs = std::filesystem;

bool isFile(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

// Prefixes a state_dict may carry: HF's `transformer.`; a training checkpoint's `model_state_dict.`
// (the book's chapter 5) or `model.` (nanoGPT's {"model": …, "optimizer": …}), DataParallel's
// `module.` and torch.compile's `_orig_mod.`. The checkpoint's optimizer state is not the model's.
const char* const kPrefixes[] = {"model_state_dict.", "model.", "module.", "_orig_mod.", "transformer."};
const char* const kOptimizerPrefixes[] = {"optimizer_state_dict.", "optimizer."};

// The file's tensors by their names without those prefixes.
class TensorNames {
 public:
  explicit TensorNames(const TensorFile& file) : file_(file) {
    for (const TensorInfo& t : file.tensors()) {
      std::string name = t.name;
      for (bool stripped = true; stripped;) {
        stripped = false;
        for (const char* prefix : kPrefixes) {
          const std::string p = prefix;
          if (name.size() > p.size() && name.compare(0, p.size(), p) == 0) {
            name = name.substr(p.size());
            stripped = true;
          }
        }
      }
      // A checkpoint holds the optimizer's state too: those are not the model's.
      if (std::any_of(std::begin(kOptimizerPrefixes), std::end(kOptimizerPrefixes),
                      [&](const char* p) { return t.name.rfind(p, 0) == 0; }))
        continue;
      if (!by_name_.emplace(name, &t).second)
        throw InputError(file.path() + ": tensor " + t.name + " is given twice (as " + name + ")");
    }
  }
  bool has(const std::string& name) const { return by_name_.count(name) > 0; }
  const TensorInfo* info(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
  }
  // The tensor `name`, whose shape must be `shape`; marked as used.
  FloatTensor take(const std::string& name, const std::vector<std::int64_t>& shape, const std::string& what) {
    const TensorInfo* t = info(name);
    if (t == nullptr) throw InputError(file_.path() + ": tensor " + name + " (" + what + ") is missing");
    if (t->shape != shape)
      throw InputError(file_.path() + ": tensor " + t->name + " (" + what + ") has shape " + shapeText(t->shape) +
                       ", expected " + shapeText(shape));
    used_.insert(name);
    taken_.push_back(t->name);
    return file_.floats(t->name);
  }
  // The file's pages of the tensors taken since the last call are not needed again (they were
  // copied): a mapped file gives them back (TensorFile::release). keep: forget them unreleased.
  void releaseTaken(bool keep = false) {
    if (!keep)
      for (const std::string& name : taken_) file_.release(name);
    taken_.clear();
  }
  void ignore(const std::string& name) { used_.insert(name); }
  bool used(const std::string& name) const { return used_.count(name) > 0; }
  std::vector<std::string> unused() const {
    std::vector<std::string> out;
    for (const auto& [name, t] : by_name_)
      if (!used_.count(name)) out.push_back(t->name);
    return out;
  }
  const std::map<std::string, const TensorInfo*>& all() const { return by_name_; }

  static std::string shapeText(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
  }

 private:
  const TensorFile& file_;
  std::map<std::string, const TensorInfo*> by_name_;
  std::set<std::string> used_;
  std::vector<std::string> taken_;
};

// [SECTION] Conversions ---------------------------------------------------------------------------

// An nn.Linear's weight (out × in) as the file holds it.
Matrix linearWeight(const FloatTensor& t) {
  Matrix m(t.shape[0], t.shape[1]);
  std::copy(t.data, t.data + t.elements(), m.data());
  return m;
}

// Columns [c0, c0 + n) of a Conv1D weight (in × out, y = x·W), as a Linear weight (n × in).
Matrix conv1dColumns(const FloatTensor& t, std::int64_t c0, std::int64_t n) {
  const std::int64_t in = t.shape[0], out = t.shape[1];
  Matrix m(n, in);
  constexpr std::int64_t kBlock = 16;  // a block's rows and columns both in cache: not one miss a write
  for (std::int64_t i0 = 0; i0 < in; i0 += kBlock)
    for (std::int64_t b0 = 0; b0 < n; b0 += kBlock)
      for (std::int64_t i = i0; i < std::min(in, i0 + kBlock); ++i)
        for (std::int64_t c = b0; c < std::min(n, b0 + kBlock); ++c) m(c, i) = t.data[i * out + c0 + c];
  return m;
}

RowVector segmentOf(const FloatTensor& t, std::int64_t c0, std::int64_t n) {
  RowVector v(n);
  std::copy(t.data + c0, t.data + c0 + n, v.data());
  return v;
}
RowVector rowOf(const FloatTensor& t) { return segmentOf(t, 0, t.elements()); }

void checkFinite(const std::string& path, const std::string& name, const float* data, std::int64_t n) {
  if (allFinite(data, static_cast<std::size_t>(n))) return;  // vectorized; the element only when one is not
  for (std::int64_t i = 0; i < n; ++i)
    if (!std::isfinite(data[i]))
      throw InputError(path + ": tensor " + name + " holds a value that is not finite (at element " +
                       std::to_string(i) + ")");
}

// The layer in slices of whole panels (packed_linear.h).
SlicedLinear packedSlices(const Linear& l) {
  return packSliced(l.weight.data(), static_cast<int>(l.weight.rows()), static_cast<int>(l.weight.cols()),
                    static_cast<int>(l.weight.cols()), l.bias.size() > 0 ? l.bias.data() : nullptr);
}

// [SECTION] config.json ---------------------------------------------------------------------------

struct ConfigJson {
  int n_head = 0, n_layer = 0, n_embd = 0, n_positions = 0, vocab_size = 0, n_inner = 0;
  double eps = 1e-5;
  bool tie_word_embeddings = true;  // Hugging Face's default: the head is wte
  bool present = false;
  std::map<std::string, std::string> spelled;  // a size's key as the file spells it ("n_heads" for n_head)
  std::string key(const std::string& hf) const {
    const auto it = spelled.find(hf);
    return it == spelled.end() ? hf : it->second;
  }
};

// The book's GPT_CONFIG (chapter 4), which a learner saves beside model.pth, names the sizes its
// own way: read alike (its 4 heads had been guessed as 1, every map another model's). drop_rate
// acts in training only and qkv_bias is in the tensors themselves.
struct BookConfigName {
  const char* hf;
  const char* book;
  int ConfigJson::*size;
};
constexpr BookConfigName kBookConfigNames[] = {{"n_head", "n_heads", &ConfigJson::n_head},
                                               {"n_embd", "emb_dim", &ConfigJson::n_embd},
                                               {"n_layer", "n_layers", &ConfigJson::n_layer},
                                               {"n_positions", "context_length", &ConfigJson::n_positions}};

ConfigJson readConfig(const std::string& text, const std::string& source) {
  ConfigJson c;
  if (text.empty()) return c;
  c.present = true;
  const nlohmann::json j = [&] {
    try {
      return readJson(text, source, std::int64_t{16} << 20);
    } catch (const InputError& e) {
      // Named by the file: "n_head: nested deeper than 64 levels" (readJson's member, as a workspace's
      // fields are named) had not said which file of the model's folder.
      const std::string m = e.what();
      if (m.rfind(source + ":", 0) == 0) throw;
      throw InputError(source + ": " + m);
    }
  }();
  if (!j.is_object()) throw InputError(source + ": expected a JSON object");
  auto getInt = [&](const char* key, int& out) {
    if (!j.contains(key) || j[key].is_null()) return;
    if (!j[key].is_number_integer() || j[key].get<std::int64_t>() < 1 || j[key].get<std::int64_t>() > 1000000)
      throw InputError(source + ": " + key + " must be a whole number from 1 to 1000000");
    out = j[key].get<int>();
  };
  getInt("n_head", c.n_head);
  getInt("n_layer", c.n_layer);
  getInt("n_embd", c.n_embd);
  getInt("n_positions", c.n_positions);
  getInt("vocab_size", c.vocab_size);
  getInt("n_inner", c.n_inner);
  for (const auto& [hf, book, size] : kBookConfigNames) {
    int& value = c.*size;
    int theirs = 0;
    getInt(book, theirs);
    if (theirs == 0) continue;
    if (value != 0 && value != theirs)
      throw InputError(source + ": " + hf + " is " + std::to_string(value) + " but " + book + " is " +
                       std::to_string(theirs));
    value = theirs;
    c.spelled[hf] = book;
  }
  if (j.contains("layer_norm_epsilon")) {
    if (!j["layer_norm_epsilon"].is_number() || !(j["layer_norm_epsilon"].get<double>() > 0) ||
        j["layer_norm_epsilon"].get<double>() > 1)
      throw InputError(source + ": layer_norm_epsilon must be a number in (0, 1]");
    c.eps = j["layer_norm_epsilon"].get<double>();
  }
  // Another architecture's config beside GPT-2-named tensors is a mix-up, not a GPT-2 (a llama
  // config had opened silently).
  if (j.contains("model_type") && j["model_type"].is_string() && j["model_type"].get<std::string>() != "gpt2")
    throw InputError(source + ": model_type is '" + j["model_type"].get<std::string>().substr(0, 40) +
                     "', not 'gpt2': attnscope opens GPT-2's architecture (and the book's GPTModel) only");
  // Settings of Hugging Face's GPT-2 that change the maths attnscope computes: refused, not ignored.
  auto refuse = [&](const char* key, bool bad_value, const char* why) {
    if (j.contains(key) && j[key].is_boolean() && j[key].get<bool>() == bad_value)
      throw InputError(source + ": " + key + " is " + (bad_value ? "true" : "false") + ": " + why);
  };
  refuse("scale_attn_weights", false, "attnscope divides the scores by √(head width), as GPT-2 does");
  refuse("scale_attn_by_inverse_layer_idx", true, "attnscope does not scale the scores by 1 / (layer + 1)");
  if (j.contains("tie_word_embeddings") && j["tie_word_embeddings"].is_boolean())
    c.tie_word_embeddings = j["tie_word_embeddings"].get<bool>();
  if (j.contains("activation_function") && j["activation_function"].is_string()) {
    const std::string f = j["activation_function"];
    if (f != "gelu_new" && f != "gelu_pytorch_tanh")
      throw InputError(source + ": activation_function '" + f +
                       "' is not GPT-2's GELU (tanh form: gelu_new); attnscope computes only that one");
  }
  return c;
}

// [SECTION] The two layouts -----------------------------------------------------------------------

// Which layout the names are in, from the embeddings' names.
std::string layoutOf(const TensorNames& names, const std::string& path) {
  if (names.has("wte.weight")) return "huggingface";
  if (names.has("tok_emb.weight")) return "book";
  std::string some;
  int n = 0;
  for (const auto& [name, t] : names.all()) {
    if (n++ == 4) break;
    some += (some.empty() ? "" : ", ") + t->name;
  }
  throw InputError(path +
                   ": not a GPT-2 or GPTModel state_dict: neither wte.weight (Hugging Face) nor tok_emb.weight "
                   "(the book's GPTModel) is in it" +
                   (some.empty() ? std::string(" (it holds no tensors)") : " (it holds " + some + ", …)"));
}

// Blocks: one more than the highest block number any tensor name carries ("h.11.…" → 12), so that
// a block missing in the middle is refused by name rather than cutting the model short.
int countBlocks(const TensorNames& names, const std::string& prefix) {
  long long highest = -1;
  for (const auto& [name, t] : names.all()) {
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::size_t dot = name.find('.', prefix.size());
    const std::string number = name.substr(prefix.size(),
                                           dot == std::string::npos ? std::string::npos : dot - prefix.size());
    if (number.empty() || number.size() > 6 || number.find_first_not_of("0123456789") != std::string::npos) continue;
    highest = std::max(highest, std::stoll(number));
  }
  return static_cast<int>(highest + 1);
}

// A JSON list of strings, read as it is parsed: a value of any other kind stops the reading.
struct StringListSax : nlohmann::json_sax<nlohmann::json> {
  explicit StringListSax(std::size_t most) : most_strings(most) {}
  std::vector<std::string> strings;  // at most most_strings: one more stops the reading
  std::size_t most_strings;
  bool ok = false;  // one flat list, whole
  int depth = 0;
  bool null() override { return false; }
  bool boolean(bool) override { return false; }
  bool number_integer(number_integer_t) override { return false; }
  bool number_unsigned(number_unsigned_t) override { return false; }
  bool number_float(number_float_t, const string_t&) override { return false; }
  bool string(string_t& s) override {
    if (depth != 1 || strings.size() == most_strings) return false;
    strings.push_back(std::move(s));
    return true;
  }
  bool binary(binary_t&) override { return false; }
  bool start_object(std::size_t) override { return false; }
  bool key(string_t&) override { return false; }
  bool end_object() override { return false; }
  bool start_array(std::size_t) override { return ++depth == 1; }
  bool end_array() override {
    ok = --depth == 0;
    return ok;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
};

}  // namespace

TokenNames readTokenNames(const TensorFile& file, const std::string& path, std::int64_t vocab_size) {
  TokenNames out;
  for (const auto& [key, value] : file.metadata()) {
    if (key == "tokens") {  // how the text was cut: what a typed text is cut into (lm/vocabulary_tokenizer.h)
      if (value != "characters" && value != "gpt2")
        throw InputError(path + ": its metadata's tokens must be \"characters\" or \"gpt2\"");
      out.kind = value;
    }
    if (key != "vocabulary") continue;
    // Its size first (each name at most 64 bytes of JSON, on average): a long list is refused
    // before it is read; then read as a flat list of strings, anything else stopping the reading
    // (90 MB of "[[[…" had been parsed into a tree of 3 GB).
    const std::size_t most = static_cast<std::size_t>(std::max<std::int64_t>(vocab_size, 0));
    const bool sized = value.size() <= 64 * (most + 1);
    StringListSax list(most);
    const bool read = sized && nlohmann::json::sax_parse(value, &list) && list.ok;
    out.labels.clear();  // (a file that says it twice: the last)
    if (!read || list.strings.size() != most)
      throw InputError(path + ": its metadata's vocabulary must be a JSON list of the " + std::to_string(most) +
                       " tokens' names, id by id");
    out.labels = std::move(list.strings);
  }
  if (!out.kind.empty() && out.labels.empty())
    throw InputError(path + ": its metadata says the tokens are " + out.kind + " but names none (no vocabulary)");
  // A file written before it said the kind: characters when every name is one.
  if (out.kind.empty() && !out.labels.empty()) out.kind = allSingleCharacters(out.labels) ? "characters" : "gpt2";
  return out;
}

std::string anotherModelsTokenizer(const std::string& folder, const Gpt2Tokenizer& tokenizer, std::int64_t rows) {
  const int ids = tokenizer.vocabularySize();
  if (rows < 0 || ids <= rows) return "";
  std::error_code ec;
  fs::path where = fs::absolute(folder, ec).lexically_normal();
  if (where.filename().empty()) where = where.parent_path();  // "." made "…/folder/.
  return "the tokenizer beside it (" + (ec ? folder : where.string()) + ") has ids up to " + std::to_string(ids - 1) +
         " but the model's embedding has " + countOf(static_cast<long>(rows), "row") + " (ids 0 … " +
         std::to_string(rows - 1) + "): another model's; put this model's own vocab.json + merges.txt beside it";
}

std::int64_t tokenEmbeddingRows(const TensorFile& file) {
  const TensorNames names(file);
  for (const char* name : {"wte.weight", "tok_emb.weight"})
    if (const TensorInfo* t = names.info(name); t != nullptr && t->shape.size() == 2) return t->shape[0];
  return -1;
}

std::shared_ptr<const GptModel> gptModelFromTensors(const TensorFile& file, const std::string& config_json,
                                                    const GptLoadOptions& options) {
  const std::string& path = file.path();
  TensorNames names(file);
  auto model = std::make_shared<GptModel>();
  GptConfig& c = model->config;
  c.layout = layoutOf(names, path);
  const bool hf = c.layout == "huggingface";
  const ConfigJson cfg = readConfig(config_json, (fs::path(modelFolder(path)) / "config.json").string());

  // Sizes from the embeddings; the config, when there is one, must agree.
  const TensorInfo* wte = names.info(hf ? "wte.weight" : "tok_emb.weight");
  const TensorInfo* wpe = names.info(hf ? "wpe.weight" : "pos_emb.weight");
  if (wte->shape.size() != 2)
    throw InputError(path + ": tensor " + wte->name + " (the token embedding) has shape " +
                     TensorNames::shapeText(wte->shape) + ", expected [vocabulary, width]");
  if (wpe == nullptr)
    throw InputError(path + ": tensor " + std::string(hf ? "wpe.weight" : "pos_emb.weight") +
                     " (the position embedding) is missing");
  if (wpe->shape.size() != 2 || wpe->shape[1] != wte->shape[1])
    throw InputError(path + ": tensor " + wpe->name + " (the position embedding) has shape " +
                     TensorNames::shapeText(wpe->shape) + ", expected [positions, " + std::to_string(wte->shape[1]) +
                     "]");
  const Limits limits;
  if (wte->shape[1] < 1 || wte->shape[1] > limits.max_dim || wte->shape[0] < 1 || wte->shape[0] > 10000000 ||
      wpe->shape[0] < 1 || wpe->shape[0] > 1000000)
    throw InputError(path + ": the embeddings' sizes " + TensorNames::shapeText(wte->shape) + " and " +
                     TensorNames::shapeText(wpe->shape) + " are beyond what attnscope opens (from 1 to " +
                     std::to_string(limits.max_dim) +
                     " wide, 10000000 tokens in the vocabulary and 1000000 positions)");
  c.vocab_size = static_cast<int>(wte->shape[0]);
  c.d_model = static_cast<int>(wte->shape[1]);
  c.context_length = static_cast<int>(wpe->shape[0]);
  c.layers = countBlocks(names, hf ? "h." : "trf_blocks.");
  if (c.layers == 0)
    throw InputError(path + ": tensor " + std::string(hf ? "h.0.ln_1.weight" : "trf_blocks.0.norm1.scale") +
                     " (the first block) is missing: the file holds no transformer blocks");
  c.layer_norm_eps = static_cast<float>(cfg.eps);
  auto agree = [&](const char* key, int from_config, int from_tensors) {
    if (from_config != 0 && from_config != from_tensors)
      throw InputError((fs::path(modelFolder(path)) / "config.json").string() + ": " + cfg.key(key) + " is " +
                       std::to_string(from_config) + " but the tensors hold " + std::to_string(from_tensors));
  };
  agree("n_embd", cfg.n_embd, c.d_model);
  agree("n_layer", cfg.n_layer, c.layers);
  agree("vocab_size", cfg.vocab_size, c.vocab_size);
  agree("n_positions", cfg.n_positions, c.context_length);

  // Heads: the caller, else config.json, else the file's own metadata ("n_head", as attnscope writes
  // a model trained here in a .safetensors or a .pth), else d / 64 (GPT-2's head width), with a note.
  // (Read only where it is used: a bad one beside --num-heads or config.json is not in the way.)
  const auto metadataHeads = [&]() -> int {
    for (const auto& [key, value] : file.metadata())
      if (key == "n_head") {
        std::size_t used = 0;
        int heads = 0;
        try {
          heads = std::stoi(value, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != value.size() || heads < 1 || heads > 1000000)
          throw InputError(
              path + (file.format() == "pth" ? ": the state_dict's _metadata[''].n_head" : ": __metadata__.n_head") +
              " must be a whole number from 1 to 1000000, got '" + value.substr(0, 40) +
              "' (give the heads: --num-heads N, or the heads of File › Open model…)");
        return heads;
      }
    return 0;
  };
  if (options.num_heads > 0) {
    c.heads = options.num_heads;
    c.heads_from = "the number asked for";
    int stored = 0;  // what the file says, if it says it well (a bad one is not in the way here)
    try {
      stored = metadataHeads();
    } catch (const InputError&) {
    }
    if (cfg.n_head != 0 && cfg.n_head != options.num_heads)
      model->notes.push_back("config.json says " + cfg.key("n_head") + " = " + std::to_string(cfg.n_head) + "; using " +
                             countOf(options.num_heads, "head") + " as asked");
    else if (cfg.n_head == 0 && stored != 0 && stored != options.num_heads)
      model->notes.push_back("the file's metadata says n_head = " + std::to_string(stored) + "; using " +
                             countOf(options.num_heads, "head") + " as asked");
  } else if (cfg.n_head > 0) {
    c.heads = cfg.n_head;
    c.heads_from = "config.json";
  } else if (const int heads = metadataHeads(); heads > 0) {
    c.heads = heads;
    c.heads_from = "the file's metadata";
  } else {
    if (c.d_model % 64 != 0)
      throw InputError(
          path + ": the number of heads is not in the file and the width " + std::to_string(c.d_model) +
          " is not a multiple of 64 (GPT-2's head width): give it (--num-heads N, or the heads of File › Open "
          "model…)");
    c.heads = c.d_model / 64;
    c.heads_from = "d / 64";
    model->notes.push_back(
        "the number of heads is not in the file (nor in a config.json beside it): " + std::to_string(c.heads) +
        " (width " + std::to_string(c.d_model) + " / 64, GPT-2's head width); give --num-heads if it differs");
  }
  // The token names a model trained here on a text keeps, which no tokenizer gives: shown instead of ids.
  TokenNames token_names = readTokenNames(file, path, c.vocab_size);
  model->token_labels = std::move(token_names.labels);
  model->token_kind = std::move(token_names.kind);
  if (c.heads > limits.max_heads)
    throw InputError(path + ": " + std::to_string(c.heads) + " heads (from " + c.heads_from + "), more than the " +
                     std::to_string(limits.max_heads) + " attnscope shows");
  if (c.d_model % c.heads != 0)
    throw InputError(path + ": " + std::to_string(c.heads) + " heads do not divide the width " +
                     std::to_string(c.d_model) + " (from " + c.heads_from + ")");

  const std::int64_t d = c.d_model;
  const std::string fc_name = hf ? "h.0.mlp.c_fc.weight" : "trf_blocks.0.ff.layers.0.weight";
  const TensorInfo* fc0 = names.info(fc_name);
  // The book's blocks without a feed-forward and LayerNorm₂ at all: an attention-only model.
  c.mlp = hf || fc0 != nullptr || names.has("trf_blocks.0.norm2.scale");
  if (!c.mlp) model->notes.push_back("attention only: its blocks have no feed-forward and no LayerNorm 2");
  if (c.mlp && fc0 == nullptr) throw InputError(path + ": tensor " + fc_name + " (the first block's MLP) is missing");
  if (c.mlp && (fc0->shape.size() != 2 || fc0->shape[hf ? 0 : 1] != d))
    throw InputError(path + ": tensor " + fc0->name + " has shape " + TensorNames::shapeText(fc0->shape) +
                     ", expected " +
                     (hf ? "[" + std::to_string(d) + ", MLP width]" : "[MLP width, " + std::to_string(d) + "]"));
  c.mlp_width = c.mlp ? static_cast<int>(fc0->shape[hf ? 1 : 0]) : 0;
  if (cfg.n_inner != 0) agree("n_inner", cfg.n_inner, c.mlp_width);
  const std::int64_t F = c.mlp_width;
  c.qkv_bias = hf || names.has("trf_blocks.0.att.W_query.bias");

  // The memory the model will hold, from the shapes alone, at most: every block's weights twice
  // (torch's layout and packed: the attention's are held packed alone, the MLP's twice for the
  // reference path unless GptLoadOptions::reference_mlp is false), the embeddings and the head once more when the
  // file's are not float32.
  const double block_floats = 4.0 * d * d + 2.0 * d * F + 9.0 * d + F;
  const double estimate = (2.0 * c.layers * block_floats + 2.0 * (double(c.vocab_size) + c.context_length) * d) * 4;
  if ((c.mlp && F < 1) || F > 16 * limits.max_dim)
    throw InputError(path + ": the MLP's width " + std::to_string(F) + " is beyond what attnscope opens (1 … " +
                     std::to_string(16 * limits.max_dim) + ")");
  if (estimate > static_cast<double>(options.max_model_bytes))
    throw InputError(path + ": the model (" + std::to_string(c.layers) + " blocks of width " + std::to_string(d) +
                     ", MLP " + std::to_string(F) + ", vocabulary " + std::to_string(c.vocab_size) + ") needs about " +
                     std::to_string(static_cast<long long>(estimate / 1048576)) + " MiB, more than the limit of " +
                     std::to_string(options.max_model_bytes >> 20) + " MiB");

  model->token_embedding = names.take(hf ? "wte.weight" : "tok_emb.weight", {c.vocab_size, d}, "the token embedding");
  model->position_embedding = names.take(hf ? "wpe.weight" : "pos_emb.weight", {c.context_length, d},
                                         "the position embedding");
  checkFinite(path, wte->name, model->token_embedding.data, model->token_embedding.elements());
  checkFinite(path, wpe->name, model->position_embedding.data, model->position_embedding.elements());

  ModelConfig& a = model->attention_config;
  a.variant = Variant::MultiHead;
  a.d_out = c.d_model;
  a.num_heads = c.heads;
  a.dropout = 0;
  a.training = false;
  a.qkv_bias = c.qkv_bias;
  a.causal = true;
  a.batch_size = 1;

  auto norm = [&](const std::string& prefix, const char* what) {
    LayerNormWeights n;
    const std::string scale = prefix + (hf ? ".weight" : ".scale"), shift = prefix + (hf ? ".bias" : ".shift");
    n.scale = rowOf(names.take(scale, {d}, what));
    n.shift = rowOf(names.take(shift, {d}, what));
    checkFinite(path, scale, n.scale.data(), d);
    checkFinite(path, shift, n.shift.data(), d);
    return n;
  };
  // A block's linear layers as the file holds them: taken in turn (TensorNames is one thread's),
  // checked and packed later, beside other blocks.
  struct FileLayer {
    std::string prefix;
    FloatTensor weight, bias;  // bias.data null: none
    // A Conv1D's (GPT-2's: weight in × out, y = x·W), packed as it lies.
    WeightView columns() const {
      return WeightView::columns(weight.data, static_cast<int>(weight.shape[1]), static_cast<int>(weight.shape[0]),
                                 weight.shape[1]);
    }
    // An nn.Linear (the book's: weight out × in), or a Conv1D's transposed to one.
    Linear linear(bool conv1d) const {
      Linear l;
      l.weight = conv1d ? conv1dColumns(weight, 0, weight.shape[1]) : linearWeight(weight);
      if (bias.data != nullptr) l.bias = rowOf(bias);
      return l;
    }
  };
  const auto layer = [&](const std::string& prefix, std::int64_t out, std::int64_t in, bool bias, const char* what) {
    FileLayer l{prefix,
                names.take(prefix + ".weight", hf ? std::vector<std::int64_t>{in, out} : std::vector{out, in}, what),
                {}};
    if (bias) l.bias = names.take(prefix + ".bias", {out}, what);
    return l;
  };
  struct FileBlock {
    LayerNormWeights norm1, norm2;
    std::vector<FileLayer> layers;  // GPT-2: c_attn, attn.c_proj, c_fc, mlp.c_proj; the book's: W_query, W_key,
                                    // W_value, out_proj[, ff.layers.0, ff.layers.2]
  };
  const auto takeBlock = [&](int i) {
    FileBlock f;
    const std::string p = (hf ? "h." : "trf_blocks.") + std::to_string(i);
    f.norm1 = norm(p + (hf ? ".ln_1" : ".norm1"), "a LayerNorm");
    if (c.mlp) f.norm2 = norm(p + (hf ? ".ln_2" : ".norm2"), "a LayerNorm");
    if (hf) {
      f.layers = {layer(p + ".attn.c_attn", 3 * d, d, true, "attention's Q, K, V (Conv1D)"),
                  layer(p + ".attn.c_proj", d, d, true, "attention's output projection"),
                  layer(p + ".mlp.c_fc", F, d, true, "the MLP's first layer"),
                  layer(p + ".mlp.c_proj", d, F, true, "the MLP's second layer")};
      names.ignore(p + ".attn.bias");  // the causal mask and its fill value: buffers, not weights
      names.ignore(p + ".attn.masked_bias");
    } else {
      f.layers = {layer(p + ".att.W_query", d, d, c.qkv_bias, "attention's W_query"),
                  layer(p + ".att.W_key", d, d, c.qkv_bias, "attention's W_key"),
                  layer(p + ".att.W_value", d, d, c.qkv_bias, "attention's W_value"),
                  layer(p + ".att.out_proj", d, d, true, "attention's out_proj")};
      if (c.mlp) {
        f.layers.push_back(layer(p + ".ff.layers.0", F, d, true, "the feed-forward's first layer"));
        f.layers.push_back(layer(p + ".ff.layers.2", d, F, true, "the feed-forward's second layer"));
      }
      names.ignore(p + ".att.mask");
    }
    return f;
  };
  // The attention is held packed alone: a view's layer unpacks its own (GivenModule::weights), bit
  // for bit. On another GEMM backend every pass multiplies in torch's layout: kept so.
  const bool torch_layout = gemmBackend() != GemmBackend::Packed;
  const auto buildBlock = [&](const FileBlock& f) {
    for (const FileLayer& l : f.layers) {
      checkFinite(path, l.prefix + ".weight", l.weight.data, l.weight.elements());
      if (l.bias.data != nullptr) checkFinite(path, l.prefix + ".bias", l.bias.data, l.bias.elements());
    }
    GptBlock b;
    b.norm1 = f.norm1;
    b.norm2 = f.norm2;
    auto params = std::make_shared<Parameters>();
    if (hf) {
      // Conv1D weights are packed as they lie (FileLayer::columns), transposed to torch's layout
      // only where a path multiplies in it.
      const FileLayer &qkv = f.layers[0], &out = f.layers[1], &fc = f.layers[2], &proj = f.layers[3];
      b.attention.packed = packModule(qkv.columns(), qkv.bias.data, out.columns(), out.bias.data, a);
      if (torch_layout) {
        params->query.push_back({conv1dColumns(qkv.weight, 0, d), segmentOf(qkv.bias, 0, d)});
        params->key.push_back({conv1dColumns(qkv.weight, d, d), segmentOf(qkv.bias, d, d)});
        params->value.push_back({conv1dColumns(qkv.weight, 2 * d, d), segmentOf(qkv.bias, 2 * d, d)});
        params->out_proj = out.linear(true);
      }
      b.fc_packed = packSliced(fc.columns(), fc.bias.data);
      b.proj_packed = packSliced(proj.columns(), proj.bias.data);
      if (options.reference_mlp) b.fc = fc.linear(true), b.proj = proj.linear(true);
    } else {
      params->query.push_back(f.layers[0].linear(false));
      params->key.push_back(f.layers[1].linear(false));
      params->value.push_back(f.layers[2].linear(false));
      params->out_proj = f.layers[3].linear(false);
      b.attention.packed = packModule(*params, a);
      if (c.mlp) {
        b.fc = f.layers[4].linear(false);
        b.proj = f.layers[5].linear(false);
        b.fc_packed = packedSlices(b.fc);
        b.proj_packed = packedSlices(b.proj);
      }
      if (!options.reference_mlp) b.fc = b.proj = Linear{};  // the packed panels are all the fast path reads
    }
    if (torch_layout) b.attention.parameters = params;
    return b;
  };

  names.releaseTaken(true);  // the embeddings stay mapped: they are used in place
  // Blocks in groups of as many as the process has processors, each group's checked and packed
  // side by side: the packed panels' first writes, each a page fault, are most of a load's time
  // (docs/DESIGN.md §2.6 "Opening a model"). A group's file pages are then given back, and a
  // float16 file's converted tensors freed. A refusal names the first bad block's tensor.
  const int group = std::max(1, availableProcessors());
  for (int first = 0; first < c.layers; first += group) {
    const int n = std::min(group, c.layers - first);
    std::vector<FileBlock> files;
    for (int k = 0; k < n; ++k) files.push_back(takeBlock(first + k));
    std::vector<GptBlock> built(static_cast<std::size_t>(n));
    forEachItem(n, n,
                [&](int k) { built[static_cast<std::size_t>(k)] = buildBlock(files[static_cast<std::size_t>(k)]); });
    files.clear();
    names.releaseTaken();  // every tensor of the group is packed or copied
    for (GptBlock& b : built) model->blocks.push_back(std::move(b));
  }
  model->final_norm = norm(hf ? "ln_f" : "final_norm", "the final LayerNorm");
  if (hf) {
    // GPT-2's head is tied to wte (config.json's tie_word_embeddings, true unless it says false):
    // Hugging Face then uses wte whatever lm_head.weight holds, and so does attnscope.
    model->output_head = model->token_embedding;
    if (names.has("lm_head.weight")) {
      const FloatTensor head = names.take("lm_head.weight", {c.vocab_size, d}, "the output head");
      const bool same = std::equal(head.data, head.data + head.elements(), model->token_embedding.data);
      if (!cfg.tie_word_embeddings) {
        model->output_head = head;
        c.tied_head = false;
      } else {
        names.releaseTaken();  // read once to compare; the head is wte
      }
      if (cfg.tie_word_embeddings && !same) {
        model->notes.push_back(
            "lm_head.weight differs from wte.weight; GPT-2 ties them (tie_word_embeddings), so "
            "the head is wte, as Hugging Face computes it");
      }
    } else if (!cfg.tie_word_embeddings) {
      throw InputError(path +
                       ": tensor lm_head.weight (the output head) is missing, and config.json says "
                       "tie_word_embeddings is false");
    }
  } else {
    model->output_head = names.take("out_head.weight", {c.vocab_size, d}, "the output head");
    c.tied_head = false;
  }
  checkFinite(path, "the output head", model->output_head.data, model->output_head.elements());
  names.ignore("lm_head.weight");

  const std::vector<std::string> unused = names.unused();
  // A later block's Q, K or V bias where the first block has none: the blocks disagree on
  // qkv_bias, as no one GPTModel saves them (torch's strict load refuses it too); dropped with a
  // note, the pass would not be the file's model.
  if (!hf && !c.qkv_bias)
    for (const auto& [key, tensor] : names.all())  // by the names without a checkpoint's prefixes
      for (const std::string w : {".att.W_query.bias", ".att.W_key.bias", ".att.W_value.bias"})
        if (!names.used(key) && key.rfind("trf_blocks.", 0) == 0 && key.size() > w.size() &&
            key.compare(key.size() - w.size(), w.size(), w) == 0)
          throw InputError(path + ": tensor " + printableName(tensor->name) +
                           ": block 0 has no Q, K, V bias (qkv_bias False) but this block has one");
  if (!unused.empty()) {
    std::string list;
    for (std::size_t i = 0; i < unused.size() && i < 3; ++i) list += (i ? ", " : "") + unused[i];
    model->notes.push_back(countOf(static_cast<long>(unused.size()), "tensor") + " of the file not used: " + list +
                           (unused.size() > 3 ? ", …" : ""));
  }
  model->weights_path = path;
  model->path = path;
  return model;
}

std::string modelFolder(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return path;
  const std::string parent = fs::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

std::shared_ptr<const GptModel> loadGptModel(const std::string& path, const GptLoadOptions& options) {
  const std::string folder = modelFolder(path);
  std::string weights = path;
  if (folder == path) {
    // (a folder it may not enter reads as one without a model: said as what it is)
    if (::access(folder.c_str(), R_OK | X_OK) != 0 && errno != ENOENT)
      throw InputError(path + ": cannot open the folder: " +
                       (errno == EACCES ? std::string("permission denied") : std::strerror(errno)));
    weights.clear();
    for (const char* name : {"model.safetensors", "pytorch_model.bin", "model.pth", "model.pt", "model.npz"})
      if (isFile(fs::path(folder) / name)) {
        weights = (fs::path(folder) / name).string();
        break;
      }
    if (weights.empty())
      throw InputError(path +
                       ": no model file in this folder (looked for model.safetensors, pytorch_model.bin, model.pth, "
                       "model.pt, model.npz)");
  }
  const fs::path config_path = fs::path(folder) / "config.json";
  std::error_code config_ec;
  // A config.json that is there but no regular file (a FIFO, a folder) is refused by the reading,
  // not passed over: the heads would have been guessed.
  const bool config_there = fs::exists(fs::symlink_status(config_path, config_ec));
  const std::string config_text = config_there ? readFileWithin(config_path.string(), std::int64_t{1} << 20) : "";
  // An empty config.json is a damaged one, not a missing one (read as missing, the heads were
  // guessed and the error blamed their count).
  if (isFile(config_path) && config_text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InputError(config_path.string() + ": empty (expected a JSON object such as GPT-2's config.json)");
  const std::shared_ptr<const TensorFile> file = TensorFile::open(weights, options.limits);
  std::shared_ptr<const GptModel> loaded = gptModelFromTensors(*file, config_text, options);
  auto model = std::const_pointer_cast<GptModel>(loaded);
  model->path = path;
  model->weights_path = weights;
  if (!model->token_labels.empty()) {
    std::string why;
    model->tokenizer = tokenizerOfNames({model->token_labels, model->token_kind}, folder, weights, &why);
    if (!model->tokenizer)
      model->notes.push_back(model->no_text = why);
    else if (const std::string missing = model->tokenizer->missingMerges(); !missing.empty())
      model->notes.push_back(missing);
  } else if (Gpt2Tokenizer::inFolder(folder)) {
    model->tokenizer = Gpt2Tokenizer::fromFolder(folder);
    // Another model's tokenizer (its ids past the model's embedding): the model still opens, on ids.
    if (const std::string other = anotherModelsTokenizer(folder, *model->tokenizer, model->config.vocab_size);
        !other.empty()) {
      model->tokenizer.reset();
      model->no_text = "no text, token ids only: " + other;
      model->notes.push_back(model->no_text);
    } else if (const std::string missing = model->tokenizer->missingMerges(); !missing.empty()) {
      model->notes.push_back(missing);
    }
  } else {
    // A tokenizer file there that is no regular file (a folder, a FIFO, a dangling link) is named:
    // "no tokenizer beside the model" sent the user looking for files that are there.
    std::string odd;
    for (const char* name : {"vocab.json", "merges.txt", "encoder.json", "vocab.bpe"}) {
      std::error_code ec;
      const fs::path p = fs::path(folder) / name;
      const fs::file_status link = fs::symlink_status(p, ec);
      if (ec || !fs::exists(link) || fs::is_regular_file(fs::status(p, ec))) continue;
      const fs::file_status target = fs::status(p, ec);
      odd += std::string(odd.empty() ? "" : ", ") + name + " is " +
             (ec || !fs::exists(target)      ? "a link to nothing"
              : fs::is_directory(target)     ? "a folder"
              : fs::is_fifo(target)          ? "a pipe (FIFO)"
                                             : "not a regular file");
    }
    model->tokenizer_files_odd = odd;
    // What to do first: a note cut to one line ("no tokenizer beside the mod…") had lost it.
    model->notes.push_back(
        "no tokenizer: give token ids, not text (none beside the model: vocab.json + merges.txt, or encoder.json + "
        "vocab.bpe" +
        (odd.empty() ? std::string() : "; " + odd) + ")");
  }
  return model;
}

void checkLayerAndHead(int layer, int head, int layers, int heads) {
  if (head < -1 || head >= heads)
    throw InputError("head: no head " + std::to_string(head) + " (there are " + std::to_string(heads) +
                     ", numbered from 0; −1 = all)");
  if (layer < 0 || layer >= layers)
    throw InputError("layer: no layer " + std::to_string(layer) + " (the model has " + std::to_string(layers) +
                     ", numbered from 0)");
}

std::string modelName(const GptModel& model) {
  if (!model.name.empty()) return model.name;
  const std::filesystem::path p(model.path);
  return p.filename().empty() ? p.parent_path().filename().string() : p.filename().string();
}

std::string modelTitle(const GptModel& model) {
  const GptConfig& c = model.config;
  return modelName(model) + " (" + countOf(c.layers, "layer") + " × " + countOf(c.heads, "head") +
         ", d = " + std::to_string(c.d_model) + ")";
}

}  // namespace attnscope
