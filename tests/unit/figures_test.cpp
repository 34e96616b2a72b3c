// Issue 11, clean figures and exports that do what they say: the number formats the app and the
// figures share (display/number_text.h), the file formats a map's name asks for (the save
// dialog's rule, formats/export.h), CSV with token labels, and vector figures (SVG text elements,
// errors as messages). Expected strings are written out here, never produced by the code under test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "display/number_text.h"
#include "display/stage_figures.h"
#include "display/vector_figure.h"
#include "engine/attention.h"
#include "formats/export.h"
#include "model/workspace.h"

namespace attnscope {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A file in this process's own temporary folder, removed at exit.
std::string tempPath(const std::string& name) {
  struct Folder {
    std::filesystem::path path = std::filesystem::temp_directory_path() /
                                 ("attnscope-figures-test-" + std::to_string(::getpid()));
    Folder() { std::filesystem::create_directories(path); }
    ~Folder() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Folder folder;
  return (folder.path / name).string();
}

// Every <text …>…</text> element's content, in document order.
std::vector<std::string> svgTexts(const std::string& svg) {
  std::vector<std::string> out;
  for (std::size_t at = svg.find("<text"); at != std::string::npos; at = svg.find("<text", at + 1)) {
    const std::size_t open = svg.find('>', at), close = svg.find("</text>", at);
    if (open == std::string::npos || close == std::string::npos) break;
    out.push_back(svg.substr(open + 1, close - open - 1));
  }
  return out;
}

TEST(NumberText, TrueMinusNoNegativeZeroAndInfinity) {
  EXPECT_EQ(formatFixed(0.5517f), "0.5517");
  EXPECT_EQ(formatFixed(-0.0739f), "−0.0739");
  EXPECT_EQ(formatFixed(-0.00001f), "0.0000");
  EXPECT_EQ(formatFactor(-0.5888f), "(−0.5888)");  // a sign never follows an operator
  EXPECT_EQ(formatFactor(0.1353f), "0.1353");
  EXPECT_EQ(formatFactor(-0.00001f), "0.0000");
  EXPECT_EQ(formatFixed(-0.5f, 2), "−0.50");
  EXPECT_EQ(formatFixed(-kInf), "−∞");
  EXPECT_EQ(formatShort(-0.108f), "−0.108");
  EXPECT_EQ(formatShort(1234.5f), "1.23e+03");
}

TEST(NumberText, CellLabelsFromFourDecimalsToCompact) {
  EXPECT_EQ(cellLabel(0.2899f, CellFormat::Decimals4), "0.2899");
  EXPECT_EQ(cellLabel(0.2899f, CellFormat::Decimals3), "0.290");
  EXPECT_EQ(cellLabel(0.2899f, CellFormat::Decimals2), "0.29");
  EXPECT_EQ(cellLabel(0.2899f, CellFormat::Compact), ".29");
  EXPECT_EQ(cellLabel(-0.1123f, CellFormat::Compact), "−.11");
  EXPECT_EQ(cellLabel(1.0f, CellFormat::Compact), "1.00");
  EXPECT_EQ(cellLabel(0.0f, CellFormat::Compact), "0");
  EXPECT_EQ(cellLabel(12.3456f, CellFormat::Decimals4), "12.3");
  EXPECT_EQ(cellLabel(-kInf, CellFormat::Compact), "−∞");
  ASSERT_EQ(cellFormats().size(), 4u);
  EXPECT_STREQ(cellFormatId(cellFormats()[0]), "decimals4");
  EXPECT_STREQ(cellFormatId(cellFormats()[3]), "compact");
}

// A next token's probability: one decimal of a percent, and a probability that would print as
// "0.0 %" in two significant digits (an untrained model's ten tokens had all read 0.0 %).
TEST(NumberText, APercentNeverPrintsANonzeroProbabilityAsZero) {
  EXPECT_EQ(formatPercent(0.325f), "32.5 %");
  EXPECT_EQ(formatPercent(1.0f), "100.0 %");
  EXPECT_EQ(formatPercent(0.0f), "0.0 %");  // greedy's other tokens: exactly 0
  EXPECT_EQ(formatPercent(0.0006f), "0.1 %");
  EXPECT_EQ(formatPercent(0.00023f), "0.023 %");
  EXPECT_EQ(formatPercent(0.000017f), "0.0017 %");
  EXPECT_EQ(formatPercent(0.000001f), "0.00010 %");
  EXPECT_EQ(formatPercent(1.2e-9f), "1.2e−7 %");
  EXPECT_EQ(formatPercent(0.00009996f), "0.010 %");  // rounded up: still two digits
}

// A label never says 0 for a value that is not 0: a value too small for the map's
// decimals prints in one significant digit, scientific, with true minus signs; exact zeros stay
// as the notebook prints them.
TEST(NumberText, ANonzeroValueNeverPrintsAsZero) {
  EXPECT_EQ(cellLabel(0.0031f, CellFormat::Decimals2), "3e−3");
  EXPECT_EQ(cellLabel(-0.0042f, CellFormat::Decimals2), "−4e−3");
  EXPECT_EQ(cellLabel(-0.0042f, CellFormat::Compact), "−4e−3");
  EXPECT_EQ(cellLabel(0.001f, CellFormat::Compact), "1e−3");
  EXPECT_EQ(cellLabel(0.00031f, CellFormat::Decimals3), "3e−4");
  EXPECT_EQ(cellLabel(-0.00004f, CellFormat::Decimals4), "−4e−5");
  EXPECT_EQ(cellLabel(2.4e-12f, CellFormat::Decimals4), "2e−12");
  // Large enough for the format: the fixed decimals, rounded as printf rounds.
  EXPECT_EQ(cellLabel(0.0078f, CellFormat::Decimals2), "0.01");
  EXPECT_EQ(cellLabel(-0.0051f, CellFormat::Decimals2), "−0.01");
  EXPECT_EQ(cellLabel(-0.0051f, CellFormat::Compact), "−.01");
  EXPECT_EQ(cellLabel(0.0006f, CellFormat::Decimals3), "0.001");
  EXPECT_EQ(cellLabel(0.00006f, CellFormat::Decimals4), "0.0001");
  // Exact zeros (a dropped weight, softmax of −∞) as the notebook prints them; negative zero too.
  EXPECT_EQ(cellLabel(0.0f, CellFormat::Decimals4), "0.0000");
  EXPECT_EQ(cellLabel(-0.0f, CellFormat::Decimals2), "0.00");
  EXPECT_EQ(cellLabel(-0.0f, CellFormat::Compact), "0");
  // Whatever the format, no label of a nonzero value reads as zero.
  for (CellFormat f : cellFormats())
    for (float v : {1e-7f, -3e-6f, 0.00049f, -0.0049f, 0.0049f, -0.00004999f}) {
      const std::string label = cellLabel(v, f);
      EXPECT_NE(label.find_first_of("123456789"), std::string::npos) << v << " as " << cellFormatId(f) << ": " << label;
    }
}

TEST(MapFileFormat, TheTypedExtensionWinsOverTheChoice) {
  std::string name = "x.csv", format, error;
  ASSERT_TRUE(mapFileFormat(&name, "npy", &format, &error));  // typed x.csv in the .npy choice
  EXPECT_EQ(format, "csv");
  EXPECT_EQ(name, "x.csv");
  name = "Weights.SVG";
  ASSERT_TRUE(mapFileFormat(&name, "csv", &format, &error));
  EXPECT_EQ(format, "svg");
  EXPECT_EQ(name, "Weights.SVG");
}

TEST(MapFileFormat, NoExtensionTakesTheChosenOne) {
  std::string name = "b1_h2_weights", format, error;
  ASSERT_TRUE(mapFileFormat(&name, "pdf", &format, &error));
  EXPECT_EQ(format, "pdf");
  EXPECT_EQ(name, "b1_h2_weights.pdf");
  name = "run.2/fig";  // a dot in a folder is no extension
  ASSERT_TRUE(mapFileFormat(&name, "npy", &format, &error));
  EXPECT_EQ(name, "run.2/fig.npy");
  name = ".hidden";  // nor a leading dot
  ASSERT_TRUE(mapFileFormat(&name, "csv", &format, &error));
  EXPECT_EQ(name, ".hidden.csv");
}

TEST(MapFileFormat, AnUnknownExtensionIsOneMessage) {
  std::string name = "x.txt", format = "unchanged", error;
  EXPECT_FALSE(mapFileFormat(&name, "csv", &format, &error));
  EXPECT_EQ(name, "x.txt");
  EXPECT_EQ(format, "unchanged");
  EXPECT_NE(error.find("'.txt'"), std::string::npos) << error;
  for (const char* ext : {".csv", ".json", ".npy", ".png", ".svg", ".pdf"})
    EXPECT_NE(error.find(ext), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

TEST(MapFileFormat, TheExtensionFollowsTheChoice) {
  EXPECT_EQ(withExtension("b1_h1_weights.npy", "csv"), "b1_h1_weights.csv");
  EXPECT_EQ(withExtension("fig", "svg"), "fig.svg");
  EXPECT_EQ(withExtension("a.b/fig", "pdf"), "a.b/fig.pdf");
}

TEST(FigureFormat, FromTheExtension) {
  FigureFormat f;
  ASSERT_TRUE(figureFormatOf("out/fig.SVG", &f));
  EXPECT_EQ(f, FigureFormat::Svg);
  ASSERT_TRUE(figureFormatOf("fig.pdf", &f));
  EXPECT_EQ(f, FigureFormat::Pdf);
  ASSERT_TRUE(figureFormatOf("shot.png", &f));
  EXPECT_EQ(f, FigureFormat::Png);
  EXPECT_FALSE(figureFormatOf("fig.jpg", &f));
  EXPECT_FALSE(figureFormatOf("fig", &f));
  EXPECT_FALSE(figureFormatOf("a.svg/fig", &f));
  EXPECT_TRUE(isVectorFigurePath("x.pdf"));
  EXPECT_FALSE(isVectorFigurePath("x.png"));
}

TEST(Csv, HeaderOfKeysAndAColumnOfQueries) {
  Matrix m(2, 2);
  m << 1.0f, 0.0f, 0.5517f, 0.4483f;
  EXPECT_EQ(matrixCsv(m, tokenLabels({"Your", "journey"}, 2, true)),
            "query,Your,journey\nYour,1,0\njourney,0.5517,0.4483\n");
  Matrix c(2, 3);
  c << 1, 2, 3, 4, 5, -kInf;
  EXPECT_EQ(matrixCsv(c, tokenLabels({"a", "b"}, 3, false)), "token,d0,d1,d2\na,1,2,3\nb,4,5,-inf\n");
}

TEST(Csv, TokensAreQuotedWhenTheyMustBe) {
  Matrix m(2, 2);
  m << 1, 2, 3, 4;
  EXPECT_EQ(matrixCsv(m, tokenLabels({"a,b", "say \"hi\""}, 2, true)),
            "query,\"a,b\",\"say \"\"hi\"\"\"\n\"a,b\",1,2\n\"say \"\"hi\"\"\",3,4\n");
}

TEST(Csv, LabelsMustMatchTheShape) {
  Matrix m(2, 2);
  m.setZero();
  EXPECT_THROW(matrixCsv(m, tokenLabels({"only one"}, 2, true)), std::exception);
}

TEST(Csv, FileNamesCountFromOne) {
  EXPECT_EQ(mapFileStem(0, 0, Stage::Weights), "b1_h1_weights");
  EXPECT_EQ(mapFileStem(1, 2, Stage::MaskedScores), "b2_h3_masked_scores");
}

// MultiHeadAttention splits one projection's columns: head 2's queries are the queries' second
// column (the notebook's view + transpose), so its maps and W_q's columns are labelled from d1 on,
// and the wrapper's heads, each a CausalAttention of its own, from d0.
TEST(StageFigure, AHeadsColumnsAreLabelledAsTheModuleNumbersThem) {
  for (const auto& [variant, second_head_first] :
       {std::pair{Variant::MultiHead, "d1"}, std::pair{Variant::MultiHeadWrapper, "d0"}}) {
    const Workspace ws = bookExample(variant);
    const Trace t = computeTrace(inputsOf(ws), ws.model);
    ASSERT_EQ(t.heads, 2);
    const std::vector<std::string> tokens = ws.tokens;
    for (Stage s : {Stage::Queries, Stage::Keys, Stage::Values, Stage::Context, Stage::WQuery}) {
      const FigureSpec first = stageFigure(t, t.batches[0].heads[0], s, tokens, 0, 0);
      const FigureSpec second = stageFigure(t, t.batches[0].heads[1], s, tokens, 0, 1);
      ASSERT_FALSE(second.col_labels.empty());
      EXPECT_EQ(first.col_labels.front(), "d0") << stageInfo(s).id;
      EXPECT_EQ(second.col_labels.front(), second_head_first) << stageInfo(s).id;
      EXPECT_EQ(second.col_labels.size(), static_cast<std::size_t>(t.head_width));
    }
    // W's rows are the inputs, d0 … for every head.
    EXPECT_EQ(stageFigure(t, t.batches[0].heads[1], Stage::WQuery, tokens, 0, 1).row_labels.front(), "d0");
  }
}

// The causal example's weights (notebook 004 In[30], first three rows) and a masked row.
FigureSpec bookFigure() {
  static Matrix m = [] {
    Matrix w(3, 3);
    w << 1.0f, 0.0f, 0.0f, 0.5517f, 0.4483f, 0.0f, 0.3800f, 0.3097f, 0.3103f;
    return w;
  }();
  FigureSpec f;
  f.values = StageMap(m);
  f.row_labels = f.col_labels = {"Your", "journey", "starts"};
  f.title = "weights (softmax)";
  f.look.range = ValueRange{0, 1};
  return f;
}

TEST(VectorFigure, SvgHoldsNumbersAndLabelsAsText) {
  const std::string path = tempPath("weights.svg");
  ASSERT_EQ(writeVectorFigure(bookFigure(), path), "");
  const std::string svg = readFile(path);
  ASSERT_EQ(svg.rfind("<?xml", 0), 0u);
  const std::vector<std::string> texts = svgTexts(svg);
  for (const char* want :
       {"1.0000", "0.5517", "0.4483", "0.3800", "0.3097", "0.3103", "Your", "journey", "starts", "weights (softmax)"})
    EXPECT_NE(std::find(texts.begin(), texts.end(), want), texts.end()) << want << " is not a <text> of\n"
                                                                        << svg.substr(0, 400);
  EXPECT_NE(svg.find("<title>weights (softmax)</title>"), std::string::npos);
}

TEST(VectorFigure, AMapOfOneValueHasAOneColourBarThatSaysItOnce) {
  // One token: its weight 1, the range [1, 1]. The bar is that one colour (no gradient), the value
  // said once in the middle (it read "1" at both ends of a ramp).
  static Matrix m = Matrix::Constant(1, 1, 1.0f);
  FigureSpec f;
  f.values = StageMap(m);
  f.row_labels = f.col_labels = {"A"};
  f.title = "weights (softmax)";
  f.look.range = ValueRange{1, 1};
  const std::string path = tempPath("one.svg");
  ASSERT_EQ(writeVectorFigure(f, path), "");
  const std::string svg = readFile(path);
  EXPECT_EQ(svg.find("linearGradient"), std::string::npos) << svg.substr(0, 600);
  const std::vector<std::string> texts = svgTexts(svg);
  EXPECT_EQ(std::count(texts.begin(), texts.end(), "1"), 1) << "the value at the bar, once";
  f.look.range = ValueRange{0, 1};  // two values: the ramp
  ASSERT_EQ(writeVectorFigure(f, path), "");
  EXPECT_NE(readFile(path).find("linearGradient"), std::string::npos);
}

TEST(VectorFigure, MaskedCellsFlagsEscapingAndBadText) {
  static Matrix m = [] {
    Matrix w(2, 2);
    w << 0.2899f, -kInf, 0.4656f, 0.1723f;
    return w;
  }();
  FigureSpec f;
  f.values = StageMap(m);
  f.row_labels = {"<b>&", std::string("bad\xff\x01"
                                      "byte")};  // markup, an invalid byte, a control
  f.col_labels = {"k1", "k2"};
  f.title = "masked";
  f.look.range = ValueRange{0.1723f, 0.4656f};
  f.look.legend = "▨ −∞ masked";
  const std::string path = tempPath("masked.svg");
  ASSERT_EQ(writeVectorFigure(f, path), "");
  const std::vector<std::string> texts = svgTexts(readFile(path));
  EXPECT_NE(std::find(texts.begin(), texts.end(), "−∞"), texts.end());
  EXPECT_NE(std::find(texts.begin(), texts.end(), "0.2899"), texts.end());
  EXPECT_NE(std::find(texts.begin(), texts.end(), "&lt;b&gt;&amp;"), texts.end());
  EXPECT_NE(std::find(texts.begin(), texts.end(), "bad\xEF\xBF\xBD byte"), texts.end());
  EXPECT_NE(std::find(texts.begin(), texts.end(), "−∞ masked"), texts.end());

  f.look.cell_text = [](float v) { return std::string(v > 0.5f ? "1" : "0"); };  // a 0/1 map's own labels
  static Matrix mask = [] {
    Matrix w(2, 2);
    w << 0, 1, 0, 0;
    return w;
  }();
  f.values = StageMap(mask);
  f.look.range = ValueRange{0, 1};
  f.look.legend.clear();
  ASSERT_EQ(writeVectorFigure(f, tempPath("mask.svg")), "");
  const std::vector<std::string> mask_texts = svgTexts(readFile(tempPath("mask.svg")));
  EXPECT_EQ(std::count(mask_texts.begin(), mask_texts.end(), "1"), 2);  // one cell and the colorbar's end
  EXPECT_EQ(std::count(mask_texts.begin(), mask_texts.end(), "0"), 4);  // three cells and the other end
}

// Every Unicode noncharacter is valid UTF-8 that cairo refuses ("input string not valid UTF-8") and
// XML in part too: a token holding one made every SVG and PDF export fail. Each becomes U+FFFD; the
// characters around it and valid neighbours (U+FFFD itself, U+FDCF, U+10FFFD) stay.
TEST(VectorFigure, NoncharactersInLabelsDrawAsReplacement) {
  auto utf8 = [](std::uint32_t cp) {
    std::string s;
    if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    }
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
    return s;
  };
  std::vector<std::uint32_t> nonchars;
  for (std::uint32_t cp = 0xFDD0; cp <= 0xFDEF; ++cp) nonchars.push_back(cp);
  for (std::uint32_t plane = 0; plane <= 0x10; ++plane) {
    nonchars.push_back(plane << 16 | 0xFFFE);
    nonchars.push_back(plane << 16 | 0xFFFF);
  }
  ASSERT_EQ(nonchars.size(), 66u);
  for (const std::uint32_t cp : nonchars) {
    FigureSpec f = bookFigure();
    f.row_labels[1] = "a" + utf8(cp) + "b";
    f.col_labels[2] = utf8(cp);
    f.title = "weights " + utf8(cp);
    for (const char* ext : {".svg", ".pdf"}) {
      const std::string path = tempPath(std::string("nonchar") + ext);
      ASSERT_EQ(writeVectorFigure(f, path), "") << "U+" << std::hex << cp << " in " << ext;
    }
    const std::vector<std::string> texts = svgTexts(readFile(tempPath("nonchar.svg")));
    EXPECT_NE(std::find(texts.begin(), texts.end(),
                        "a\xEF\xBF\xBD"
                        "b"),
              texts.end())
        << std::hex << cp;
  }
  FigureSpec f = bookFigure();
  f.row_labels = {"\xEF\xBF\xBD", utf8(0xFDCF), utf8(0x10FFFD)};
  ASSERT_EQ(writeVectorFigure(f, tempPath("valid.svg")), "");
  const std::vector<std::string> texts = svgTexts(readFile(tempPath("valid.svg")));
  for (const std::string& want : f.row_labels) EXPECT_NE(std::find(texts.begin(), texts.end(), want), texts.end());
}

TEST(VectorFigure, PdfIsWritten) {
  const std::string path = tempPath("weights.pdf");
  ASSERT_EQ(writeVectorFigure(bookFigure(), path), "");
  const std::string pdf = readFile(path);
  EXPECT_EQ(pdf.rfind("%PDF-", 0), 0u);
  EXPECT_NE(pdf.find("%%EOF"), std::string::npos);
}

// The first number after `attribute="` in the element holding `marker`, or the SVG element's.
double svgNumber(const std::string& svg, const std::string& marker, const std::string& attribute) {
  const std::size_t at = marker.empty() ? svg.find("<svg") : svg.find(marker);
  if (at == std::string::npos) return -1;
  const std::size_t start = svg.rfind('<', at);
  const std::size_t a = svg.find(attribute + "=\"", start);
  if (a == std::string::npos || a > svg.find('>', start)) return -1;
  return std::atof(svg.c_str() + a + attribute.size() + 2);
}

// The app's text size: a figure at 200 % is the 100 % figure twice as large — its page,
// and its text as <text> font sizes; the same words in the same places relative to the page.
TEST(VectorFigure, TheScaleMakesTheWholeFigureLarger) {
  ASSERT_EQ(writeVectorFigure(bookFigure(), tempPath("at100.svg")), "");
  FigureOptions twice;
  twice.scale = 2;
  ASSERT_EQ(writeVectorFigure(bookFigure(), tempPath("at200.svg"), twice), "");
  const std::string a = readFile(tempPath("at100.svg")), b = readFile(tempPath("at200.svg"));
  EXPECT_EQ(svgTexts(a), svgTexts(b));
  for (const char* attribute : {"width", "height"}) {
    const double w1 = svgNumber(a, "", attribute), w2 = svgNumber(b, "", attribute);
    EXPECT_GT(w1, 50) << attribute;
    EXPECT_NEAR(w2, 2 * w1, 1e-6) << attribute;
  }
  for (const char* text : {">0.5517</text>", ">journey</text>", ">weights (softmax)</text>"}) {
    const double f1 = svgNumber(a, text, "font-size"), f2 = svgNumber(b, text, "font-size");
    EXPECT_GT(f1, 5) << text;
    EXPECT_NEAR(f2, 2 * f1, 1e-6) << text;
    EXPECT_NEAR(svgNumber(b, text, "x"), 2 * svgNumber(a, text, "x"), 2e-3) << text;
  }
  twice.scale = 0.5;
  EXPECT_NE(writeVectorFigure(bookFigure(), tempPath("small.svg"), twice), "");
}

TEST(VectorFigure, ErrorsAreMessages) {
  EXPECT_NE(writeVectorFigure(bookFigure(), tempPath("fig.png")), "");
  EXPECT_NE(writeVectorFigure(bookFigure(), tempPath("fig")), "");
  const std::string missing = tempPath("no-such-folder") + "/fig.svg";
  const std::string error = writeVectorFigure(bookFigure(), missing);
  EXPECT_NE(error.find(missing), std::string::npos) << error;
  FigureSpec f = bookFigure();
  f.row_labels.pop_back();
  EXPECT_NE(writeVectorFigure(f, tempPath("labels.svg")), "");
  FigureSpec empty;
  EXPECT_NE(writeVectorFigure(empty, tempPath("empty.svg")), "");
}

TEST(VectorFigure, LargeMapsShrinkAndDropTheirNumbers) {
  Matrix big(300, 300);
  for (int i = 0; i < 300; ++i)
    for (int j = 0; j < 300; ++j) big(i, j) = static_cast<float>((i * 7 + j * 3) % 11) / 10.0f;
  FigureSpec f;
  f.values = StageMap(big);
  f.look.range = ValueRange{0, 1};
  const std::string path = tempPath("big.svg");
  ASSERT_EQ(writeVectorFigure(f, path), "");
  const std::vector<std::string> texts = svgTexts(readFile(path));
  // The colorbar's ends and its inner ticks (0.2, 0.4, 0.6, 0.8, as the app's): no cell numbers.
  EXPECT_EQ(texts, (std::vector<std::string>{"0", "1", "0.2", "0.4", "0.6", "0.8"}));
}

// The colorbar's legend is never written over a tick's label: on the range's line only where it
// clears them all, else below it (a 14-token weights map coloured to 0.684 had its "top: …" note
// over "0.4"). Text is estimated at 0.45 em a character, less than DejaVu Sans's digits and letters.
TEST(VectorFigure, TheLegendNeverCoversATickLabel) {
  Matrix m(14, 14);
  for (int i = 0; i < 14; ++i)
    for (int j = 0; j < 14; ++j) m(i, j) = j <= i ? 0.684f / static_cast<float>(i + j + 1) : 0.0f;
  FigureSpec f;
  f.values = StageMap(m);
  f.look.range = ValueRange{0, 0.684f};
  f.look.legend = "top: the largest below row 1 (row 1 is 1)";
  const std::string path = tempPath("legend.svg");
  ASSERT_EQ(writeVectorFigure(f, path), "");
  const std::string svg = readFile(path);
  struct Placed {
    std::string text;
    double x0, x1, y;
  };
  std::vector<Placed> placed;
  for (std::size_t at = svg.find("<text"); at != std::string::npos; at = svg.find("<text", at + 1)) {
    const std::size_t open = svg.find('>', at), close = svg.find("</text>", at);
    const std::string tag = svg.substr(at, open - at), text = svg.substr(open + 1, close - open - 1);
    const auto attr = [&](const std::string& name) {
      const std::size_t p = tag.find(" " + name + "=\"");
      return p == std::string::npos ? 0.0 : std::atof(tag.c_str() + p + name.size() + 3);
    };
    const double w = 0.45 * attr("font-size") * static_cast<double>(text.size()), x = attr("x");
    const double x0 = tag.find("text-anchor=\"middle\"") != std::string::npos ? x - w / 2
                      : tag.find("text-anchor=\"end\"") != std::string::npos  ? x - w
                                                                              : x;
    placed.push_back({text, x0, x0 + w, attr("y")});
  }
  const auto legend = std::find_if(placed.begin(), placed.end(), [](const Placed& p) { return p.text[0] == 't'; });
  ASSERT_NE(legend, placed.end());
  int ticks = 0;
  for (const Placed& p : placed)
    if (p.text == "0.2" || p.text == "0.4" || p.text == "0.6") {
      ++ticks;
      EXPECT_FALSE(p.y == legend->y && p.x1 > legend->x0 && p.x0 < legend->x1)
          << "the legend [" << legend->x0 << ", " << legend->x1 << "] over the tick " << p.text << " at " << p.x0;
    }
  EXPECT_EQ(ticks, 3);  // the ticks keep their labels
}

// Keys' labels that read upwards, but for one character: turned, "I" is a dash and "." a speck
// beside its column. Both renderers ask keyLabelStaysAcross (the window's map the same).
TEST(VectorFigure, OneCharacterKeysStayAcross) {
  EXPECT_TRUE(keyLabelStaysAcross("I"));
  EXPECT_TRUE(keyLabelStaysAcross("."));
  EXPECT_TRUE(keyLabelStaysAcross("\u00e9"));  // é: one code point, two bytes
  EXPECT_TRUE(keyLabelStaysAcross("\u4e2d"));  // 中
  EXPECT_FALSE(keyLabelStaysAcross(""));
  EXPECT_FALSE(keyLabelStaysAcross("\u0120a"));  // Ġa
  EXPECT_FALSE(keyLabelStaysAcross("\xff"));
  Matrix m = Matrix::Constant(5, 5, 0.2f);
  FigureSpec f;
  f.values = StageMap(m);
  f.look.range = ValueRange{0, 1};
  f.row_labels = f.col_labels = {"I", "\u0120travelled", "\u0120a", "\u0120distance", "."};
  const std::string path = tempPath("keys.svg");
  ASSERT_EQ(writeVectorFigure(f, path), "");
  const std::string svg = readFile(path);
  std::map<std::string, bool> turned;  // the keys' labels (the second of each name): rotated or not
  std::map<std::string, int> seen;
  for (std::size_t at = svg.find("<text"); at != std::string::npos; at = svg.find("<text", at + 1)) {
    const std::size_t open = svg.find('>', at), close = svg.find("</text>", at);
    const std::string text = svg.substr(open + 1, close - open - 1);
    if (++seen[text] == 2) turned[text] = svg.substr(at, open - at).find("rotate(") != std::string::npos;
  }
  EXPECT_TRUE(turned.at("\u0120travelled"));  // the keys read upwards …
  EXPECT_TRUE(turned.at("\u0120distance"));
  EXPECT_FALSE(turned.at("I"));  // … but for one character
  EXPECT_FALSE(turned.at("."));
}

// The names a thinned axis keeps whatever its step: the selection, then the places in order, each
// where none kept before is within a step. Three places a step apart but for the middle one: the
// first and the last named (the last had given way to the middle one, itself crowded out).
TEST(VectorFigure, PinnedNamesGiveWayOnlyToNamesDrawn) {
  EXPECT_EQ(pinnedAxisNames(-1, {10, 13, 16}, 5), (std::vector<int>{10, 16}));
  EXPECT_EQ(pinnedAxisNames(12, {10, 16, 30}, 5), (std::vector<int>{12, 30}));  // the selection first
  EXPECT_EQ(pinnedAxisNames(-1, {10, 10, 15}, 5), (std::vector<int>{10, 15}));
  EXPECT_EQ(pinnedAxisNames(3, {4, 5}, 1), (std::vector<int>{3, 4, 5}));  // unthinned: every one
  const std::vector<int> pinned = {10, 16};
  EXPECT_TRUE(pinnedAxisNamed(10, pinned, 5, false));
  EXPECT_FALSE(pinnedAxisNamed(13, pinned, 5, true));  // the crowded-out place: a neighbour of both
  EXPECT_FALSE(pinnedAxisNamed(20, pinned, 5, true));  // a thinned name gives way to a pinned one
  EXPECT_TRUE(pinnedAxisNamed(21, pinned, 5, true));
  EXPECT_FALSE(pinnedAxisNamed(22, pinned, 5, false));
}

// A map too fine for every token's name names one every few cells, each starting with its position
// ("12 Ġsat"): every sixth name alone read as a word ("T Ġ n a Ġ a t ."). One rule for the figures
// and the window (its layout dump's axis_names, tests/gui/test_model_view.py).
TEST(VectorFigure, ThinnedNamesSayTheirPositions) {
  EXPECT_EQ(axisName("\u0120sat", 11, 6), "12 \u0120sat");  // the twelfth token: counted from 1
  EXPECT_EQ(axisName("\u0120sat", 11, 1), "\u0120sat");     // every name shown: no number
  EXPECT_EQ(axisName("d15", -1, 6), "d15");              // a dimension is no token
  EXPECT_EQ(tokenPosition(40, 2), 42);                   // a zoomed figure's third row
  EXPECT_EQ(tokenPosition(-1, 2), -1);
  EXPECT_EQ(axisNameStep(13, 2.5), 6);         // six cells at least …
  EXPECT_EQ(axisNameStep(13, 2.5, true), 10);  // … on a ruler's steps, 10
  EXPECT_EQ(axisNameStep(13, 6, true), 5);
  EXPECT_EQ(axisNameStep(13, 7, true), 2);
  EXPECT_EQ(axisNameStep(13, 13, true), 1);
  EXPECT_EQ(axisNameStep(23, 1, true), 25);  // between 20 and 50
  // Numbers for thinned names: worth 15 % of the cells where most rows go unnamed (a 95-token map at
  // 1280 × 800 and 150 %: 16-px names on 2.6-px cells, every seventh named), else a tenth (a 14-token
  // map at 200 %: 21-px names on 9.9-px cells, every third).
  EXPECT_FLOAT_EQ(numberedNamesShare(16, 2.585), 0.85f);
  EXPECT_FLOAT_EQ(numberedNamesShare(21, 9.9), 0.9f);
  EXPECT_TRUE(axisNamed(4, 4, 5));    // the fifth token: "5 …"
  EXPECT_FALSE(axisNamed(0, 0, 5));   // not the first
  EXPECT_TRUE(axisNamed(-1, 10, 5));  // a dimension's d10
  const std::vector<std::string> words = {"The", "\u0120cat", "\u0120sat"};
  Matrix m = Matrix::Constant(120, 120, 0.5f);
  FigureSpec f;
  f.values = StageMap(m);
  f.look.range = ValueRange{0, 1};
  for (int i = 0; i < 120; ++i) f.row_labels.push_back(words[static_cast<std::size_t>(i % 3)]);
  f.col_labels = f.row_labels;
  f.first_row_token = f.first_col_token = 0;
  const std::string path = tempPath("thinned.svg");
  ASSERT_EQ(writeVectorFigure(f, path), "");
  std::vector<int> positions;  // the rows' names, then the keys', from 0
  for (const std::string& text : svgTexts(readFile(path))) {
    const std::size_t space = text.find(' ');
    if (space == std::string::npos) continue;  // the colorbar's numbers
    const int at = std::atoi(text.substr(0, space).c_str()) - 1;  // the names count from 1
    EXPECT_EQ(text, std::to_string(at + 1) + " " + words[static_cast<std::size_t>(at % 3)]);
    positions.push_back(at);
  }
  ASSERT_GE(positions.size(), 4u);
  const int step = positions[1] - positions[0];  // the fifth, tenth, … token: numbers on a ruler's steps
  EXPECT_TRUE(step == 2 || step == 5 || step == 10 || step == 20 || step == 25) << step;
  std::vector<int> expected;
  for (int axis = 0; axis < 2; ++axis)
    for (int at = step - 1; at < 120; at += step) expected.push_back(at);
  EXPECT_EQ(positions, expected);

  // The lines figure of a long text alike: queries and keys every few, numbered on a ruler's steps.
  LinesFigureSpec lines;
  for (int i = 0; i < 300; ++i) lines.tokens.push_back(words[static_cast<std::size_t>(i % 3)]);
  const std::string lines_path = tempPath("thinned-lines.svg");
  ASSERT_EQ(writeLinesFigure(lines, lines_path), "");
  std::vector<int> named;
  for (const std::string& text : svgTexts(readFile(lines_path))) {
    const std::size_t space = text.find(' ');
    if (space == std::string::npos) continue;  // "queries", "keys"
    const int at = std::atoi(text.substr(0, space).c_str()) - 1;
    EXPECT_EQ(text, std::to_string(at + 1) + " " + words[static_cast<std::size_t>(at % 3)]);
    named.push_back(at);
  }
  ASSERT_GE(named.size(), 8u);  // each twice: the query's name, then the key's
  const int every = named[2] - named[0];
  EXPECT_TRUE(every == 2 || every == 5 || every == 10 || every == 20 || every == 25) << every;
  EXPECT_EQ(named[0], every - 1);
}

// A figure on a log scale: a tick per power of ten, and exact zeros in a colour of their own (not
// the bottom colour, which is the smallest positive value's), said by the legend.
TEST(VectorFigure, LogScaleHasTicksAndZerosTheirOwnColour) {
  Matrix m(3, 3);
  m << 1.0f, 0.0f, 0.0f, 0.5f, 0.001f, 0.0f, 0.2f, 0.05f, 0.004f;
  FigureSpec f;
  f.values = StageMap(m);
  f.look.range = ValueRange{0, 1, 0.001f};
  f.look.scale = ColourScale::Log;
  f.look.legend = kZeroLegend;
  const std::string path = tempPath("log.svg");
  ASSERT_EQ(writeVectorFigure(f, path), "");
  const std::string svg = readFile(path);
  const std::vector<std::string> texts = svgTexts(svg);
  for (const char* tick : {"0.01", "0.1"})
    EXPECT_NE(std::find(texts.begin(), texts.end(), tick), texts.end()) << "no tick " << tick;
  EXPECT_NE(std::find(texts.begin(), texts.end(), "exactly 0: below a log scale"), texts.end());
  EXPECT_TRUE(zeroOffLogScale(0.0f, f.look.range, f.look.scale));  // (the cells' colours: gui_colour_scales, by pixel)
  EXPECT_FALSE(zeroOffLogScale(0.001f, f.look.range, f.look.scale));
  EXPECT_FALSE(zeroOffLogScale(0.0f, f.look.range, ColourScale::Linear));
}

}  // namespace
}  // namespace attnscope
