// fuzz_train_task: a TASK JSON (`attnscope-cli train` and `pytorch-train`, core/learn/train_task.h).
// Checked:
//   - a refused task is an InputError with one line naming a field ("task…"), nothing else thrown;
//   - an accepted one writes back (trainTaskJson) to JSON that parses to the same task, field by
//     field, and whose own JSON is the same text again;
//   - its PyTorch script holds the task only on its one TASK line, as an ASCII string literal: no
//     line break, no byte above 0x7e, and the script outside that line is the template's;
//   - when small (B·T ≤ 256, d ≤ 32, L ≤ 2, V ≤ 64), two training steps run: every loss finite and
//     every token of every batch inside the vocabulary (a batch's tokens are the model's rows).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "fuzz_common.h"
#include "learn/train_script.h"
#include "learn/training_run.h"

namespace {

using namespace attnscope;

// The script's lines but the TASK line.
std::string withoutTaskLine(const std::string& script) {
  const std::size_t at = script.find("\nTASK = json.loads(");
  FUZZ_CHECK(at != std::string::npos, "the script has no TASK line");
  const std::size_t end = script.find('\n', at + 1);
  FUZZ_CHECK(end != std::string::npos, "the TASK line does not end");
  const std::string line = script.substr(at + 1, end - at - 1);
  for (char c : line) FUZZ_CHECK(c >= 0x20 && c < 0x7f, "the TASK line holds a byte outside printable ASCII");
  return script.substr(0, at) + script.substr(end);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  TrainTask task;
  try {
    task = parseTrainTaskText(text);
  } catch (const InputError& e) {
    const std::string m = e.what();
    FUZZ_CHECK(m.rfind("task", 0) == 0, "a refusal that names no field: " + m);
    FUZZ_CHECK(m.find('\n') == std::string::npos, "a refusal of more than one line: " + m);
    return 0;
  } catch (const std::exception& e) {
    fuzz::unexpected("parseTrainTaskText", e);
  }
  const nlohmann::json written = trainTaskJson(task);
  const TrainTask again = parseTrainTask(written);
  FUZZ_CHECK(trainTaskJson(again).dump() == written.dump(), "the task does not read back as written");
  FUZZ_CHECK(again.text_ids == task.text_ids && again.vocab == task.vocab, "the text's ids differ when read back");

  static const std::string template_rest = withoutTaskLine(
      pytorchTrainScript(parseTrainTaskText("{\"task\": \"induction\"}")));
  FUZZ_CHECK(withoutTaskLine(pytorchTrainScript(task)) == template_rest, "the script differs outside its TASK line");

  if (task.batch * task.seq_len > 256 || task.d_model > 32 || task.layers > 2 || task.vocab > 64) return 0;
  task.steps = 2;
  try {
    TrainingRun run(task);
    TorchGenerator data(task.seed + 1u);
    for (int s = 0; s < 2; ++s) {
      const TrainBatch b = nextBatch(task, data);
      for (int id : b.inputs) FUZZ_CHECK(id >= 0 && id < task.vocab, "a batch token outside the vocabulary");
      for (int id : b.targets)
        FUZZ_CHECK(id == kIgnored || (id >= 0 && id < task.vocab), "a target outside the vocabulary");
      FUZZ_CHECK(std::isfinite(run.step()), "a loss that is not finite");
    }
  } catch (const ComputeError&) {  // a learning rate that diverges is refused, not a finding
  } catch (const std::exception& e) {
    fuzz::unexpected("TrainingRun", e);
  }
  return 0;
}
