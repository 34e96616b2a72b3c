// Bring your own numbers: the text and NumPy readers of formats/tensor_import.h and
// formats/npy.h. Expected values are written out here (the printed decimals, rounded to float32
// by the compiler); the .npy/.npz bytes are assembled here byte by byte after NumPy's format
// description, and deflated with zlib. What torch and NumPy themselves write is checked by
// tests/cli/test_import.py.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <initializer_list>

#include "engine/errors.h"
#include "formats/export.h"
#include "formats/npy.h"
#include "formats/tensor_import.h"
#include "test_support.h"
#include "zip_writer.h"

using namespace attnscope;

namespace {

Matrix matrixOf(std::initializer_list<std::initializer_list<float>> rows) {
  Matrix m(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(rows.begin()->size()));
  Eigen::Index i = 0;
  for (const auto& r : rows) {
    Eigen::Index j = 0;
    for (float v : r) m(i, j++) = v;
    ++i;
  }
  return m;
}

ImportedEmbeddings text(const std::string& t, const Limits& limits = {}) { return parseEmbeddingsText(t, "x", limits); }

std::string textError(const std::string& t, const Limits& limits = {}) {
  try {
    text(t, limits);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string bytesError(const std::string& b, const std::string& array = "", const Limits& limits = {}) {
  try {
    parseEmbeddingsBytes(b, "f", limits, array);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

void expectMatrix(const ImportedEmbeddings& got, const Matrix& want) {
  ASSERT_EQ(got.values.rows(), want.rows());
  ASSERT_EQ(got.values.cols(), want.cols());
  EXPECT_TRUE(test::bitwiseEqual(got.values, want)) << got.values << "\nwant\n" << want;
}

const Matrix kBook = matrixOf({{0.43f, 0.15f, 0.89f}, {0.55f, 0.87f, 0.66f}});

// ---- .npy and .npz bytes -------------------------------------------------------------------

std::string npyHeader(const std::string& dict, int major = 1) {
  // Magic, version, header length; the dict padded with spaces and a newline to a multiple of 64.
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string h = dict;
  while ((prefix + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  const std::size_t n = h.size();
  out += static_cast<char>(n & 0xFF);
  out += static_cast<char>((n >> 8) & 0xFF);
  if (major != 1) {
    out += static_cast<char>((n >> 16) & 0xFF);
    out += static_cast<char>((n >> 24) & 0xFF);
  }
  return out + h;
}

template <class T>
std::string rawBytes(const std::vector<T>& values, bool big_endian) {
  std::string out;
  for (T v : values) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    if (big_endian)
      for (std::size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
    out.append(b, sizeof(T));
  }
  return out;
}

std::string npy(const std::string& descr, const std::string& shape, const std::string& data, bool fortran = false,
                int major = 1) {
  return npyHeader("{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                       ", 'shape': " + shape + ", }",
                   major) +
         data;
}

// A zip of the entries, every one stored or every one deflated (zip_writer.h).
std::string zip(const std::vector<std::pair<std::string, std::string>>& entries, bool deflated) {
  std::vector<test::ZipItem> items;
  for (const auto& [name, data] : entries) items.push_back({name, data, deflated});
  return test::zip(items);
}

const std::vector<float> kBookValues = {0.43f, 0.15f, 0.89f, 0.55f, 0.87f, 0.66f};

}  // namespace

// ---- printed tensors ------------------------------------------------------------------------

TEST(ImportText, TorchPrintAndItsSuffixes) {
  const std::string body = "tensor([[0.4300, 0.1500, 0.8900],\n        [0.5500, 0.8700, 0.6600]]";
  for (const std::string suffix :
       {")", ", requires_grad=True)", ", grad_fn=<AddmmBackward0>)", ", dtype=torch.float64)",
        ",\n       dtype=torch.float64, requires_grad=True)", ", device='cuda:0', grad_fn=<SliceBackward0>)"}) {
    const ImportedEmbeddings e = text(body + suffix);
    expectMatrix(e, kBook);
    EXPECT_EQ(e.format, "torch");
    EXPECT_TRUE(e.tokens.empty());
  }
  expectMatrix(text("Parameter containing:\ntensor([[0.4300, 0.1500, 0.8900],\n        [0.5500, 0.8700, 0.6600]], "
                    "requires_grad=True)"),
               kBook);
  expectMatrix(text("  torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66]])\n\n"), kBook);
}

TEST(ImportText, ScientificNotationAndIntegers) {
  expectMatrix(
      text("tensor([[ 1.0000e-05, -2.0000e+03,  3.0000e+00],\n        [-0.0000e+00,  1.2346e+08,  5.0000e-01]])"),
      matrixOf({{1e-5f, -2000.0f, 3.0f}, {-0.0f, 1.2346e8f, 0.5f}}));
  expectMatrix(text("tensor([[1., 2.],\n        [3., 4.]], dtype=torch.float64)"), matrixOf({{1, 2}, {3, 4}}));
  expectMatrix(text("tensor([[1, 2],\n        [3, 4]])"), matrixOf({{1, 2}, {3, 4}}));
  // -0 keeps its sign; underflow reads as zero.
  const ImportedEmbeddings z = text("[[-0.0, 1e-400, +2.5, .5, 5.]]");
  EXPECT_TRUE(std::signbit(z.values(0, 0)));
  expectMatrix(z, matrixOf({{-0.0f, 0.0f, 2.5f, 0.5f, 5.0f}}));
}

TEST(ImportText, OneDimensionalIsOneToken) {
  const ImportedEmbeddings e = text("tensor([0.4300, 0.1500, 0.8900])");
  expectMatrix(e, matrixOf({{0.43f, 0.15f, 0.89f}}));
  expectMatrix(text("[1, 2, 3]"), matrixOf({{1, 2, 3}}));
}

TEST(ImportText, NumpyReprAndStr) {
  expectMatrix(text("array([[0.43, 0.15, 0.89],\n       [0.55, 0.87, 0.66]], dtype=float32)"), kBook);
  EXPECT_EQ(text("array([[0.43, 0.15, 0.89],\n       [0.55, 0.87, 0.66]], dtype=float32)").format, "numpy");
  expectMatrix(text("np.array([[1.e-05, 2.e+03, 3.e+00]])"), matrixOf({{1e-5f, 2000.0f, 3.0f}}));
  // print(x): spaces between the numbers, no commas.
  expectMatrix(text("[[0.43 0.15 0.89]\n [0.55 0.87 0.66]]"), kBook);
  expectMatrix(text("[[ 0.43 -0.15  0.89]]"), matrixOf({{0.43f, -0.15f, 0.89f}}));
}

TEST(ImportText, JsonAndPythonLists) {
  const ImportedEmbeddings e = text("[[0.43, 0.15, 0.89], [0.55, 0.87, 0.66]]");
  expectMatrix(e, kBook);
  EXPECT_EQ(e.format, "lists");
  expectMatrix(text("[\n  [0.43, 0.15, 0.89,],\n  [0.55, 0.87, 0.66],\n]"), kBook);  // Python's trailing commas
}

TEST(ImportText, CsvTsvAndColumns) {
  ImportedEmbeddings e = text("0.43,0.15,0.89\n0.55,0.87,0.66\n");
  expectMatrix(e, kBook);
  EXPECT_EQ(e.format, "csv");
  e = text("d0,d1,d2\r\n0.43, 0.15, 0.89\r\n0.55, 0.87, 0.66\r\n");  // a header, CRLF, spaces
  expectMatrix(e, kBook);
  e = text("0.43\t0.15\t0.89\n\n0.55\t0.87\t0.66");
  expectMatrix(e, kBook);
  EXPECT_EQ(e.format, "tsv");
  // np.savetxt: spaces, '#' comments, %.18e.
  e = text(
      "# header\n4.300000071525573730e-01 1.500000059604644775e-01 8.899999856948852539e-01\n"
      "5.500000119209289551e-01 8.700000047683715820e-01 6.600000262260437012e-01\n");
  expectMatrix(e, kBook);
  EXPECT_EQ(e.format, "columns");
  e = text("0.43;0.15;0.89\n0.55;0.87;0.66");
  expectMatrix(e, kBook);
  // attnscope's own CSV export of a T × w map: a header row and the tokens down the first column.
  e = text("\xEF\xBB\xBFtoken,d0,d1,d2\nYour,0.43,0.15,0.89\n\"a, b\",0.55,0.87,0.66\n");
  expectMatrix(e, kBook);
  EXPECT_EQ(e.tokens, (std::vector<std::string>{"Your", "a, b"}));
  e = text("Your 0.43 0.15 0.89\njourney 0.55 0.87 0.66");
  expectMatrix(e, kBook);
  EXPECT_EQ(e.tokens, (std::vector<std::string>{"Your", "journey"}));
  expectMatrix(text("0.5"), matrixOf({{0.5f}}));
}

// ---- refusals, each at its place -------------------------------------------------------------

// RFC 4180 quotes hold line breaks: attnscope's own CSV export quotes a token name with a newline in
// it, and the import read it line by line ("this quoted field is not closed on its line"), so the
// export of such a token could not be read back. Names keep every character; positions after a
// quoted line break still point at the right line and column.
TEST(ImportText, QuotedFieldsSpanLines) {
  const std::vector<std::string> names = {"line\nbreak", "cr\r\nlf", "q\"uote, comma", "plain", "\n"};
  Matrix m(5, 2);
  m << 0.5f, -1, 2, 3, 4, 5, 6.25f, 7, 8, 9;
  const std::string csv = matrixCsv(m, tokenLabels(names, 2, false));
  const ImportedEmbeddings back = text(csv);
  EXPECT_EQ(back.tokens, names);
  EXPECT_TRUE(test::bitwiseEqual(back.values, m));
  EXPECT_EQ(text("\"a\r\nb\",1\r\n\"c\",2\r\n").tokens, (std::vector<std::string>{"a\r\nb", "c"}));
  EXPECT_EQ(textError("\"a\nb\",1\nc,x\n"), "x:3:3: 'x' is not a number");
  EXPECT_EQ(textError("x,\"a\nb,1\nc,2\n"), "x:1:3: this quoted field is never closed");
}

// A name a spreadsheet would run as a formula is exported with a leading ' and read back without
// it; a name of its own starting with ' before one of those, or before another ', reads back as it
// was too (fuzz_paste: "-KKK…" had read back as "'-KKK…").
TEST(ImportText, FormulaLikeNamesReadBackAsTheyWere) {
  const std::vector<std::string> names = {
      "-KKK\xEF\xBB\xBFk", "=HYPERLINK(x)", "'=x", "''", "'", "'x", "@a", "+1a", "''=y", "'-", "a'", "'''@", "''s"};
  Matrix m(static_cast<Eigen::Index>(names.size()), 1);
  for (Eigen::Index i = 0; i < m.rows(); ++i) m(i, 0) = static_cast<float>(i);
  const std::string csv = matrixCsv(m, tokenLabels(names, 1, false));
  EXPECT_NE(csv.find("\n'=HYPERLINK(x),"), std::string::npos) << csv;  // marked: shown as text
  EXPECT_NE(csv.find("\n''=x,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n'x,"), std::string::npos) << csv;  // nothing to mark
  EXPECT_EQ(text(csv).tokens, names);
  // Anyone's CSV or TSV keeps apostrophes that mark nothing (GPT-2's tokens "''" and "'s"); only a
  // CSV's mark before a formula's character comes off.
  EXPECT_EQ(text("'',1\n's,2\n'=x,3\n").tokens, (std::vector<std::string>{"''", "'s", "=x"}));
  EXPECT_EQ(text("'=x\t3\n''\t1\n").tokens, (std::vector<std::string>{"'=x", "''"}));
}

// Token names are text: a CSV name with bytes that are not UTF-8 (a Latin-1 export) changed on the
// first save and load (U+FFFD for each byte). It is refused where it stands.
TEST(ImportText, TokenNamesMustBeUtf8) {
  EXPECT_EQ(
      textError("Your,0.1,0.2\ncaf\xE9,0.3,0.4\n"),
      "x:2:1: this token name is not UTF-8 text (byte 0xE9): save the file as UTF-8 (in a spreadsheet: CSV UTF-8)");
  EXPECT_EQ(
      textError("\"a\xC0\x80\",1\n"),  // an overlong NUL
      "x:1:1: this token name is not UTF-8 text (byte 0xC0): save the file as UTF-8 (in a spreadsheet: CSV UTF-8)");
  EXPECT_EQ(text("caf\xC3\xA9,0.3\n\xE2\x98\x83,1\n").tokens,
            (std::vector<std::string>{"caf\xC3\xA9", "\xE2\x98\x83"}));
}

// A row of 4096 values is read in time proportional to its length (each field's column used to be
// counted from the line's start: 4096 × 4096 values took minutes).
TEST(ImportText, WideRowsAreReadInOnePass) {
  std::string csv;
  for (int i = 0; i < 512; ++i) {
    for (int c = 0; c < 4096; ++c) csv += (c ? "," : "") + std::to_string((i + c) % 10);
    csv += "\n";
  }
  const ImportedEmbeddings e = text(csv);
  EXPECT_EQ(e.values.rows(), 512);
  EXPECT_EQ(e.values.cols(), 4096);
  EXPECT_EQ(textError(csv + "1,2\n"),
            "x:513:1: this row has 2 values but the first row has 4096 (rows must all have d_in values)");
}

TEST(ImportText, SummarizedPrintsSayHowToPrintInFull) {
  const std::string torch = textError(
      "tensor([[ 0.1,  0.2,  ...,  0.5,  0.6],\n        [ 0.1,  0.2,  ...,  0.5,  0.6]])");
  EXPECT_EQ(torch.rfind("x:1:23: torch printed this tensor summarized", 0), 0u) << torch;
  EXPECT_NE(torch.find("torch.set_printoptions(profile=\"full\")"), std::string::npos) << torch;
  EXPECT_NE(torch.find("np.save"), std::string::npos) << torch;
  const std::string rows = textError("tensor([[0.1, 0.2],\n        [0.3, 0.4],\n        ...,\n        [0.5, 0.6]])");
  EXPECT_EQ(rows.rfind("x:3:9: torch printed this tensor summarized", 0), 0u) << rows;
  const std::string numpy = textError("array([[ 0.1,  0.2, ...,  0.5]], dtype=float32)");
  EXPECT_EQ(numpy.rfind("x:1:21: NumPy printed this array summarized", 0), 0u) << numpy;
  EXPECT_NE(numpy.find("np.set_printoptions(threshold=sys.maxsize)"), std::string::npos) << numpy;
  const std::string str = textError("[[0.1 0.2 ... 0.5]]");
  EXPECT_EQ(str.rfind("x:1:11: this print is summarized", 0), 0u) << str;
  EXPECT_NE(str.find("torch.set_printoptions(profile=\"full\")"), std::string::npos) << str;
  EXPECT_EQ(textError("0.1,...,0.3").rfind("x:1:5: this print is summarized", 0), 0u);
}

TEST(ImportText, EveryRefusalNamesLineAndColumn) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[[1, 2, 3],\n [4, 5]]",
       "x:2:2: this row has 2 values but the first row has 3 (rows must all have d_in values)"},
      {"[[1, 2],\n [3, nan]]", "x:2:6: NaN: every value must be a finite number"},
      {"tensor([[1., inf]])", "x:1:14: 'inf' is infinite: every value must be a finite number"},
      {"tensor([[1., -inf]])", "x:1:14: '-inf' is infinite: every value must be a finite number"},
      {"[[1, 2e39]]", "x:1:6: '2e39' is beyond float32's range (±3.4028235e38)"},
      {"[[1, abc]]", "x:1:6: 'abc' is not a number"},
      {"[[1, \"2\"]]", "x:1:6: a string, not a number"},
      {"tensor([[True, False]])",
       "x:1:10: 'True' is not a number (a bool tensor? convert it with x.float() or x.astype(np.float32))"},
      {"tensor([[[1., 2.]],\n        [[3., 4.]]])",
       "x:1:10: nested 3 deep (a 3-D tensor): give one T × d_in matrix, e.g. x[0] of a batch x"},
      {"tensor(0.5000)", "x:1:8: a single number (a 0-D tensor): the embeddings are a matrix with one row per token"},
      {"tensor([])", "x:1:8: empty: no values"},
      {"[[1, 2], []]", "x:1:10: an empty row: every row needs d_in values"},
      {"   \n  ", "x:2:3: empty: no numbers"},
      {"[[1, 2]", "x:1:1: this '[' is never closed"},
      {"[[1, 2]] extra", "x:1:10: unexpected text after the lists"},
      {"[[1 2], [3, 4]] ", "(accepted)"},
      {"[[1, 2],, [3, 4]]", "x:1:9: unexpected ',': expected a number"},
      {"[[1, [2]]]", "x:1:6: nested 3 deep (a 3-D tensor): give one T × d_in matrix, e.g. x[0] of a batch x"},
      {"[[1, 2], 3]", "x:1:10: a number among rows: a matrix holds rows only, a vector numbers only"},
      {"tensor([[1., 2.]]", "x:1:18: expected ')' to close the tensor"},
      {"frobnicate([[1]])", "x:1:1: 'frobnicate(' is not a tensor(…) or an array(…)"},
      {"{\"a\": [[1]]}", "x:1:1: a JSON object: give the embeddings as nested lists [[…], …], one list per token"},
      {"1,2,3\n4,5\n", "x:2:1: this row has 2 values but the first row has 3 (rows must all have d_in values)"},
      {"1,2,3\n4,x,6\n", "x:2:3: 'x' is not a number"},
      {"1,,3\n", "x:1:3: an empty field: expected a number"},
      {"a,b,c\n", "x:1:1: only a header line: no rows of numbers"},
      {"1\t2\n3\tNaN\n", "x:2:3: NaN: every value must be a finite number"},
      {"\xc3\xa9t\xc3\xa9,1,2\nabc,x,3\n", "x:2:5: 'x' is not a number"},  // columns count characters
      {"[[1, 2],\n [\xc3\xa9, 3]]", "x:2:3: unexpected '\xc3\xa9': expected a number"},
      {"[[1, 2],\n [\xff, 3]]", "x:2:3: unexpected '\\xff': expected a number"},
  };
  for (const auto& [input, want] : cases) EXPECT_EQ(textError(input), want) << input;
}

TEST(ImportText, LimitsOnRowsColumnsAndSize) {
  Limits small;
  small.max_tokens = 2;
  small.max_dim = 3;
  small.max_file_bytes = 64;
  EXPECT_EQ(textError("[[1], [2], [3]]", small), "x:1:12: more than 2 rows: the limit is 2 tokens");
  EXPECT_EQ(textError("[[1, 2, 3, 4]]", small), "x:1:12: more than 3 values in a row: the limit of d_in is 3");
  EXPECT_EQ(textError("1\n2\n3\n", small), "x:3:1: more than 2 rows: the limit is 2 tokens");
  EXPECT_EQ(textError("1,2,3,4\n", small), "x:1:7: more than 3 values in a row: the limit of d_in is 3");
  EXPECT_EQ(textError(std::string(65, ' '), small), "x: 65 bytes is larger than the limit of 64 bytes");
  expectMatrix(text("[[1, 2, 3], [4, 5, 6]]", small), matrixOf({{1, 2, 3}, {4, 5, 6}}));
}

TEST(ImportText, TokenNames) {
  EXPECT_EQ(tokenNames({"a", "b"}, 2), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(tokenNames({"a", "b"}, 3), (std::vector<std::string>{"t1", "t2", "t3"}));
  EXPECT_EQ(tokenNames({}, 2), (std::vector<std::string>{"t1", "t2"}));
  EXPECT_EQ(splitNames("  Your journey\tstarts\n"), (std::vector<std::string>{"Your", "journey", "starts"}));
}

// ---- .npy ---------------------------------------------------------------------------------------

TEST(ImportNpy, Float32AndFloat64InEitherByteOrder) {
  const std::vector<double> doubles(kBookValues.begin(), kBookValues.end());
  for (bool big : {false, true}) {
    const ImportedEmbeddings f4 = parseEmbeddingsBytes(npy(big ? ">f4" : "<f4", "(2, 3)", rawBytes(kBookValues, big)),
                                                       "f");
    expectMatrix(f4, kBook);
    EXPECT_EQ(f4.format, "npy");
    // float64 values are rounded to float32: 0.43 as a double becomes 0.43f.
    expectMatrix(parseEmbeddingsBytes(npy(big ? ">f8" : "<f8", "(2, 3)", rawBytes(doubles, big)), "f"), kBook);
  }
}

TEST(ImportNpy, FortranOrderVersionTwoAndOneDimension) {
  // Column-major: the columns one after another.
  const std::vector<float> columns = {0.43f, 0.55f, 0.15f, 0.87f, 0.89f, 0.66f};
  expectMatrix(parseEmbeddingsBytes(npy("<f4", "(2, 3)", rawBytes(columns, false), true), "f"), kBook);
  expectMatrix(parseEmbeddingsBytes(npy("<f4", "(2, 3)", rawBytes(kBookValues, false), false, 2), "f"), kBook);
  expectMatrix(parseEmbeddingsBytes(npy("<f4", "(3,)", rawBytes(std::vector<float>{1, 2, 3}, false)), "f"),
               matrixOf({{1, 2, 3}}));
  const NpyArray a = parseNpy(npy("<f4", "(2, 3)", rawBytes(kBookValues, false)), "f");
  EXPECT_EQ(a.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(a.dtype, "float32");
}

TEST(ImportNpy, Refusals) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {npy("<i8", "(2, 3)", std::string(48, '\0')),
       "f: dtype int64 ('<i8') is not supported: save float32 or float64 values, e.g. np.save(path, "
       "x.astype(np.float32))"},
      {npy("|b1", "(2,)", std::string(2, '\0')),
       "f: dtype bool ('|b1') is not supported: save float32 or float64 values, e.g. np.save(path, "
       "x.astype(np.float32))"},
      {npy("<f2", "(2,)", std::string(4, '\0')),
       "f: dtype float16 ('<f2') is not supported: save float32 or float64 values, e.g. np.save(path, "
       "x.astype(np.float32))"},
      {npy("<c8", "(1,)", std::string(8, '\0')),
       "f: dtype complex64 ('<c8') is not supported: save float32 or float64 values, e.g. np.save(path, "
       "x.astype(np.float32))"},
      {npy("|O", "(1,)", std::string(8, '\0')),
       "f: dtype object (pickled Python objects) ('|O') is not supported: save float32 or float64 values, e.g. "
       "np.save(path, x.astype(np.float32))"},
      {npy("<f4", "(2, 3)", rawBytes(std::vector<float>{1, 2, 3, 4, 5}, false)),
       "f: a damaged .npy file: its shape needs 24 bytes of data, it has 20"},
      {npy("<f4", "(1, 2)", rawBytes(std::vector<float>{1, 2, 3}, false)),
       "f: a damaged .npy file: 4 bytes after the data its shape describes"},
      {npy("<f4", "(1, 2)", rawBytes(std::vector<float>{1, std::nanf("")}, false)),
       "f: element [0, 1] is NaN: every value must be a finite number"},
      {npy("<f8", "(1, 2)", rawBytes(std::vector<double>{1, 1e39}, false)),
       "f: element [0, 1] is beyond float32's range (±3.4028235e38)"},
      {npy("<f4", "(2, 1, 3)", rawBytes(std::vector<float>(6, 1.0f), false)),
       "f: a 3-D array (2 × 1 × 3): give one T × d_in matrix, e.g. np.save(path, x[0]) for a batch x"},
      {npy("<f4", "()", rawBytes(std::vector<float>{1}, false)),
       "f: a single number (a 0-D array): the embeddings are a matrix with one row per token"},
      {npy("<f4", "(0, 3)", ""), "f: empty (0 × 3): no values"},
      {npyHeader("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }"),
       "f: a structured array (its dtype is a list of fields): save one plain float32 array"},
      {npyHeader("{'descr': '<f4', 'shape': (1,), }"),
       "f: damaged .npy header: it needs 'descr', 'fortran_order' and 'shape'"},
      {std::string("\x93NUMPY\x01\x00\xff\xff", 10), "f: a damaged .npy file: it ends inside its header"},
      {std::string("\x93NUMPY\x09\x00", 8) + "xx",
       "f: .npy format version 9.0 is not one this reader knows (1.0, 2.0, 3.0)"},
      {npy("<f4", "(4000000000, 4000000000)", ""), "f: array larger than the limit of 16777216 values"},
      {std::string("\x01\x02\x00\x03", 4),
       "f: binary data that is neither .npy nor .npz (text, .npy or .npz expected)"},
  };
  for (const auto& [bytes, want] : cases) EXPECT_EQ(bytesError(bytes), want);
  Limits small;
  small.max_tokens = 2;
  EXPECT_EQ(bytesError(npy("<f4", "(3, 1)", rawBytes(std::vector<float>{1, 2, 3}, false)), "", small),
            "f: 3 rows exceeds the limit of 2 tokens");
  small.max_dim = 4096;
  small.max_tokens = 2;
  EXPECT_EQ(bytesError(npy("<f4", "(3, 1)", rawBytes(std::vector<float>{1, 2, 3}, false)), "", Limits{}), "(accepted)");
  small.max_file_bytes = 100;
  EXPECT_EQ(bytesError(npy("<f4", "(30, 1)", rawBytes(std::vector<float>(30, 1.0f), false)), "", small),
            "f: 248 bytes is larger than the limit of 100 bytes");
}

// ---- .npz -------------------------------------------------------------------------------------

TEST(ImportNpz, StoredAndDeflatedEntriesByNameOrTheOnlyMatrix) {
  const std::string inputs = npy("<f4", "(2, 3)", rawBytes(kBookValues, false));
  const std::string bias = npy("<f4", "(3,)", rawBytes(std::vector<float>{1, 2, 3}, false));
  const std::string other = npy("<f8", "(1, 2)", rawBytes(std::vector<double>{7, 8}, false));
  for (bool deflate : {false, true}) {
    const std::string one = zip({{"bias.npy", bias}, {"inputs.npy", inputs}}, deflate);
    const ImportedEmbeddings e = parseEmbeddingsBytes(one, "f");
    expectMatrix(e, kBook);  // the only 2-D array
    EXPECT_EQ(e.format, "npz");
    expectMatrix(parseEmbeddingsBytes(one, "f", {}, "bias"), matrixOf({{1, 2, 3}}));
    const std::string two = zip({{"inputs.npy", inputs}, {"other.npy", other}}, deflate);
    EXPECT_EQ(bytesError(two), "f: 2 2-D arrays (inputs, other): name the one to use with --array NAME");
    expectMatrix(parseEmbeddingsBytes(two, "f", {}, "other"), matrixOf({{7, 8}}));
    EXPECT_EQ(bytesError(two, "nope"), "f: no array named 'nope' (it holds: inputs, other)");
    EXPECT_EQ(bytesError(zip({{"bias.npy", bias}}, deflate)),
              "f: no 2-D array among its arrays (bias): name the one to use with --array NAME");
    EXPECT_EQ(bytesError(zip({{"a.npy", npy("<i4", "(1, 1)", std::string(4, '\0'))}}, deflate)),
              "f[a]: dtype int32 ('<i4') is not supported: save float32 or float64 values, e.g. np.save(path, "
              "x.astype(np.float32))");
    const std::vector<NamedArray> arrays = parseNpz(one, "f");
    ASSERT_EQ(arrays.size(), 2u);
    EXPECT_EQ(arrays[0].name, "bias");
    EXPECT_EQ(arrays[1].array.shape, (std::vector<std::int64_t>{2, 3}));
  }
  EXPECT_EQ(bytesError(zip({}, false)), "f: an empty .npz: no arrays");
}

TEST(ImportNpz, DamagedArchives) {
  const std::string inputs = npy("<f4", "(2, 3)", rawBytes(kBookValues, false));
  std::string z = zip({{"inputs.npy", inputs}}, true);
  std::string bad_crc = z;
  bad_crc[14] = static_cast<char>(bad_crc[14] ^ 1);  // the local header's CRC is not read …
  EXPECT_EQ(bytesError(bad_crc), "(accepted)");
  const std::size_t central = z.find("PK\x01\x02");
  bad_crc = z;
  bad_crc[central + 16] = static_cast<char>(bad_crc[central + 16] ^ 1);  // … the central directory's is
  EXPECT_EQ(bytesError(bad_crc), "f: a damaged zip (.npz) file: entry 'inputs.npy' fails its CRC check");
  std::string method = z;
  method[central + 10] = 12;  // bzip2
  EXPECT_EQ(bytesError(method),
            "f: entry 'inputs.npy' uses compression method 12 (only stored and deflated entries, as np.savez and "
            "np.savez_compressed write)");
  EXPECT_EQ(bytesError(z.substr(0, z.size() - 30)), "f: a damaged zip (.npz) file: no end of central directory record");
  std::string huge = z;
  huge[central + 24 + 3] = 0x7f;  // an uncompressed size of about 2 GiB: refused before inflating
  EXPECT_EQ(bytesError(huge), "f: its entries hold more than the limit of 67108864 bytes");
  std::string cut = z;
  cut[central + 20] = static_cast<char>(0xF0);  // a compressed size past the end of the file
  EXPECT_EQ(bytesError(cut), "f: a damaged zip (.npz) file: entry 'inputs.npy' runs past the end of the file");
}

TEST(ImportFile, ReadsByContentAndRefusesByName) {
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/attnscope_import_test.txt";
  { std::ofstream(path, std::ios::binary) << npy("<f4", "(2, 3)", rawBytes(kBookValues, false)); }
  expectMatrix(readEmbeddingsFile(path), kBook);  // a .npy whatever its name
  { std::ofstream(path, std::ios::binary) << "tensor([[0.43, 0.15, 0.89],\n        [0.55, 0.87, 0.66]])"; }
  expectMatrix(readEmbeddingsFile(path), kBook);
  try {
    std::ofstream(path, std::ios::binary) << "[[1, 2],\n [3]]";
    readEmbeddingsFile(path);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ":2:2: this row has 1 value but the first row has 2 (rows must all have d_in values)");
  }
  Limits small;
  small.max_file_bytes = 4;
  EXPECT_THROW(readEmbeddingsFile(path, small), InputError);
  EXPECT_EQ(test::errorOf([&] { readEmbeddingsFile(dir + "/no-such-file"); }),
            dir + "/no-such-file: cannot open the file (does it exist?)");
  EXPECT_EQ(test::errorOf([&] { readEmbeddingsFile(dir); }), dir + ": is a directory, not a file");
  std::remove(path.c_str());
}

// ---- printed state_dicts (paste parameters, --parameters) ---------------------------
// The strings are str(m.state_dict()) of the seed classes as Debian's torch 1.13 prints them
// (/usr/bin/python3, torch.manual_seed as the notebook; small shapes print in full).

namespace {

const char* kV2StateDict =
    "OrderedDict([('W_query.weight', tensor([[ 0.3161,  0.4568,  0.5118],\n        [-0.1683, -0.3379, -0.0918]])), "
    "('W_key.weight', tensor([[ 0.4058, -0.4704,  0.2368],\n        [ 0.2134, -0.2601, -0.5105]])), ('W_value.weight', "
    "tensor([[ 0.2526, -0.1415, -0.1962],\n        [ 0.5191, -0.0852, -0.2043]]))])";
const char* kCausalStateDict =
    "OrderedDict([('mask', tensor([[0., 1., 1.],\n        [0., 0., 1.],\n        [0., 0., 0.]])), ('W_query.weight', "
    "tensor([[-0.2354,  0.0191, -0.2867],\n        [ 0.2177, -0.4919,  0.4232]])), ('W_query.bias', tensor([-0.4196, "
    "-0.4590])), ('W_key.weight', tensor([[-0.3648,  0.2615, -0.2133],\n        [ 0.2161, -0.4900, -0.3503]])), "
    "('W_key.bias', tensor([-0.2120, -0.1135])), ('W_value.weight', tensor([[-0.4404,  0.3780, -0.1362],\n        [ "
    "0.1853,  0.4083,  0.1076]])), ('W_value.bias', tensor([0.1579, 0.5573]))])";
const char* kWrapperStateDict =
    "OrderedDict([('heads.0.mask', tensor([[0., 1., 1.],\n        [0., 0., 1.],\n        [0., 0., 0.]])), "
    "('heads.0.W_query.weight', tensor([[-0.2883,  0.0234]])), ('heads.0.W_key.weight', tensor([[-0.3512,  0.2667]])), "
    "('heads.0.W_value.weight', tensor([[-0.6025,  0.5183]])), ('heads.1.mask', tensor([[0., 1., 1.],\n        [0., "
    "0., "
    "1.],\n        [0., 0., 0.]])), ('heads.1.W_query.weight', tensor([[-0.5140, -0.5622]])), ('heads.1.W_key.weight', "
    "tensor([[-0.4468,  0.3202]])), ('heads.1.W_value.weight', tensor([[-0.2613,  0.2646]]))])";

std::string stateDictError(const std::string& t) {
  try {
    parseStateDictText(t, "x");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST(ImportStateDict, TorchsPrintOfEachSeedClass) {
  EXPECT_TRUE(looksLikeStateDict(kV2StateDict));
  EXPECT_TRUE(looksLikeStateDict("  {'W_query': tensor([[1.]])}"));
  EXPECT_FALSE(looksLikeStateDict("tensor([[1.]])"));
  EXPECT_FALSE(looksLikeStateDict("{\"W_query.weight\": [[1]]}"));  // JSON: read as JSON

  const std::vector<NamedTensor> v2 = parseStateDictText(kV2StateDict, "x");
  ASSERT_EQ(v2.size(), 3u);
  EXPECT_EQ(v2[0].name, "W_query.weight");
  EXPECT_EQ(v2[1].name, "W_key.weight");
  EXPECT_EQ(v2[2].name, "W_value.weight");
  EXPECT_FALSE(v2[0].is_vector);
  EXPECT_TRUE(test::bitwiseEqual(v2[0].value, matrixOf({{0.3161f, 0.4568f, 0.5118f}, {-0.1683f, -0.3379f, -0.0918f}})));
  EXPECT_TRUE(
      test::bitwiseEqual(v2[2].value, matrixOf({{0.2526f, -0.1415f, -0.1962f}, {0.5191f, -0.0852f, -0.2043f}})));

  const std::vector<NamedTensor> causal = parseStateDictText(kCausalStateDict, "x");
  ASSERT_EQ(causal.size(), 7u);
  EXPECT_EQ(causal[0].name, "mask");  // the buffer is read; the parameter readers leave it out
  EXPECT_EQ(causal[2].name, "W_query.bias");
  EXPECT_TRUE(causal[2].is_vector);  // a 1-D tensor: a bias, not a 1 × 2 matrix
  EXPECT_TRUE(test::bitwiseEqual(causal[2].value, matrixOf({{-0.4196f, -0.4590f}})));
  EXPECT_TRUE(test::bitwiseEqual(causal[6].value, matrixOf({{0.1579f, 0.5573f}})));

  const std::vector<NamedTensor> wrapper = parseStateDictText(kWrapperStateDict, "x");
  ASSERT_EQ(wrapper.size(), 8u);
  EXPECT_EQ(wrapper[5].name, "heads.1.W_query.weight");
  EXPECT_FALSE(wrapper[5].is_vector);  // [[…]]: a 1 × 2 weight
  EXPECT_TRUE(test::bitwiseEqual(wrapper[5].value, matrixOf({{-0.5140f, -0.5622f}})));

  // A plain dict print, and the same tensor text the embeddings take.
  const std::vector<NamedTensor> d =
      parseStateDictText("{'W_query': tensor([[1.5, -2.],\n [3., 4.]], requires_grad=True)}", "x");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(test::bitwiseEqual(d[0].value, matrixOf({{1.5f, -2.f}, {3.f, 4.f}})));
}

// torch prints 4 decimals by default (profile="full" too): the values are rounded, and the reader
// says to how many so the user is told (DESIGN §2.5); precision=8, integers, NumPy and lists are not.
TEST(ImportText, TorchsRoundedPrintsAreMarked) {
  EXPECT_EQ(
      parseEmbeddingsText("tensor([[0.4300, 0.1500, 0.8900],\n        [0.5500, 0.8700, 0.6600]])", "x").rounded_to, 4);
  EXPECT_EQ(parseEmbeddingsText("tensor([[ 1.0000e-05, -2.0000e+03]])", "x").rounded_to, 4);
  EXPECT_EQ(parseEmbeddingsText("tensor([[0.43, 0.15]])", "x").rounded_to, 2);                 // precision=2
  EXPECT_EQ(parseEmbeddingsText("tensor([[0.43000001, 0.15000001]])", "x").rounded_to, 0);     // precision=8
  EXPECT_EQ(parseEmbeddingsText("tensor([[1., 0.],\n        [0., 1.]])", "x").rounded_to, 0);  // whole numbers: exact
  EXPECT_EQ(parseEmbeddingsText("array([[0.43, 0.15]], dtype=float32)", "x").rounded_to, 0);
  EXPECT_EQ(parseEmbeddingsText("[[0.4300, 0.1500]]", "x").rounded_to, 0);
  int rounded = -1;
  parseStateDictText(kV2StateDict, "x", {}, &rounded);
  EXPECT_EQ(rounded, 4);
  parseStateDictText("OrderedDict([('W_query.weight', tensor([[0.12345678, 1.]]))])", "x", {}, &rounded);
  EXPECT_EQ(rounded, 0);
  const std::string note = roundedPrintNote(4);
  EXPECT_EQ(note,
            "torch printed these values with 4 decimals, so they are rounded (each by up to 5e-05). For 8 decimals "
            "print them after torch.set_printoptions(precision=8) (profile=\"full\" alone keeps 4), or save them "
            "with np.savez for the exact values");
}

TEST(ImportStateDict, RefusalsNameLineAndColumn) {
  // A tensor torch summarized inside the state_dict: how to print in full.
  const std::string cut = "OrderedDict([('W_query.weight', tensor([[0.1, 0.2],\n        ...,\n        [0.3, 0.4]]))])";
  const std::string e = stateDictError(cut);
  EXPECT_EQ(e.rfind("x:2:9: torch printed this tensor summarized", 0), 0u) << e;
  EXPECT_EQ(stateDictError("OrderedDict([('a', tensor([1.])), ('a', tensor([2.]))])"), "x:1:35: 'a' is given twice");
  EXPECT_EQ(stateDictError("OrderedDict([('a' tensor([1.]))])"), "x:1:19: expected ',' after the name");
  EXPECT_EQ(stateDictError("OrderedDict([('a', tensor([1.]))]"), "x:1:34: expected ')' to close OrderedDict(");
  EXPECT_EQ(stateDictError("OrderedDict([(a, tensor([1.]))])"),
            "x:1:15: expected a quoted parameter name such as 'W_query.weight'");
  EXPECT_EQ(stateDictError("OrderedDict([])"), "x: an empty state_dict: no parameters");
  EXPECT_EQ(stateDictError("OrderedDict([('a', tensor([[1., nan]]))])"),
            "x:1:33: NaN: every value must be a finite number");
  // Pasted as embeddings, a state_dict says where it belongs.
  EXPECT_EQ(textError(kV2StateDict).rfind("x:1:1: a printed state_dict (OrderedDict)", 0), 0u)
      << textError(kV2StateDict);
  EXPECT_NE(textError("{'W_query': tensor([[1.]])}").find("Edit › Paste parameters"), std::string::npos);
}
