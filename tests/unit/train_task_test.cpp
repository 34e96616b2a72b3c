// TASK JSON (core/learn/train_task.h): each task's defaults, one clear refusal per bad field, the
// written task reading back, and the batches' shapes as each task defines them (the numbers
// themselves are torch's: tests/oracle/test_training_oracle.py). The text task of GPT-2 tokens on a
// small tokenizer written here (GPT-2's own files and npm's encoder: the oracle test).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/errors.h"
#include "learn/train_model.h"
#include "learn/train_task.h"
#include "lm/gpt2_tokenizer.h"

using namespace attnscope;

namespace {

std::string refusal(const std::string& json) {
  try {
    parseTrainTaskText(json);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST(TrainTask, EachTaskHasItsDefaults) {
  const TrainTask t = parseTrainTaskText(R"({"task": "induction"})");
  EXPECT_EQ(t.kind, TaskKind::Induction);
  EXPECT_EQ(t.layers, 2);
  EXPECT_EQ(t.heads, 2);
  EXPECT_EQ(t.d_model, 64);
  EXPECT_EQ(t.seq_len, 32);
  EXPECT_EQ(t.vocab, 64);
  EXPECT_FALSE(t.mlp);
  EXPECT_EQ(t.optimizer, OptimizerKind::AdamW);
  EXPECT_DOUBLE_EQ(t.weight_decay, 0.01);
  const TrainTask s = parseTrainTaskText(R"({"task": "sort", "optimizer": "sgd"})");
  EXPECT_EQ(s.seq_len, 11);
  EXPECT_DOUBLE_EQ(s.weight_decay, 0);  // torch's SGD default, not AdamW's
  const TrainTask x = parseTrainTaskText(R"({"task": "text", "seq_len": 4, "text": "hello, world"})");
  EXPECT_EQ(x.vocab, 9);  // " ,dehlorw" sorted
  EXPECT_EQ(x.token_labels.front(), " ");
  EXPECT_EQ(x.text_ids.size(), 12u);
  EXPECT_EQ(x.tokens, TextTokens::Characters);
  EXPECT_EQ(trainTaskJson(x)["tokens"], "characters");
  EXPECT_FALSE(trainTaskJson(x).contains("tokenizer"));
}

TEST(TrainTask, RefusesEachBadFieldNamingIt) {
  const std::pair<const char*, const char*> cases[] = {
      {R"([1, 2])", "task: expected a JSON object"},
      {R"({})", "task.task: name the task"},
      {R"({"task": "chess"})", "task.task: unknown task 'chess'"},
      {R"({"task": "induction", "layers": 0})", "task.layers: 0 is outside 1 … 12"},
      {R"({"task": "induction", "layers": 2.5})", "task.layers: expected a whole number"},
      {R"({"task": "induction", "d_model": 10, "heads": 3})", "task.d_model: 10 does not split into 3 heads"},
      {R"({"task": "induction", "lr": 0})", "task.lr: expected a number above 0"},
      {R"({"task": "induction", "dropout": 1})", "task.dropout: expected a number within 0 … 0.9"},
      {R"({"task": "induction", "max_period": 17})", "task.max_period: 17: two periods must fit"},
      {R"({"task": "induction", "min_period": 9, "max_period": 8})", "task.min_period: above max_period"},
      {R"({"task": "sort", "min_period": 3})", "task.min_period: the sort task does not use it"},
      {R"({"task": "sort", "seq_len": 10})", "task.seq_len: 10: a list of n digits"},
      {R"({"task": "text"})", "task.text: the text task needs a \"text\""},
      {R"({"task": "text", "text": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"})",
       "task.text: needs at least two different"},
      {R"({"task": "text", "text": "ab"})", "task.text: 2 characters: the task needs more than"},
      {R"({"task": "text", "vocab": 3, "text": "abc"})", "task.vocab: the text task does not use it"},
      {R"({"task": "text", "tokens": "words", "text": "abcdef"})", "task.tokens: expected \"characters\" or \"gpt2\""},
      {R"({"task": "text", "tokens": 2, "text": "abcdef"})", "task.tokens: expected \"characters\" or \"gpt2\""},
      {R"({"task": "text", "tokens": "gpt2", "text": "abcdef"})", "task.tokenizer: GPT-2 tokens need the tokenizer"},
      {R"({"task": "text", "tokenizer": "/x", "text": "abcdef"})", "task.tokenizer: characters need no tokenizer"},
      {R"({"task": "text", "tokens": "gpt2", "tokenizer": 3, "text": "abcdef"})",
       "task.tokenizer: expected the path of GPT-2's tokenizer files"},
      {R"({"task": "text", "tokens": "gpt2", "tokenizer": "", "text": "abcdef"})",
       "task.tokenizer: expected the path of GPT-2's tokenizer files"},
      {R"({"task": "text", "tokens": "gpt2", "tokenizer": "a\u0000b", "text": "abcdef"})",
       "task.tokenizer: the path holds a NUL byte"},
      {R"({"task": "induction", "tokens": "gpt2"})", "task.tokens: the induction task does not use it"},
      {R"({"task": "sort", "tokenizer": "/x"})", "task.tokenizer: the sort task does not use it"},
      {R"({"task": "induction", "optimizer": "adam"})", "task.optimizer: expected \"adamw\" or \"sgd\""},
      {R"({"task": "induction", "momentum": 0.9})", "task.momentum: AdamW has no momentum"},
      {R"({"task": "induction", "seed": -1})", "task.seed: expected a whole number"},
      {R"({"task": "induction", "seed": 4294967296})", "task.seed: expected a whole number"},
      {R"({"task": "induction", "epochs": 3})", "task.epochs: not a task field"},
      {R"({"task": "induction", "layers": 12, "d_model": 512, "batch": 256, "seq_len": 256})",
       "task: one training step would hold"},
  };
  for (const auto& [json, want] : cases) {
    const std::string got = refusal(json);
    EXPECT_EQ(got.rfind(want, 0), 0u) << json << " → " << got;
    EXPECT_EQ(got.find('\n'), std::string::npos) << got;
  }
}

TEST(TrainTask, WrittenTaskReadsBack) {
  for (const char* json : {R"({"task": "induction", "qkv_bias": true, "dropout": 0.25, "seed": 4294967295})",
                           R"({"task": "previous_token", "optimizer": "sgd", "momentum": 0.5})",
                           R"({"task": "text", "seq_len": 3, "text": "ab\"\né€😀 '''"})"}) {
    const TrainTask t = parseTrainTaskText(json);
    const nlohmann::json written = trainTaskJson(t);
    EXPECT_EQ(trainTaskJson(parseTrainTask(written)), written) << json;
  }
}

// What each task's sequences are: the induction task's chunk repeats with its period to the end,
// the previous-token task's targets are its inputs one back, sort's and reverse's answers follow
// their digits and only they are scored.
TEST(TrainTask, BatchesAreWhatEachTaskTeaches) {
  {
    const TrainTask t = parseTrainTaskText(R"({"task": "induction", "batch": 50})");
    TorchGenerator g(1);
    const TrainBatch b = nextBatch(t, g);
    for (int e = 0; e < b.B; ++e) {
      // s = inputs then the last target; some period p in [6, 14] repeats from its start to the end
      std::vector<int> s(b.inputs.begin() + e * b.T, b.inputs.begin() + (e + 1) * b.T);
      s.push_back(b.targets[static_cast<std::size_t>((e + 1) * b.T - 1)]);
      bool found = false;
      for (int p = 6; p <= 14 && !found; ++p) {
        const int n = static_cast<int>(s.size());
        bool repeats = true;
        for (int i = n - 1; i >= n - p && repeats; --i) repeats = s[i] == s[i - p];
        found = repeats;
      }
      EXPECT_TRUE(found) << "sequence " << e;
    }
  }
  {
    const TrainTask t = parseTrainTaskText(R"({"task": "previous_token"})");
    TorchGenerator g(1);
    const TrainBatch b = nextBatch(t, g);
    for (int e = 0; e < b.B; ++e)
      for (int i = 0; i < b.T; ++i) EXPECT_EQ(b.targets[e * b.T + i], i == 0 ? kIgnored : b.inputs[e * b.T + i - 1]);
  }
  for (const char* kind : {"sort", "reverse"}) {
    const TrainTask t = parseTrainTaskText(std::string(R"({"task": ")") + kind + "\"}");
    TorchGenerator g(1);
    const TrainBatch b = nextBatch(t, g);
    const int k = (t.seq_len + 1) / 2;
    for (int e = 0; e < b.B; ++e) {
      std::vector<int> digits(b.inputs.begin() + e * b.T, b.inputs.begin() + e * b.T + k), answer;
      for (int i = k - 1; i < b.T; ++i) answer.push_back(b.targets[e * b.T + i]);
      for (int i = 0; i < k - 1; ++i) EXPECT_EQ(b.targets[e * b.T + i], kIgnored);
      if (std::string(kind) == "sort")
        std::sort(digits.begin(), digits.end());
      else
        std::reverse(digits.begin(), digits.end());
      EXPECT_EQ(answer, digits) << kind << " sequence " << e;
    }
  }
}

TEST(TrainModel, NamesItsParametersAsTheBooksStateDict) {
  const TrainModel with_mlp(parseTrainTaskText(R"({"task": "sort", "layers": 1, "qkv_bias": true})"));
  std::vector<std::string> names;
  for (const ParamTensor& t : with_mlp.tensors) names.push_back(t.name);
  const std::vector<std::string> want = {"tok_emb.weight",
                                         "pos_emb.weight",
                                         "trf_blocks.0.att.W_query.weight",
                                         "trf_blocks.0.att.W_query.bias",
                                         "trf_blocks.0.att.W_key.weight",
                                         "trf_blocks.0.att.W_key.bias",
                                         "trf_blocks.0.att.W_value.weight",
                                         "trf_blocks.0.att.W_value.bias",
                                         "trf_blocks.0.att.out_proj.weight",
                                         "trf_blocks.0.att.out_proj.bias",
                                         "trf_blocks.0.ff.layers.0.weight",
                                         "trf_blocks.0.ff.layers.0.bias",
                                         "trf_blocks.0.ff.layers.2.weight",
                                         "trf_blocks.0.ff.layers.2.bias",
                                         "trf_blocks.0.norm1.scale",
                                         "trf_blocks.0.norm1.shift",
                                         "trf_blocks.0.norm2.scale",
                                         "trf_blocks.0.norm2.shift",
                                         "final_norm.scale",
                                         "final_norm.shift",
                                         "out_head.weight"};
  EXPECT_EQ(names, want);
  EXPECT_EQ(with_mlp.tensors[10].shape, (std::vector<int>{4 * 48, 48}));
}

// [SECTION] GPT-2 tokens -------------------------------------------------------------------------

namespace {

namespace fs = std::filesystem;

// bytes_to_unicode's character of byte b, as UTF-8 (encoder.py's table, written out here).
std::string byteChar(int b) {
  const auto printable = [](int k) { return (k >= '!' && k <= '~') || (k >= 0xA1 && k <= 0xAC) || k >= 0xAE; };
  int cp = b;
  if (!printable(b)) {
    cp = 256;
    for (int k = 0; k < b; ++k) cp += printable(k) ? 0 : 1;
  }
  if (cp < 0x80) return std::string(1, static_cast<char>(cp));
  return {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
}

// A tokenizer's two files in a folder of the test's own. The byte tokens' ids are 2000 + byte and the
// merges' results count from 0, so GPT-2's id order is not the order of the spellings; merges are
// given spelled ("Ġ w").
class TokenizerFolder {
 public:
  TokenizerFolder(const std::vector<std::pair<std::string, std::string>>& merges, bool hf_names = true)
      : dir_(fs::temp_directory_path() /
             ("attnscope_train_task_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; ++b) vocab[byteChar(b)] = 2000 + b;
    std::string lines = "#version: 0.2\n";
    int next = 0;
    for (const auto& [a, b] : merges) {
      if (!vocab.contains(a + b)) vocab[a + b] = next++;
      lines += a + " " + b + "\n";
    }
    vocab["<|endoftext|>"] = 1999;
    std::ofstream(dir_ / (hf_names ? "vocab.json" : "encoder.json")) << vocab.dump();
    std::ofstream(dir_ / (hf_names ? "merges.txt" : "vocab.bpe")) << lines;
  }
  ~TokenizerFolder() { fs::remove_all(dir_); }
  TokenizerFolder(const TokenizerFolder&) = delete;
  TokenizerFolder& operator=(const TokenizerFolder&) = delete;
  std::string path() const { return dir_.string(); }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  fs::path dir_;
};

nlohmann::json gpt2Task(const std::string& tokenizer, const std::string& text, int seq_len = 4) {
  return {{"task", "text"}, {"tokens", "gpt2"}, {"tokenizer", tokenizer}, {"text", text}, {"seq_len", seq_len}};
}

std::string refusalOf(const nlohmann::json& task, const TaskFiles& files = {}) {
  try {
    parseTrainTask(task, files);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

// The vocabulary is the text's distinct GPT-2 ids, sorted by id (not by spelling), labelled with
// GPT-2's token strings; the text is their ids, <|endoftext|> one token. Both file layouts, the
// folder or a file in it.
TEST(TrainTaskGpt2, TheTextsDistinctTokensSortedByGpt2Id) {
  const TokenizerFolder tok({{"h", "i"}, {"Ġ", "w"}, {"Ġw", "o"}, {"w", "o"}});
  // "hi" is 0, " wo" → "Ġwo" 2, "wo" 3, <|endoftext|> 1999; " hi" → "Ġ" (2032, no merge "Ġ h") + "hi";
  // "!" its byte's token (2033).
  const TrainTask t = parseTrainTask(gpt2Task(tok.path(), "hi wo hi wo!<|endoftext|>wo hi"));
  EXPECT_EQ(t.tokens, TextTokens::Gpt2);
  EXPECT_EQ(t.token_labels, (std::vector<std::string>{"hi", "Ġwo", "wo", "<|endoftext|>", "Ġ", "!"}));
  EXPECT_EQ(t.text_ids, (std::vector<int>{0, 1, 4, 0, 1, 5, 3, 2, 4, 0}));
  EXPECT_EQ(t.vocab, 6);
  EXPECT_EQ(t.tokenizer, tok.path());
  // The same files named by a file in their folder, and in OpenAI's names.
  const TrainTask by_file = parseTrainTask(gpt2Task(tok.path() + "/merges.txt", "hi wo hi wo!<|endoftext|>wo hi"));
  EXPECT_EQ(by_file.text_ids, t.text_ids);
  const TokenizerFolder openai({{"h", "i"}, {"Ġ", "w"}, {"Ġw", "o"}, {"w", "o"}}, false);
  EXPECT_EQ(parseTrainTask(gpt2Task(openai.path(), "hi wo hi wo!<|endoftext|>wo hi")).token_labels, t.token_labels);
  // Merges by rank: with "w o" ranked before "Ġ w", " wo" is Ġ + wo.
  const TokenizerFolder other({{"h", "i"}, {"w", "o"}, {"Ġ", "w"}});
  const TrainTask o = parseTrainTask(gpt2Task(other.path(), "hi wo hi wo hi"));
  EXPECT_EQ(o.token_labels, (std::vector<std::string>{"hi", "wo", "Ġ"}));
  EXPECT_EQ(o.text_ids, (std::vector<int>{0, 2, 1, 2, 0, 2, 1, 2, 0}));
}

// The TASK written names the tokens and the tokenizer by its absolute path, and reads back to the
// same task; a relative path is the TaskFiles folder's (the CLI's: the TASK file's folder).
TEST(TrainTaskGpt2, PathsAreAbsoluteAndTheTaskReadsBack) {
  const TokenizerFolder tok({{"h", "i"}, {"Ġ", "w"}, {"Ġw", "o"}});
  const fs::path dir(tok.path());
  TaskFiles files;
  files.folder = dir.parent_path().string();
  const TrainTask t = parseTrainTask(gpt2Task(dir.filename().string(), "hi wo hi wo hi"), files);
  EXPECT_EQ(fs::path(t.tokenizer), dir.parent_path() / dir.filename());
  const nlohmann::json written = trainTaskJson(t);
  EXPECT_EQ(written["tokens"], "gpt2");
  EXPECT_EQ(written["tokenizer"], t.tokenizer);
  EXPECT_FALSE(written.contains("vocab"));
  const TrainTask again = parseTrainTask(written);
  EXPECT_EQ(trainTaskJson(again), written);
  EXPECT_EQ(again.text_ids, t.text_ids);
  EXPECT_EQ(again.token_labels, t.token_labels);
  // Without a folder a relative path is the working folder's.
  EXPECT_EQ(refusalOf(gpt2Task("no_such_tokenizer_here", "hi wo")),
            "task.tokenizer: " + (fs::current_path() / "no_such_tokenizer_here").string() + ": no such folder or file");
  // A loader of the caller's gets the absolute path and is used instead of the files.
  std::string asked;
  TaskFiles own;
  own.folder = "/somewhere";
  own.load_tokenizer = [&](const std::string& path) {
    asked = path;
    return Gpt2Tokenizer::fromFolder(tok.path());
  };
  EXPECT_EQ(parseTrainTask(gpt2Task("tok", "hi wo hi wo hi"), own).text_ids, t.text_ids);
  EXPECT_EQ(asked, "/somewhere/tok");
}

TEST(TrainTaskGpt2, RefusesEachBadTextOrTokenizerInOneLineNamingTheField) {
  const TokenizerFolder tok({{"h", "i"}, {"Ġ", "w"}, {"Ġw", "o"}});
  const TokenizerFolder empty({});
  fs::remove(fs::path(empty.path()) / "vocab.json");
  fs::remove(fs::path(empty.path()) / "merges.txt");
  const TokenizerFolder bad({});
  std::ofstream(fs::path(bad.path()) / "merges.txt") << "#version: 0.2\nq zz\n";
  // 1100 two-letter words, each one token after "Ġ": 1101 different tokens.
  std::vector<std::pair<std::string, std::string>> pairs;
  std::string many;
  const std::string letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  for (char a : letters)
    for (char b : letters)
      if (pairs.size() < 1100) {
        pairs.push_back({std::string(1, a), std::string(1, b)});
        many += std::string(" ") + a + b;
      }
  const TokenizerFolder big(pairs);
  const std::pair<nlohmann::json, std::string> cases[] = {
      {gpt2Task(tok.path() + "/nothing", "hi wo hi wo hi"),
       "task.tokenizer: " + tok.path() + "/nothing: no such folder or file"},
      {gpt2Task(empty.path(), "hi wo hi wo hi"), "task.tokenizer: " + empty.path() + ": holds no GPT-2 tokenizer"},
      {gpt2Task(bad.path(), "hi wo hi wo hi"), "task.tokenizer: " + bad.path() + "/merges.txt:2: "},
      {gpt2Task(tok.path(), "hi wo hi"), "task.text: 4 GPT-2 tokens: the task needs more than seq_len + 1 = 5"},
      {gpt2Task(tok.path(), "hihihihihihi"), "task.text: needs at least two different GPT-2 tokens"},
      {gpt2Task(big.path(), many), "task.text: 1101 different GPT-2 tokens, over 1024"},
      {gpt2Task(tok.path() + "/\nx", "hi wo hi wo hi"), "task.tokenizer: " + tok.path() + "/?x: no such folder"},
      {gpt2Task(tok.path(), "hi wo hi wo hi\xff"), "task.text: not UTF-8 at byte 14"},
  };
  for (const auto& [task, want] : cases) {
    const std::string got = refusalOf(task);
    EXPECT_EQ(got.rfind(want, 0), 0u) << task.dump() << " → " << got;
    EXPECT_EQ(got.find('\n'), std::string::npos) << got;
  }
  // 1024 different tokens are accepted.
  pairs.resize(1023);
  many.resize(3 * 1023);
  const TokenizerFolder most(pairs);
  EXPECT_EQ(parseTrainTask(gpt2Task(most.path(), many)).vocab, 1024);
}
