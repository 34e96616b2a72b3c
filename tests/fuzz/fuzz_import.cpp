// fuzz_import: embeddings brought in as bytes (core/formats/tensor_import.h, formats/npy.h) — a
// printed tensor, a NumPy repr, lists, columns, .npy or .npz. Any bytes are either refused with one
// InputError that names the source ("fuzz:LINE:COLUMN: …" for text, "fuzz: …" or "fuzz[entry]: …"
// for binary files) or accepted as a T × d_in matrix within the limits, every value finite, with
// no token names or one per row; printed back as nested lists of shortest float32 decimals, the
// matrix reads back bit for bit. The same bytes as a printed state_dict (parseStateDictText): one
// InputError naming the source, or named tensors within the limits, every value finite.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "formats/json_format.h"
#include "formats/tensor_import.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attnscope;
  const Limits limits = fuzz::smallLimits();
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    for (const NamedTensor& t : parseStateDictText(bytes, "fuzz", limits)) {
      FUZZ_CHECK(t.value.rows() >= 1 && t.value.cols() >= 1 && t.value.allFinite(),
                 t.name + " " + fuzz::shape(t.value));
      FUZZ_CHECK(!t.is_vector || t.value.rows() == 1, "a vector of " + fuzz::shape(t.value));
    }
  } catch (const InputError& err) {
    const std::string m = err.what();
    FUZZ_CHECK(m.rfind("fuzz:", 0) == 0, m);
    FUZZ_CHECK(m.find('\n') == std::string::npos, "a refusal is one line: " + m);
  } catch (const std::exception& err) {
    fuzz::unexpected("parseStateDictText", err);
  }
  ImportedEmbeddings e;
  try {
    e = parseEmbeddingsBytes(bytes, "fuzz", limits);
  } catch (const InputError& err) {
    const std::string m = err.what();
    FUZZ_CHECK(m.rfind("fuzz:", 0) == 0 || m.rfind("fuzz[", 0) == 0, m);
    FUZZ_CHECK(m.find('\n') == std::string::npos, "a refusal is one line: " + m);
    return 0;
  } catch (const std::exception& err) {
    fuzz::unexpected("parseEmbeddingsBytes", err);
  }
  const Matrix& x = e.values;
  FUZZ_CHECK(x.rows() >= 1 && x.rows() <= limits.max_tokens, fuzz::shape(x));
  FUZZ_CHECK(x.cols() >= 1 && x.cols() <= limits.max_dim, fuzz::shape(x));
  FUZZ_CHECK(x.allFinite(), "a value that is not finite");
  FUZZ_CHECK(e.tokens.empty() || static_cast<Eigen::Index>(e.tokens.size()) == x.rows(),
             std::to_string(e.tokens.size()) + " names for " + fuzz::shape(x));
  std::string lists = "[";
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    lists += i ? ", [" : "[";
    for (Eigen::Index j = 0; j < x.cols(); ++j) lists += (j ? ", " : "") + formatFloat(x(i, j));
    lists += "]";
  }
  lists += "]";
  Limits reload = limits;
  reload.max_file_bytes = static_cast<std::int64_t>(lists.size()) + 1;
  try {
    const ImportedEmbeddings again = parseEmbeddingsText(lists, "again", reload);
    FUZZ_CHECK(fuzz::sameBits(again.values, x), "lists of the accepted matrix read back differently");
  } catch (const InputError& err) {
    fuzz::finding(std::string("the accepted matrix printed as lists is refused: ") + err.what());
  }
  return 0;
}
