// A trained text's tokens as a tokenizer (lm/vocabulary_tokenizer.h, docs/DESIGN.md §2.6).
#include "lm/vocabulary_tokenizer.h"

#include <cstdio>
#include <unordered_map>
#include <utility>

#include "engine/count_text.h"
#include "engine/errors.h"
#include "formats/utf8.h"

namespace attnscope {

namespace {

// A token as a message quotes it: control characters escaped ("\n" is a newline the text held).
std::string quoted(const std::string& s) {
  std::string out = "“";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    } else {
      out += ch;
    }
  }
  return out + "”";
}

// The labels' ids by spelling; a label said twice is a damaged file.
std::unordered_map<std::string, int> idsByLabel(const std::vector<std::string>& labels) {
  std::unordered_map<std::string, int> ids;
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (!ids.emplace(labels[i], static_cast<int>(i)).second)
      throw InputError("vocabulary: " + quoted(labels[i]) + " is tokens " + std::to_string(ids[labels[i]]) + " and " +
                       std::to_string(i));
  return ids;
}

// The labels, their ids and what every kind answers alike.
class LabelledTokens : public Gpt2Tokenizer {
 public:
  explicit LabelledTokens(std::vector<std::string> labels) : labels_(std::move(labels)), ids_(idsByLabel(labels_)) {}
  std::string tokenString(int id) const override { return labels_[checked(id)]; }
  int vocabularySize() const override { return static_cast<int>(labels_.size()); }

 protected:
  std::size_t checked(int id) const {
    if (id < 0 || id >= vocabularySize())
      throw InputError("token id " + std::to_string(id) + " is not in the vocabulary (0 … " +
                       std::to_string(vocabularySize() - 1) + ")");
    return static_cast<std::size_t>(id);
  }
  int idOf(const std::string& label) const {
    const auto it = ids_.find(label);
    return it == ids_.end() ? -1 : it->second;
  }
  std::vector<std::string> labels_;
  std::unordered_map<std::string, int> ids_;
};

class CharacterTokens final : public LabelledTokens {
 public:
  explicit CharacterTokens(std::vector<std::string> labels) : LabelledTokens(std::move(labels)) {
    for (const std::string& l : labels_)
      if (!allSingleCharacters({l}))
        throw InputError("vocabulary: " + quoted(l) + " is not one character, as a text's characters are");
  }
  std::vector<int> encode(const std::string& text) const override {
    std::vector<int> out;
    for (const std::string& c : words(text)) {
      const int id = idOf(c);
      if (id < 0)
        throw InputError("text: " + quoted(c) + " is not one of the " + countOf(vocabularySize(), "character") +
                         " the model was trained on (character " + std::to_string(out.size() + 1) + ")");
      out.push_back(id);
    }
    return out;
  }
  std::vector<std::string> words(const std::string& text) const override {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < text.size();) {
      const std::size_t at = i;
      if (nextCodePoint(text, &i) == kNotUtf8)
        throw InputError("text: not UTF-8 at byte " + std::to_string(at + 1) + " (the model's tokens are characters)");
      out.push_back(text.substr(at, i - at));
    }
    return out;
  }
  std::string decode(const std::vector<int>& ids) const override {
    std::string out;
    for (int id : ids) out += labels_[checked(id)];
    return out;
  }
  std::string tokenBytes(int id) const override { return labels_[checked(id)]; }
  int endOfText() const override { return -1; }
  std::string missingMerges() const override { return {}; }  // (characters: no merges)
};

class Gpt2Subset final : public LabelledTokens {
 public:
  Gpt2Subset(std::vector<std::string> labels, std::shared_ptr<const Gpt2Tokenizer> gpt2)
      : LabelledTokens(std::move(labels)), gpt2_(std::move(gpt2)) {
    // Each label's bytes, through its GPT-2 id (found by spelling).
    std::unordered_map<std::string, int> gpt2_ids;
    for (int id = 0; id < gpt2_->vocabularySize(); ++id) try {
        gpt2_ids.emplace(gpt2_->tokenString(id), id);
      } catch (const InputError&) {  // an id the vocabulary skips
      }
    for (const std::string& l : labels_) {
      const auto it = gpt2_ids.find(l);
      if (it == gpt2_ids.end())
        throw InputError("vocabulary: " + quoted(l) + ", one of the model's tokens, is not in the GPT-2 tokenizer's");
      bytes_.push_back(gpt2_->tokenBytes(it->second));
    }
    end_of_text_ = idOf("<|endoftext|>");
  }
  std::vector<int> encode(const std::string& text) const override {
    std::vector<int> out;
    for (int g : gpt2_->encode(text)) {
      const std::string spelling = gpt2_->tokenString(g);
      const int id = idOf(spelling);
      if (id < 0)
        throw InputError("text: " + quoted(spelling) + " (GPT-2's token " + std::to_string(g) + ") is not one of the " +
                         countOf(vocabularySize(), "token") + " the model was trained on (token " +
                         std::to_string(out.size() + 1) + ")");
      out.push_back(id);
    }
    return out;
  }
  std::vector<std::string> words(const std::string& text) const override { return gpt2_->words(text); }
  std::string missingMerges() const override { return gpt2_->missingMerges(); }
  std::string decode(const std::vector<int>& ids) const override {
    std::string out;
    for (int id : ids) out += bytes_[checked(id)];
    return out;
  }
  std::string tokenBytes(int id) const override { return bytes_[checked(id)]; }
  int endOfText() const override { return end_of_text_; }

 private:
  std::shared_ptr<const Gpt2Tokenizer> gpt2_;
  std::vector<std::string> bytes_;  // by id
  int end_of_text_ = -1;
};

}  // namespace

bool allSingleCharacters(const std::vector<std::string>& labels) {
  for (const std::string& l : labels) {
    std::size_t i = 0;
    if (l.empty() || nextCodePoint(l, &i) == kNotUtf8 || i != l.size()) return false;
  }
  return true;
}

std::shared_ptr<const Gpt2Tokenizer> characterTokenizer(std::vector<std::string> labels) {
  return std::make_shared<CharacterTokens>(std::move(labels));
}

std::shared_ptr<const Gpt2Tokenizer> gpt2SubsetTokenizer(std::vector<std::string> labels,
                                                         std::shared_ptr<const Gpt2Tokenizer> gpt2) {
  return std::make_shared<Gpt2Subset>(std::move(labels), std::move(gpt2));
}

std::shared_ptr<const Gpt2Tokenizer> tokenizerOfNames(const TokenNames& names, const std::string& folder,
                                                      const std::string& source, std::string* why) {
  if (names.kind == "characters") {
    try {
      return characterTokenizer(names.labels);
    } catch (const InputError& e) {
      throw InputError(source + ": its metadata's " + e.what());
    }
  }
  // Its tokens are some of GPT-2's: GPT-2's tokenizer cuts a text, the model's ids name the pieces.
  if (!Gpt2Tokenizer::inFolder(folder)) {
    *why =
        "no text, token ids only: its tokens are GPT-2's (it was trained on a text's GPT-2 tokens), and GPT-2's "
        "tokenizer files are not beside it (vocab.json + merges.txt, or encoder.json + vocab.bpe)";
    return nullptr;
  }
  try {
    return gpt2SubsetTokenizer(names.labels, Gpt2Tokenizer::fromFolder(folder));
  } catch (const InputError& e) {
    *why = std::string("no text, token ids only: ") + e.what();
    return nullptr;
  }
}

}  // namespace attnscope
