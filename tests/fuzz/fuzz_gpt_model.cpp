// fuzz_gpt_model: a trained model from any bytes (docs/DESIGN.md §2.6). The input is
// CONFIG \x01\x02 FILE: config.json's text and a file of tensors (safetensors, .pth or .npz, seeded
// with tiny GPTModels in both layouts by make_gpt_seeds.py). An accepted model has the shapes its
// config says and runs on a few ids: the logits are finite and V long, or the pass refuses with
// InputError/ComputeError. A refusal is one InputError line.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "lm/gpt_forward.h"
#include "lm/gpt_model.h"
#include "lm/vocabulary_tokenizer.h"

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::size_t cut = input.find("\x01\x02");
  const std::string config = cut == std::string::npos ? "" : input.substr(0, cut);
  const std::string bytes = cut == std::string::npos ? input : input.substr(cut + 2);
  GptLoadOptions options;  // small: every accepted model stays cheap
  options.limits.max_file_bytes = std::int64_t{1} << 20;
  options.limits.max_tensor_bytes = std::int64_t{1} << 20;
  options.limits.max_tensors = 1000;
  options.max_model_bytes = std::int64_t{4} << 20;
  std::shared_ptr<const GptModel> model;
  try {
    const auto file = TensorFile::fromBytes(bytes, "fuzz", options.limits);
    model = gptModelFromTensors(*file, config, options);
  } catch (const InputError& e) {
    const std::string m = e.what();
    FUZZ_CHECK(m.find('\n') == std::string::npos, "a refusal is one line: " + m);
    return 0;
  } catch (const std::exception& e) {
    fuzz::unexpected("gptModelFromTensors", e);
  }
  const GptConfig& c = model->config;
  FUZZ_CHECK(c.layers >= 1 && static_cast<int>(model->blocks.size()) == c.layers, "blocks");
  FUZZ_CHECK(c.heads >= 1 && c.d_model % c.heads == 0, "heads divide the width");
  FUZZ_CHECK(model->token_embedding.elements() == std::int64_t{c.vocab_size} * c.d_model, "token embedding");
  FUZZ_CHECK(model->output_head.elements() == std::int64_t{c.vocab_size} * c.d_model, "head");
  // A trained text's character names (lm/vocabulary_tokenizer.h): each one character, once, or one
  // refusal; a text of them cut back into their ids.
  if (model->token_kind == "characters") try {
      const auto chars = characterTokenizer(model->token_labels);
      const std::string text = chars->decode({0, c.vocab_size - 1, 0});
      FUZZ_CHECK(chars->encode(text) == (std::vector<int>{0, c.vocab_size - 1, 0}), "characters round trip");
    } catch (const InputError& e) {
      FUZZ_CHECK(std::string(e.what()).find('\n') == std::string::npos, "a refusal is one line");
    }
  std::vector<int> ids;
  for (int t = 0; t < std::min(3, c.context_length); ++t) ids.push_back(t % c.vocab_size);
  Limits limits = fuzz::workspaceLimits();
  try {
    const GptResult r = gptForward(*model, ids, {}, {}, limits);
    FUZZ_CHECK(r.logits.rows() == 1 && r.logits.cols() == c.vocab_size, "logits' shape");
    FUZZ_CHECK(r.logits.allFinite(), "logits not finite");
  } catch (const InputError&) {
  } catch (const ComputeError&) {
  } catch (const std::exception& e) {
    fuzz::unexpected("gptForward", e);
  }
  return 0;
}
