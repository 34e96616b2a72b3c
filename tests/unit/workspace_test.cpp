// Workspaces (docs/DESIGN.md §2.4): dump → parse round-trips every field (embeddings bitwise); missing model
// fields take the variant's defaults, which are the seed notebook's settings; bad documents are
// refused naming the field; saveWorkspace is atomic (a failed save leaves the old file and no
// temporary behind); generated embeddings are torch.rand / torch.randn of their seed.
#include <gtest/gtest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine/errors.h"
#include "formats/atomic_file.h"
#include "formats/json_format.h"
#include "formats/workspace_file.h"
#include "reference.h"
#include "test_support.h"

namespace attnscope {
namespace {

using nlohmann::json;

void expectSameModel(const ModelConfig& a, const ModelConfig& b) {
  EXPECT_EQ(a.variant, b.variant);
  EXPECT_EQ(a.d_out, b.d_out);
  EXPECT_EQ(a.num_heads, b.num_heads);
  EXPECT_EQ(a.dropout, b.dropout);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.qkv_bias, b.qkv_bias);
  EXPECT_EQ(a.causal, b.causal);
  EXPECT_EQ(a.scale, b.scale);
  EXPECT_EQ(a.training, b.training);
  EXPECT_EQ(a.batch_size, b.batch_size);
  EXPECT_EQ(a.normalization, b.normalization);
}

void expectSameWorkspace(const Workspace& a, const Workspace& b) {
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_TRUE(test::bitwiseEqual(a.embeddings, b.embeddings));
  ASSERT_EQ(a.random.has_value(), b.random.has_value());
  if (a.random) {
    EXPECT_EQ(a.random->normal, b.random->normal);
    EXPECT_EQ(a.random->seed, b.random->seed);
    EXPECT_EQ(a.random->rows, b.random->rows);
    EXPECT_EQ(a.random->cols, b.random->cols);
  }
  expectSameModel(a.model, b.model);
  EXPECT_EQ(a.view, b.view);
  ASSERT_EQ(a.batch_sequences.size(), b.batch_sequences.size());
  for (std::size_t k = 0; k < a.batch_sequences.size(); ++k)
    EXPECT_TRUE(test::bitwiseEqual(a.batch_sequences[k], b.batch_sequences[k])) << "batch_sequences[" << k << "]";
}

// Round trip through text, and the text is stable (dump ∘ parse ∘ dump = dump).
void expectRoundTrip(const Workspace& ws) {
  const std::string text = dumpWorkspace(ws);
  const Workspace back = parseWorkspace(text);
  expectSameWorkspace(ws, back);
  EXPECT_EQ(dumpWorkspace(back), text);
}

// Floats that are hard to print: tiny, huge, subnormal, −0, not short in decimal.
Workspace awkwardWorkspace() {
  Workspace ws;
  ws.tokens = {"Your", "quote\"d", "naïve ☃", "back\\slash", " "};
  const float tiny = std::numeric_limits<float>::denorm_min();
  const float minnorm = std::numeric_limits<float>::min();
  ws.embeddings = test::rows({{0.43, 0.15, 0.89, 0.1},
                              {1e-8, 0.0, 1.0, 123456.789},
                              {3.0e38, 2.5e-39, -7.25, 0.333333333},
                              {0.2, 0.7, 1e-3, 6.02214076e23},
                              {0.05, 0.80, 0.55, 1.0 / 3.0}});
  ws.embeddings(0, 3) = std::nextafter(1.0f, 2.0f);
  ws.embeddings(1, 1) = -0.0f;
  ws.embeddings(3, 0) = tiny;
  ws.embeddings(3, 1) = -minnorm;
  ws.model = defaultConfig(Variant::MultiHead);
  ws.model.d_out = 6;
  ws.model.num_heads = 3;
  ws.model.dropout = 0.25;
  ws.model.seed = 4294967295u;
  ws.model.qkv_bias = true;
  ws.model.causal = false;
  ws.model.scale = Scale::None;
  ws.model.training = false;
  ws.model.batch_size = 3;
  ws.view = json::parse(R"({"colormap": "viridis", "selected": {"head": 1, "token": 2},
                            "layout": [1, 2.5, "x"], "flag": true, "nothing": null})");
  return ws;
}

TEST(WorkspaceRoundTrip, EveryFieldAndAwkwardFloats) { expectRoundTrip(awkwardWorkspace()); }

// A batch of different sequences (a notebook's B × T × d_in tensor): elements 2 … B are
// "batch_sequences", kept bit for bit, and the batch size comes from them when the model omits it.
TEST(WorkspaceRoundTrip, ABatchOfDifferentSequences) {
  Workspace ws = awkwardWorkspace();  // batch_size 3
  ws.batch_sequences = {test::randomMatrix(5, 4, 1), test::randomMatrix(5, 4, 2)};
  ws.batch_sequences[1](2, 3) = -0.0f;
  expectRoundTrip(ws);
  const Workspace implied = parseWorkspace(R"({"format": "attnscope-workspace", "version": 1,
      "model": {"variant": "causal", "d_out": 2}, "embeddings": [[1, 2], [3, 4]],
      "batch_sequences": [[[5, 6], [7, 8]], [[9, 10], [11, 12]], [[13, 14], [15, 16]]]})");
  EXPECT_EQ(implied.model.batch_size, 4);
  EXPECT_EQ(implied.batch_sequences[2](1, 1), 16.0f);
  EXPECT_EQ(&inputOf(implied, 0), &implied.embeddings);
  EXPECT_EQ(&inputOf(implied, 3), &implied.batch_sequences[2]);
}

TEST(WorkspaceRoundTrip, LargestFloats) {
  // ±FLT_MAX are finite float32 values; dumpWorkspace writes them as ±3.4028235e+38 (the shortest
  // decimal that reads back as FLT_MAX), so parsing must accept that text.
  Workspace ws = bookExample();
  ws.embeddings(2, 0) = std::numeric_limits<float>::max();
  ws.embeddings(3, 1) = std::numeric_limits<float>::lowest();
  expectRoundTrip(ws);
}

TEST(WorkspaceRoundTrip, EveryVariant) {
  for (Variant v : {Variant::Simple, Variant::SelfAttentionV1, Variant::SelfAttentionV2, Variant::Causal,
                    Variant::MultiHeadWrapper, Variant::MultiHead}) {
    SCOPED_TRACE(variantId(v));
    Workspace ws = bookExample(v);
    ws.view = {{"theme", "light"}};
    expectRoundTrip(ws);
    // Switch every option the variant allows away from its default.
    ModelConfig& m = ws.model;
    m.seed = 7;
    m.batch_size = 4;
    if (v == Variant::Simple) {
      m.normalization = Normalization::Sum;
    } else {
      m.causal = !m.causal;
      m.scale = Scale::None;
      m.d_out = 4;
      if (hasLinearLayers(v)) m.qkv_bias = true;
      if (hasDropout(v)) m.dropout = 0.1, m.training = false;
      if (isMultiHead(v)) m.num_heads = 2;
    }
    expectRoundTrip(ws);
  }
}

TEST(WorkspaceRoundTrip, GeneratedEmbeddingsKeepTheirRecipe) {
  for (bool normal : {false, true}) {
    Workspace ws = bookExample();
    ws.random = RandomEmbeddings{normal, 42, 7, 5};
    ws.embeddings = makeRandomEmbeddings(*ws.random);
    ws.tokens = {"a", "b", "c", "d", "e", "f", "g"};
    expectRoundTrip(ws);
    const json j = json::parse(dumpWorkspace(ws));
    EXPECT_TRUE(j["embeddings"].is_object()) << "the recipe, not the numbers, is saved";
  }
}

std::string minimalDocument(const std::string& model) {
  return R"({"format": "attnscope-workspace", "version": 1,
             "embeddings": [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64]],
             "model": )" +
         model + "}";
}

TEST(WorkspaceDefaults, MissingModelFieldsTakeTheVariantDefaults) {
  for (Variant v : {Variant::Simple, Variant::SelfAttentionV1, Variant::SelfAttentionV2, Variant::Causal,
                    Variant::MultiHeadWrapper, Variant::MultiHead}) {
    SCOPED_TRACE(variantId(v));
    const Workspace ws = parseWorkspace(minimalDocument(std::string(R"({"variant": ")") + variantId(v) + "\"}"));
    ModelConfig want = defaultConfig(v);
    if (v == Variant::Simple) want.d_out = 3;  // no projection: its width is d_in
    expectSameModel(ws.model, want);
    EXPECT_EQ(ws.tokens, (std::vector<std::string>{"t1", "t2", "t3"}));  // no tokens given
    EXPECT_TRUE(ws.view.is_object() && ws.view.empty());
  }
  // Some fields given: only those change.
  const Workspace ws = parseWorkspace(minimalDocument(R"({"variant": "multihead", "dropout": 0.1, "seed": 5})"));
  ModelConfig want = defaultConfig(Variant::MultiHead);
  want.dropout = 0.1;
  want.seed = 5;
  expectSameModel(ws.model, want);
}

TEST(WorkspaceDefaults, AreTheSeedNotebookSettings) {
  // 004 In[18]: torch.manual_seed(123); SelfAttention_v1(d_in, d_out=2)
  const ModelConfig v1 = defaultConfig(Variant::SelfAttentionV1);
  EXPECT_EQ(v1.seed, 123u);
  EXPECT_EQ(v1.d_out, 2);
  EXPECT_FALSE(v1.causal);
  // 004 In[20]: torch.manual_seed(789); SelfAttention_v2(d_in, d_out=2)  (qkv_bias=False)
  const ModelConfig v2 = defaultConfig(Variant::SelfAttentionV2);
  EXPECT_EQ(v2.seed, 789u);
  EXPECT_EQ(v2.d_out, 2);
  EXPECT_FALSE(v2.qkv_bias);
  // 004 In[43]: torch.manual_seed(123); MultiHeadAttention(d_in=3, d_out=2, dropout=0.0,
  // num_heads=2) on torch.stack((inputs, inputs)); a fresh module trains.
  const ModelConfig mh = defaultConfig(Variant::MultiHead);
  EXPECT_EQ(mh.seed, 123u);
  EXPECT_EQ(mh.d_out, 2);
  EXPECT_EQ(mh.num_heads, 2);
  EXPECT_EQ(mh.dropout, 0.0);
  EXPECT_EQ(mh.batch_size, 2);
  EXPECT_TRUE(mh.causal);
  EXPECT_TRUE(mh.training);
  EXPECT_EQ(mh.scale, Scale::SqrtDk);
  EXPECT_FALSE(mh.qkv_bias);
  // Section 3.3: plain softmax of raw dot products.
  const ModelConfig s = defaultConfig(Variant::Simple);
  EXPECT_EQ(s.scale, Scale::None);
  EXPECT_EQ(s.normalization, Normalization::Softmax);
  EXPECT_FALSE(s.causal);
}

TEST(WorkspaceParse, TheSpecExampleLoads) {
  // docs/DESIGN.md §2.4's example document.
  const Workspace ws = parseWorkspace(R"({
    "format": "attnscope-workspace", "version": 1,
    "tokens": ["Your", "journey", "starts", "with", "one", "step"],
    "embeddings": [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
                   [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]],
    "model": { "variant": "multihead", "d_out": 2, "num_heads": 2, "dropout": 0.0, "seed": 123,
               "qkv_bias": false, "causal": true, "scale": "sqrt_dk", "training": true,
               "batch_size": 2, "normalization": "softmax" },
    "view": { }
  })");
  EXPECT_TRUE(test::bitwiseEqual(ws.embeddings, test::bookInputs()));
  expectSameModel(ws.model, defaultConfig(Variant::MultiHead));
}

TEST(WorkspaceParse, BadDocumentsNameTheField) {
  const struct {
    std::string text, field;
  } cases[] = {
      {"{not json", "workspace"},
      {minimalDocument(R"({"variant": "multihead", "bogus": 1})"), "model.bogus"},
      {minimalDocument(R"({"variant": "multihead", "d_out": 5, "num_heads": 2})"), "divisible"},
      {minimalDocument(R"({"variant": "transformer"})"), "model.variant"},
      {minimalDocument(R"({"variant": "multihead", "seed": -1})"), "model.seed"},
      {minimalDocument(R"({"variant": "multihead", "training": 1})"), "model.training"},
      {R"({"format": "attnscope-workspace", "version": 1, "model": {"variant": "causal"},
          "embeddings": [[1, 2], [3]]})",
       "embeddings[1]"},
      {R"({"format": "attnscope-workspace", "version": 1, "model": {"variant": "causal"},
          "embeddings": [[1, 2], [3, 1e39]]})",
       "embeddings[1][1]"},
      {R"({"format": "attnscope-workspace", "version": 1, "model": {"variant": "causal"},
          "tokens": ["a"], "embeddings": [[1, 2], [3, 4]]})",
       "tokens"},
      {R"({"format": "attnscope-workspace", "version": 1, "model": {"variant": "causal", "batch_size": 3},
          "embeddings": [[1, 2], [3, 4]], "batch_sequences": [[[5, 6], [7, 8]]]})",
       "batch_sequences: 1 sequences, but model.batch_size 3 needs 2"},
      {R"({"format": "attnscope-workspace", "version": 1, "model": {"variant": "causal"},
          "embeddings": [[1, 2], [3, 4]], "batch_sequences": [[[5, 6], [7, 8], [9, 10]]]})",
       "batch_sequences[0]: 3 × 2, but every sequence of a batch is T × d_in = 2 × 2"},
      {R"({"format": "attnscope-workspace", "version": 1, "model": {"variant": "causal"},
          "embeddings": [[1, 2], [3, 4]], "batch_sequences": [[[5, 6], [7, "x"]]]})",
       "batch_sequences[0][1][1]"},
      {R"({"format": "attnscope-workspace", "version": 1, "model": {"variant": "causal"},
          "embeddings": [[1, 2], [3, 4]], "batch_sequences": []})",
       "batch_sequences"},
      {R"({"format": "attnscope-workspace", "version": 1, "model": {"variant": "causal"},
          "embeddings": []})",
       "embeddings"},
      {R"({"format": "attnscope-workspace", "version": 2, "model": {"variant": "causal"},
          "embeddings": [[1]]})",
       "version"},
      // A count of 0 is an unsigned integer to the JSON reader: refused as −1 is (found by fuzz_workspace).
      {R"({"format": "attnscope-workspace", "version": 1, "model": {"variant": "causal"},
          "embeddings": {"random": "uniform", "seed": 1, "rows": 0, "cols": 5}})",
       "embeddings.rows: must be between 1 and"},
      {R"({"format": "attnscope-workspace", "version": 1, "model": {"variant": "causal"},
          "embeddings": {"random": "uniform", "seed": 1, "rows": 2, "cols": 0}})",
       "embeddings.cols: must be between 1 and"},
      {R"({"format": "attnscope-workspace", "version": 1, "model": {"variant": "multihead", "num_heads": 0},
          "embeddings": [[1, 2]]})",
       "model.num_heads: must be between 1 and"},
  };
  for (const auto& c : cases) {
    try {
      parseWorkspace(c.text);
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(c.field), std::string::npos)
          << "message '" << e.what() << "' does not name " << c.field;
    }
  }
  Limits small;
  small.max_tokens = 2;
  EXPECT_THROW(parseWorkspace(minimalDocument(R"({"variant": "causal"})"), small), InputError);
}

// ---- saving ----

// A fresh directory under /tmp, removed (with its files) at the end.
struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/attnscope-unit-XXXXXX";
    path = ::mkdtemp(name);
  }
  ~TempDir() { [[maybe_unused]] const int rc = std::system(("rm -rf '" + path + "'").c_str()); }
  std::set<std::string> entries() const {
    std::set<std::string> out;
    DIR* d = ::opendir(path.c_str());
    while (dirent* e = d ? ::readdir(d) : nullptr)
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.insert(e->d_name);
    if (d) ::closedir(d);
    return out;
  }
};

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void writeFile(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// A model's file or folder, or another program's JSON, opened as a workspace: said as what it is.
TEST(WorkspaceOpen, AModelsFilesAreSaidAsSuch) {
  TempDir dir;
  const auto refusal = [](const std::string& path) { return test::errorOf([&] { loadWorkspace(path); }); };
  writeFile(dir.path + "/model.pth", std::string("PK\x03\x04", 4) + "rest of a zip");
  EXPECT_EQ(refusal(dir.path + "/model.pth"),
            dir.path +
                "/model.pth: a zip file (a model's .pth or .npz?), not a workspace: a model opens with File › "
                "Open model…, attnscope --model or attnscope-cli model-trace");
  writeFile(dir.path + "/m.safetensors", std::string("\x02\0\0\0\0\0\0\0{}", 10));
  EXPECT_NE(refusal(dir.path + "/m.safetensors").find("a safetensors file, not a workspace"), std::string::npos);
  writeFile(dir.path + "/config.json", R"({"n_head": 12, "n_embd": 768})");
  EXPECT_EQ(refusal(dir.path + "/config.json"),
            dir.path +
                "/config.json: workspace: a JSON object with none of a workspace's fields (format, model, "
                "tokens, …): another program's file (a model's config.json or vocab.json?)");
  EXPECT_NE(refusal(dir.path).find("a model's folder (it holds model.pth), not a workspace"), std::string::npos);
  // A workspace that lacks its format still says so (it has the other fields).
  writeFile(dir.path + "/ws.json", R"({"model": {"variant": "causal"}})");
  EXPECT_NE(refusal(dir.path + "/ws.json").find("format: expected"), std::string::npos)
      << refusal(dir.path + "/ws.json");
}

TEST(WorkspaceSave, WritesAndReplaces) {
  TempDir dir;
  const std::string path = dir.path + "/ws.json";
  writeFile(path, "old contents");
  const Workspace ws = awkwardWorkspace();
  saveWorkspace(path, ws);
  EXPECT_EQ(readFile(path), dumpWorkspace(ws));
  expectSameWorkspace(loadWorkspace(path), ws);
  EXPECT_EQ(dir.entries(), std::set<std::string>{"ws.json"}) << "a temporary file was left";
}

TEST(WorkspaceSave, IntoAMissingFolderFailsCleanly) {
  TempDir dir;
  const std::string path = dir.path + "/no-such-folder/ws.json";
  try {
    saveWorkspace(path, bookExample());
    FAIL() << "saved into a folder that does not exist";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_TRUE(dir.entries().empty());
}

TEST(WorkspaceSave, OntoADirectoryFailsCleanly) {
  TempDir dir;
  const std::string path = dir.path + "/ws.json";
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  writeFile(path + "/inside", "keep me");
  EXPECT_THROW(saveWorkspace(path, bookExample()), InputError);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(readFile(path + "/inside"), "keep me");
  EXPECT_EQ(dir.entries(), std::set<std::string>{"ws.json"}) << "a temporary file was left";
}

// Lowers RLIMIT_FSIZE so any write past `bytes` fails with EFBIG (root is not exempt), and
// ignores SIGXFSZ; both are restored on scope exit.
struct FileSizeLimit {
  rlimit old{};
  void (*old_handler)(int);
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &old);
    old_handler = ::signal(SIGXFSZ, SIG_IGN);
    rlimit low = old;
    low.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &low);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old);
    ::signal(SIGXFSZ, old_handler);
  }
};

TEST(WorkspaceSave, AFailedWriteKeepsTheOldFile) {
  TempDir dir;
  const std::string path = dir.path + "/ws.json";
  const std::string old = dumpWorkspace(bookExample());
  writeFile(path, old);
  bool threw = false;
  std::string message;
  {
    FileSizeLimit limit(64);  // the new document is far longer than 64 bytes
    try {
      saveWorkspace(path, awkwardWorkspace());
    } catch (const InputError& e) {
      threw = true;
      message = e.what();
    }
  }
  EXPECT_TRUE(threw) << "a write that hit the file size limit was reported as a success";
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_EQ(readFile(path), old) << "the previous file was damaged";
  EXPECT_EQ(dir.entries(), std::set<std::string>{"ws.json"}) << "a temporary file was left";
}

// A temporary file is journaled before it exists (docs/DESIGN.md §3.5 "Temporary files"): a kill
// at any moment it is on disk leaves it listed for the next start. With mkstemp the file came
// first and the journal after it, and a kill between the two (caught under ASan) left it for good.
TEST(WorkspaceSave, TemporaryFilesAreJournaledBeforeTheyExist) {
  TempDir dir;
  const std::string path = dir.path + "/ws.json";
  std::vector<std::string> created, existed_when_told, gone;
  TemporaryFileHooks hooks;
  hooks.created = [&](const std::string& tmp) {
    created.push_back(tmp);
    struct stat st;
    if (::lstat(tmp.c_str(), &st) == 0) existed_when_told.push_back(tmp);
  };
  hooks.gone = [&](const std::string& tmp) { gone.push_back(tmp); };
  struct Uninstall {  // the hooks capture this test's locals: never left installed past it
    ~Uninstall() { setTemporaryFileHooks({}); }
  } uninstall;
  setTemporaryFileHooks(hooks);
  saveWorkspace(path, bookExample());
  ASSERT_EQ(created.size(), 1u);
  EXPECT_TRUE(existed_when_told.empty()) << created[0] << " was made before it was journaled";
  EXPECT_EQ(gone, created) << "the temporary file was not unlisted after the rename";
  const std::string name = created[0].substr(created[0].rfind('/') + 1);
  EXPECT_EQ(name.rfind(kTemporaryFilePrefix, 0), 0u) << name;
  EXPECT_EQ(name.size(), std::string(kTemporaryFilePrefix).size() + 12) << name;
  EXPECT_EQ(dir.entries(), std::set<std::string>{"ws.json"});
}

TEST(WorkspaceSave, IntoAReadOnlyFolderWhenNotRoot) {
  if (::geteuid() == 0) {
    std::printf("running as root: permission bits do not stop root, read-only case skipped\n");
    GTEST_SKIP() << "root bypasses directory permissions";
  }
  TempDir dir;
  const std::string path = dir.path + "/ws.json";
  writeFile(path, "old");
  ASSERT_EQ(::chmod(dir.path.c_str(), 0555), 0);
  EXPECT_THROW(saveWorkspace(path, bookExample()), InputError);
  ::chmod(dir.path.c_str(), 0755);
  EXPECT_EQ(readFile(path), "old");
  EXPECT_EQ(dir.entries(), std::set<std::string>{"ws.json"});
}

TEST(WorkspaceSave, ANewFileTakesTheFirstFreeNameWhole) {
  TempDir dir;
  writeFile(dir.path + "/kept-1.json", "someone's");
  writeFile(dir.path + "/kept-2.json", "another's");
  auto name = [](int k) { return "kept-" + std::to_string(k) + ".json"; };
  const std::string path = writeNewFileAtomically(dir.path, name, [](std::ostream& out) { out << "mine"; });
  EXPECT_EQ(path, dir.path + "/kept-3.json");
  EXPECT_EQ(readFile(path), "mine");
  EXPECT_EQ(readFile(dir.path + "/kept-1.json"), "someone's");  // never replaced
  EXPECT_EQ(readFile(dir.path + "/kept-2.json"), "another's");
  // A failed write leaves no file under any name, and no temporary file.
  EXPECT_THROW(writeNewFileAtomically(dir.path, name, [](std::ostream&) { throw InputError("no"); }), InputError);
  EXPECT_EQ(dir.entries(), (std::set<std::string>{"kept-1.json", "kept-2.json", "kept-3.json"}));
}

// ---- generated embeddings ----

TEST(RandomEmbeddings, DeterministicPerSeed) {
  for (bool normal : {false, true})
    for (int rows : {1, 3, 7}) {  // 7 × 5 = 35 values: torch's 16-wide normal path with a tail
      const RandomEmbeddings spec{normal, 2024, rows, 5};
      const Matrix a = makeRandomEmbeddings(spec), b = makeRandomEmbeddings(spec);
      EXPECT_TRUE(test::bitwiseEqual(a, b));
      EXPECT_TRUE(a.allFinite());
      RandomEmbeddings other = spec;
      other.seed = 2025;
      EXPECT_NE(makeRandomEmbeddings(other), a);
    }
}

TEST(RandomEmbeddings, UniformIsTorchRand) {
  // torch.manual_seed(123); torch.rand(3, 2) — Debian's torch (these are also SelfAttention_v1's
  // seed-123 W_query, 004 In[11]).
  const Matrix want = test::rows({{0.29611194133758545, 0.516562283039093},
                                  {0.2516707181930542, 0.6885567903518677},
                                  {0.07397246360778809, 0.866521954536438}});
  EXPECT_TRUE(test::bitwiseEqual(makeRandomEmbeddings({false, 123, 3, 2}), want));
  // And in general the docs/DESIGN.md §2.2 formula on std::mt19937 (reference.h).
  for (std::uint32_t seed : {0u, 1u, 4294967295u}) {
    const Matrix x = makeRandomEmbeddings({false, seed, 9, 7});
    ref::Stream s(seed);
    for (int i = 0; i < 9; ++i)
      for (int j = 0; j < 7; ++j) {
        const float r = s.uniformFloat(0.0, 1.0);
        ASSERT_EQ(x(i, j), r) << "seed " << seed << " (" << i << ", " << j << ")";
        ASSERT_TRUE(x(i, j) >= 0.0f && x(i, j) < 1.0f);
      }
  }
}

TEST(RandomEmbeddings, NormalIsTorchRandnTo1e5) {
  // Debian's torch: torch.manual_seed(s); torch.randn(rows, cols), printed with %.9g.
  const struct {
    std::uint32_t seed;
    int rows, cols;
    std::vector<double> values;
  } cases[] = {
      {0, 2, 3, {1.54099607, -0.293428898, -2.17878938, 0.568431258, -1.08452237, -1.39859545}},
      {0, 4, 5, {-1.12583983, -1.1523602,   -0.250578582, -0.433878809, 0.598839462, -1.55509508, -0.34136039,
                 1.85300612,  0.468096405,  -0.157712445, 1.44366014,   0.266049415, 1.38936615,  1.58633423,
                 0.946298361, -0.843676746, 0.931826591,  1.25900924,   2.00498056,  0.0537369028}},
      {42,
       1,
       16,
       {1.92691529, 1.48728406, 0.900717199, -2.10552096, 0.678418458, -1.23454487, -0.0430674776, -1.60466695,
        -0.752135277, 1.64872301, -0.392478645, -1.40360713, -0.727881312, -0.559430182, -0.768838882, 0.76244539}},
  };
  double worst = 0;
  for (const auto& c : cases) {
    const Matrix x = makeRandomEmbeddings({true, c.seed, c.rows, c.cols});
    ASSERT_EQ(x.size(), static_cast<Eigen::Index>(c.values.size()));
    for (int k = 0; k < x.size(); ++k) {
      const double d = std::fabs(x.data()[k] - c.values[k]);
      worst = std::max(worst, d);
      EXPECT_LE(d, 1e-5 * (1 + std::fabs(c.values[k])))
          << "seed " << c.seed << " " << c.rows << "×" << c.cols << " element " << k;
    }
  }
  std::printf("worst |ours − torch.randn| = %.3g\n", worst);
}

// Reading holds the text and what is read from it: the numeric arrays as floats (4 bytes a value, not
// a JSON tree's 16–32), the rest as a tree counted as it is built, refused past the budget
// (docs/DESIGN.md §2.4 "Reading a file"). The probe's 4096 × 1024 workspace, which the app had
// accepted and saved (46.6 MiB), was refused on open: "takes about 1.5 GiB" (34 × its text).
TEST(WorkspaceLimits, ReadingHoldsFloatsNotATree) {
  auto document = [](int rows, int cols, const std::string& view) {
    std::string text =
        R"({"format": "attnscope-workspace", "version": 1, "model": {"variant": "multihead", "batch_size": 1},
      "view": )" +
        view + R"(, "embeddings": [)";
    for (int i = 0; i < rows; ++i) {
      text += i ? ",\n[" : "[";
      for (int c = 0; c < cols; ++c)
        text += (c ? ", " : "") + formatFloat(static_cast<float>((i * 7 + c * 13) % 1000) / 997.0f);
      text += "]";
    }
    return text + "]}";
  };
  const std::string big = document(4096, 1024, "{}");
  ASSERT_GT(big.size(), 30u << 20);
  const Workspace ws = parseWorkspace(big);  // the default budget, 1 GiB
  EXPECT_EQ(ws.embeddings.rows(), 4096);
  EXPECT_EQ(ws.embeddings.cols(), 1024);
  EXPECT_EQ(ws.embeddings(4095, 1023), static_cast<float>((4095 * 7 + 1023 * 13) % 1000) / 997.0f);

  Limits small;  // text and floats count: 4000 × 2 values in a 64 KiB budget do not fit
  small.max_memory_bytes = 64 << 10;
  const std::string rows = document(4000, 2, "{}");
  const std::string why = test::errorOf([&] { parseWorkspace(rows, small); });
  EXPECT_EQ(why.rfind("workspace: reading it needs more than the memory budget of 64 KiB", 0), 0u) << why;

  // The tree counts too: a view of a million short strings takes far more than its text.
  std::string view = R"({"notes": [)";
  for (int i = 0; i < 1000000; ++i) view += i ? ",\"x\"" : "\"x\"";
  view += "]}";
  Limits medium;
  medium.max_memory_bytes = 16 << 20;  // the text is 4 MB; its tree, ~32 MB
  const std::string notes = document(6, 3, view);
  const std::string why2 = test::errorOf([&] { parseWorkspace(notes, medium); });
  EXPECT_EQ(why2.rfind("workspace: reading it needs more than the memory budget of 16 MiB", 0), 0u) << why2;
  EXPECT_EQ(parseWorkspace(notes).view["notes"].size(), 1000000u);
}

// Nesting is refused while parsing, in every member, however deep it goes (150 000 levels
// overflowed the stack where a tree was copied).
TEST(WorkspaceLimits, DeepNestingRefusedWhileParsing) {
  for (const char* member : {"view", "parameters", "embeddings", "model", "tokens"}) {
    for (int depth : {65, 1000, 150000}) {
      const std::string text = R"({"format": "attnscope-workspace", "version": 1, ")" + std::string(member) + R"(": )" +
                               std::string(static_cast<std::size_t>(depth), '[') +
                               std::string(static_cast<std::size_t>(depth), ']') + "}";
      const std::string why = test::errorOf([&] { parseWorkspace(text); });
      // Inside the embeddings a nested list is refused as soon as it is not a number.
      EXPECT_EQ(why, std::string(member) == "embeddings" ? "embeddings[0][0]: expected a number, got array"
                                                         : std::string(member) + ": nested deeper than 64 levels")
          << member << " " << depth;
    }
  }
}

// An autosave's trained_model "draft": the model's field typed and not applied, back into the field
// (never a model_open argument); malformed or over kMostDraftBytes, left out and named.
TEST(SavedModel, DraftIsKeptApartFromTheOpening) {
  const json entry = {{"path", "/m"}, {"ids", {1, 2}}, {"draft", "hello wor"}};
  const SavedModelOpening o = readSavedModel(entry);
  EXPECT_EQ(o.draft, "hello wor");
  EXPECT_FALSE(o.args.contains("draft"));
  EXPECT_TRUE(o.left_out.empty());
  for (const json& bad : {json(3), json::array({"a"}), json(std::string(kMostDraftBytes + 1, 'a'))}) {
    json e = entry;
    e["draft"] = bad;
    const SavedModelOpening b = readSavedModel(e);
    EXPECT_TRUE(b.draft.empty());
    EXPECT_EQ(b.left_out, std::vector<std::string>{"draft"});
    EXPECT_EQ(b.args["ids"], entry["ids"]);  // the rest opens as it was
  }
}

// What a start keeps of an autosave: unsaved work, or a draft of a saved one (a kill while typing
// into the model's field of a saved workspace had its text dropped with the autosave).
TEST(SavedModel, ADraftIsWorkToKeep) {
  EXPECT_FALSE(holdsUnsavedWork({{"dirty", false}}));
  EXPECT_TRUE(holdsUnsavedWork({{"dirty", true}}));
  EXPECT_TRUE(holdsUnsavedWork(json::object()));  // unreadable: kept
  EXPECT_FALSE(holdsUnsavedWork({{"dirty", false}, {"trained_model", {{"path", "/m"}}}}));
  EXPECT_TRUE(holdsUnsavedWork({{"dirty", false}, {"trained_model", {{"path", "/m"}, {"draft", "x"}}}}));
}

}  // namespace
}  // namespace attnscope
