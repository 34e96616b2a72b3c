// The app's controller without a window (app/state/controller.h): what a user does with the
// unsaved-changes prompt, save-then-continue, the pinned A and B swapped, what a new document keeps
// of the view, and the key binding table — the behaviour only the Xvfb tests reached before.
// Expected values are what the user asked for (the file on disk, the seed they set), never the
// controller's own output fed back.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

#include "engine/errors.h"
#include "formats/workspace_file.h"
#include "state/controller.h"
#include "state/engine_worker.h"
#include "state/key_bindings.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

// A notebook's message waiting to hear how its command went (the channel's MessageListener).
struct Heard : CommandListener {
  int applied_count = 0;
  std::string refusal;
  void applied() override { ++applied_count; }
  void refused(const std::string& message) override { refusal = message; }
  bool refusedAlready() const override { return !refusal.empty(); }
};

// A folder of its own for the files a test saves, and the state folder (autosaves, kept work).
class ControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int counter = 0;
    folder_ = fs::temp_directory_path() /
              ("attnscope_controller_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(folder_);
    setenv("XDG_STATE_HOME", (folder_ / "state").c_str(), 1);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(folder_, ec);
  }
  std::string path(const std::string& name) const { return (folder_ / name).string(); }

  // An interactive controller (a user's window) over the book's example, saved as `file` if given.
  Controller make(const std::string& file = "", ControllerHooks hooks = {}) {
    Workspace ws = bookExample();
    if (!file.empty()) saveWorkspace(file, ws);
    return Controller(Document(std::move(ws), file, false, Controller::limits()), ViewState{}, true, std::move(hooks));
  }
  // Queues `name` as a user's click or key (not a script) and applies it.
  static void user(Controller& c, const std::string& name, nlohmann::json args = nlohmann::json::object()) {
    c.commands().push(name, std::move(args));
    c.update(0);
  }
  // Applies the queue until the result on screen answers the newest inputs.
  static void settle(Controller& c) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    do {
      c.update(0);
      if (c.settled() && c.idle() && c.snapshot()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } while (std::chrono::steady_clock::now() < until);
    FAIL() << "no result within 60 s";
  }
  static std::uint32_t seedOf(const Controller& c) { return c.document().workspace().model.seed; }
  // An unsaved edit in c (seed 606), and other.json beside it (seed 5) to open over it.
  void editBesideOther(Controller& c) {
    Workspace other = bookExample();
    other.model.seed = 5;
    saveWorkspace(path("other.json"), other);
    user(c, "set", {{"field", "seed"}, {"value", 606}});
  }
  static std::string read(const std::string& file) {
    std::ifstream in(file);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  fs::path folder_;
};

// [SECTION] the unsaved-changes prompt --------------------------------------------------------

TEST_F(ControllerTest, NewAsksFirstAndCancelKeepsTheWork) {
  Controller c = make();
  user(c, "set", {{"field", "seed"}, {"value", 777}});
  ASSERT_TRUE(c.document().dirty());
  user(c, "new");
  EXPECT_EQ(c.prompts().unsaved_action, "new");
  EXPECT_EQ(c.prompts().unsaved_doing, "starting over with the book's example");
  EXPECT_EQ(seedOf(c), 777u) << "asking changes nothing yet";
  user(c, "unsaved", {{"choice", "cancel"}});
  EXPECT_FALSE(c.prompts().any());
  EXPECT_EQ(seedOf(c), 777u);
  EXPECT_TRUE(c.document().dirty());
  EXPECT_FALSE(c.quitRequested());
}

TEST_F(ControllerTest, DiscardGoesOnWithTheCommandThatAsked) {
  Controller c = make();
  user(c, "set", {{"field", "seed"}, {"value", 777}});
  user(c, "preset", {{"name", "causal"}});
  EXPECT_EQ(c.promptedCommand(), "preset");
  user(c, "unsaved", {{"choice", "discard"}});
  EXPECT_FALSE(c.prompts().any());
  EXPECT_EQ(c.document().workspace().model.variant, Variant::Causal);
}

TEST_F(ControllerTest, NothingToAskWithoutChangesNorForAScript) {
  Controller c = make();
  user(c, "quit");  // nothing unsaved: quits at once
  EXPECT_FALSE(c.prompts().any());
  EXPECT_TRUE(c.quitRequested());

  Controller d = make();
  user(d, "set", {{"field", "seed"}, {"value", 5}});
  Command scripted = makeCommand("new");
  scripted.script_index = 0;  // a --commands file's: unattended, never asked
  d.commands().push(scripted);
  d.update(0);
  EXPECT_FALSE(d.prompts().any());
  EXPECT_EQ(seedOf(d), bookExample().model.seed);
}

TEST_F(ControllerTest, AnswerWithoutAPromptIsOneMessage) {
  Controller c = make();
  user(c, "unsaved", {{"choice", "save"}});
  EXPECT_TRUE(c.toast().error);
  EXPECT_NE(c.toast().text.find("no unsaved-changes prompt"), std::string::npos) << c.toast().text;
}

// [SECTION] save, then go on ------------------------------------------------------------------

TEST_F(ControllerTest, SaveThenQuitWritesTheFileFirst) {
  const std::string file = path("work.json");
  Controller c = make(file);
  user(c, "set", {{"field", "seed"}, {"value", 4242}});
  user(c, "quit");
  ASSERT_EQ(c.promptedCommand(), "quit");
  user(c, "unsaved", {{"choice", "save"}});
  EXPECT_TRUE(c.quitRequested());
  EXPECT_FALSE(c.document().dirty());
  EXPECT_EQ(loadWorkspace(file, Controller::limits()).model.seed, 4242u) << "the file holds the edit";
}

TEST_F(ControllerTest, UntitledSaveAsksWhereThenGoesOn) {
  std::string dialog;
  bool saving = false;
  ControllerHooks hooks;
  hooks.open_dialog = [&](const std::string& which, const std::string&, int, const std::string&) {
    dialog = which;
    saving = true;
  };
  hooks.saving = [&] { return saving; };
  Controller c = make("", hooks);
  user(c, "set", {{"field", "seed"}, {"value", 99}});
  user(c, "preset", {{"name", "causal"}});
  user(c, "unsaved", {{"choice", "save"}});
  EXPECT_EQ(dialog, "save_as");
  EXPECT_EQ(c.commandAfterSave(), "preset") << "the preset waits for the save";
  EXPECT_EQ(seedOf(c), 99u);
  // The user names the file in the dialog: saved, then the preset loads.
  const std::string file = path("named.json");
  saving = false;
  user(c, "save", {{"path", file}});
  EXPECT_EQ(loadWorkspace(file, Controller::limits()).model.seed, 99u);
  EXPECT_EQ(c.document().workspace().model.variant, Variant::Causal);
  EXPECT_EQ(c.commandAfterSave(), "");
}

TEST_F(ControllerTest, CancelledSaveDialogSaysTheCommandDidNotHappen) {
  bool saving = false;
  ControllerHooks hooks;
  hooks.open_dialog = [&](const std::string&, const std::string&, int, const std::string&) { saving = true; };
  hooks.saving = [&] { return saving; };
  Controller c = make("", hooks);
  user(c, "set", {{"field", "seed"}, {"value", 99}});
  user(c, "quit");
  user(c, "unsaved", {{"choice", "save"}});
  ASSERT_TRUE(saving);
  saving = false;  // the user closed the dialog without saving
  c.update(0);
  EXPECT_FALSE(c.quitRequested());
  EXPECT_TRUE(c.toast().error);
  EXPECT_EQ(c.toast().text, "Not saved, so not quitting: the changes are still here");
  EXPECT_EQ(seedOf(c), 99u);
}

TEST_F(ControllerTest, FailedSaveDoesNotGoOn) {
  const std::string file = path("gone/work.json");
  fs::create_directories(path("gone"));
  Controller c = make(file);
  fs::remove_all(path("gone"));  // the folder went away (a USB stick pulled)
  user(c, "set", {{"field", "seed"}, {"value", 31}});
  user(c, "quit");
  user(c, "unsaved", {{"choice", "save"}});
  EXPECT_FALSE(c.quitRequested());
  EXPECT_TRUE(c.toast().error);
  EXPECT_EQ(c.toast().text.rfind("Not saved, so not quitting: ", 0), 0u) << c.toast().text;
  EXPECT_EQ(c.commandAfterSave(), "");
  EXPECT_TRUE(c.document().dirty());
}

TEST_F(ControllerTest, FileChangedOnDiskAsksBeforeOverwriting) {
  const std::string file = path("shared.json");
  std::string asked;
  ControllerHooks hooks;
  hooks.ask_overwrite = [&](const std::string& p) { asked = p; };
  Controller c = make(file, hooks);
  user(c, "set", {{"field", "seed"}, {"value", 8}});
  Workspace other = bookExample();
  other.model.seed = 1234;  // another program writes the file
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  saveWorkspace(file, other);
  user(c, "save");
  EXPECT_EQ(asked, file);
  EXPECT_EQ(loadWorkspace(file, Controller::limits()).model.seed, 1234u) << "nothing overwritten yet";
  user(c, "save", {{"path", file}, {"overwrite", true}});
  EXPECT_EQ(loadWorkspace(file, Controller::limits()).model.seed, 8u);
}

// [SECTION] A and B ---------------------------------------------------------------------------

TEST_F(ControllerTest, SwapMakesASettingsCurrentAndPinsB) {
  Controller c = make();
  user(c, "set", {{"field", "seed"}, {"value", 11}});
  settle(c);
  user(c, "pin");
  ASSERT_TRUE(c.pinned());
  user(c, "set", {{"field", "seed"}, {"value", 22}});
  settle(c);
  user(c, "swap");
  settle(c);
  EXPECT_EQ(seedOf(c), 11u) << "A's settings are the document's";
  ASSERT_TRUE(c.pinned());
  EXPECT_EQ(c.pinned()->inputs->model.seed, 22u) << "B is pinned";
  EXPECT_EQ(c.view().tab, "compare");
  user(c, "undo");  // the swap is one undo step
  EXPECT_EQ(seedOf(c), 22u);
}

TEST_F(ControllerTest, SwapWithNothingPinnedChangesNothing) {
  Controller c = make();
  settle(c);
  user(c, "swap");
  EXPECT_TRUE(c.toast().error);
  EXPECT_EQ(c.toast().text, "nothing is pinned: pin a result as A first");
  EXPECT_FALSE(c.document().dirty());
}

// [SECTION] a script waiting for the result ------------------------------------------------

// `wait` (a notebook's "the maps are on screen") is applied only once the result of the edit
// before it is in; meanwhile the window sleeps until the engine wakes it — frames drawn back to
// back while waiting took a core from the computation (a GPT-2-sized one came 100 ms later).
TEST_F(ControllerTest, WaitRunsOnceTheNewestResultIsInAndTheWindowSleepsMeanwhile) {
  Controller c = make();
  std::string words;
  for (int i = 0; i < 600; ++i) words += "w" + std::to_string(i) + " ";
  user(c, "sentence", {{"text", words}});
  user(c, "d_in", {{"value", 96}});
  user(c, "set", {{"field", "d_out"}, {"value", 96}});
  user(c, "set", {{"field", "num_heads"}, {"value", 4}});  // 4 × 600² cells: never waited for in a frame
  settle(c);
  c.commands().push("set", {{"field", "seed"}, {"value", 77}});
  c.commands().push("wait");
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool waited = false;
  while (!c.commands().empty()) {
    ASSERT_LT(std::chrono::steady_clock::now(), until) << "wait was never applied";
    c.update(0);
    if (c.commands().empty()) break;
    waited = true;
    EXPECT_GT(c.idleTimeout(0, 0.25), 0.0) << "frames drawn back to back while the engine computes";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(waited) << "wait was applied in the frame of the edit, before its result";
  ASSERT_TRUE(c.snapshot());
  EXPECT_EQ(c.snapshot()->version, c.document().version()) << "wait ran before the edit's result was in";
  EXPECT_TRUE(c.snapshot()->complete);
  EXPECT_EQ(c.snapshot()->inputs->model.seed, 77u);
}

// A two-part result whose rest will never come — newer inputs, which the engine refused, dropped it —
// is not said to be computing: nothing is, and an export says why rather than "in a moment". (The
// views' "computing head N…" read the same flag and stayed for ever.)
TEST_F(ControllerTest, MapsThatWillNotComeAreNotSaidToBeComing) {
  Controller c = make();
  std::string words;
  for (int i = 0; i < 600; ++i) words += "w" + std::to_string(i) + " ";
  user(c, "sentence", {{"text", words}});
  user(c, "d_in", {{"value", 96}});
  user(c, "set", {{"field", "d_out"}, {"value", 96}});
  user(c, "set", {{"field", "num_heads"}, {"value", 4}});  // 4 × 600² cells: a result in two parts
  settle(c);
  bool first_part_seen = false;
  for (int attempt = 0; attempt < 20 && !first_part_seen; ++attempt) {
    user(c, "set", {{"field", "seed"}, {"value", 100 + attempt}});
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (c.snapshot()->version != c.document().version() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      c.update(0);
    }
    ASSERT_EQ(c.snapshot()->version, c.document().version()) << "no result within 60 s";
    if (c.snapshot()->complete) {  // its rest came in the same poll: again
      settle(c);
      continue;
    }
    first_part_seen = true;
    user(c, "set_cell", {{"row", 0}, {"col", 0}, {"value", 3e38}});  // scores beyond float32
  }
  ASSERT_TRUE(first_part_seen) << "every result came whole";
  settle(c);
  ASSERT_NE(c.engineError(), "") << "the edit's scores overflow float32";
  ASSERT_TRUE(c.snapshot());
  EXPECT_FALSE(c.snapshot()->complete) << "the first part stays on screen";
  EXPECT_FALSE(c.computing()) << "said to compute maps that will not come";
  user(c, "export_trace", {{"path", path("t.json")}, {"format", "json"}});
  EXPECT_TRUE(c.toast().error);
  EXPECT_EQ(c.toast().text.find("still being computed"), std::string::npos) << c.toast().text;
  EXPECT_NE(c.toast().text.find("not computed: " + c.engineError()), std::string::npos) << c.toast().text;
  EXPECT_FALSE(fs::exists(path("t.json")));
  // Inputs the engine takes again: the result comes whole.
  user(c, "set_cell", {{"row", 0}, {"col", 0}, {"value", 0.5}});
  settle(c);
  EXPECT_EQ(c.engineError(), "");
  EXPECT_TRUE(c.snapshot()->complete);
}

// A request too large for the 5 ms wait holds the frame that sent it for about eight frames' drawing:
// under a software renderer those frames would show the old maps and take the engine's cores.
TEST_F(ControllerTest, AnEditsFrameWaitsAboutEightFramesDrawingForItsResult) {
  Controller c = make();
  EXPECT_EQ(c.holdMs(), 0) << "no frame drawn yet: nothing to go by";
  for (int i = 0; i < 8; ++i) c.endFrame(0, false, false, 10);
  EXPECT_DOUBLE_EQ(c.holdMs(), 80);
  c.endFrame(0, false, false, 900);  // one slow frame (a first colouring, a font reload) is not the rule
  EXPECT_DOUBLE_EQ(c.holdMs(), 80);
  for (int i = 0; i < 8; ++i) c.endFrame(0, false, false, 1.5);  // a GPU's frames: hardly any hold
  EXPECT_DOUBLE_EQ(c.holdMs(), 12);
  for (int i = 0; i < 8; ++i) c.endFrame(0, false, false, 15);
  EXPECT_DOUBLE_EQ(c.holdMs(), 100) << "never more than 100 ms";
  c.endFrame(0, true, false, 70);
  EXPECT_EQ(c.holdMs(), 0) << "a drag's frames keep coming";
}

// [SECTION] what a new document keeps ---------------------------------------------------------

TEST_F(ControllerTest, APresetKeepsTheRoomsViewAFileMaySayOtherwise) {
  // A file saved at text size 100, and one that says nothing of it.
  Workspace says = bookExample();
  says.view = {{"text_size", 100}, {"inspector", false}};
  saveWorkspace(path("says.json"), says);
  Workspace silent = bookExample();
  silent.view = nlohmann::json::object();
  saveWorkspace(path("silent.json"), silent);

  Controller c = make();
  user(c, "view", {{"field", "text_size"}, {"value", 175}});
  user(c, "view", {{"field", "presentation"}, {"value", true}});
  user(c, "view", {{"field", "theme"}, {"value", "light"}});
  user(c, "preset", {{"name", "causal"}});
  EXPECT_EQ(c.view().text_size, 175) << "a preset keeps the room's text size";
  EXPECT_TRUE(c.view().presentation);
  EXPECT_TRUE(c.view().light_theme) << "and the theme";

  user(c, "open", {{"path", path("silent.json")}});
  EXPECT_EQ(c.view().text_size, 175) << "a file that says nothing keeps it";
  EXPECT_TRUE(c.view().presentation);

  user(c, "open", {{"path", path("says.json")}});
  EXPECT_EQ(c.view().text_size, 100) << "a file that says otherwise wins";
  EXPECT_FALSE(c.view().show_inspector);
  EXPECT_TRUE(c.view().presentation) << "what it does not say stays";
}

TEST_F(ControllerTest, OpeningOverUnsavedWorkKeepsItAside) {
  Controller c = make();
  editBesideOther(c);
  Command scripted = makeCommand("open", {{"path", path("other.json")}});
  scripted.script_index = 0;  // a script's open in a session the user sees: not asked, but kept
  c.commands().push(scripted);
  c.update(0);
  EXPECT_EQ(seedOf(c), 5u);
  const std::string text = c.toast().text;
  const std::size_t at = text.find("kept in ");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string kept = text.substr(at + 8);
  EXPECT_EQ(loadWorkspace(kept, Controller::limits()).model.seed, 606u) << "the unsaved work is in " << kept;
}

// A second command that would ask while the window asks (Ctrl+Q over an open's prompt) is refused
// and said; the first question stays and goes on as answered.
TEST_F(ControllerTest, OneQuestionAtATime) {
  Controller c = make();
  editBesideOther(c);
  user(c, "open", {{"path", path("other.json")}});
  EXPECT_EQ(c.prompts().unsaved_action, "open");
  user(c, "quit");
  EXPECT_EQ(c.prompts().unsaved_action, "open") << "the open's question stays";
  EXPECT_FALSE(c.quitRequested());
  EXPECT_NE(c.toast().text.find("quit: not now: the window is asking about the unsaved changes before opening "
                                "other.json"),
            std::string::npos)
      << c.toast().text;
  user(c, "unsaved", {{"choice", "discard"}});
  EXPECT_EQ(seedOf(c), 5u) << "the open went on as answered";
  EXPECT_FALSE(c.prompts().any());
  user(c, "quit");
  EXPECT_TRUE(c.quitRequested()) << "nothing unsaved: no question";
}

// [SECTION] the key binding table -------------------------------------------------------------

std::string keyed(Key key, unsigned mods, KeyContext context = {}, bool repeat = false) {
  const std::optional<Command> c = keyCommand(KeyPress{key, mods, repeat}, context);
  return c ? c->name + (c->args.empty() ? "" : " " + c->args.dump()) : "";
}

// [SECTION] a trained model ------------------------------------------------------------------

// The book's GPTModel (2 blocks, d = 16, 40 tokens, 16 positions) with random weights, as a
// safetensors file written here; no config.json, no tokenizer (the model reads token ids).
std::string writeTinyModel(const std::string& file, int context = 16) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0, 0.3f);
  std::vector<std::pair<std::string, std::vector<int>>> tensors = {{"tok_emb.weight", {40, 16}},
                                                                   {"pos_emb.weight", {context, 16}}};
  for (int b = 0; b < 2; ++b) {
    const std::string p = "trf_blocks." + std::to_string(b) + ".";
    for (const char* w : {"att.W_query", "att.W_key", "att.W_value", "att.out_proj"}) {
      tensors.push_back({p + w + ".weight", {16, 16}});
      if (std::string(w) == "att.out_proj") tensors.push_back({p + w + ".bias", {16}});
    }
    tensors.push_back({p + "ff.layers.0.weight", {64, 16}});
    tensors.push_back({p + "ff.layers.0.bias", {64}});
    tensors.push_back({p + "ff.layers.2.weight", {16, 64}});
    tensors.push_back({p + "ff.layers.2.bias", {16}});
    for (const char* n : {"norm1", "norm2"}) {
      tensors.push_back({p + n + ".scale", {16}});
      tensors.push_back({p + n + ".shift", {16}});
    }
  }
  tensors.push_back({"final_norm.scale", {16}});
  tensors.push_back({"final_norm.shift", {16}});
  tensors.push_back({"out_head.weight", {40, 16}});
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto& [name, shape] : tensors) {
    std::size_t n = 1;
    for (int d : shape) n *= static_cast<std::size_t>(d);
    const std::size_t begin = data.size();
    for (std::size_t i = 0; i < n; ++i) {
      const float v = name.find(".scale") != std::string::npos ? 1.0f + normal(rng) : normal(rng);
      data.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    header[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string h = header.dump();
  while ((8 + h.size()) % 8 != 0) h += ' ';
  std::string bytes(8, '\0');
  for (int b = 0; b < 8; ++b) bytes[b] = static_cast<char>((h.size() >> (8 * b)) & 0xFF);
  std::ofstream(file, std::ios::binary) << bytes << h << data;
  return file;
}

TEST_F(ControllerTest, AModelsRefusalsChangeNothing) {
  Controller c = make();
  user(c, "model_open", {{"path", writeTinyModel(path("m.safetensors"))}, {"num_heads", 2}});
  settle(c);  // read off the UI thread
  ASSERT_TRUE(c.model().isOpen()) << c.toast().text;
  const std::vector<int> ids = c.model().ids();
  const std::uint64_t version = c.model().version();
  user(c, "select_layer", {{"layer", 1}, {"head", 99}});  // a head the model lacks
  EXPECT_TRUE(c.toast().error);
  user(c, "select_layer", {{"layer", 2}});              // a layer it lacks
  user(c, "text", {{"ids", {1, 2, 40}}});               // outside the vocabulary
  user(c, "text", {{"ids", std::vector<int>(17, 3)}});  // more than its 16 positions
  user(c, "text", {{"value", "no tokenizer"}});
  user(c, "text", {{"ids", {1}}, {"prepend_eot", true}});  // no <|endoftext|> without a tokenizer
  user(c, "set",
       {{
            "field",
            "d_out",
        },
        {"value", 4}});  // the chapter's workspace is set aside
  EXPECT_NE(c.toast().text.find("read only"), std::string::npos) << c.toast().text;
  EXPECT_EQ(c.model().layer(), 0);
  EXPECT_EQ(c.model().ids(), ids);
  EXPECT_EQ(c.model().version(), version);
  EXPECT_EQ(c.document().workspace().model.d_out, 2);
  user(c, "text", {{"ids", std::vector<int>(9, 3)}});
  user(c, "repeat_text");  // 18 > 16
  EXPECT_EQ(c.model().tokenCount(), 9);
}

// The selection named through `view` is checked as select_head's and select_token's are: `view
// head 9` of 2 heads had been taken, clamped to all heads, and said nothing.
TEST_F(ControllerTest, ASelectionThroughViewIsCheckedAsTheSelectCommandsAre) {
  Controller c = make();  // the book's multi-head example: 6 tokens, 2 heads, 2 batch elements
  const ViewState before = c.view();
  user(c, "view", {{"field", "head"}, {"value", 9}});
  EXPECT_TRUE(c.toast().error);
  EXPECT_NE(c.toast().text.find("view head: no head 9 (there are 2, numbered from 0; −1 = all heads)"),
            std::string::npos)
      << c.toast().text;
  user(c, "view", {{"field", "token"}, {"value", 50}});
  EXPECT_NE(c.toast().text.find("view token: no token 50 (there are 6, numbered from 0)"), std::string::npos)
      << c.toast().text;
  user(c, "view", {{"field", "batch"}, {"value", 2}});
  EXPECT_NE(c.toast().text.find("view batch: no batch element 2 (there are 2"), std::string::npos) << c.toast().text;
  EXPECT_EQ(c.view().head, before.head);
  EXPECT_EQ(c.view().token, before.token);
  EXPECT_EQ(c.view().batch, before.batch);
  user(c, "select_head", {{"index", 9}});  // −1 is all heads, not "none"
  EXPECT_NE(c.toast().text.find("index: no head 9 (there are 2, numbered from 0; −1 = all heads)"), std::string::npos)
      << c.toast().text;
  user(c, "view", {{"field", "head"}, {"value", 1}});
  user(c, "view", {{"field", "token"}, {"value", 5}});
  EXPECT_EQ(c.view().head, 1);
  EXPECT_EQ(c.view().token, 5);
  user(c, "view", {{"field", "tab"}, {"value", "weights"}});  // the tabs' ids, from their table
  EXPECT_NE(c.toast().text.find("\"parameters\" (the Weights tab)"), std::string::npos) << c.toast().text;
  EXPECT_NE(c.toast().text.find("\"compare\" or \"learn\""), std::string::npos) << c.toast().text;
}

TEST_F(ControllerTest, AnotherWorkspaceClosesTheModelOnlyOnceItIsOpen) {
  Controller c = make();
  user(c, "model_open", {{"path", writeTinyModel(path("m.safetensors"))}, {"num_heads", 2}});
  settle(c);  // read off the UI thread
  ASSERT_TRUE(c.model().isOpen());
  user(c, "open", {{"path", path("missing.json")}});
  user(c, "preset", {{"name", "no_such_preset"}});
  user(c, "lesson_open", {{"path", path("missing-lesson.json")}});
  settle(c);
  EXPECT_TRUE(c.model().isOpen()) << "a refused workspace closed the model";
  user(c, "preset", {{"name", "causal"}});
  EXPECT_FALSE(c.model().isOpen());
  EXPECT_EQ(c.document().workspace().model.variant, Variant::Causal);
}

// A teacher closes the model to show the chapter, then opens it again: the text typed and the layer
// come back (they had to be typed anew); another file starts from its first text.
TEST_F(ControllerTest, AModelOpenedAgainReadsItsTextAgain) {
  Controller c = make();
  const std::string model = writeTinyModel(path("m.safetensors")), other = writeTinyModel(path("n.safetensors"));
  user(c, "model_open", {{"path", model}, {"num_heads", 2}});
  settle(c);
  const std::vector<int> first = c.model().ids();
  user(c, "text", {{"ids", {5, 6, 7, 8, 9}}});
  user(c, "select_layer", {{"layer", 1}});
  user(c, "model_close");
  user(c, "model_open", {{"path", model}, {"num_heads", 2}});
  settle(c);
  EXPECT_EQ(c.model().ids(), (std::vector<int>{5, 6, 7, 8, 9}));
  EXPECT_EQ(c.model().layer(), 1);
  EXPECT_FALSE(c.model().canUndoText()) << "opening starts the text's history afresh";
  user(c, "model_open", {{"path", other}, {"num_heads", 2}});  // one model in place of the other
  settle(c);
  EXPECT_EQ(c.model().ids(), first);
  EXPECT_EQ(c.model().layer(), 0);
  user(c, "model_open", {{"path", model}, {"num_heads", 2}});
  settle(c);
  EXPECT_EQ(c.model().ids(), (std::vector<int>{5, 6, 7, 8, 9})) << "lost when another model took its place";
  user(c, "model_close");
  const std::string respelled = (std::filesystem::path(model).parent_path() / "." / "m.safetensors").string();
  user(c, "model_open", {{"path", respelled}, {"num_heads", 2}});  // the same file, spelled otherwise
  settle(c);
  EXPECT_EQ(c.model().ids(), (std::vector<int>{5, 6, 7, 8, 9})) << "not found by " << respelled;
}

TEST_F(ControllerTest, TheChaptersViewIsSavedAndComesBackAfterTheModel) {
  const std::string file = path("w.json");
  Controller c = make(file);
  user(c, "select_token", {{"index", 4}});
  user(c, "select_head", {{"index", 1}});
  user(c, "model_open", {{"path", writeTinyModel(path("m.safetensors"))}, {"num_heads", 2}});
  settle(c);  // read off the UI thread
  user(c, "text", {{"ids", {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}}});
  user(c, "select_token", {{"index", 11}});
  user(c, "select_layer", {{"layer", 1}, {"head", 0}});
  user(c, "save", {{"path", file}});
  const nlohmann::json saved = nlohmann::json::parse(read(file))["view"];
  EXPECT_EQ(saved["token"], 4);  // the chapter's, not the model's
  EXPECT_EQ(saved["head"], 1);
  EXPECT_EQ(saved["tab"], "heatmaps");
  user(c, "model_close");
  EXPECT_EQ(c.view().token, 4);
  EXPECT_EQ(c.view().head, 1);
  EXPECT_EQ(c.view().tab, "heatmaps");
}

TEST_F(ControllerTest, AModelsLayerInEveryViewAndATokenChangeKeepsItsTrace) {
  Controller c = make();
  user(c, "pin");  // the chapter's result as A: not something a model's layer is compared with
  settle(c);
  user(c, "pin");
  ASSERT_TRUE(c.pinned());
  user(c, "model_open", {{"path", writeTinyModel(path("m.safetensors"))}, {"num_heads", 2}});
  settle(c);  // read off the UI thread
  EXPECT_FALSE(c.pinned());
  user(c, "text", {{"ids", {1, 2, 3, 4, 5, 6, 7}}});
  user(c, "select_layer", {{"layer", 1}, {"head", 1}});
  settle(c);
  const std::shared_ptr<const Snapshot> first = c.shared();
  ASSERT_TRUE(first && first->model);
  EXPECT_EQ(first->layer, 1);
  EXPECT_EQ(first->inputs->embeddings.rows(), 7);  // the layer as a chapter workspace: its input …
  EXPECT_EQ(first->inputs->model.num_heads, 2);    // … and its attention
  EXPECT_EQ(first->trace->batches.size(), 1u);
  EXPECT_NE(first->logitsAt(6), nullptr);
  user(c, "select_token", {{"index", 2}});
  settle(c);
  const std::shared_ptr<const Snapshot> second = c.shared();
  EXPECT_NE(second, first);
  EXPECT_EQ(second->trace, first->trace);  // one row of logits, not the layer again
  EXPECT_EQ(second->model, first->model);
  EXPECT_NE(second->logitsAt(2), nullptr);
  EXPECT_EQ(second->statistics.size(), first->statistics.size());
  user(c, "append_token");  // waits for the result, then appends the most likely token
  settle(c);
  EXPECT_EQ(c.model().tokenCount(), 8);
}

// Typing at the end of a model's text is expected to cost a row of the pass on screen, whatever
// layer is shown (the frame that sends it then waits for it): a new text, every row. (Passes trace
// no layer since the layer shown is traced after them; the estimate had still asked the pass on
// screen for the layer shown, found none, and expected a whole pass for every keystroke.)
TEST_F(ControllerTest, TypingAtTheEndIsExpectedToCostARow) {
  Controller c = make();
  user(c, "model_open", {{"path", writeTinyModel(path("m.safetensors"), 1024)}, {"num_heads", 2}});
  settle(c);
  ASSERT_TRUE(c.model().isOpen()) << c.toast().text;
  user(c, "select_layer", {{"layer", 1}});
  // 60 tokens: a row's pass is one row (past 64 every row's attention counts too).
  std::vector<int> ids(60);
  for (int t = 0; t < 60; ++t) ids[t] = (t * 7 + 3) % 40;
  user(c, "text", {{"ids", ids}});
  settle(c);
  ids.push_back(5);
  // The rows the pass after the one on screen computes, asked before it takes that one's
  // projections: one where they are kept (the fast path's packed product), more where they are not
  // (the sanitizer build: the reused rows' attention counted too), against every row.
  const GptModel& model = *c.model().model();
  const double rows = passWorkRows(model.config, 61, reusablePrefix(*c.snapshot()->model, model, ids, -1));
  ASSERT_LT(rows, 61);
  user(c, "text", {{"ids", ids}});
  const double typed = c.expectedMsOfLastRequest();
  settle(c);
  ids[0] = (ids[0] + 1) % 40;  // a new text: every row
  user(c, "text", {{"ids", ids}});
  const double fresh = c.expectedMsOfLastRequest();
  EXPECT_GT(typed, 0);
  EXPECT_NEAR(fresh / typed, 61 / rows, 0.1 * 61 / rows)
      << "typing at the end expected at " << typed << " ms (" << rows << " rows), a new text at " << fresh;
  settle(c);
}

// writeTinyModel's model, loaded with 2 heads, for the engine worker alone.
std::shared_ptr<const GptModel> tinyModel(const std::string& file, int context) {
  GptLoadOptions options;
  options.num_heads = 2;
  return loadGptModel(writeTinyModel(file, context), options);
}

// A model job as the controller sends it to the engine worker: `ids` labelled "t", the next
// tokens at `position`, the result on screen `previous`.
EngineRequest modelRequest(std::shared_ptr<const GptModel> model, const std::vector<int>& ids, int position,
                           std::shared_ptr<const Snapshot> previous = nullptr, int layer = 0,
                           bool thumbnails_first = false) {
  auto job = std::make_shared<ModelJob>();
  job->model = std::move(model);
  job->ids = ids;
  job->tokens.assign(ids.size(), "t");
  job->layer = layer;
  job->position = position;
  job->version = 1;
  job->thumbnails_first = thumbnails_first;
  job->previous = std::move(previous);
  EngineRequest r;
  r.model = std::move(job);
  return r;
}

// The worker's next result, as a frame polls for it (60 s at most).
EngineResult nextResult(EngineWorker& w) {
  for (int i = 0; i < 60000; ++i)
    if (auto r = w.poll(std::chrono::milliseconds(1))) return *r;
  ADD_FAILURE() << "no result within 60 s";
  return EngineResult{};
}

// A long text's result in two parts (ModelJob::thumbnails_first), as the worker gives them: first
// the thumbnails, the next tokens and the layer's outputs (KeptLayer::Outputs), its heads without
// maps; its rest, the layer's maps, only once the first is taken (never replacing it unseen); a
// newer request drops the rest.
TEST_F(ControllerTest, AModelsLayerMapsFollowItsThumbnailsOnceTheyAreTaken) {
  const std::shared_ptr<const GptModel> model = tinyModel(path("m.safetensors"), 1024);
  std::vector<int> ids(800);
  for (int t = 0; t < 800; ++t) ids[t] = (t * 7 + t / 40) % 40;
  const auto request = [&](const std::vector<int>& text) { return modelRequest(model, text, 5, nullptr, 1, true); };
  // Once a result waits, as long again as it took: a rest that were not held would be done by then.
  const auto waitsAWhile = [](EngineWorker& w) {
    const auto start = std::chrono::steady_clock::now();
    while (!w.ready() && std::chrono::steady_clock::now() - start < std::chrono::seconds(60))
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(2 * (std::chrono::steady_clock::now() - start) + std::chrono::milliseconds(20));
  };
  EngineWorker worker;
  worker.request(request(ids));
  waitsAWhile(worker);
  const EngineResult a = nextResult(worker);
  ASSERT_TRUE(a.snapshot) << a.error;
  const Snapshot& first = *a.snapshot;
  EXPECT_FALSE(first.complete);
  ASSERT_TRUE(first.model);
  EXPECT_EQ(first.model->ids, ids);
  EXPECT_EQ(first.model->heads.size(), 4u);
  EXPECT_EQ(first.model->kept_layer, -1) << "every layer streamed";
  EXPECT_NE(first.logitsAt(799), nullptr);
  EXPECT_NE(first.logitsAt(5), nullptr);
  EXPECT_EQ(first.shown().output.rows(), 800);
  ASSERT_EQ(first.shown().heads.size(), 2u);
  for (const HeadTrace& h : first.shown().heads) EXPECT_FALSE(h.hasMaps());
  EXPECT_EQ(first.statisticsOf(0), nullptr);
  EXPECT_TRUE(worker.busy()) << "its rest is still to come";
  const EngineResult b = nextResult(worker);
  ASSERT_TRUE(b.snapshot) << b.error;
  const Snapshot& second = *b.snapshot;
  EXPECT_TRUE(second.complete);
  EXPECT_EQ(second.model, first.model) << "the same pass";
  EXPECT_EQ(second.layer, 1);
  EXPECT_TRUE(second.logits.cwiseEqual(first.logits).all());
  const Trace traced = layerTrace(*first.model, 1, second.exec, {});
  // The layer traced as every route traces it: the outputs shown first (the pass's) within the
  // last bits of these.
  EXPECT_TRUE(second.shown().output.cwiseEqual(traced.batches[0].output).all());
  EXPECT_TRUE(second.shown().output.isApprox(first.shown().output, 1e-5f));
  for (int h = 0; h < 2; ++h) {
    ASSERT_TRUE(second.shown().heads[h].hasMaps()) << h;
    EXPECT_TRUE(second.shown().heads[h].weights.cwiseEqual(traced.batches[0].heads[h].weights).all()) << h;
    EXPECT_NE(second.statisticsOf(h), nullptr) << h;
  }
  // A newer text while a first part waits to be taken: its rest is dropped, the newer one runs.
  ids[799] = (ids[799] + 1) % 40;
  worker.request(request(ids));
  waitsAWhile(worker);
  ids[0] = (ids[0] + 1) % 40;
  worker.request(request(ids));
  std::vector<EngineResult> later;
  while (worker.busy()) later.push_back(nextResult(worker));
  ASSERT_FALSE(later.empty());
  EXPECT_EQ(later.back().snapshot->model->ids, ids);
  EXPECT_TRUE(later.back().snapshot->complete);
  for (const EngineResult& r : later)
    EXPECT_TRUE(r.snapshot->model->ids == ids || !r.snapshot->complete) << "the older text's maps were computed";
}

// A layer's maps and outputs have the same bits for the same text and layer, whichever way they
// came: the layer shown when the text was computed, or picked afterwards (then traced from the
// pass's attention input), in one part or two. So an edit changes no cell of the rows before it:
// Compare had counted 62 cells of 121 changed by a word whose rows were 56 (the layer picked after
// the text on one side, shown while the text computed on the other: the pass that traced the layer
// itself fed the layers after it outputs within the last bits of the streamed ones).
TEST_F(ControllerTest, ALayersMapsAreTheSameWhicheverWayTheyCame) {
  const std::shared_ptr<const GptModel> model = tinyModel(path("m.safetensors"), 1024);
  std::vector<int> ids(40);
  for (int t = 0; t < 40; ++t) ids[t] = (t * 7 + 3) % 40;
  const auto result = [&](const std::vector<int>& text, int layer, std::shared_ptr<const Snapshot> previous,
                          bool thumbnails_first = false) {
    EngineWorker worker;
    worker.request(
        modelRequest(model, text, static_cast<int>(text.size()) - 1, std::move(previous), layer, thumbnails_first));
    std::shared_ptr<const Snapshot> s = nextResult(worker).snapshot;
    while (s && !s->complete) s = nextResult(worker).snapshot;
    return s;
  };
  const auto same = [](const Snapshot& a, const Snapshot& b, int rows, const std::string& what) {
    const BatchTrace &x = a.shown(), &y = b.shown();
    ASSERT_EQ(x.heads.size(), y.heads.size()) << what;
    for (std::size_t h = 0; h < x.heads.size(); ++h) {
      // (A row's scores of the keys after it, masked, are of those keys: an edited key's change.)
      EXPECT_TRUE(
          x.heads[h].scores.topLeftCorner(rows, rows).cwiseEqual(y.heads[h].scores.topLeftCorner(rows, rows)).all())
          << what << h;
      EXPECT_TRUE(x.heads[h].weights.topRows(rows).cwiseEqual(y.heads[h].weights.topRows(rows)).all()) << what << h;
      EXPECT_TRUE(x.heads[h].context.topRows(rows).cwiseEqual(y.heads[h].context.topRows(rows)).all()) << what << h;
    }
    EXPECT_TRUE(x.output.topRows(rows).cwiseEqual(y.output.topRows(rows)).all()) << what;
  };
  const std::shared_ptr<const Snapshot> shown_then = result(ids, 1, nullptr);
  const std::shared_ptr<const Snapshot> layer_0 = result(ids, 0, nullptr);
  const std::shared_ptr<const Snapshot> picked_after = result(ids, 1, layer_0);
  const std::shared_ptr<const Snapshot> in_two_parts = result(ids, 1, nullptr, true);
  ASSERT_TRUE(shown_then && layer_0 && picked_after && in_two_parts);
  EXPECT_EQ(picked_after->model, layer_0->model) << "the pass on screen serves another layer";
  same(*shown_then, *picked_after, 40, "layer 1 picked after the text, head ");
  same(*shown_then, *in_two_parts, 40, "layer 1 in two parts, head ");
  // An edit at token 20, on a result that showed another layer: rows 0–19 as they were.
  std::vector<int> edited = ids;
  edited[20] = (edited[20] + 1) % 40;
  const std::shared_ptr<const Snapshot> after_edit = result(edited, 1, layer_0);
  ASSERT_TRUE(after_edit);
  EXPECT_GT(after_edit->model->reused_rows, 0) << "the rows before the edit taken from the pass before";
  same(*shown_then, *after_edit, 20, "the rows before an edit, head ");
  const BatchTrace &x = shown_then->shown(), &y = after_edit->shown();
  EXPECT_FALSE(x.heads[0].weights.row(20).cwiseEqual(y.heads[0].weights.row(20)).all()) << "the edited row changed";
}

// A token clicked while its text's pass computes: the job it sends names the result then on screen,
// an older text's, but runs on the pass just computed — not a second pass over the same text. (The
// job waits for the pass, then starts as here, once its result is in.)
TEST_F(ControllerTest, ATokenClickedWhileItsTextComputesTakesThatPass) {
  const std::shared_ptr<const GptModel> model = tinyModel(path("m.safetensors"), 1024);
  std::vector<int> ids(600);
  for (int t = 0; t < 600; ++t) ids[t] = (t * 11 + t / 30) % 40;
  EngineWorker worker;
  // Without `previous`: the text on screen was another.
  const auto send = [&](int position, std::shared_ptr<const Snapshot> previous = nullptr) {
    worker.request(modelRequest(model, ids, position, std::move(previous)));
  };
  const auto next = [&] { return nextResult(worker).snapshot; };
  send(599);
  const std::shared_ptr<const Snapshot> text = next();
  ASSERT_TRUE(text && text->model);
  send(5);
  const std::shared_ptr<const Snapshot> click = next();
  ASSERT_TRUE(click && click->model);
  EXPECT_EQ(click->model, text->model) << "the text's pass ran twice";
  EXPECT_EQ(click->trace, text->trace) << "the same layer: its trace too";
  EXPECT_NE(click->logitsAt(5), nullptr);
  // Another text on the same layer shares that layer's weights with the result before.
  ids[3] = (ids[3] + 1) % 40;
  send(5, click);
  const std::shared_ptr<const Snapshot> edited = next();
  ASSERT_TRUE(edited && edited->model);
  EXPECT_NE(edited->model, click->model);
  EXPECT_EQ(edited->inputs->model.parameters, click->inputs->model.parameters) << "copied again";
}

// A text typed on while the worker's result for the last keystroke waits to be taken: the job
// names the result on screen, two keystrokes old, whose projections the newer pass took over; it
// runs on that newer pass instead, reusing its rows and projections (one set held, not two).
TEST_F(ControllerTest, TypingOnRunsOnTheNewestPassNotTheOneOnScreen) {
  const std::shared_ptr<const GptModel> model = tinyModel(path("m.safetensors"), 1024);
  std::vector<int> ids(100);
  for (int t = 0; t < 100; ++t) ids[t] = (t * 13 + t / 9) % 40;
  EngineWorker worker;
  const auto send = [&](std::shared_ptr<const Snapshot> previous) {
    worker.request(modelRequest(model, ids, static_cast<int>(ids.size()) - 1, std::move(previous)));
  };
  const auto next = [&] { return nextResult(worker).snapshot; };
  send(nullptr);
  const std::shared_ptr<const Snapshot> on_screen = next();
  ASSERT_TRUE(on_screen && on_screen->model);
  ids.push_back(7);
  send(on_screen);
  for (int i = 0; i < 60000 && !worker.ready(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(worker.ready());
  ids.push_back(9);
  send(on_screen);  // sent before the frame took the keystroke's result
  std::shared_ptr<const Snapshot> typed = next();  // that result, or (superseded) the next one's
  if (typed && typed->model && typed->model->ids != ids) typed = next();
  ASSERT_TRUE(typed && typed->model);
  EXPECT_EQ(typed->model->ids, ids);
  EXPECT_EQ(typed->model->reused_rows, 101) << "the rows of the pass before it";
  EXPECT_TRUE(typed->model->reused_projections) << "projected again";
  EXPECT_FALSE(on_screen->model->keepsProjections(model->config.layers));
}

// The app's side of it: in the Layers tab a long text's layer maps follow its thumbnails and next
// tokens; a token clicked before they came still gets them; another tab gets the result whole.
TEST_F(ControllerTest, ALongTextsLayerMapsFollowInTheLayersTabAlone) {
  Controller c = make();
  user(c, "model_open", {{"path", writeTinyModel(path("m.safetensors"), 1024)}, {"num_heads", 2}});
  settle(c);
  ASSERT_EQ(c.view().tab, "layers");
  std::vector<int> ids(800);  // 2 heads of 800 × 800 cells
  for (int t = 0; t < 800; ++t) ids[t] = (t * 7 + t / 40) % 40;
  // The text typed, then every result the UI takes for it, in order, until it is settled.
  const auto results = [&](const std::vector<int>& text, const std::function<void()>& on_first = {}) {
    c.commands().push("text", {{"ids", text}});
    std::vector<std::shared_ptr<const Snapshot>> seen;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < until) {
      c.update(0);
      const std::shared_ptr<const Snapshot> s = c.shared();
      if (s && s->model_version == c.model().version() && (seen.empty() || seen.back() != s)) {
        seen.push_back(s);
        if (seen.size() == 1 && on_first) on_first();
      }
      if (c.settled() && c.idle() && !seen.empty() && seen.back() == s) break;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return seen;
  };
  std::vector<std::shared_ptr<const Snapshot>> seen = results(ids);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front()->model->kept_layer, -1) << "the pass kept its layer's outputs alone";
  EXPECT_TRUE(seen.back()->complete);
  for (const HeadTrace& h : seen.back()->shown().heads) EXPECT_TRUE(h.hasMaps());
  // A token clicked at once: its maps come all the same (the first part's layer is traced again).
  ids[799] = (ids[799] + 1) % 40;
  seen = results(ids, [&] { c.commands().push("select_token", {{"index", 5}}); });
  ASSERT_FALSE(seen.empty());
  EXPECT_TRUE(seen.back()->complete);
  EXPECT_NE(seen.back()->logitsAt(5), nullptr);
  for (const HeadTrace& h : seen.back()->shown().heads) EXPECT_TRUE(h.hasMaps());
  // Another tab: one result, whole, its layer's maps traced after the pass.
  user(c, "view", {{"field", "tab"}, {"value", "heatmaps"}});
  ids[0] = (ids[0] + 1) % 40;
  seen = results(ids);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen[0]->complete);
  EXPECT_EQ(seen[0]->model->kept_layer, -1) << "every layer streamed";
  for (const HeadTrace& h : seen[0]->shown().heads) EXPECT_TRUE(h.hasMaps());
}

// A model's text the user typed is work a workspace keeps (view.trained_model): changed since the
// model was opened or saved, it is unsaved — the title's mark, the prompt before quitting or
// opening another file, the autosave's mark — as a chapter's edit is. Opening a model, its layer
// and head, and undoing back to the text it opened with are not.
TEST_F(ControllerTest, AModelsTypedTextIsUnsavedWorkUntilSaved) {
  const std::string file = path("w.json");
  Controller c = make(file);
  user(c, "model_open", {{"path", writeTinyModel(path("m.safetensors"))}, {"num_heads", 2}});
  settle(c);
  ASSERT_TRUE(c.model().isOpen()) << c.toast().text;
  EXPECT_FALSE(c.unsaved()) << "opening a model is no change of the user's";
  user(c, "select_layer", {{"layer", 1}, {"head", 1}});
  EXPECT_FALSE(c.unsaved()) << "the layer and head are the view's";
  user(c, "quit");
  EXPECT_TRUE(c.quitRequested()) << "nothing to ask";

  Controller d = make(file);
  user(d, "model_open", {{"path", path("m.safetensors")}, {"num_heads", 2}});
  settle(d);
  d.autosaveTo(path("autosave.json"));
  user(d, "text", {{"ids", {7, 8, 9}}});
  EXPECT_TRUE(d.unsaved());
  // The autosave marks it unsaved, so that the next `attnscope w.json` restores it (planRecovery).
  nlohmann::json autosaved = nlohmann::json::object();
  const auto autosavedIds = [&] {
    const nlohmann::json* ids = autosaved.contains("trained_model") ? &autosaved["trained_model"]["ids"] : nullptr;
    return ids ? *ids : nlohmann::json();
  };
  for (double now = 1; now < 600 && autosavedIds() != nlohmann::json({7, 8, 9}); now += 1) {
    d.update(now);
    d.endFrame(now, false, false, 1.0);  // the autosave is written at a frame's end
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (fs::exists(path("autosave.json"))) autosaved = loadWorkspace(path("autosave.json"), Controller::limits()).view;
  }
  EXPECT_EQ(autosaved.value("dirty", false), true) << autosaved.dump();
  EXPECT_FALSE(d.document().dirty()) << "the chapter's document is as it was";
  EXPECT_NE(d.windowTitle().find("w.json •"), std::string::npos) << d.windowTitle();
  user(d, "quit");
  EXPECT_FALSE(d.quitRequested());
  EXPECT_EQ(d.prompts().unsaved_action, "quit");
  user(d, "unsaved", {{"choice", "cancel"}});
  user(d, "undo");
  EXPECT_FALSE(d.unsaved()) << "back to the text it opened with";
  user(d, "redo");
  EXPECT_TRUE(d.unsaved());
  user(d, "save");
  EXPECT_FALSE(d.unsaved()) << d.toast().text;
  EXPECT_EQ(nlohmann::json::parse(read(file))["view"]["trained_model"]["ids"], nlohmann::json({7, 8, 9}));
  EXPECT_EQ(d.windowTitle().find("•"), std::string::npos) << d.windowTitle();
  user(d, "append_token", {{"id", 3}});
  EXPECT_TRUE(d.unsaved());
  user(d, "quit");
  EXPECT_EQ(d.prompts().unsaved_action, "quit");
  user(d, "unsaved", {{"choice", "save"}});
  EXPECT_TRUE(d.quitRequested());
  EXPECT_EQ(nlohmann::json::parse(read(file))["view"]["trained_model"]["ids"], nlohmann::json({7, 8, 9, 3}));
}

// Closing a model whose typed text is unsaved, or opening another in its place, asks first as
// closing a document does: Cancel keeps it, Save writes the workspace with the text then closes,
// Discard closes. Reopening the same file keeps its text, so that does not ask; nor does a script.
TEST_F(ControllerTest, ClosingAModelWithUnsavedTextAsksFirst) {
  const std::string file = path("w.json"), model = writeTinyModel(path("m.safetensors")),
                    other = writeTinyModel(path("other.safetensors"));
  Controller c = make(file);
  user(c, "model_open", {{"path", model}, {"num_heads", 2}});
  settle(c);
  user(c, "model_close");
  EXPECT_FALSE(c.model().isOpen()) << "nothing typed: closed at once";
  user(c, "model_open", {{"path", model}, {"num_heads", 2}});
  settle(c);
  user(c, "text", {{"ids", {4, 5, 6}}});
  user(c, "model_close");
  EXPECT_EQ(c.prompts().unsaved_action, "model_close");
  EXPECT_EQ(c.prompts().unsaved_doing, "closing the model");
  EXPECT_EQ(c.prompts().unsaved_what, "the model's typed text (in w.json)");
  {
    Controller u = make();
    user(u, "model_open", {{"path", model}, {"num_heads", 2}});
    settle(u);
    user(u, "text", {{"ids", {4, 5}}});
    user(u, "quit");
    EXPECT_EQ(u.prompts().unsaved_what, "the model's typed text (in this untitled workspace)") << u.document().dirty();
  }
  user(c, "unsaved", {{"choice", "cancel"}});
  EXPECT_TRUE(c.model().isOpen());
  user(c, "model_open", {{"path", path("./m.safetensors")}, {"num_heads", 2}});  // the same file: its text stays
  EXPECT_FALSE(c.prompts().any());
  settle(c);
  EXPECT_EQ(c.model().ids(), (std::vector<int>{4, 5, 6}));
  user(c, "text", {{"ids", {7, 8}}});
  // A file that is no model is refused without asking: the text stays, nothing to answer.
  const std::string broken = path("broken.safetensors");
  std::ofstream(broken) << "not a model";
  user(c, "model_open", {{"path", broken}, {"num_heads", 2}});
  EXPECT_FALSE(c.prompts().any()) << "asked before the file was read";
  settle(c);
  EXPECT_FALSE(c.prompts().any()) << "asked about a model that cannot open";
  EXPECT_NE(c.modelLoadError().find("broken.safetensors"), std::string::npos) << c.modelLoadError();
  EXPECT_EQ(c.model().ids(), (std::vector<int>{7, 8}));
  // Another model: read first, then asked about.
  user(c, "model_open", {{"path", other}, {"num_heads", 2}});
  settle(c);
  EXPECT_EQ(c.prompts().unsaved_doing, "opening the model other.safetensors");
  user(c, "unsaved", {{"choice", "save"}});
  settle(c);
  EXPECT_EQ(nlohmann::json::parse(read(file))["view"]["trained_model"]["ids"], nlohmann::json({7, 8}));
  EXPECT_EQ(c.model().model()->path, other) << "saved, then the other model opened";
  user(c, "text", {{"ids", {1}}});
  user(c, "model_close");
  user(c, "unsaved", {{"choice", "discard"}});
  EXPECT_FALSE(c.model().isOpen());
  EXPECT_FALSE(c.unsaved());
  Command scripted = makeCommand("model_open", {{"path", model}, {"num_heads", 2}});
  scripted.script_index = 0;
  c.commands().push(std::move(scripted));
  c.update(0);
  settle(c);
  Command typed = makeCommand("text", {{"ids", {2, 3}}});
  typed.script_index = 1;
  c.commands().push(std::move(typed));
  Command closed = makeCommand("model_close");
  closed.script_index = 2;
  c.commands().push(std::move(closed));
  c.update(0);
  EXPECT_FALSE(c.prompts().any()) << "a script runs unattended";
  EXPECT_FALSE(c.model().isOpen());
}

// A session killed with a model's typed text unsaved, started again with the same model on the
// command line (`attnscope --model M`: main.cpp queues the autosave's restore, then model_open):
// the model opens at the autosave's text — it had opened at its first text and the autosave was
// overwritten with that. Another model on the command line opens as asked, and the autosave is kept
// aside, said. Started with the workspace too, the offer's Restore brings the model's text back (it
// had closed the model).
TEST_F(ControllerTest, AKilledSessionsModelTextComesBackWithTheModelOnTheCommandLine) {
  const std::string model = writeTinyModel(path("m.safetensors")), other = writeTinyModel(path("o.safetensors"));
  const auto writeAutosave = [&](const std::string& file, const std::string& autosave) {
    Workspace ws = bookExample();
    ws.view = {
        {"file", file},
        {"dirty", true},
        {"trained_model",
         {{"path", model}, {"num_heads", 2}, {"ids", {5, 6, 7}}, {"prepend_eot", false}, {"layer", 1}, {"head", 0}}}};
    saveWorkspace(autosave, ws);
  };
  const std::string autosave = path("autosave.json");
  writeAutosave("", autosave);
  Controller a = make();
  a.autosaveTo(path("next-autosave.json"));
  a.commands().push("restore", {{"path", autosave}});
  a.commands().push("model_open", {{"path", path("./m.safetensors")}});  // --model, spelled otherwise
  a.update(0);
  // The session's own autosave, written while the model is read, keeps its text (it had dropped it:
  // killed then, the text was lost).
  a.endFrame(1.0, false, false, 1.0);
  for (int i = 0; i < 2000 && !fs::exists(path("next-autosave.json")); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const nlohmann::json written = loadWorkspace(path("next-autosave.json"), Controller::limits()).view;
  EXPECT_EQ(written.value("trained_model", nlohmann::json())["ids"], nlohmann::json({5, 6, 7})) << written.dump();
  EXPECT_EQ(written.value("dirty", false), true);
  settle(a);
  EXPECT_FALSE(a.prompts().any()) << "the command line's model is the one the autosave opens: "
                                  << a.prompts().unsaved_what;
  ASSERT_TRUE(a.model().isOpen()) << a.toast().text;
  EXPECT_EQ(a.model().ids(), (std::vector<int>{5, 6, 7}));
  EXPECT_EQ(a.model().layer(), 1);
  EXPECT_TRUE(a.unsaved()) << "unsaved work when the session ended, unsaved still: a quit asks";
  {  // an autosave of saved work (a clean quit's): nothing asked, nothing unsaved
    Workspace ws = loadWorkspace(autosave, Controller::limits());
    ws.view["dirty"] = false;
    saveWorkspace(autosave, ws);
    Controller s = make();
    s.commands().push("restore", {{"path", autosave}});
    s.commands().push("model_open", {{"path", model}});
    s.update(0);
    settle(s);
    EXPECT_FALSE(s.prompts().any()) << s.prompts().unsaved_what;
    ASSERT_TRUE(s.model().isOpen()) << s.toast().text;
    EXPECT_EQ(s.model().ids(), (std::vector<int>{5, 6, 7}));
    EXPECT_FALSE(s.unsaved());
  }

  writeAutosave("", autosave);
  Controller b = make();
  b.commands().push("restore", {{"path", autosave}});
  b.commands().push("model_open", {{"path", other}, {"num_heads", 2}});
  b.update(0);
  settle(b);
  ASSERT_TRUE(b.model().isOpen()) << b.toast().text;
  EXPECT_EQ(b.model().model()->path, other) << "the model asked for";
  EXPECT_FALSE(fs::exists(autosave)) << "moved aside, never overwritten";
  const std::string said = b.toast().text;
  const std::size_t at = said.find(" is kept in ");
  ASSERT_NE(at, std::string::npos) << said << " / " << b.toast().text;
  const std::string kept = said.substr(at + 12, said.find(" (File") - at - 12);
  EXPECT_EQ(loadWorkspace(kept, Controller::limits()).view["trained_model"]["ids"], nlohmann::json({5, 6, 7}));

  const std::string file = path("w.json");
  writeAutosave(file, autosave);
  Controller c = make(file);
  c.offerRecovery(autosave, file);  // `attnscope --model M w.json`: the file opens, its newer changes offered
  user(c, "model_open", {{"path", model}, {"num_heads", 2}});
  settle(c);
  ASSERT_TRUE(c.model().isOpen()) << c.toast().text;
  user(c, "recovery", {{"choice", "restore"}});
  settle(c);
  ASSERT_TRUE(c.model().isOpen()) << c.toast().text;
  EXPECT_EQ(c.model().ids(), (std::vector<int>{5, 6, 7}));
  EXPECT_TRUE(c.unsaved());
  EXPECT_NE(c.toast().text.find("The last session's unsaved work is back"), std::string::npos)
      << "said with the model's opening: " << c.toast().text;
}

// The model's field typed and not applied: the autosave's trained_model keeps it ("draft") for the
// opening it was typed in, a saved workspace never; a restore whose model's read is stopped
// (model_close before it was read) leaves nothing unsaved behind (the open's entry was unsaved
// for good: every quit asked about a text no longer there).
TEST_F(ControllerTest, ATextNotAppliedIsTheAutosavesAlone) {
  const std::string model = writeTinyModel(path("m.safetensors")), file = path("w.json");
  Controller c = make(file);
  user(c, "model_open", {{"path", model}, {"num_heads", 2}});
  settle(c);
  ASSERT_TRUE(c.model().isOpen()) << c.toast().text;
  const std::uint64_t lineage = c.model().lineage();
  c.setModelDraft(lineage, "typed, not applied");
  ASSERT_NE(c.modelDraft(), nullptr);
  EXPECT_EQ(c.autosavedModel().value("draft", ""), "typed, not applied");
  EXPECT_FALSE(c.savedModel().contains("draft"));
  EXPECT_FALSE(c.unsaved()) << "a text not applied asks nothing when quitting";
  c.setModelDraft(lineage + 1, "another opening's");
  EXPECT_EQ(*c.modelDraft(), "typed, not applied");
  c.setModelDraft(lineage, std::string(kMostDraftBytes + 1, 'x'));
  EXPECT_FALSE(c.autosavedModel().contains("draft")) << "past what a restore reads";
  c.setModelDraft(lineage, "typed again");
  user(c, "save");
  settle(c);
  EXPECT_FALSE(nlohmann::json::parse(read(file))["view"]["trained_model"].contains("draft"));
  user(c, "model_close");
  EXPECT_EQ(c.modelDraft(), nullptr);
  EXPECT_TRUE(c.autosavedModel().is_null());

  Workspace ws = bookExample();
  ws.view = {{"dirty", true}, {"trained_model", {{"path", model}, {"num_heads", 2}, {"ids", {5, 6}}, {"draft", "d"}}}};
  saveWorkspace(path("autosave.json"), ws);
  Controller r = make();
  r.commands().push("restore", {{"path", path("autosave.json")}});
  r.update(0);
  EXPECT_EQ(r.autosavedModel().value("draft", ""), "d") << "kept while the model is read";
  user(r, "model_close");  // its text unsaved: asked first
  EXPECT_EQ(r.prompts().unsaved_action, "model_close");
  user(r, "unsaved", {{"choice", "discard"}});
  settle(r);
  EXPECT_FALSE(r.model().isOpen()) << r.toast().text;
  EXPECT_TRUE(r.autosavedModel().is_null());
  EXPECT_FALSE(r.modelTextUnsaved()) << "no model, none being read: no text of its unsaved";
  EXPECT_TRUE(r.document().dirty()) << "the chapter's restored work is unsaved still";

  // The model gone since: its text and the text not applied are kept aside with the autosave, said
  // in the refusal (the next autosave, with no model, had dropped both).
  ws.view["trained_model"]["path"] = path("gone.safetensors");
  saveWorkspace(path("autosave.json"), ws);
  Controller g = make();
  g.commands().push("restore", {{"path", path("autosave.json")}});
  g.update(0);
  settle(g);
  EXPECT_FALSE(g.model().isOpen());
  const std::string said = g.toast().text;
  const std::size_t at = said.find("is kept in ");
  ASSERT_NE(at, std::string::npos) << said;
  const std::string kept = said.substr(at + 11, said.find(" (File") - at - 11);
  const nlohmann::json entry = loadWorkspace(kept, Controller::limits()).view["trained_model"];
  EXPECT_EQ(entry["ids"], nlohmann::json({5, 6}));
  EXPECT_EQ(entry["draft"], "d");
}

// A typed value a panel refused ("1e400") is old news once the user changes something later: the
// error stood for its 6 s over the edits after it. Not in its own frame (never seen), and other
// errors (a failed command) stay their time.
TEST_F(ControllerTest, ARefusedValuesMessageEndsWithTheNextChange) {
  Controller c = make();
  c.commands().refuse("Not applied: 1e400 is outside float32; the cell keeps 0.2500");
  c.update(1.0);
  ASSERT_TRUE(c.toast().error);
  c.commands().push("set", {{"field", "seed"}, {"value", 7}});
  c.update(1.5);
  EXPECT_EQ(c.toast().text, "") << "a later change ends it";
  c.commands().refuse("Not applied: 1e400 is outside float32; the cell keeps 0.2500");
  c.commands().push("set", {{"field", "seed"}, {"value", 8}});
  c.update(2.0);
  EXPECT_TRUE(c.toast().error) << "a change in the same frame does not: the refusal is seen";
  c.commands().push("set_cell", {{"row", 99}, {"col", 0}, {"value", 1.0}});  // refused by the document
  c.update(3.0);
  ASSERT_TRUE(c.toast().error);
  c.commands().push("set", {{"field", "seed"}, {"value", 9}});
  c.update(3.5);
  EXPECT_TRUE(c.toast().error) << "a failed command's error stays its time: " << c.toast().text;
}

// A training run or a notebook's maps put in the model's place lose its typed text as closing it
// does: they ask too, and a notebook waiting on its message hears the answer at once.
TEST_F(ControllerTest, ARunOrANotebooksMapsInPlaceOfAModelWithUnsavedTextAskFirst) {
  const std::string file = path("w.json"), model = writeTinyModel(path("m.safetensors"));
  Controller c = make(file);
  const nlohmann::json task = {{"task", "induction"}, {"steps", 10}};
  const auto typeIntoModel = [&](std::vector<int> ids) {
    user(c, "model_open", {{"path", model}, {"num_heads", 2}});
    settle(c);
    ASSERT_TRUE(c.model().isOpen()) << c.toast().text;
    user(c, "text", {{"ids", ids}});
    ASSERT_TRUE(c.unsaved());
  };
  typeIntoModel({4, 5, 6});
  user(c, "preset", {{"name", "causal"}});
  EXPECT_EQ(c.prompts().unsaved_what, "the model's typed text (in w.json)") << "a preset replaces the model too";
  user(c, "unsaved", {{"choice", "cancel"}});
  user(c, "learn", {{"task", task}});
  EXPECT_EQ(c.prompts().unsaved_action, "learn");
  EXPECT_EQ(c.prompts().unsaved_doing, "starting a training run in the model's place");
  user(c, "unsaved", {{"choice", "cancel"}});
  EXPECT_FALSE(c.model().isRun());
  EXPECT_EQ(c.model().ids(), (std::vector<int>{4, 5, 6}));
  user(c, "learn", {{"task", task}});
  user(c, "unsaved", {{"choice", "discard"}});
  EXPECT_TRUE(c.model().isRun()) << c.toast().text;
  user(c, "learn", {{"task", task}});
  EXPECT_FALSE(c.prompts().any()) << "a run has no text of a file to lose";

  const nlohmann::json maps = {{{1.0, 0.0}, {0.5, 0.5}}};
  typeIntoModel({7, 8});
  auto cancelled = std::make_shared<Heard>();
  Command sent = makeCommand("attention", {{"maps", maps}});
  sent.listener = cancelled;
  c.commands().push(std::move(sent));
  c.update(0);
  EXPECT_EQ(c.prompts().unsaved_doing, "showing the notebook's attention maps in the model's place");
  EXPECT_EQ(cancelled->applied_count + cancelled->refusal.size(), 0u) << "asked: not yet answered";
  user(c, "unsaved", {{"choice", "cancel"}});
  EXPECT_EQ(cancelled->refusal, "attention: not applied: the window asked first and Cancel was chosen");
  EXPECT_EQ(c.model().ids(), (std::vector<int>{7, 8}));
  auto saved = std::make_shared<Heard>();
  sent = makeCommand("attention", {{"maps", maps}});
  sent.listener = saved;
  c.commands().push(std::move(sent));
  c.update(0);
  user(c, "unsaved", {{"choice", "save"}});
  EXPECT_EQ(nlohmann::json::parse(read(file))["view"]["trained_model"]["ids"], nlohmann::json({7, 8}));
  EXPECT_NE(c.model().given(), nullptr) << c.toast().text;
  EXPECT_EQ(saved->applied_count, 1);
  EXPECT_EQ(saved->refusal, "");
}

TEST_F(ControllerTest, UndoAndRedoWithAModelOpenAreItsTexts) {
  Controller c = make();
  user(c, "set", {{"field", "seed"}, {"value", 31}});  // the chapter's own step, set aside with it
  user(c, "model_open", {{"path", writeTinyModel(path("m.safetensors"))}, {"num_heads", 2}});
  settle(c);  // read off the UI thread
  ASSERT_TRUE(c.model().isOpen()) << c.toast().text;
  const std::vector<int> first = c.model().ids();
  EXPECT_FALSE(c.model().canUndoText()) << "opening is no step";
  user(c, "undo");
  EXPECT_TRUE(c.toast().error);
  EXPECT_NE(c.toast().text.find("nothing to undo in the model's text"), std::string::npos) << c.toast().text;
  EXPECT_EQ(seedOf(c), 31u) << "the chapter's step set aside is not undone";

  user(c, "text", {{"ids", {1, 2, 3}}});
  user(c, "text", {{"ids", {1, 2, 3}}});   // the same text: no step
  user(c, "text", {{"ids", {1, 2, 40}}});  // refused (outside the vocabulary): no step
  user(c, "append_token", {{"id", 7}});
  settle(c);
  user(c, "repeat_text");
  const std::vector<int> repeated = {1, 2, 3, 7, 1, 2, 3, 7};
  ASSERT_EQ(c.model().ids(), repeated);
  user(c, "select_token", {{"index", 2}});

  user(c, "undo");
  EXPECT_EQ(c.model().ids(), (std::vector<int>{1, 2, 3, 7}));
  EXPECT_EQ(c.view().token, 3) << "the last token selected, as after an edit";
  user(c, "undo");
  EXPECT_EQ(c.model().ids(), (std::vector<int>{1, 2, 3}));
  user(c, "undo");
  EXPECT_EQ(c.model().ids(), first);
  EXPECT_FALSE(c.model().canUndoText());
  user(c, "redo");
  user(c, "redo");
  EXPECT_EQ(c.model().ids(), (std::vector<int>{1, 2, 3, 7}));
  settle(c);
  ASSERT_NE(c.snapshot(), nullptr);
  ASSERT_NE(c.snapshot()->model, nullptr);
  EXPECT_EQ(c.snapshot()->model->ids, (std::vector<int>{1, 2, 3, 7})) << "the views show the text undone to";

  user(c, "text", {{"ids", {9}}});  // a new edit drops what could be redone
  EXPECT_FALSE(c.model().canRedoText());
  user(c, "redo");
  EXPECT_TRUE(c.toast().error);
  EXPECT_EQ(c.model().ids(), (std::vector<int>{9}));

  user(c, "model_close", {{"discard", true}});  // the chapter's document and its own history are back
  EXPECT_EQ(seedOf(c), 31u);
  user(c, "undo");
  EXPECT_EQ(seedOf(c), bookExample().model.seed);
  user(c, "model_open", {{"path", path("m.safetensors")}, {"num_heads", 2}});
  settle(c);
  EXPECT_FALSE(c.model().canUndoText()) << "another opening starts a new history";
}

TEST_F(ControllerTest, TheSelectedTokenStaysWithItsTokenWhenRowsMove) {
  Controller c = make();
  auto selected = [&] { return c.document().workspace().tokens.at(c.view().token); };
  user(c, "select_token", {{"index", 4}});
  ASSERT_EQ(selected(), "one");
  user(c, "move_token", {{"from", 4}, {"to", 0}});
  EXPECT_EQ(c.view().token, 0);
  EXPECT_EQ(selected(), "one");
  user(c, "move_token", {{"from", 5}, {"to", 0}});  // another token moved in front of it
  EXPECT_EQ(selected(), "one");
  user(c, "remove_token", {{"index", 0}});  // one before it removed
  EXPECT_EQ(selected(), "one");
  user(c, "add_token", {{"name", "new"}, {"at", 0}});  // one added before it
  EXPECT_EQ(selected(), "one");
  user(c, "add_token", {{"name", "last"}});  // at the end: after it
  EXPECT_EQ(selected(), "one");
  const int at = c.view().token;
  user(c, "remove_token", {{"index", at}});  // the selected one itself: the next takes its place
  EXPECT_EQ(c.view().token, at);
}

TEST_F(ControllerTest, ATabThatIsNotThereIsRefusedInWords) {
  Controller c = make();
  user(c, "view", {{"field", "tab"}, {"value", "layers"}});  // a trained model's tab, none open
  EXPECT_TRUE(c.toast().error);
  EXPECT_NE(c.toast().text.find("without a trained model"), std::string::npos) << c.toast().text;
  EXPECT_EQ(c.view().tab, "heatmaps");
  user(c, "view", {{"field", "tab"}, {"value", "lines"}});
  EXPECT_EQ(c.view().tab, "lines");
}

TEST_F(ControllerTest, UndoTakesAwayTheNoteOfTheEditItUndoes) {
  Controller c = make();
  user(c, "set", {{"field", "variant"}, {"value", "causal"}});  // the step's own seed: said in a note
  ASSERT_FALSE(c.toast().text.empty());
  ASSERT_FALSE(c.toast().error);
  user(c, "undo");
  EXPECT_EQ(c.document().workspace().model.variant, bookExample().model.variant);
  EXPECT_EQ(c.toast().text, "") << "the note spoke of the step undone";
  user(c, "undo");  // nothing left to undo: that is said, and stays said
  EXPECT_TRUE(c.toast().error);
  const std::string refusal = c.toast().text;
  user(c, "redo");
  EXPECT_EQ(c.toast().text, refusal) << "an error is not wiped by the next command";
}

// A workspace whose view.trained_model was damaged (a hand edit, another program): without a path
// it is one message and the chapter opens; a malformed field is left out, named, and the model opens
// without it — never a refusal of the whole workspace, never a field taken as something else.
TEST_F(ControllerTest, ADamagedTrainedModelEntryIsOneMessageAndTheRestOpens) {
  const std::string model = writeTinyModel(path("m.safetensors"));
  const auto workspaceWith = [&](const std::string& name, const nlohmann::json& entry) {
    Workspace ws = bookExample();
    ws.model.seed = 77;
    ws.view["trained_model"] = entry;
    saveWorkspace(path(name), ws);
    return path(name);
  };
  for (const nlohmann::json& no_path :
       {nlohmann::json("m.safetensors"), nlohmann::json::array({model}), nlohmann::json{{"path", 5}},
        nlohmann::json{{"path", ""}}, nlohmann::json{{"ids", {1, 2}}}}) {
    Controller c = make();
    user(c, "open", {{"path", workspaceWith("no-path.json", no_path)}});
    settle(c);
    EXPECT_EQ(seedOf(c), 77u) << "the chapter opened: " << no_path.dump();
    EXPECT_FALSE(c.model().isOpen());
    EXPECT_TRUE(c.toast().error) << no_path.dump();
    EXPECT_EQ(c.toast().text,
              "The rest of the workspace is open, but the workspace's trained_model names no path: "
              "it was not opened")
        << no_path.dump();
  }

  // Its ids, layer and prepend_eot damaged: the model opens at its first text and layer, the note
  // naming all three (a head is taken only with the text it was saved with).
  Controller c = make();
  user(c, "open",
       {{"path", workspaceWith("damaged.json", {{"path", model},
                                                {"num_heads", 2},
                                                {"ids", {3, "four", 5}},
                                                {"layer", "1"},
                                                {"prepend_eot", 1},
                                                {"head", 1}})}});
  settle(c);
  ASSERT_TRUE(c.model().isOpen()) << c.toast().text;
  EXPECT_EQ(seedOf(c), 77u);
  EXPECT_EQ(c.model().ids(), (std::vector<int>{0, 1, 2, 3, 4, 5})) << "the first text of a model without a tokenizer";
  EXPECT_EQ(c.model().layer(), 0);
  EXPECT_FALSE(c.toast().error) << c.toast().text;
  EXPECT_NE(c.toast().text.find("Left out of the workspace's trained_model, being damaged: layer, prepend_eot, ids"),
            std::string::npos)
      << c.toast().text;

  // Well formed, the same entry opens where it was saved.
  Controller d = make();
  user(d, "open",
       {{"path", workspaceWith("whole.json", {{"path", model},
                                              {"num_heads", 2},
                                              {"ids", {3, 4, 5, 6}},
                                              {"layer", 1},
                                              {"prepend_eot", false},
                                              {"head", 1}})}});
  settle(d);
  ASSERT_TRUE(d.model().isOpen()) << d.toast().text;
  EXPECT_EQ(d.model().ids(), (std::vector<int>{3, 4, 5, 6}));
  EXPECT_EQ(d.model().layer(), 1);
  EXPECT_EQ(d.view().head, 1);
  EXPECT_EQ(d.toast().text.find("Left out"), std::string::npos) << d.toast().text;
}

TEST_F(ControllerTest, AModelThatCannotBeOpenedIsSaidOnceAndTheProgressEnds) {
  Controller c = make();
  const std::string missing = path("no-such-model");
  user(c, "model_open", {{"path", missing}});
  EXPECT_EQ(c.toast().text, "Opening the model " + missing + " …");
  settle(c);
  EXPECT_FALSE(c.model().isOpen());
  EXPECT_TRUE(c.toast().error);
  EXPECT_EQ(c.toast().text.rfind("Could not open the model " + missing, 0), 0u) << c.toast().text;
  const std::size_t said = c.toast().text.find(missing);
  EXPECT_EQ(c.toast().text.find(missing, said + 1), std::string::npos) << "the path said once: " << c.toast().text;

  // From a script the failure is reported to the script, and the window no longer says it is opening.
  Command scripted = makeCommand("model_open", {{"path", missing}});
  scripted.script_index = 0;
  c.commands().push(std::move(scripted));
  c.update(0);
  settle(c);
  const auto failures = c.takeFailures();
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].message.rfind("Could not open the model " + missing, 0), 0u) << failures[0].message;
  EXPECT_EQ(c.toast().text.rfind("Opening the model", 0), std::string::npos) << c.toast().text;
  EXPECT_EQ(seedOf(c), bookExample().model.seed) << "nothing of the document changed";
}

// A model_open given up before its model was read (another model_open, a run, maps given, model_close
// came before it was read): a script or a notebook's message that sent it hears so at once — a message heard
// nothing and its notebook waited the channel's 600 s — and the window's own choice needs no word.
TEST_F(ControllerTest, AModelOpenGivenUpBeforeItWasReadTellsItsSender) {
  Controller c = make();
  const std::string first = writeTinyModel(path("first.safetensors")),
                    second = writeTinyModel(path("second.safetensors"));
  auto heard = std::make_shared<Heard>();
  Command sent = makeCommand("model_open", {{"path", first}, {"num_heads", 2}});
  sent.listener = heard;
  c.commands().push(std::move(sent));
  c.commands().push("model_open", {{"path", second}, {"num_heads", 2}});  // the user's, in the same frame
  c.update(0);
  EXPECT_EQ(heard->refusal, "model_open " + first + ": not opened: another model_open (" + second + ") came before it was read");
  settle(c);
  ASSERT_TRUE(c.model().isOpen());
  EXPECT_EQ(c.model().model()->path, second);
  EXPECT_EQ(heard->applied_count, 0);

  Command scripted = makeCommand("model_open", {{"path", first}, {"num_heads", 2}});
  scripted.script_index = 3;
  c.commands().push(std::move(scripted));
  c.commands().push("model_close");
  c.update(0);
  const auto failures = c.takeFailures();
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].index, 3);
  EXPECT_EQ(failures[0].message, "model_open " + first + ": not opened: model_close came before it was read");

  c.commands().push("model_open", {{"path", first}, {"num_heads", 2}});  // the user's own: the toast says it
  c.commands().push("model_close");
  c.update(0);
  EXPECT_TRUE(c.takeFailures().empty());
  EXPECT_FALSE(c.toast().error) << c.toast().text;

  // A message's own second model_open takes the first's place: the message is applied, not refused.
  auto both = std::make_shared<Heard>();
  for (const std::string& file : {first, second}) {
    Command own = makeCommand("model_open", {{"path", file}, {"num_heads", 2}});
    own.listener = both;
    c.commands().push(std::move(own));
  }
  c.update(0);
  settle(c);
  EXPECT_EQ(both->refusal, "");
  EXPECT_EQ(both->applied_count, 2);
  EXPECT_EQ(c.model().model()->path, second);
}

// The window's title is one line: a file name may hold a newline or a control character, maps given
// by a notebook any title.
TEST_F(ControllerTest, TheWindowTitleIsOneLine) {
  const std::string name = path("two\nlines\tand a bell\a.json");
  Controller c = make(name);
  EXPECT_EQ(c.windowTitle(), "attnscope — two?lines?and a bell?.json");
}

// A note and the hint to make room after it ("Opened wide  ·  Text size 175 %: …"): F10 takes the
// hint away and leaves the note whole (its last character went with the old one-space separator's
// cut once the separator grew).
TEST_F(ControllerTest, PresentationTakesTheHintAwayAndLeavesTheNoteWhole) {
  ControllerHooks hooks;
  hooks.cramped = [] { return true; };
  Controller c = make("", std::move(hooks));
  c.notify("Opened wide (2 layers)", 0);
  c.hintIfCramped(0, true);
  EXPECT_EQ(c.toast().text.rfind("Opened wide (2 layers)  ·  Text size ", 0), 0u) << c.toast().text;
  user(c, "view", {{"field", "presentation"}, {"value", true}});
  c.update(0);
  EXPECT_EQ(c.toast().text, "Opened wide (2 layers)");
}

TEST(KeyBindings, LessonKeysTurnPagesOnlyWithALessonOpen) {
  KeyContext lesson;
  lesson.lesson = true;
  EXPECT_EQ(keyed(Key::Space, kNoMods, lesson), "lesson_next");
  EXPECT_EQ(keyed(Key::Right, kNoMods, lesson), "lesson_next");
  EXPECT_EQ(keyed(Key::PageUp, kNoMods, lesson), "lesson_back");
  EXPECT_EQ(keyed(Key::Space, kShift, lesson), "lesson_back");
  EXPECT_EQ(keyed(Key::Right, kNoMods, lesson, true), "") << "held down, a key does not race through the steps";
  EXPECT_EQ(keyed(Key::Right, kNoMods), R"(select_token {"step":1})") << "without a lesson → moves the token";
  EXPECT_EQ(keyed(Key::Right, kNoMods, {}, true), R"(select_token {"step":1})") << "and repeats";
  EXPECT_EQ(keyed(Key::Space, kNoMods), "");
}

TEST(KeyBindings, TypingAndDialogsKeepTheirKeys) {
  KeyContext typing;
  typing.typing = true;
  EXPECT_EQ(keyed(Key::Z, kCtrl, typing), "") << "the field's own undo";
  EXPECT_EQ(keyed(Key::Left, kNoMods, typing), "");
  EXPECT_EQ(keyed(Key::S, kCtrl, typing), "save") << "Ctrl+S saves, the typed value first";
  EXPECT_EQ(keyed(Key::Tab, kNoMods, typing), "") << "no head chosen while typing";
  EXPECT_TRUE(keyCommitsTyping(KeyPress{Key::Tab, kNoMods}, typing)) << "Tab applies the typed value, as Enter";
  EXPECT_TRUE(keyCommitsTyping(KeyPress{Key::Tab, kShift}, typing));
  EXPECT_FALSE(keyCommitsTyping(KeyPress{Key::Tab, kNoMods}, KeyContext{})) << "not typing: Tab chooses a head";
  EXPECT_FALSE(keyCommitsTyping(KeyPress{Key::Left, kNoMods}, typing));
  KeyContext dialog;
  dialog.dialog = true;
  dialog.lesson = true;
  EXPECT_EQ(keyed(Key::Space, kNoMods, dialog), "") << "no page turns behind a dialog";
  EXPECT_EQ(keyed(Key::Z, kCtrl, dialog), "");
  EXPECT_EQ(keyed(Key::Q, kCtrl, dialog), "quit");
}

TEST(KeyBindings, ModifiersChooseTheCommand) {
  EXPECT_EQ(keyed(Key::Z, kCtrl), "undo");
  EXPECT_EQ(keyed(Key::Z, kCtrl | kShift), "redo");
  EXPECT_EQ(keyed(Key::Y, kCtrl), "redo");
  EXPECT_EQ(keyed(Key::Tab, kShift), R"(select_head {"step":-1})");
  EXPECT_EQ(keyed(Key::Plus, kCtrl), R"(view {"field":"text_size","value":"larger"})");
  EXPECT_EQ(keyed(Key::S, kNoMods), "");
  ViewState presenting;
  presenting.presentation = true;
  KeyContext context;
  context.view = &presenting;
  EXPECT_EQ(keyed(Key::F10, kNoMods, context), R"(view {"field":"presentation","value":false})") << "F10 toggles";
  EXPECT_EQ(keyed(Key::F10, kNoMods, context, true), "") << "once per press";
}

TEST(KeyBindings, MenusAndHelpShowTheTablesKeys) {
  EXPECT_STREQ(shortcutLabel("save"), "Ctrl+S");
  EXPECT_STREQ(shortcutLabel("redo"), "Ctrl+Shift+Z");
  EXPECT_STREQ(shortcutLabel("view", {{"value", "smaller"}}), "Ctrl+−");
  EXPECT_STREQ(shortcutLabel("view", {{"field", "presentation"}}), "F10");
  EXPECT_EQ(shortcutLabel("swap"), nullptr);
  const std::vector<std::string> help = keyHelpLines();
  auto has = [&](const std::string& line) { return std::find(help.begin(), help.end(), line) != help.end(); };
  EXPECT_TRUE(has("Ctrl+Z, Ctrl+Shift+Z: undo, redo (a slider drag is one step)"));
  EXPECT_TRUE(has("↑, ↓, ←, →: previous / next query token"));
  EXPECT_TRUE(has("Ctrl++, Ctrl+−, Ctrl+0: larger, smaller, normal text (View › Text size, 100–250\u00a0%)"));
  // Every command a key pushes is one the command table knows (makeCommand would throw).
  for (const KeyBinding& b : keyBindings()) {
    if (b.scope == KeyScope::Typing) continue;  // no command: the field lets go
    EXPECT_NE(findCommand(b.command), nullptr) << b.label;
  }
  EXPECT_TRUE(has("Tab, Shift+Tab: while typing a number: apply it, as Enter does"));
}

// The view's fields are one table (app/state/view_state.cpp): what viewToJson writes, the `view`
// command reads back to the same view, a workspace keeps what it should, an unknown field's refusal
// names them all, and the README's command table lists each (temperature, head and the Lines
// fields had been missing from it).
TEST(ViewFields, OneTableReadWrittenAndDocumented) {
  ViewState v;
  setViewField(v, "temperature", 0.5);
  setViewField(v, "lines_hidden_heads", nlohmann::json::array({2, 0, 2}));
  setViewField(v, "tab", "compare");
  setViewField(v, "watch", true);
  setViewField(v, "screenshot_dir", "/tmp/shots");
  setViewField(v, "focus", nlohmann::json::array({"weights"}));
  const nlohmann::json written = viewToJson(v);
  ViewState back;
  for (const auto& [field, value] : written.items()) setViewField(back, field, value);
  EXPECT_EQ(viewToJson(back), written);
  EXPECT_EQ(written["lines_hidden_heads"], nlohmann::json::array({0, 2}));
  EXPECT_FALSE(written.contains("screenshot_dir") || written.contains("focus") || written.contains("lock_range"));
  const nlohmann::json saved = savedView(v, {{"preset", "causal"}});
  EXPECT_FALSE(saved.contains("watch"));
  EXPECT_EQ(saved["preset"], "causal");
  EXPECT_EQ(saved["temperature"], 0.5);
  const ViewState opened = viewFromJson({{"temperature", 1.5}, {"watch", true}, {"tab", "nope"}, {"head", 3}});
  EXPECT_EQ(opened.temperature, 1.5);
  EXPECT_FALSE(opened.watch);              // a file opened never starts watching by itself
  EXPECT_EQ(opened.tab, ViewState().tab);  // what cannot be read keeps its default
  EXPECT_EQ(opened.head, 3);
  try {
    setViewField(v, "colour", "x");
    ADD_FAILURE() << "an unknown field was taken";
  } catch (const InputError& e) {
    for (const std::string& name : viewFieldNames())
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << name;
  }
  std::ifstream readme(std::string(ATTNSCOPE_SOURCE_DIR) + "/README.md");
  std::string line, row;
  while (std::getline(readme, line))
    if (line.rfind("| `view` |", 0) == 0) row = line;
  ASSERT_FALSE(row.empty()) << "no `view` row in the README's command table";
  for (const std::string& name : viewFieldNames())
    EXPECT_NE(row.find("`" + name + "`"), std::string::npos) << name << " is not in the README's `view` row";
}

// The README's command table names every command of the one table, and in its row every
// argument the command takes (a command or an argument added to the table and not to the README
// had left users guessing).
TEST(CommandTable, EveryCommandAndArgumentIsInTheReadme) {
  std::ifstream readme(std::string(ATTNSCOPE_SOURCE_DIR) + "/README.md");
  std::vector<std::string> rows;
  for (std::string line; std::getline(readme, line);)
    if (line.rfind("| `", 0) == 0) rows.push_back(line);
  ASSERT_FALSE(rows.empty()) << "no command table in the README";
  for (const CommandInfo& c : commandTable()) {
    const std::string name = "`" + std::string(c.name) + "`";
    const auto row = std::find_if(rows.begin(), rows.end(), [&](const std::string& r) {
      const std::size_t first_cell_end = r.find(" |", 2);
      return r.substr(0, first_cell_end).find(name) != std::string::npos;
    });
    if (row == rows.end()) {
      ADD_FAILURE() << c.name << " is not in the README's command table";
      continue;
    }
    // A row of several commands says each one's arguments in turn, " / " between them: this one's part.
    const std::size_t cells = row->find(" | ");
    const std::string commands = row->substr(0, cells), arguments = row->substr(cells + 3);
    std::vector<std::string> parts;
    for (std::size_t from = 0;;) {
      const std::size_t to = arguments.find(" / ", from);
      parts.push_back(arguments.substr(from, to == std::string::npos ? std::string::npos : to - from));
      if (to == std::string::npos) break;
      from = to + 3;
    }
    std::size_t index = 0, count = 0;
    for (std::size_t at = commands.find("`"); at != std::string::npos; at = commands.find("`", at + 1), ++count) {
      if (commands.compare(at, name.size(), name) == 0) index = count;
      at = commands.find("`", at + 1);
    }
    const std::string& said = parts.size() == count ? parts[index] : *row;
    for (const CommandArg& a : c.args)
      EXPECT_NE(said.find("`" + std::string(a.name) + "`"), std::string::npos)
          << c.name << "'s argument " << a.name << " is not in its README row's part: " << said;
  }
}

}  // namespace
}  // namespace attnscope
