// The training step's fast path against its serial reference (core/learn/train_model.h): the batch
// split into parts on threads of their own, each part's gradients summed in part order, must give
// the reference's loss and gradients to rounding — for every task and every variant of the model
// (attention-only, the whole block, qkv_bias, dropout with torch's masks) — and the same bits on
// every run. The reference itself is held against torch's autograd in
// tests/oracle/test_training_oracle.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/torch_generator.h"
#include "learn/train_model.h"
#include "learn/train_task.h"

using namespace attnscope;

namespace {

struct Step {
  double loss = 0;
  std::vector<float> gradients;
};

// Step 1 of `task_json` (its model as initialized, its first batch) with the batch in `parts`.
Step firstStep(const std::string& task_json, int parts) {
  const TrainTask task = parseTrainTaskText(task_json);
  TrainModel model(task);
  TorchGenerator init(task.seed), data(task.seed + 1u);
  model.initialize(init);
  const TrainBatch batch = nextBatch(task, data);
  Step s;
  s.loss = lossAndGradients(model, batch, &s.gradients, task.dropout, &init, parts);
  return s;
}

void expectClose(const Step& fast, const Step& reference, const std::string& what) {
  EXPECT_NEAR(fast.loss, reference.loss, 1e-6 * std::abs(reference.loss)) << what;
  ASSERT_EQ(fast.gradients.size(), reference.gradients.size()) << what;
  float largest = 0, off = 0;
  for (std::size_t i = 0; i < reference.gradients.size(); ++i) {
    largest = std::max(largest, std::abs(reference.gradients[i]));
    off = std::max(off, std::abs(fast.gradients[i] - reference.gradients[i]));
  }
  EXPECT_GT(largest, 0.0f) << what;
  EXPECT_LE(off, 1e-5f * largest) << what << ": gradients off the reference by " << off << " of " << largest;
}

}  // namespace

TEST(TrainingParts, EveryTaskAndVariantMatchesTheSerialReference) {
  const std::vector<std::string> tasks = {
      R"({"task": "induction"})",
      R"({"task": "previous_token", "layers": 1, "batch": 6})",
      R"({"task": "sort", "mlp": true, "batch": 5})",
      R"({"task": "reverse", "qkv_bias": true, "heads": 4, "batch": 7})",
      R"({"task": "induction", "mlp": true, "qkv_bias": true, "dropout": 0.2, "batch": 9})",
      R"({"task": "text", "text": "the cat sat on the mat and the dog sat on the log", "seq_len": 8, "batch": 4,
          "dropout": 0.1})",
  };
  for (const std::string& t : tasks) {
    const Step reference = firstStep(t, 1);
    for (int parts : {2, 3, 64}) expectClose(firstStep(t, parts), reference, t + ", " + std::to_string(parts) + " parts");
  }
}

TEST(TrainingParts, TheSamePartsGiveTheSameBits) {
  const std::string t = R"({"task": "induction", "mlp": true, "dropout": 0.1})";
  const Step a = firstStep(t, kTrainParts), b = firstStep(t, kTrainParts);
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_EQ(a.gradients, b.gradients);
}

TEST(TrainingParts, DropoutMasksAreTorchsWhateverTheParts) {
  // The masks come from the generator before any part runs: a step with dropout differs from one
  // without, and both parts' steps leave the generator where the reference leaves it.
  const std::string t = R"({"task": "induction", "dropout": 0.3, "batch": 4})";
  const TrainTask task = parseTrainTaskText(t);
  std::vector<std::uint64_t> next;
  for (int parts : {1, 2, 4}) {
    TrainModel model(task);
    TorchGenerator init(task.seed), data(task.seed + 1u);
    model.initialize(init);
    const TrainBatch batch = nextBatch(task, data);
    std::vector<float> g;
    lossAndGradients(model, batch, &g, task.dropout, &init, parts);
    next.push_back(init.random64());
  }
  EXPECT_EQ(next[0], next[1]);
  EXPECT_EQ(next[0], next[2]);
  EXPECT_GT(std::abs(firstStep(t, 2).loss - firstStep(R"({"task": "induction", "batch": 4})", 2).loss), 1e-3);
}
