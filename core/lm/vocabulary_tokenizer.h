// A model trained here on a text (the text task, docs/DESIGN.md §2.7) takes text again
// (docs/DESIGN.md §2.6 "A trained text's tokens"): its file names its tokens, id by id — the text's
// characters, or the GPT-2 tokens it held — and says which kind. A text typed for it is cut as the
// training text was and each piece looked up among the model's tokens: characters one by one, GPT-2
// tokens by GPT-2's own tokenizer (its files beside the model) and then by spelling. The ids are the
// model's (0 … V − 1), never GPT-2's; a piece the model never saw is refused, named.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "lm/gpt2_tokenizer.h"

namespace attnscope {

// A trained text's tokens as its model's file says them: their names id by id ("vocabulary") and
// how the text was cut ("tokens": "characters" or "gpt2"). Both empty for a model that names none.
struct TokenNames {
  std::vector<std::string> labels;
  std::string kind;
};

// The tokenizer of a model whose file names its tokens: `names.kind` "characters", or "gpt2" with
// GPT-2's tokenizer files looked for in `folder`. Null when it can have none, *why then saying
// why and what to do (GPT-2's files missing, or another vocabulary's). `source` names the file in
// the one refusal: a character list that is damaged (a name of two characters, one said twice).
std::shared_ptr<const Gpt2Tokenizer> tokenizerOfNames(const TokenNames& names, const std::string& folder,
                                                      const std::string& source, std::string* why);

// Every label one UTF-8 character, each once. Throws InputError naming the first that is not.
std::shared_ptr<const Gpt2Tokenizer> characterTokenizer(std::vector<std::string> labels);

// Labels spelled as GPT-2 spells its tokens ("Ġthe"), each once, all in `gpt2`'s vocabulary. Throws
// InputError naming the first that is not (the files beside the model are another vocabulary's).
std::shared_ptr<const Gpt2Tokenizer> gpt2SubsetTokenizer(std::vector<std::string> labels,
                                                         std::shared_ptr<const Gpt2Tokenizer> gpt2);

// Whether every label is one UTF-8 character: a character vocabulary, for a file that does not say
// its kind (written before it did).
bool allSingleCharacters(const std::vector<std::string>& labels);

}  // namespace attnscope
