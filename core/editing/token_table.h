// Edits of a workspace's inputs, as the Inputs panel offers them: the T × d_in embedding table
// and its token labels. Each edit keeps the workspace valid (tokens and rows stay in step, the
// embeddings stay a matrix, a model that passed validateModel still passes) and drops the "random"
// recipe, since the numbers are now the user's. Edits are all-or-nothing: one that throws
// InputError leaves the workspace exactly as it was.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "formats/workspace_file.h"

namespace attnscope {

// Deterministic embedding of a word: the same word gives the same d_in values for a given seed,
// whatever sentence it appears in, in capitals or not ("The" and "the" share one vector). Values
// are uniform in [0, 1) like the book's: torch.manual_seed(h); torch.rand(d_in), where h is the
// 32-bit FNV-1a hash of foldCase(word)'s UTF-8 bytes followed by the 4 bytes of `seed`
// (little-endian) — see token_table.cpp. The vector for a smaller d_in is a prefix of the one for
// a larger d_in.
std::vector<float> wordEmbedding(const std::string& word, int d_in, std::uint32_t seed);
// The word in small letters: ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic capitals are
// lowered ("Über" → "über"), other bytes kept. Python's str.lower() agrees on ASCII and Latin-1.
std::string foldCase(const std::string& word);

// Splits a sentence into word tokens: split at ASCII whitespace, and each of . , ! ? ; : is a
// token of its own ("step." → "step", "."). Throws InputError("sentence: …") if it yields no token
// or more than `max_tokens` (the message gives the limit).
std::vector<std::string> splitSentence(const std::string& sentence, int max_tokens);
// The tokens as a sentence again: words a space apart, each punctuation token splitSentence made
// joined to the word before it, as typed ("step", "." → "step."). splitSentence gives them back.
std::string joinSentence(const std::vector<std::string>& tokens);

// Replaces tokens and embeddings with the sentence's words and their wordEmbedding(…, d_in, seed).
void setSentence(Workspace& ws, const std::string& sentence, std::uint32_t seed, const Limits& limits = {});

// Token operations; indices are 0-based. Throw InputError on an index out of range, on removing
// the last token, or on going beyond limits.max_tokens (or the model's attention-cell limit).
// insertToken puts the new token before index `at` (at = T appends); an empty name becomes the
// first of "t1", "t2", … that no token has yet; its row is wordEmbedding(name, d_in, seed).
// moveToken takes the token (and its row) out at `from` and puts it back so it ends at `to`.
// renameToken refuses an empty name.
void insertToken(Workspace& ws, int at, const std::string& name, std::uint32_t seed, const Limits& limits = {});
void removeToken(Workspace& ws, int index);
void moveToken(Workspace& ws, int from, int to);
void renameToken(Workspace& ws, int index, const std::string& name);
void setEmbedding(Workspace& ws, int row, int col, float value);  // throws on non-finite values

// Changes d_in: columns are removed from the end, or added filled with seeded values: the added
// T × k block is torch.manual_seed(seed); torch.rand(T, k), row-major. Kept columns are unchanged.
// Also keeps the model valid ('simple' has d_out = d_in).
void setInputWidth(Workspace& ws, int d_in, std::uint32_t seed, const Limits& limits = {});

// Replaces the whole table: `values` (T × d_in, finite) and `tokens` (T names), as a pasted tensor
// does. Keeps the model valid ('simple': d_out = d_in); throws InputError when it would not be
// (the user's parameters made for another d_in, more tokens than the limits allow).
void replaceEmbeddings(Workspace& ws, Matrix values, std::vector<std::string> tokens, const Limits& limits = {});

// New uniform [0, 1) values for every cell (torch.rand(T, d_in) after torch.manual_seed(seed)).
void randomizeEmbeddings(Workspace& ws, std::uint32_t seed);

// The book's "Your journey starts with one step" and its 3-d embeddings; the model is kept
// (d_out set to 3 for 'simple').
void resetToBookExample(Workspace& ws);

// Where "go to" lands: the tokens [first, last] (0-based) that `text` names — a
// token's name ("journey", "t500"; the first match, case-insensitively), a position as the tables
// number them from 1 ("500"), or a range of either ("400-431", "t10–t20", "with..step"). Throws
// InputError saying what was not found.
std::pair<int, int> findTokens(const std::vector<std::string>& tokens, const std::string& text);

}  // namespace attnscope
