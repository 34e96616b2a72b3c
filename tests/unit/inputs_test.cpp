// Inputs panel edits (core/token_table.h, docs/DESIGN.md §3 Inputs panel): typed sentences give every word a
// deterministic embedding (checked against values printed by Debian's torch 1.13, with the FNV-1a
// word hash computed independently in Python); randomize is torch.rand; token insert / remove /
// move / rename, cell edits and d_in changes produce exactly the expected table; a refused edit
// leaves the workspace unchanged; 'simple' keeps d_out = d_in; every edit drops the random recipe.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "editing/token_table.h"
#include "engine/errors.h"
#include "formats/workspace_file.h"
#include "test_support.h"

namespace attnscope {
namespace {

const char* kBookSentence = "Your journey starts with one step";
const std::vector<std::string> kBookTokens = {"Your", "journey", "starts", "with", "one", "step"};

// Float values printed by torch (exact decimal of each float32) as a 1 × n matrix.
Matrix rowOf(std::initializer_list<double> values) { return test::rows({values}); }
Matrix rowOf(const std::vector<float>& v) {
  Matrix m(1, static_cast<int>(v.size()));
  for (std::size_t i = 0; i < v.size(); ++i) m(0, static_cast<int>(i)) = v[i];
  return m;
}

// The message of the InputError `edit` throws ("" if it does not throw one).
template <class Edit>
std::string errorOf(Edit edit) {
  try {
    edit();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

Workspace randomWorkspace() {  // a workspace that still carries its random recipe
  return parseWorkspace(R"({"format": "attnscope-workspace", "version": 1,
    "embeddings": {"random": "uniform", "seed": 5, "rows": 4, "cols": 3},
    "model": {"variant": "multihead"}})");
}

// ---- words and sentences -------------------------------------------------------------------

TEST(WordEmbedding, MatchesTorchRandOfTheWordHash) {
  // /usr/bin/python3: h = FNV-1a over word.lower().encode('utf-8') + struct.pack('<I', seed);
  // torch.manual_seed(h); torch.rand(d_in).tolist()
  // "journey", seed 123 → h = 2734583144
  EXPECT_TRUE(test::bitwiseEqual(rowOf(wordEmbedding("journey", 3, 123)),
                                 rowOf({0.9365062117576599, 0.10838896036148071, 0.32853078842163086})));
  // "step", seed 0 → h = 679701503
  EXPECT_TRUE(test::bitwiseEqual(rowOf(wordEmbedding("step", 4, 0)), rowOf({0.61252361536026, 0.687980055809021,
                                                                            0.0547526478767395, 0.13238263130187988})));
  // "naïve" (UTF-8 bytes), seed 42 → h = 3411986193
  EXPECT_TRUE(test::bitwiseEqual(rowOf(wordEmbedding("na\xc3\xafve", 3, 42)),
                                 rowOf({0.688872754573822, 0.002256333827972412, 0.7847124934196472})));
  // Capitals hash as small letters: "The", seed 9 → h = 3194551909 (the hash of "the");
  // "NAÏVE" is "naïve" (Latin-1), "Über", seed 1 → h = 1050207150.
  EXPECT_TRUE(test::bitwiseEqual(rowOf(wordEmbedding("The", 3, 9)),
                                 rowOf({0.9102786183357239, 0.8666620254516602, 0.44330596923828125})));
  EXPECT_TRUE(test::bitwiseEqual(rowOf(wordEmbedding("NA\xc3\x8fVE", 3, 42)),
                                 rowOf({0.688872754573822, 0.002256333827972412, 0.7847124934196472})));
  EXPECT_TRUE(test::bitwiseEqual(rowOf(wordEmbedding("\xc3\x9c"
                                                     "ber",
                                                     3, 1)),
                                 rowOf({0.18208247423171997, 0.1839403510093689, 0.36391115188598633})));
  // A wider d_in continues the same draws: torch.rand(5) starts with torch.rand(3).
  EXPECT_TRUE(test::bitwiseEqual(rowOf(wordEmbedding("journey", 5, 123)),
                                 rowOf({0.9365062117576599, 0.10838896036148071, 0.32853078842163086,
                                        0.17475032806396484, 0.34837836027145386})));
}

TEST(WordEmbedding, SameWordSameVectorInAnySentenceAndPosition) {
  Workspace a = bookExample(), b = bookExample();
  setSentence(a, "one step at a time", 9);
  setSentence(b, "the first step is one", 9);
  ASSERT_EQ(a.tokens[1], "step");
  ASSERT_EQ(b.tokens[2], "step");
  EXPECT_TRUE(test::bitwiseEqual(a.embeddings.row(1), b.embeddings.row(2)));  // "step"
  EXPECT_TRUE(test::bitwiseEqual(a.embeddings.row(0), b.embeddings.row(4)));  // "one"
  EXPECT_TRUE(test::bitwiseEqual(a.embeddings.row(1), rowOf(wordEmbedding("step", 3, 9))));
  // Repeated in one sentence, too.
  Workspace c = bookExample();
  setSentence(c, "step by step", 9);
  EXPECT_TRUE(test::bitwiseEqual(c.embeddings.row(0), c.embeddings.row(2)));
  EXPECT_TRUE(test::bitwiseEqual(c.embeddings.row(0), a.embeddings.row(1)));
  // … whatever its capitals: "The" and "the" share one vector, and keep their own spelling.
  Workspace d = bookExample();
  setSentence(d, "The cat saw the dog. THE END", 9);
  ASSERT_EQ(d.tokens[0], "The");
  ASSERT_EQ(d.tokens[3], "the");
  ASSERT_EQ(d.tokens[6], "THE");
  EXPECT_TRUE(test::bitwiseEqual(d.embeddings.row(0), d.embeddings.row(3)));
  EXPECT_TRUE(test::bitwiseEqual(d.embeddings.row(0), d.embeddings.row(6)));
  EXPECT_FALSE(test::bitwiseEqual(d.embeddings.row(0), d.embeddings.row(1)));
}

TEST(WordEmbedding, FoldCase) {
  EXPECT_EQ(foldCase("The"), "the");
  EXPECT_EQ(foldCase("ABC xyz 09"), "abc xyz 09");
  EXPECT_EQ(foldCase("\xc3\x9c"
                     "BER"),
            "\xc3\xbc"
            "ber");                                             // Über → über
  EXPECT_EQ(foldCase("\xc3\x97"), "\xc3\x97");                  // × is no letter
  EXPECT_EQ(foldCase("\xce\x91\xce\x92"), "\xce\xb1\xce\xb2");  // ΑΒ → αβ
  EXPECT_EQ(foldCase("\xd0\x96"), "\xd0\xb6");                  // Ж → ж
  EXPECT_EQ(foldCase("\xc5\x81"
                     "\xc3\xb3"
                     "d\xc5\xba"),
            "\xc5\x82"
            "\xc3\xb3"
            "d\xc5\xba");                                       // Łódź → łódź
  EXPECT_EQ(foldCase("\xe2\x82\xac\xff"), "\xe2\x82\xac\xff");  // € and a stray byte stay
}

TEST(WordEmbedding, DifferentWordsSeedsAndWidthsDiffer) {
  const std::vector<float> step = wordEmbedding("step", 4, 1);
  EXPECT_EQ(step, wordEmbedding("Step", 4, 1));  // case-insensitive: one word
  EXPECT_EQ(step, wordEmbedding("STEP", 4, 1));
  EXPECT_NE(step, wordEmbedding("steps", 4, 1));
  EXPECT_NE(step, wordEmbedding("step", 4, 2));  // another seed
  EXPECT_NE(wordEmbedding("ab", 4, 0), wordEmbedding("ba", 4, 0));
  const std::vector<float> wide = wordEmbedding("step", 7, 1);
  ASSERT_EQ(wide.size(), 7u);
  EXPECT_EQ(std::vector<float>(wide.begin(), wide.begin() + 4), step);  // a prefix, by design
  EXPECT_NE(wide[4], wide[5]);
}

TEST(WordEmbedding, ValuesAreInTheUnitInterval) {
  float lo = 1, hi = 0;
  for (const char* w : {"Your", "journey", "starts", "with", "one", "step", ".", "", "☃"})
    for (std::uint32_t seed : {0u, 1u, 123u, 4294967295u})
      for (float v : wordEmbedding(w, 64, seed)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        ASSERT_TRUE(v >= 0.0f && v < 1.0f) << w << " seed " << seed << ": " << v;
      }
  EXPECT_LT(lo, 0.05f);  // the draws really spread over [0, 1)
  EXPECT_GT(hi, 0.95f);
}

TEST(SplitSentence, WordsAndPunctuation) {
  EXPECT_EQ(splitSentence(kBookSentence, 100), kBookTokens);
  EXPECT_EQ(splitSentence("  Hello,\tworld!\nIs it:  one; step? Yes.", 100),
            (std::vector<std::string>{"Hello", ",", "world", "!", "Is", "it", ":", "one", ";", "step", "?", "Yes",
                                      "."}));
  EXPECT_EQ(splitSentence("wait...", 100), (std::vector<std::string>{"wait", ".", ".", "."}));
  EXPECT_EQ(splitSentence("don't na\xc3\xafve", 100), (std::vector<std::string>{"don't", "na\xc3\xafve"}));
  EXPECT_EQ(splitSentence(kBookSentence, 6).size(), 6u);  // exactly at the limit is fine
}

// The sentence field shows the tokens as they were typed: punctuation joined to its word.
TEST(SplitSentence, JoinedAgainAsTyped) {
  EXPECT_EQ(joinSentence(splitSentence("Hello, world! Is it: one; step? Yes.", 100)),
            "Hello, world! Is it: one; step? Yes.");
  EXPECT_EQ(joinSentence(splitSentence("wait...", 100)), "wait...");
  EXPECT_EQ(joinSentence(kBookTokens), kBookSentence);
  for (const char* s : {"a , b", ". starts", "x.y", ",,"})
    EXPECT_EQ(splitSentence(joinSentence(splitSentence(s, 100)), 100), splitSentence(s, 100)) << s;
}

TEST(SplitSentence, RefusesNothingAndTooMuch) {
  for (const char* empty : {"", "   ", "\t\n"}) {
    const std::string e = errorOf([&] { splitSentence(empty, 10); });
    EXPECT_EQ(e.rfind("sentence: ", 0), 0u) << "'" << empty << "' gave: " << e;
  }
  const std::string e = errorOf([] { splitSentence(kBookSentence, 5); });
  EXPECT_EQ(e.rfind("sentence: ", 0), 0u) << e;
  EXPECT_NE(e.find("5"), std::string::npos) << "the message should give the limit: " << e;
  EXPECT_NE(errorOf([] { splitSentence("a b c.", 3); }), "");  // "." is a fourth token
}

TEST(SetSentence, TokensRowsAndModel) {
  Workspace ws = bookExample(Variant::MultiHead);
  setInputWidth(ws, 4, 1);
  setSentence(ws, "Hello, attention!", 77);
  EXPECT_EQ(ws.tokens, (std::vector<std::string>{"Hello", ",", "attention", "!"}));
  ASSERT_EQ(ws.embeddings.rows(), 4);
  ASSERT_EQ(ws.embeddings.cols(), 4);  // d_in is kept
  for (int i = 0; i < 4; ++i)
    EXPECT_TRUE(test::bitwiseEqual(ws.embeddings.row(i), rowOf(wordEmbedding(ws.tokens[i], 4, 77)))) << ws.tokens[i];
  EXPECT_EQ(ws.model.d_out, 2);  // multihead's d_out is its own
  EXPECT_NO_THROW(validateModel(ws.model, 4, 4, Limits{}));
}

// ---- randomize and reset -------------------------------------------------------------------

TEST(RandomizeEmbeddings, EqualsTorchRand) {
  // /usr/bin/python3 -c "import torch; torch.manual_seed(7); print(torch.rand(2,3).tolist())"
  Workspace ws = bookExample();
  removeToken(ws, 5);
  removeToken(ws, 4);
  removeToken(ws, 3);
  removeToken(ws, 2);
  randomizeEmbeddings(ws, 7);
  EXPECT_TRUE(
      test::bitwiseEqual(ws.embeddings, test::rows({{0.5349225401878357, 0.19880318641662598, 0.6592116951942444},
                                                    {0.6568902730941772, 0.23276156187057495, 0.4250614047050476}})));
  EXPECT_EQ(ws.tokens, (std::vector<std::string>{"Your", "journey"}));
  // torch.manual_seed(2024); torch.rand(6, 3)
  Workspace book = bookExample();
  randomizeEmbeddings(book, 2024);
  EXPECT_TRUE(
      test::bitwiseEqual(book.embeddings, test::rows({{0.5317158699035645, 0.8312679529190063, 0.9718379974365234},
                                                      {0.11930084228515625, 0.16690224409103394, 0.3494589328765869},
                                                      {0.21499240398406982, 0.6201280951499939, 0.4848504662513733},
                                                      {0.7492141127586365, 0.15209585428237915, 0.562518835067749},
                                                      {0.173475444316864, 0.7045942544937134, 0.9265328645706177},
                                                      {0.4060955047607422, 0.30449897050857544, 0.9073178768157959}})));
  EXPECT_EQ(book.tokens, kBookTokens);
}

TEST(ResetToBookExample, GivesTheBookAndKeepsTheModel) {
  Workspace ws = bookExample(Variant::MultiHead);
  ws.model.d_out = 4;
  ws.model.num_heads = 4;
  ws.view = {{"zoom", 2}};
  setSentence(ws, "a completely different sentence here", 3);
  setInputWidth(ws, 8, 3);
  resetToBookExample(ws);
  EXPECT_EQ(ws.tokens, kBookTokens);
  EXPECT_TRUE(test::matchesPrinted(ws.embeddings, test::bookInputs()));  // the notebook's In[1]
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings, test::bookInputs()));
  EXPECT_EQ(ws.model.variant, Variant::MultiHead);
  EXPECT_EQ(ws.model.d_out, 4);
  EXPECT_EQ(ws.model.num_heads, 4);
  EXPECT_EQ(ws.view, nlohmann::json({{"zoom", 2}}));
  EXPECT_FALSE(ws.random.has_value());
}

TEST(Simple, DoutFollowsDin) {
  Workspace ws = bookExample(Variant::Simple);
  ASSERT_EQ(ws.model.d_out, 3);
  setInputWidth(ws, 5, 1);
  EXPECT_EQ(ws.model.d_out, 5);
  EXPECT_NO_THROW(validateModel(ws.model, 6, 5, Limits{}));
  setSentence(ws, "short one", 1);
  EXPECT_EQ(ws.model.d_out, 5);
  EXPECT_NO_THROW(validateModel(ws.model, 2, 5, Limits{}));
  setInputWidth(ws, 2, 1);
  EXPECT_EQ(ws.model.d_out, 2);
  resetToBookExample(ws);
  EXPECT_EQ(ws.model.d_out, 3);
  EXPECT_NO_THROW(validateModel(ws.model, 6, 3, Limits{}));
  // Other variants keep their own d_out.
  Workspace mh = bookExample(Variant::Causal);
  setInputWidth(mh, 7, 1);
  EXPECT_EQ(mh.model.d_out, 2);
}

// ---- token operations ----------------------------------------------------------------------

TEST(InsertToken, NamedInTheMiddle) {
  const Workspace before = bookExample();
  Workspace ws = before;
  insertToken(ws, 2, "cat", 31);
  EXPECT_EQ(ws.tokens, (std::vector<std::string>{"Your", "journey", "cat", "starts", "with", "one", "step"}));
  ASSERT_EQ(ws.embeddings.rows(), 7);
  ASSERT_EQ(ws.embeddings.cols(), 3);
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings.topRows(2), before.embeddings.topRows(2)));
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings.bottomRows(4), before.embeddings.bottomRows(4)));
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings.row(2), rowOf(wordEmbedding("cat", 3, 31))));
}

TEST(InsertToken, AtBothEndsAndDefaultNames) {
  const Workspace before = bookExample();
  Workspace ws = before;
  insertToken(ws, 6, "", 4);  // append
  insertToken(ws, 0, "", 4);  // prepend; "t1" is taken now
  EXPECT_EQ(ws.tokens, (std::vector<std::string>{"t2", "Your", "journey", "starts", "with", "one", "step", "t1"}));
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings.middleRows(1, 6), before.embeddings));
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings.row(7), rowOf(wordEmbedding("t1", 3, 4))));
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings.row(0), rowOf(wordEmbedding("t2", 3, 4))));
  // The same insertion with the same seed gives the same row (deterministic).
  Workspace again = before;
  insertToken(again, 6, "", 4);
  EXPECT_TRUE(test::bitwiseEqual(again.embeddings.row(6), ws.embeddings.row(7)));
}

TEST(RemoveToken, FirstMiddleLast) {
  const Workspace before = bookExample();
  Workspace ws = before;
  removeToken(ws, 3);  // "with"
  EXPECT_EQ(ws.tokens, (std::vector<std::string>{"Your", "journey", "starts", "one", "step"}));
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings.topRows(3), before.embeddings.topRows(3)));
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings.bottomRows(2), before.embeddings.bottomRows(2)));
  removeToken(ws, 0);
  removeToken(ws, 3);
  EXPECT_EQ(ws.tokens, (std::vector<std::string>{"journey", "starts", "one"}));
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings.row(0), before.embeddings.row(1)));
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings.row(1), before.embeddings.row(2)));
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings.row(2), before.embeddings.row(4)));
}

TEST(MoveToken, RowsTravelWithTheirTokens) {
  const Workspace before = bookExample();
  Workspace ws = before;
  moveToken(ws, 1, 4);  // journey → after "one"
  EXPECT_EQ(ws.tokens, (std::vector<std::string>{"Your", "starts", "with", "one", "journey", "step"}));
  const int order[] = {0, 2, 3, 4, 1, 5};
  for (int i = 0; i < 6; ++i)
    EXPECT_TRUE(test::bitwiseEqual(ws.embeddings.row(i), before.embeddings.row(order[i]))) << "row " << i;
  moveToken(ws, 5, 0);  // step → first
  EXPECT_EQ(ws.tokens, (std::vector<std::string>{"step", "Your", "starts", "with", "one", "journey"}));
  const int order2[] = {5, 0, 2, 3, 4, 1};
  for (int i = 0; i < 6; ++i)
    EXPECT_TRUE(test::bitwiseEqual(ws.embeddings.row(i), before.embeddings.row(order2[i]))) << "row " << i;
  Workspace same = before;
  moveToken(same, 2, 2);
  EXPECT_EQ(same.tokens, kBookTokens);
  EXPECT_TRUE(test::bitwiseEqual(same.embeddings, before.embeddings));
}

TEST(RenameToken, NewNameSameRow) {
  const Workspace before = bookExample();
  Workspace ws = before;
  renameToken(ws, 4, "a");
  EXPECT_EQ(ws.tokens[4], "a");
  EXPECT_EQ(ws.tokens[3], "with");
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings, before.embeddings));
  EXPECT_EQ(errorOf([&] { renameToken(ws, 2, ""); }), "tokens[2]: a token needs a name");
}

TEST(SetEmbedding, OneCellOnly) {
  const Workspace before = bookExample();
  Workspace ws = before;
  setEmbedding(ws, 4, 2, -1.25f);
  Matrix expected = before.embeddings;
  expected(4, 2) = -1.25f;
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings, expected));
  setEmbedding(ws, 0, 0, std::numeric_limits<float>::max());  // large but finite is the user's call
  EXPECT_EQ(ws.embeddings(0, 0), std::numeric_limits<float>::max());
}

TEST(SetInputWidth, GrowWithSeededColumnsShrinkFromTheEnd) {
  const Workspace before = bookExample();
  Workspace ws = before;
  setInputWidth(ws, 5, 11);
  ASSERT_EQ(ws.embeddings.rows(), 6);
  ASSERT_EQ(ws.embeddings.cols(), 5);
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings.leftCols(3), before.embeddings));
  // /usr/bin/python3: torch.manual_seed(11); torch.rand(6, 2)
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings.rightCols(2), test::rows({{0.14904171228408813, 0.4865531325340271},
                                                                         {0.985661506652832, 0.16840142011642456},
                                                                         {0.5839434266090393, 0.6935991644859314},
                                                                         {0.5830848813056946, 0.12843775749206543},
                                                                         {0.5721226334571838, 0.924839437007904},
                                                                         {0.2693377733230591, 0.7824568748474121}})));
  EXPECT_EQ(ws.tokens, kBookTokens);
  setInputWidth(ws, 2, 11);
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings, before.embeddings.leftCols(2)));
  setInputWidth(ws, 1, 0);
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings, before.embeddings.leftCols(1)));
}

// ---- refusals ------------------------------------------------------------------------------

TEST(Refusals, LeaveTheWorkspaceUnchanged) {
  Limits six;
  six.max_tokens = 6;
  six.max_dim = 8;
  Limits cells;  // multihead B = 2, H = 2: T = 6 is 144 cells, T = 7 would be 196
  cells.max_attention_cells = 2 * 2 * 6 * 6;
  struct Case {
    const char* what;
    Variant variant;
    std::function<void(Workspace&)> edit;
    const char* field;  // the message starts with it
  };
  const std::vector<Case> cases = {
      {"insert past the end", Variant::MultiHead, [](Workspace& w) { insertToken(w, 7, "x", 1); }, "tokens[7]"},
      {"insert before 0", Variant::MultiHead, [](Workspace& w) { insertToken(w, -1, "x", 1); }, "tokens[-1]"},
      {"insert beyond max_tokens", Variant::MultiHead, [&](Workspace& w) { insertToken(w, 0, "x", 1, six); }, "tokens"},
      {"insert beyond attention cells", Variant::MultiHead, [&](Workspace& w) { insertToken(w, 0, "x", 1, cells); },
       "model.batch_size"},
      {"sentence beyond attention cells", Variant::MultiHead,
       [&](Workspace& w) { setSentence(w, "a b c d e f g", 1, cells); }, "model.batch_size"},
      {"sentence beyond max_tokens", Variant::MultiHead, [&](Workspace& w) { setSentence(w, "a b c d e f g", 1, six); },
       "sentence"},
      {"empty sentence", Variant::MultiHead, [](Workspace& w) { setSentence(w, " ", 1); }, "sentence"},
      {"remove out of range", Variant::MultiHead, [](Workspace& w) { removeToken(w, 6); }, "tokens[6]"},
      {"move from out of range", Variant::MultiHead, [](Workspace& w) { moveToken(w, 6, 0); }, "tokens[6]"},
      {"move to out of range", Variant::MultiHead, [](Workspace& w) { moveToken(w, 0, -1); }, "tokens[-1]"},
      {"rename out of range", Variant::MultiHead, [](Workspace& w) { renameToken(w, 9, "x"); }, "tokens[9]"},
      {"rename to nothing", Variant::MultiHead, [](Workspace& w) { renameToken(w, 0, ""); }, "tokens[0]"},
      {"NaN cell", Variant::MultiHead, [](Workspace& w) { setEmbedding(w, 1, 1, std::nanf("")); }, "embeddings[1][1]"},
      {"infinite cell", Variant::MultiHead, [](Workspace& w) { setEmbedding(w, 0, 2, -INFINITY); }, "embeddings[0][2]"},
      {"cell out of range", Variant::MultiHead, [](Workspace& w) { setEmbedding(w, 0, 3, 1.0f); }, "embeddings[0][3]"},
      {"d_in 0", Variant::Simple, [](Workspace& w) { setInputWidth(w, 0, 1); }, "d_in"},
      {"d_in beyond max_dim", Variant::Simple, [&](Workspace& w) { setInputWidth(w, 9, 1, six); }, "d_in"},
  };
  for (const Case& c : cases) {
    Workspace ws = bookExample(c.variant);
    ws.view = {{"note", "unchanged"}};
    const std::string dump = dumpWorkspace(ws);
    const std::string e = errorOf([&] { c.edit(ws); });
    EXPECT_EQ(e.rfind(std::string(c.field) + ":", 0), 0u) << c.what << " gave: '" << e << "'";
    EXPECT_EQ(dumpWorkspace(ws), dump) << c.what << " changed the workspace";
  }
  // Removing the only token.
  Workspace one = bookExample();
  setSentence(one, "alone", 1);
  const std::string dump = dumpWorkspace(one);
  EXPECT_NE(errorOf([&] { removeToken(one, 0); }), "");
  EXPECT_EQ(dumpWorkspace(one), dump);
  // A refused edit keeps the random recipe too (dumpWorkspace would show only the recipe).
  Workspace r = randomWorkspace();
  const Matrix x = r.embeddings;
  EXPECT_NE(errorOf([&] { setEmbedding(r, 0, 0, NAN); }), "");
  Limits four;
  four.max_tokens = 4;
  EXPECT_NE(errorOf([&] { insertToken(r, 0, "x", 1, four); }), "");
  ASSERT_TRUE(r.random.has_value());
  EXPECT_TRUE(test::bitwiseEqual(r.embeddings, x));
}

TEST(Refusals, WithinTheLimitsIsAccepted) {  // the refusals above are not off by one
  Limits seven;
  seven.max_tokens = 7;
  Workspace ws = bookExample();
  EXPECT_NO_THROW(insertToken(ws, 0, "x", 1, seven));
  Limits cells;
  cells.max_attention_cells = 2 * 2 * 7 * 7;
  Workspace wc = bookExample();
  EXPECT_NO_THROW(insertToken(wc, 0, "x", 1, cells));
  Limits dim;
  dim.max_dim = 8;
  Workspace wd = bookExample(Variant::Simple);
  EXPECT_NO_THROW(setInputWidth(wd, 8, 1, dim));
}

TEST(RandomRecipe, EveryEditDropsIt) {
  const std::vector<std::pair<const char*, std::function<void(Workspace&)>>> edits = {
      {"setSentence", [](Workspace& w) { setSentence(w, "hi there", 1); }},
      {"insertToken", [](Workspace& w) { insertToken(w, 1, "x", 1); }},
      {"removeToken", [](Workspace& w) { removeToken(w, 1); }},
      {"moveToken", [](Workspace& w) { moveToken(w, 0, 3); }},
      {"renameToken", [](Workspace& w) { renameToken(w, 0, "first"); }},
      {"setEmbedding", [](Workspace& w) { setEmbedding(w, 0, 0, 0.5f); }},
      {"setInputWidth", [](Workspace& w) { setInputWidth(w, 4, 1); }},
      {"randomizeEmbeddings", [](Workspace& w) { randomizeEmbeddings(w, 5); }},
      {"resetToBookExample", [](Workspace& w) { resetToBookExample(w); }},
  };
  for (const auto& [name, edit] : edits) {
    Workspace ws = randomWorkspace();
    ASSERT_TRUE(ws.random.has_value());
    edit(ws);
    EXPECT_FALSE(ws.random.has_value()) << name;
    // The saved document holds the numbers, and they load back bitwise.
    const Workspace back = parseWorkspace(dumpWorkspace(ws));
    EXPECT_TRUE(test::bitwiseEqual(back.embeddings, ws.embeddings)) << name;
    EXPECT_EQ(back.tokens, ws.tokens) << name;
  }
}

}  // namespace
}  // namespace attnscope
