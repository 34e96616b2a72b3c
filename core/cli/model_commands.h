// attnscope-cli's commands on trained models (docs/DESIGN.md §2.5, §2.6): model-trace.
#pragma once
#include <ostream>
#include <string>

#include "engine/model_config.h"

namespace attnscope {

struct ModelTraceOptions {
  std::string model;      // a folder or a file of tensors (lm/gpt_model.h)
  std::string text;       // tokenized with the model's tokenizer …
  std::string ids;        // … or token ids, "464,2068,7586"
  bool has_text = false;  // --text was given (it may be empty: refused with a message)
  int num_heads = 0;      // 0: config.json's, else d / 64
  bool prepend_eot = false;
  std::string layers;           // "0,5": only these layers' heads are printed (empty: all)
  int threads = 0;              // 0: every processor
  std::string format = "json";  // json (stdout), or csv / npy files into `out`
  std::string out;              // the folder for csv / npy
  int top_k = 0;                // the K most likely next tokens of the last position: 0 (none) … V
  double temperature = 1.0;     // their probabilities: softmax(logits / temperature); > 0, finite
};

// {"ids", "tokens", "notes", "layers": [{"layer", "heads": [{"head", "weights": T × T}]}],
//  "logits": …}; each head also has "label" (headLabel's id, or null) and "scores"
// (lm/head_scores.h); with top_k > 0, "next_tokens": [{"id", "token", "probability", "logit"}, …]
// after the logits, most likely first (lm/model_pass.h's topNextTokens at `temperature`). A bad
// top_k or temperature is refused before the forward. Nothing is printed unless the whole pass
// succeeds. With format csv or npy, files into `out` instead (formats/export.h's writers):
// l{layer}_h{head}_weights (1-based; CSV with the tokens down and across), logits (a row per
// vocabulary token), scores (a row per head: layer, head and the four scores and mean entropy;
// .npy: layers·heads × 7 — layer, head from 1, the four scores in headLabelTable's order, mean
// entropy — NaN where a score is undefined), tokens.csv (token, id: a row per position) and, with
// top_k > 0, next_tokens (a row per token, most likely first: CSV token, id, probability, logit;
// .npy K × 3 — id, probability, logit).
void runModelTrace(const ModelTraceOptions& options, const Limits& limits, std::ostream& out);

// The text of --text: itself, or with "-" stdin's (at most 64 MiB), byte for byte. A final line
// end, which `echo` and a file's last line add, is tokenized as it is (GPT-2's "Ċ", after which
// the next tokens are what follows a new line), and a note on `notes` says so and how to leave it
// out: a file's text is its bytes, but an echoed sentence's next tokens had silently been those
// after a new line.
std::string textArgument(const std::string& text, std::ostream& notes);

}  // namespace attnscope
