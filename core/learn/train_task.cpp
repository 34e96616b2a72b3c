// TASK JSON in and out, and the batches each task draws (docs/DESIGN.md §2.7). Every draw is a
// torch.randint(low, high, (n,), generator=g) of the script: for a range below 2³² torch takes one
// 32-bit draw per element, in order, as random() % range + low (ATen's uniform_int_from_to).
#include "learn/train_task.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "engine/errors.h"
#include "formats/file_reading.h"
#include "engine/model_config.h"
#include "learn/train_model.h"
#include "formats/json_reading.h"
#include "formats/utf8.h"
#include "formats/zip_archive.h"
#include "lm/gpt2_tokenizer.h"

namespace attnscope {

const std::vector<TaskInfo>& taskTable() {
  static const std::vector<TaskInfo> table = {
      {TaskKind::Induction, "induction",
       "predict what came after the current token last time: a repeated chunk after a random prefix"},
      {TaskKind::PreviousToken, "previous_token", "output the token before the current one"},
      {TaskKind::Sort, "sort", "after a list of digits, write them sorted (minGPT's demo)"},
      {TaskKind::Reverse, "reverse", "after a list of digits, write them reversed"},
      {TaskKind::Text, "text", "predict the next token of a text: its characters, or GPT-2's tokens"},
  };
  return table;
}

const TaskInfo& taskInfo(TaskKind kind) {
  for (const TaskInfo& t : taskTable())
    if (t.kind == kind) return t;
  throw std::logic_error("taskInfo: a kind without a row");
}

namespace {

// [SECTION] The fields ---------------------------------------------------------------------------

}  // namespace

// Each task's defaults: what trains in a minute or two on two cores and shows its heads.
TrainTask taskDefaults(TaskKind kind) {
  TrainTask t;
  t.kind = kind;
  switch (kind) {
    case TaskKind::Induction:  // the research model: attention only, 2 layers × 2 heads
      t.mlp = false, t.steps = 1500;
      break;
    case TaskKind::PreviousToken:
      t.layers = 1, t.d_model = 32, t.seq_len = 16, t.vocab = 32, t.mlp = false, t.steps = 400;
      break;
    case TaskKind::Sort:
    case TaskKind::Reverse:  // six digits of three values, then their answer: T = 11
      t.d_model = 48, t.seq_len = 11, t.vocab = 3, t.batch = 64, t.lr = 5e-4, t.steps = 2000;
      break;
    case TaskKind::Text: t.steps = 1000; break;
  }
  return t;
}

namespace {

struct IntField {
  const char* name;
  int TrainTask::*member;
  long long lo, hi;
};
const IntField kIntFields[] = {
    {"layers", &TrainTask::layers, 1, 12},          {"heads", &TrainTask::heads, 1, 16},
    {"d_model", &TrainTask::d_model, 1, 512},       {"seq_len", &TrainTask::seq_len, 2, 256},
    {"vocab", &TrainTask::vocab, 2, 1024},          {"batch", &TrainTask::batch, 1, 256},
    {"steps", &TrainTask::steps, 0, 1000000},       {"score_every", &TrainTask::score_every, 1, 1000000},
    {"min_period", &TrainTask::min_period, 1, 128}, {"max_period", &TrainTask::max_period, 1, 128},
};
struct RealField {
  const char* name;
  double TrainTask::*member;
  double lo, hi;
  bool lo_open;  // lo itself refused
};
const RealField kRealFields[] = {
    {"lr", &TrainTask::lr, 0, 10, true},
    {"weight_decay", &TrainTask::weight_decay, 0, 1, false},
    {"momentum", &TrainTask::momentum, 0, 0.999, false},
    {"dropout", &TrainTask::dropout, 0, 0.9, false},
};
struct BoolField {
  const char* name;
  bool TrainTask::*member;
};
const BoolField kBoolFields[] = {{"mlp", &TrainTask::mlp}, {"qkv_bias", &TrainTask::qkv_bias}};

// Fields only some tasks read: anything else given to a task is refused, not silently ignored.
bool taskUses(TaskKind kind, const std::string& field) {
  if (field == "min_period" || field == "max_period") return kind == TaskKind::Induction;
  if (field == "text" || field == "tokens" || field == "tokenizer") return kind == TaskKind::Text;
  if (field == "vocab") return kind != TaskKind::Text;  // the text's tokens are its vocabulary
  return true;
}

const char* kOptimizers[] = {"adamw", "sgd"};
const char* kTextTokens[] = {"characters", "gpt2"};

}  // namespace

TokenNames savedTokens(const TrainTask& task) {
  if (task.kind != TaskKind::Text) return {};
  return {task.token_labels, kTextTokens[task.tokens == TextTokens::Characters ? 0 : 1]};
}

namespace {

std::string taskNames() {  // "induction, previous_token, …" for refusals
  std::string names;
  for (const TaskInfo& t : taskTable()) names += (names.empty() ? "" : ", ") + std::string(t.name);
  return names;
}

// A field's name comes from the user's JSON: printable, so that the refusal stays one line.
void fieldError(const std::string& field, const std::string& what) {
  throw InputError("task." + printableName(field) + ": " + what);
}

std::string fieldNames() {
  std::string out = "task, optimizer, seed, text, tokens, tokenizer";
  for (const IntField& f : kIntFields) out += std::string(", ") + f.name;
  for (const RealField& f : kRealFields) out += std::string(", ") + f.name;
  for (const BoolField& f : kBoolFields) out += std::string(", ") + f.name;
  return out;
}

// A message from the files' reader as part of a refusal: one line whatever the path holds.
std::string oneLine(std::string message) {
  for (char& c : message)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return message;
}

// GPT-2's tokenizer from the folder `path` names, or the folder of the file it names. The app reads
// its form's task every frame, so the files are read again only when one of them changes.
std::shared_ptr<const Gpt2Tokenizer> readTokenizer(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(path + ": no such folder or file");
  const std::string folder = fs::is_directory(path, ec) ? path : fs::path(path).parent_path().string();
  std::string key = folder;
  for (const char* name : {"vocab.json", "merges.txt", "encoder.json", "vocab.bpe"}) {
    std::error_code size_ec, time_ec;
    const fs::path file = fs::path(folder) / name;
    const std::uintmax_t size = fs::file_size(file, size_ec);
    const auto time = fs::last_write_time(file, time_ec);
    key += "\n" + (size_ec ? std::string("-") : std::to_string(size)) + " " +
           (time_ec ? std::string("-") : std::to_string(time.time_since_epoch().count()));
  }
  static std::mutex mutex;
  static std::string cached_key;
  static std::shared_ptr<const Gpt2Tokenizer> cached;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (key == cached_key) return cached;
  }
  std::shared_ptr<const Gpt2Tokenizer> tokenizer = Gpt2Tokenizer::fromFolder(folder);
  const std::lock_guard<std::mutex> lock(mutex);
  cached_key = key, cached = tokenizer;
  return tokenizer;
}

// The text task's tokens, one path for both kinds: the text cut into tokens, each a key that orders
// the vocabulary (a code point, a GPT-2 id) and its label (the character, GPT-2's token string); the
// distinct keys, sorted, are the vocabulary and the text is their ids. UTF-8 orders as its code
// points do, so the characters' order is Python's sorted(set(text)).
void readText(TrainTask& t, const TaskFiles& files) {
  std::vector<std::uint32_t> keys;
  std::map<std::uint32_t, std::string> labels;
  for (std::size_t i = 0; i < t.text.size();) {
    const std::size_t at = i;
    const std::uint32_t cp = nextCodePoint(t.text, &i);
    if (cp == kNotUtf8) fieldError("text", "not UTF-8 at byte " + std::to_string(at));
    if (t.tokens == TextTokens::Characters) {
      keys.push_back(cp);
      labels.emplace(cp, t.text.substr(at, i - at));
    }
  }
  if (t.tokens == TextTokens::Gpt2) {
    std::shared_ptr<const Gpt2Tokenizer> tokenizer;
    try {
      tokenizer = files.load_tokenizer ? files.load_tokenizer(t.tokenizer) : readTokenizer(t.tokenizer);
    } catch (const InputError& e) {
      fieldError("tokenizer", oneLine(e.what()));
    }
    for (int id : tokenizer->encode(t.text)) {
      const auto key = static_cast<std::uint32_t>(id);  // 0 … 2²⁴ − 1 (the vocabulary's check, §2.6)
      keys.push_back(key);
      if (labels.find(key) == labels.end()) labels.emplace(key, tokenizer->tokenString(id));
    }
  }
  const std::string what = t.tokens == TextTokens::Characters ? "characters" : "GPT-2 tokens";
  if (labels.size() < 2) fieldError("text", "needs at least two different " + what);
  if (labels.size() > 1024) fieldError("text", std::to_string(labels.size()) + " different " + what + ", over 1024");
  std::map<std::uint32_t, int> id;
  t.token_labels.clear();
  for (auto& [key, label] : labels) {
    id.emplace(key, static_cast<int>(t.token_labels.size()));
    t.token_labels.push_back(std::move(label));
  }
  t.text_ids.clear();
  for (std::uint32_t key : keys) t.text_ids.push_back(id[key]);
  t.vocab = static_cast<int>(t.token_labels.size());
  if (static_cast<int>(t.text_ids.size()) < t.seq_len + 2)
    fieldError("text", std::to_string(t.text_ids.size()) + " " + what +
                           ": the task needs more than seq_len + 1 = " + std::to_string(t.seq_len + 1));
}

// What one step holds (forward caches and gradients, float32), against the memory budget.
void checkCost(const TrainTask& t) {
  const double B = t.batch, T = t.seq_len, d = t.d_model, H = t.heads, V = t.vocab, L = t.layers;
  const double per_layer = B * T * (d * (t.mlp ? 24 : 12)) + B * H * T * T * 3;
  const double params = V * d * 2 + T * d + L * (d * d * (t.mlp ? 12 : 4) + d * 8);
  // The parameters, their gradients (one copy per part of the batch: learn/train_model.h), the
  // optimizer's two moments and a snapshot.
  const double bytes = 4 * (L * per_layer + B * T * (V * 2 + d * 4) + params * (4 + kTrainParts));
  const double budget = double(std::int64_t{1} << 30);
  if (bytes > budget)
    throw InputError("task: one training step would hold " + formatBytes(bytes) + ", over the memory budget of " +
                     formatBytes(budget) + " (fewer layers, a smaller batch, d_model or seq_len)");
}

}  // namespace

// [SECTION] Reading and writing ----------------------------------------------------------------------

TrainTask parseTrainTask(const nlohmann::json& j, const TaskFiles& files) {
  if (!j.is_object()) throw InputError("task: expected a JSON object like {\"task\": \"induction\"}");
  if (!j.contains("task") || !j["task"].is_string()) {
    throw InputError("task.task: name the task, one of: " + taskNames());
  }
  const std::string name = j["task"].get<std::string>();
  const TaskInfo* info = nullptr;
  for (const TaskInfo& t : taskTable())
    if (name == t.name) info = &t;
  if (!info) {
    fieldError("task", "unknown task '" + printableName(name) + "' (one of: " + taskNames() + ")");
  }
  TrainTask t = taskDefaults(info->kind);
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& v = it.value();
    if (key == "task") continue;
    bool known = false;
    if (!taskUses(t.kind, key)) fieldError(key, std::string("the ") + info->name + " task does not use it");
    for (const IntField& f : kIntFields) {
      if (key != f.name) continue;
      known = true;
      if (!v.is_number_integer() && !v.is_number_unsigned()) fieldError(key, "expected a whole number");
      const long long n = v.get<long long>();
      if (n < f.lo || n > f.hi)
        fieldError(key, std::to_string(n) + " is outside " + std::to_string(f.lo) + " … " + std::to_string(f.hi));
      t.*f.member = static_cast<int>(n);
    }
    for (const RealField& f : kRealFields) {
      if (key != f.name) continue;
      known = true;
      if (!v.is_number()) fieldError(key, "expected a number");
      const double x = v.get<double>();
      if (!std::isfinite(x) || x < f.lo || (f.lo_open && x == f.lo) || x > f.hi) {
        char range[96];
        std::snprintf(range, sizeof range, "%s %g … %g", f.lo_open ? "above" : "within", f.lo, f.hi);
        fieldError(key, "expected a number " + std::string(range));
      }
      t.*f.member = x;
    }
    for (const BoolField& f : kBoolFields) {
      if (key != f.name) continue;
      known = true;
      if (!v.is_boolean()) fieldError(key, "expected true or false");
      t.*f.member = v.get<bool>();
    }
    if (key == "seed") {
      known = true;
      if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<long long>() >= 0))
        fieldError(key, "expected a whole number 0 … 4294967295");
      const unsigned long long s = v.get<unsigned long long>();
      if (s > 0xffffffffull) fieldError(key, "expected a whole number 0 … 4294967295");
      t.seed = static_cast<std::uint32_t>(s);
    } else if (key == "optimizer") {
      known = true;
      const std::string o = v.is_string() ? v.get<std::string>() : "";
      if (o == kOptimizers[0]) {
        t.optimizer = OptimizerKind::AdamW;
      } else if (o == kOptimizers[1]) {
        t.optimizer = OptimizerKind::Sgd;
        if (!j.contains("weight_decay")) t.weight_decay = 0;  // torch's SGD default
      } else {
        fieldError(key, "expected \"adamw\" or \"sgd\"");
      }
    } else if (key == "text") {
      known = true;
      if (!v.is_string()) fieldError(key, "expected the text as a string");
      t.text = v.get<std::string>();
      if (t.text.size() > (std::size_t{4} << 20)) fieldError(key, "over 4 MiB");
    } else if (key == "tokens") {
      known = true;
      const std::string k = v.is_string() ? v.get<std::string>() : "";
      if (k == kTextTokens[0]) {
        t.tokens = TextTokens::Characters;
      } else if (k == kTextTokens[1]) {
        t.tokens = TextTokens::Gpt2;
      } else {
        fieldError(key, "expected \"characters\" or \"gpt2\"");
      }
    } else if (key == "tokenizer") {
      known = true;
      if (!v.is_string() || v.get<std::string>().empty())
        fieldError(key, "expected the path of GPT-2's tokenizer files (their folder, or a file in it)");
      const std::string path = v.get<std::string>();
      if (path.size() > 4096) fieldError(key, "a path of over 4096 bytes");
      if (path.find('\0') != std::string::npos) fieldError(key, "the path holds a NUL byte");
      // Absolute, so the PyTorch script reads the same files from wherever it runs (§2.7).
      namespace fs = std::filesystem;
      std::error_code ec;
      const fs::path absolute = fs::path(path).is_absolute() ? fs::path(path)
                                                             : fs::absolute(fs::path(files.folder) / path, ec);
      if (ec) fieldError(key, "the working folder cannot be read to find " + oneLine(path));
      t.tokenizer = absolute.string();
    }
    if (!known) fieldError(key, "not a task field (" + fieldNames() + ")");
  }
  if (t.d_model % t.heads != 0)
    fieldError("d_model", std::to_string(t.d_model) + " does not split into " + std::to_string(t.heads) + " heads");
  if (t.optimizer == OptimizerKind::AdamW && j.contains("momentum"))
    fieldError("momentum", "AdamW has no momentum (its betas are torch's defaults, 0.9 and 0.999)");
  switch (t.kind) {
    case TaskKind::Induction:
      if (t.min_period > t.max_period) fieldError("min_period", "above max_period");
      if (2 * t.max_period > t.seq_len + 1)
        fieldError("max_period", std::to_string(t.max_period) + ": two periods must fit in seq_len + 1 = " +
                                     std::to_string(t.seq_len + 1) + " tokens");
      break;
    case TaskKind::Sort:
    case TaskKind::Reverse:
      if (t.seq_len % 2 == 0 || t.seq_len < 3)
        fieldError("seq_len", std::to_string(t.seq_len) + ": a list of n digits and its answer take 2n − 1 (odd, ≥ 3)");
      break;
    case TaskKind::Text:
      if (t.tokens == TextTokens::Characters && j.contains("tokenizer"))
        fieldError("tokenizer", "characters need no tokenizer (\"tokens\": \"gpt2\" reads GPT-2's)");
      if (t.tokens == TextTokens::Gpt2 && t.tokenizer.empty())
        fieldError(
            "tokenizer",
            "GPT-2 tokens need the tokenizer: a folder with vocab.json + merges.txt or encoder.json + vocab.bpe");
      if (t.text.empty()) fieldError("text", "the text task needs a \"text\"");
      readText(t, files);
      break;
    case TaskKind::PreviousToken: break;
  }
  checkCost(t);
  return t;
}

TrainTask parseTrainTaskText(const std::string& json_text, const TaskFiles& files) {
  return parseTrainTask(readJson(json_text, "task", std::int64_t{64} << 20), files);
}

nlohmann::json defaultTaskJson() { return {{"task", "induction"}}; }

void checkRunStep(const TrainTask& task, int step, bool newest_allowed) {
  const int lowest = newest_allowed ? -1 : 0;
  if (step < lowest || step > task.steps)
    throw InputError("step: " + std::to_string(step) + " is not a step of the run (" + std::to_string(lowest) + " … " +
                     std::to_string(task.steps) + (newest_allowed ? "; −1: the newest)" : ")"));
}

TrainTask readTrainTaskFile(const std::string& path, int steps) {
  const bool stdin_task = path == "-";
  const std::string text = readFileWithin(stdin_task ? "/dev/stdin" : path, std::int64_t{8} << 20,
                                          stdin_task ? FileKind::AnyReadable : FileKind::Regular);
  nlohmann::json j = readJson(text, path, std::int64_t{64} << 20);
  if (steps >= 0 && j.is_object()) j["steps"] = steps;
  TaskFiles files;
  if (!stdin_task) files.folder = std::filesystem::path(path).parent_path().string();
  return parseTrainTask(j, files);
}

nlohmann::json trainTaskJson(const TrainTask& t) {
  nlohmann::json j;
  j["task"] = taskInfo(t.kind).name;
  for (const IntField& f : kIntFields)
    if (taskUses(t.kind, f.name)) j[f.name] = t.*f.member;
  for (const RealField& f : kRealFields)
    if (f.member != &TrainTask::momentum || t.optimizer == OptimizerKind::Sgd) j[f.name] = t.*f.member;
  for (const BoolField& f : kBoolFields) j[f.name] = t.*f.member;
  j["seed"] = t.seed;
  j["optimizer"] = kOptimizers[t.optimizer == OptimizerKind::AdamW ? 0 : 1];
  if (t.kind == TaskKind::Text) {
    j["text"] = t.text;
    j["tokens"] = kTextTokens[t.tokens == TextTokens::Characters ? 0 : 1];
    if (t.tokens == TextTokens::Gpt2) j["tokenizer"] = t.tokenizer;
  }
  return j;
}

// [SECTION] Batches ----------------------------------------------------------------------------------

namespace {

// torch.randint(low, high, (1,), generator=g).item()
int randint(TorchGenerator& g, int low, int high) {
  return low + static_cast<int>(g.random() % static_cast<std::uint32_t>(high - low));
}

// One sequence of n = T + 1 tokens; inputs are its first T, targets its last T.
std::vector<int> sequenceOf(const TrainTask& t, TorchGenerator& g, std::vector<bool>* scored) {
  const int n = t.seq_len + 1;
  std::vector<int> s(static_cast<std::size_t>(n));
  scored->assign(static_cast<std::size_t>(n), true);  // per target position 1 … n − 1
  switch (t.kind) {
    case TaskKind::Induction: {
      const int period = randint(g, t.min_period, t.max_period + 1);
      const int prefix = randint(g, 0, n - 2 * period + 1);
      for (int& x : s) x = randint(g, 0, t.vocab);
      for (int i = prefix + period; i < n; ++i) s[i] = s[i - period];
      break;
    }
    case TaskKind::PreviousToken:  // the targets are the inputs shifted: built in nextBatch
      for (int i = 0; i < t.seq_len; ++i) s[i] = randint(g, 0, t.vocab);
      break;
    case TaskKind::Sort:
    case TaskKind::Reverse: {
      const int k = (t.seq_len + 1) / 2;
      for (int i = 0; i < k; ++i) s[i] = randint(g, 0, t.vocab);
      std::vector<int> answer(s.begin(), s.begin() + k);
      if (t.kind == TaskKind::Sort)
        std::sort(answer.begin(), answer.end());
      else
        std::reverse(answer.begin(), answer.end());
      std::copy(answer.begin(), answer.end(), s.begin() + k);
      for (int i = 1; i < k; ++i) (*scored)[i] = false;  // the digits themselves are not predictable
      break;
    }
    case TaskKind::Text: {
      const int start = randint(g, 0, static_cast<int>(t.text_ids.size()) - t.seq_len);
      std::copy_n(t.text_ids.begin() + start, n, s.begin());
      break;
    }
  }
  return s;
}

}  // namespace

TrainBatch nextBatch(const TrainTask& t, TorchGenerator& g) {
  TrainBatch b;
  b.B = t.batch, b.T = t.seq_len;
  b.inputs.resize(static_cast<std::size_t>(b.B * b.T));
  b.targets.resize(b.inputs.size());
  std::vector<bool> scored;
  for (int e = 0; e < b.B; ++e) {
    const std::vector<int> s = sequenceOf(t, g, &scored);
    for (int i = 0; i < b.T; ++i) {
      const std::size_t at = static_cast<std::size_t>(e * b.T + i);
      b.inputs[at] = s[i];
      if (t.kind == TaskKind::PreviousToken)
        b.targets[at] = i == 0 ? kIgnored : s[i - 1];
      else
        b.targets[at] = scored[i + 1] ? s[i + 1] : kIgnored;
    }
  }
  return b;
}

std::vector<int> probeSequence(const TrainTask& t) {
  std::vector<int> p(static_cast<std::size_t>(t.seq_len));
  if (t.kind == TaskKind::Text) {
    std::copy_n(t.text_ids.begin(), t.seq_len, p.begin());
    return p;
  }
  TorchGenerator g(t.seed + 2u);
  const int half = (t.seq_len + 1) / 2;
  std::vector<int> first(static_cast<std::size_t>(half));
  for (int& x : first) x = randint(g, 0, t.vocab);
  for (int i = 0; i < t.seq_len; ++i) p[i] = first[i % half];
  return p;
}

}  // namespace attnscope
