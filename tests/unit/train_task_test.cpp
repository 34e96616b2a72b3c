// TASK JSON (core/learn/train_task.h): each task's defaults, one clear refusal per bad field, the
// written task reading back, and the batches' shapes as each task defines them (the numbers
// themselves are torch's: tests/oracle/test_training_oracle.py).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "engine/errors.h"
#include "learn/train_model.h"
#include "learn/train_task.h"

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
  EXPECT_EQ(x.characters.front(), " ");
  EXPECT_EQ(x.text_ids.size(), 12u);
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
