// Bring your own numbers (docs/DESIGN.md §2.4): embeddings from what a notebook prints or
// saves. Text — a printed PyTorch tensor, a NumPy repr or str, JSON or Python nested lists,
// CSV/TSV/whitespace-separated columns — and the binary .npy and .npz, recognized by content, not
// by the file's name. No window code: the app's paste and the CLI's `import` both come here.
//
// Every refusal is one InputError. For text it is "SOURCE:LINE:COLUMN: why" (lines and columns
// from 1, columns in characters), for binary files "SOURCE: why".
#pragma once
#include <string>
#include <vector>

#include "engine/model_config.h"
#include "engine/named_tensor.h"
#include "engine/tensor.h"
#include "formats/npy.h"

namespace attnscope {

struct ImportedEmbeddings {
  Matrix values;                    // T × d_in
  std::vector<std::string> tokens;  // names the source carries (a CSV's first column), else empty
  std::string format;               // "torch", "numpy", "lists", "csv", "tsv", "columns", "npy", "npz"
  // A torch print with 1–7 decimals (its default precision is 4): the values are rounded to that
  // many, and the user is told (roundedPrintNote); 0 otherwise.
  int rounded_to = 0;
};

// What to tell a user whose torch print rounded its values to `decimals` (DESIGN §2.5): by how much,
// and how to print more (torch.set_printoptions(precision=8); profile="full" alone keeps 4) or save.
std::string roundedPrintNote(int decimals);

// Text in any of the text forms. A 1-D tensor or list is one token (1 × n). Refused, each at its
// place: torch's and NumPy's summarized prints ("..."; the message says how to print in full or
// save instead), ragged rows, NaN and ±∞, values beyond float32, anything that is not a number,
// 3-D and deeper nesting, scalars, empty input, more than limits.max_tokens rows or
// limits.max_dim columns, text longer than limits.max_file_bytes.
ImportedEmbeddings parseEmbeddingsText(const std::string& text, const std::string& source, const Limits& limits = {});

// The same from bytes that may be binary: .npy (2-D, or 1-D as one token) and .npz (the entry named
// `array`, else the only 2-D array; when there are several, "name the one to use with --array NAME":
// only the command line reads binary files), else text.
ImportedEmbeddings parseEmbeddingsBytes(const std::string& bytes, const std::string& source, const Limits& limits = {},
                                        const std::string& array = "");

// Reads a file (refusing directories, missing files and files over limits.max_file_bytes before
// reading: formats/file_reading.h) and parses it as above; SOURCE in messages is the path.
ImportedEmbeddings readEmbeddingsFile(const std::string& path, const Limits& limits = {},
                                      const std::string& array = "");

// A printed state_dict — print(m.state_dict()) shows OrderedDict([('W_query.weight', tensor([[…]])),
// …]); a dict {'W_query.weight': tensor(…), …} too — its tensors in order, each read as the
// embeddings' text is (a 1-D tensor is a vector: a bias). Refused at LINE:COLUMN as they are, a
// name given twice included. Names and shapes are not checked here (checkParameterValues does).
// `rounded_to`, when given, gets the decimals the print rounded to (as ImportedEmbeddings::rounded_to).
bool looksLikeStateDict(const std::string& text);
std::vector<NamedTensor> parseStateDictText(const std::string& text, const std::string& source,
                                            const Limits& limits = {}, int* rounded_to = nullptr);

// Token names for T rows: `given` when it has exactly T names, else t1 … tT.
std::vector<std::string> tokenNames(const std::vector<std::string>& given, int T);
// "a b  c" → {"a", "b", "c"}: names split at ASCII whitespace.
std::vector<std::string> splitNames(const std::string& text);

}  // namespace attnscope
