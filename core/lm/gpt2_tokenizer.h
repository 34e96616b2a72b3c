// GPT-2's tokenizer, exactly (docs/DESIGN.md §2.6): byte-level BPE over the pre-tokens of
// openai/gpt-2's encoder.py regex (PCRE2: \p{L}, \p{N} and the lookahead), from Hugging Face's
// vocab.json + merges.txt or OpenAI's encoder.json + vocab.bpe. `<|endoftext|>` is 50256 in GPT-2's
// vocabulary; in a text it is that one token, as Hugging Face's tokenizer treats it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attnscope {

class Gpt2Tokenizer {
 public:
  // From the two files (vocab/encoder JSON, merges/BPE text). Throws InputError "PATH: why" (a line
  // number for merges) for a file that is missing, too large or not what it should be.
  static std::shared_ptr<const Gpt2Tokenizer> fromFiles(const std::string& vocab_json, const std::string& merges);
  // From a folder holding vocab.json + merges.txt, else encoder.json + vocab.bpe. The message says
  // which files were looked for.
  static std::shared_ptr<const Gpt2Tokenizer> fromFolder(const std::string& folder);
  // Whether `folder` holds a whole pair of the files fromFolder reads.
  static bool inFolder(const std::string& folder);
  // From the files' contents (the fuzz target and the tests); `source` names them in messages.
  static std::shared_ptr<const Gpt2Tokenizer> fromContents(const std::string& vocab_json, const std::string& merges,
                                                           const std::string& source);
  // The same, each file named in its messages: "VOCAB: why", "MERGES:LINE: why". (The form above
  // names them SOURCE[vocab] and SOURCE[merges].)
  static std::shared_ptr<const Gpt2Tokenizer> fromContents(const std::string& vocab_json, const std::string& merges,
                                                           const std::string& vocab_source,
                                                           const std::string& merges_source);
  virtual ~Gpt2Tokenizer() = default;

  // Token ids of UTF-8 text. Invalid UTF-8 (which GPT-2 never saw) gives each bad byte its byte token,
  // so decode(encode(x)) == x for any bytes.
  virtual std::vector<int> encode(const std::string& text) const = 0;
  // The pieces encode() turns into tokens, in order, as bytes: the words of encoder.py's regex,
  // each <|endoftext|>, and each byte that is not valid UTF-8 (for tests and for showing words).
  virtual std::vector<std::string> words(const std::string& text) const = 0;
  // The UTF-8 text of ids (a token that ends inside a character gives its bytes as they are).
  virtual std::string decode(const std::vector<int>& ids) const = 0;
  // A token as the vocabulary spells it, byte-level characters and all ("Ġworld": Ġ for a space).
  virtual std::string tokenString(int id) const = 0;
  // The bytes a token stands for (" world").
  virtual std::string tokenBytes(int id) const = 0;
  virtual int vocabularySize() const = 0;
  virtual int endOfText() const = 0;  // the id of <|endoftext|>, or -1 when the vocabulary lacks it
  // Empty, or a sentence naming the merges file where no merge makes some of the vocabulary's tokens
  // of two or more bytes (added tokens such as "<|endoftext|>" or "<pad>" aside): a file cut short,
  // or empty, splits text into other tokens than the model learned, and would have said nothing.
  virtual std::string missingMerges() const = 0;
};

// What a token reads as where its spelling is not plain text: GPT-2 spells each byte as a character
// (é's two bytes as "Ã©"), so "ĠcafÃ©" reads “ café”; a token that ends inside a character (an
// emoji's four bytes over two tokens) is said as its bytes, "bytes F0 9F (part of a character)".
// Empty where the spelling reads as it is (ASCII; Ġ, a space, the views explain) and for an id
// outside the vocabulary.
std::string tokenReading(const Gpt2Tokenizer& tokenizer, int id);

// Every character above ASCII that one of the vocabulary's tokens decodes to, each once, ascending
// (GPT-2's: 328, of which 200 lie past the Latin, Greek and Cyrillic a UI font has: kana, CJK,
// Arabic …). A decoded text shows no other, but where a character's bytes span tokens. Ids the
// vocabulary skips are passed over.
std::vector<std::uint32_t> tokenCharacters(const Gpt2Tokenizer& tokenizer);

}  // namespace attnscope
