// fuzz_train_task: a TASK JSON (`attnscope-cli train` and `pytorch-train`, core/learn/train_task.h).
// Checked:
//   - a refused task is an InputError with one line naming a field ("task…"), nothing else thrown;
//   - an accepted one writes back (trainTaskJson) to JSON that parses to the same task, field by
//     field, and whose own JSON is the same text again;
//   - its PyTorch script holds the task only on its one TASK line, as an ASCII string literal: no
//     line break, no byte above 0x7e, and the script outside that line is the template's;
//   - when small (B·T ≤ 256, d ≤ 32, L ≤ 2, V ≤ 64), two training steps run: every loss finite and
//     every token of every batch inside the vocabulary (a batch's tokens are the model's rows);
//   - a text of GPT-2 tokens: its ids are the tokenizer's encoding of the text, the vocabulary its
//     distinct ids sorted, each labelled with its token string.
// Whatever "tokenizer" a task names, nothing is read from disk: the target's tokenizer (the 256 byte
// tokens, a few merges, <|endoftext|>) is in memory and stands for every path (TaskFiles).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "learn/train_script.h"
#include "learn/training_run.h"
#include "lm/gpt2_tokenizer.h"

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

// bytes_to_unicode's character of byte b, as UTF-8.
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

// The tokenizer every "tokenizer" path stands for: bytes (ids 1000 + byte), merges of English's
// commonest pairs (ids from 0, so id order is not spelling order), <|endoftext|>.
std::shared_ptr<const Gpt2Tokenizer> memoryTokenizer(const std::string&) {
  static const std::shared_ptr<const Gpt2Tokenizer> tokenizer = [] {
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; ++b) vocab[byteChar(b)] = 1000 + b;
    std::string merges = "#version: 0.2\n";
    int next = 0;
    for (const char* m : {"Ġ t", "h e", "Ġt he", "i n", "Ġ a", "e r", "o n", "Ġ s", "Ġ w", "r e", "a t", "e n"}) {
      const std::string line(m);
      const std::string a = line.substr(0, line.find(' ')), b = line.substr(line.find(' ') + 1);
      if (!vocab.contains(a + b)) vocab[a + b] = next++;
      merges += line + "\n";
    }
    vocab["<|endoftext|>"] = 999;
    return Gpt2Tokenizer::fromContents(vocab.dump(), merges, "fuzz");
  }();
  return tokenizer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  TaskFiles files;
  files.load_tokenizer = memoryTokenizer;
  TrainTask task;
  try {
    task = parseTrainTaskText(text, files);
  } catch (const InputError& e) {
    const std::string m = e.what();
    FUZZ_CHECK(m.rfind("task", 0) == 0, "a refusal that names no field: " + m);
    FUZZ_CHECK(m.find('\n') == std::string::npos, "a refusal of more than one line: " + m);
    return 0;
  } catch (const std::exception& e) {
    fuzz::unexpected("parseTrainTaskText", e);
  }
  const nlohmann::json written = trainTaskJson(task);
  const TrainTask again = parseTrainTask(written, files);
  FUZZ_CHECK(trainTaskJson(again).dump() == written.dump(), "the task does not read back as written");
  FUZZ_CHECK(again.text_ids == task.text_ids && again.vocab == task.vocab, "the text's ids differ when read back");
  FUZZ_CHECK(again.token_labels == task.token_labels, "the vocabulary's labels differ when read back");
  if (task.kind == TaskKind::Text && task.tokens == TextTokens::Gpt2) {
    const auto tokenizer = memoryTokenizer("");
    const std::vector<int> ids = tokenizer->encode(task.text);
    std::map<int, int> index;
    for (int id : ids) index.emplace(id, 0);
    FUZZ_CHECK(static_cast<int>(index.size()) == task.vocab, "the vocabulary is not the text's distinct GPT-2 ids");
    int k = 0;
    for (auto& [id, at] : index) {
      FUZZ_CHECK(task.token_labels[static_cast<std::size_t>(k)] == tokenizer->tokenString(id),
                 "a label is not its GPT-2 token's string, in id order");
      at = k++;
    }
    FUZZ_CHECK(ids.size() == task.text_ids.size(), "the text's ids are not its GPT-2 tokens");
    for (std::size_t i = 0; i < ids.size(); ++i)
      FUZZ_CHECK(task.text_ids[i] == index[ids[i]], "the text's ids are not its GPT-2 tokens");
  }

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
