// attnscope: the desktop app. The main loop as Dear ImGui's example writes it: setup, then per
// frame poll, apply commands, new frame, UI, render, swap; shutdown in reverse. The window is
// shell/app_window.h, the options shell/app_options.h, the state and everything done to it the
// controller (state/controller.h) inside the App (shell/app.h). Headless modes drive this same
// loop: --commands feeds its script, --bench-interaction its edits (or a run to train, whose frames
// it records), --screenshot captures once the result is on screen — one command path for all.
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "editing/channel_message.h"
#include "engine/errors.h"
#include "engine/memory.h"
#include "formats/file_reading.h"
#include "formats/json_reading.h"
#include "formats/png_image.h"
#include "formats/presets.h"
#include "formats/workspace_file.h"
#include "learn/train_task.h"
#include "lm/gpt2_tokenizer.h"
#include "shell/app.h"
#include "shell/app_options.h"
#include "shell/app_window.h"
#include "shell/headless.h"
#include "state/channel_server.h"
#include "state/interaction_bench.h"
#include "state/lesson_check.h"
#include "widgets/fonts.h"
#include "widgets/layout_dump.h"

using namespace attnscope;

int main(int argc, char** argv) {
  // 1. Options, and everything the command line names, checked before a window opens.
  tuneMalloc();  // every edit of a large workspace allocates a trace's maps again (engine/memory.h)
  AppOptions options;
  if (int code = parseAppOptions(argc, argv, options); code >= 0) return code;
  if (const std::string missing = missingAssets(); !missing.empty()) {
    std::cerr << "error: " << missing << "\n";
    return 2;
  }
  const bool headless = !options.screenshot_path.empty();
  std::optional<InteractionBench> bench;  // unattended too: no vsync, no autosave, no recovery
  if (!options.bench_path.empty()) {
    InteractionBenchOptions o;
    o.out_path = options.bench_path;
    o.presets = options.bench_presets;
    o.edits = options.bench_edits;
    o.gap_ms = options.bench_gap_ms;
    o.model_path = options.model_path;  // --model: its opening (queued below) and text edits instead of presets
    if (options.bench_tokens > 0) o.tokens = options.bench_tokens;
    if (!options.bench_learn_path.empty()) {  // the TASK read as attnscope-cli train reads it: one line, exit 2
      const std::string& path = options.bench_learn_path;
      try {
        try {
          o.learn_task = trainTaskJson(readTrainTaskFile(path));
        } catch (const InputError& e) {
          const std::string why = e.what();  // the file's own messages name it already
          throw InputError(why.rfind(path, 0) == 0 ? why : path + ": " + why);
        }
      } catch (const InputError& e) {
        std::cerr << "error: --bench-learn: " << e.what() << "\n";
        return 2;
      }
      o.learn_task_path = path;
      o.learn_seconds = options.bench_seconds;
    }
    bench.emplace(std::move(o));
  }
  const bool unattended = headless || bench;
  const Limits limits = Controller::limits(static_cast<std::int64_t>(options.memory_budget_mib * (1 << 20)),
                                           options.memory_budget_given);
  Document document(bookExample(), "", false, limits);
  std::optional<CommandScript> script;
  // An interactive start opens its window whatever FILE or --model gives: a launcher or a file
  // manager shows no terminal, and a bad file had ended the program without a word on screen. The
  // window then says why, as File › Open does (the `open` command queued again, refused there);
  // unattended runs still end with one line and exit 2.
  const bool says_on_screen =  // (a lesson is checked against FILE's workspace; --watch reloads FILE)
      !unattended && options.commands_path.empty() && options.lesson_path.empty() && !options.watch;
  std::string unopened, unopened_why;  // FILE, which did not open: the window shows the book's example and why
  try {
    if (!options.open_path.empty()) {
      try {
        Workspace ws = loadWorkspace(options.open_path, limits);  // what the app will hold
        // A PNG, or a file of the app's presets folder (`make run`'s), opens untitled: Save asks for a name.
        const bool untitled = isPng(options.open_path) || isPresetFile(options.open_path);
        document = Document(std::move(ws), untitled ? "" : documentPath(options.open_path), false, limits);
      } catch (const InputError& e) {
        if (!says_on_screen) throw;
        unopened = options.open_path;
        unopened_why = e.what();  // said below, unless an attnscope already running takes FILE
      }
    }
    if (!options.commands_path.empty()) script.emplace(CommandScript::read(options.commands_path));
    if (!options.lesson_path.empty()) {  // checked whole before a window opens: one line, exit 2
      LessonCheck check;
      check.limits = limits;  // what the app may hold, as lesson_open checks it
      const Lesson lesson = loadCheckedLesson(options.lesson_path, document.workspace(), check);
      try {
        checkLessonStep(lesson, options.lesson_step);
      } catch (const InputError& e) {
        throw InputError(options.lesson_path + ": --" + e.what());
      }
    }
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  // A FILE given to an interactive start goes to the attnscope already running, if one listens on
  // the channel (state/channel_server.h): one window, as a desktop program does.
  const bool just_a_file = options.commands_path.empty() && options.lesson_path.empty() && options.model_path.empty() &&
                           options.dump_layout_path.empty() && !options.listen && !options.watch;
  if (!unattended && just_a_file && !options.new_window && !options.open_path.empty()) {
    const std::string channel = channelPath();
    const nlohmann::json open = {{"do", "open"}, {"path", std::filesystem::absolute(options.open_path).string()}};
    try {
      if (!channel.empty()) {
        sendToChannel(channel, channelFrame({{"commands", {open}}}));
        std::cout << "attnscope: opened " << options.open_path
                  << " in the attnscope already running (--new-window for a window of its own)\n";
        return 0;
      }
    } catch (const InputError& e) {
      if (std::string(e.what()).rfind("no attnscope listens", 0) != 0) {  // it listens, and said no
        std::cerr << "error: the running attnscope: " << e.what() << "\n";
        return 2;
      }
    }
  }
  if (!unopened_why.empty()) std::cerr << "error: " << unopened_why << "\n";  // and the window says it too
  // What the command line says of the view wins over the workspace's view, and over the autosave's
  // when the last session is restored (Controller::keepFromCommandLine).
  nlohmann::json command_line_view = nlohmann::json::object();
  if (!options.theme.empty()) command_line_view["theme"] = options.theme;
  if (options.text_size > 0) command_line_view["text_size"] = options.text_size;
  if (options.watch) command_line_view["watch"] = true;
  ViewState view = viewFromJson(document.workspace().view);
  for (const auto& [field, value] : command_line_view.items()) setViewField(view, field, value);
  if (!options.screenshot_dir.empty()) view.screenshot_dir = options.screenshot_dir;

  // 2. The window, ImGui on it, and the App.
  AppWindow window;
  if (const std::string error = window.open(options, view.textScale(), view.light_theme, !unattended); !error.empty()) {
    std::cerr << "error: " << error << "\n";
    return 2;
  }
  WindowHooks hooks = window.hooks();
  hooks.selection = options.selection;  // F12 and scripted screenshots too
  // Interactive sessions autosave and, started without a file, pick up where the last one ended.
  App app(std::move(document), view, !unattended, std::move(hooks));
  Controller& ctl = app.controller();
  ctl.keepFromCommandLine(command_line_view);

  // 3. The state folder: temporary files of writes a killed session never finished go, this
  // session's are journaled; an instance slot of its own (two windows never share an autosave).
  std::optional<InstanceSlot> slot;
  removeAbandonedTemporaryFiles(stateFolder());
  journalTemporaryFiles(stateFolder());
  if (!unattended) {  // the last session's autosave: restored, or kept aside, never overwritten
    slot.emplace(InstanceSlot::take());
    ctl.autosaveTo(slot->autosavePath());
    const Recovery recovery = planRecovery(Autosave(slot->autosavePath()), options.open_path);
    if (!recovery.restore.empty()) ctl.commands().push("restore", {{"path", recovery.restore}});
    if (!recovery.offer.empty()) ctl.offerRecovery(recovery.offer, options.open_path);
    std::string note = recovery.note;
    if (const std::string orphans = slot->collectOrphans(); !orphans.empty())
      note += (note.empty() ? "" : " ") + orphans;
    if (!note.empty()) ctl.notify(note, window.now());
  }
  // The channel: a notebook's attnscope.show and a second `attnscope FILE` send their commands here.
  // An interactive window listens; scripted and headless runs only with --listen.
  std::optional<ChannelServer> channel;
  if (options.listen || (!unattended && !script)) {
    std::string why;
    const std::string path = channelPath(&why);
    channel.emplace(limits);
    if (!path.empty()) why = channel->listen(path);
    if (!why.empty() && options.listen) {  // asked for, so it must work; a second window just does without
      std::cerr << "error: --listen: " << why << "\n";
      return 2;
    }
  }
  if (!unopened.empty()) ctl.commands().push("open", {{"path", unopened}});  // refused again, on screen
  if (!options.model_path.empty()) {
    nlohmann::json args = {{"path", options.model_path}};
    if (options.model_heads > 0) args["num_heads"] = options.model_heads;
    ctl.commands().push("model_open", args);
  }
  if (!options.lesson_path.empty())  // before the script's commands: they may step through it
    ctl.commands().push("lesson_open", {{"path", options.lesson_path}, {"step", options.lesson_step}});

  // 4. The loop.
  int ready_frames = 0, exit_code = 0, eager_frames = 0;
  const double start = window.now();
  std::string title;
  std::uint64_t glyphs_version = ~std::uint64_t{0};
  std::weak_ptr<const GptModel> glyphs_model;  // the model whose characters vocabulary_glyphs holds
  std::vector<std::uint32_t> vocabulary_glyphs;
  bool hint_at_start = !unattended;
  bool model_checked = false;
  for (bool running = true; running;) {
    // 4a. Events. A window with nothing new to show sleeps: until input, a result, a message's
    // end, or a quarter second (a caret's blink, the autosave; a second while the engine computes),
    // leaving both cores to the engine.
    // Scripts and screenshots run flat out while they have something to do (a command to feed,
    // frames to settle) and sleep while only a thread's wake-up can move them on; the bench sleeps
    // like a user's window while it waits for a result, and while a run it records trains
    // (docs/DESIGN.md §3.3).
    // A window's script that is done leaves it a window like any other (it ran flat out, a core's
    // worth, after a script that played a run).
    const bool scripted = script && (headless || !script->done(ctl));
    const bool may_sleep = bench                  ? bench->maySleep()
                           : headless || scripted ? !(script && script->canFeed(ctl)) && ctl.waitingForWorkers()
                                                  : true;
    if (may_sleep && eager_frames <= 0) {
      // A result needs one frame; input two, for ImGui to settle it (hover, popups, layout).
      // While the engine computes and no field has the caret, once a second: under a software
      // renderer each frame takes both cores from the engine for 20–40 ms.
      const double longest = ctl.computing() && !window.typing() ? 1.0 : 0.25;
      eager_frames = window.wait(app.idleTimeout(window.now(), longest)) ? 1 : 2;
    } else {
      window.poll();
    }
    --eager_frames;
    for (const AppWindow::Press& key : window.takeKeys()) {  // the binding table (state/key_bindings.h)
      const KeyContext context{key.typing, app.dialogOpen(), app.lessonOpen(), &ctl.view()};
      if (keyCommitsTyping(key.press, context)) ctl.commitTyping();
      if (std::optional<Command> c = keyCommand(key.press, context)) ctl.pushAfterTyping(std::move(*c), key.typing);
    }
    if (window.takeCloseRequest())  // quit, which asks about unsaved changes (a value being typed counts)
      ctl.pushAfterTyping(makeCommand("quit"), window.typing());

    // 4b. Commands: every queued one, in one place, before the frame.
    const double now = window.now();
    const auto frame_start = std::chrono::steady_clock::now();
    if (channel)  // what the channel received, each command with the listener that answers its sender
      for (Command& c : channel->take()) ctl.commands().push(std::move(c));
    if (script) script->feed(ctl);
    if (bench) bench->beforeUpdate(ctl);  // t0 of an edit: queued just before the frame applying it
    // Commands applied in this frame (a menu's, a button's, a key's) change what is drawn as input
    // does: two frames, as for input, and more while ImGui places a window that appeared (below).
    // Unless the engine computes their result: its wake-up draws the next frame, and frames drawn
    // meanwhile (these, a click's, the command before's) take the cores from it (a new text of a
    // GPT-2-small-shaped model at T = 64 took 141 ms with two such frames beside it, 90 ms alone).
    const bool applies_commands = !ctl.commands().empty();
    ctl.update(now);
    if (applies_commands) eager_frames = ctl.computing() ? std::min(eager_frames, 0) : std::max(eager_frames, 2);
    // --model: opened (whatever a script does next, a preset closing it), or one line and exit 2.
    if (!options.model_path.empty() && !model_checked) {
      if (ctl.model().version() > 0) {
        model_checked = true;
      } else if (!ctl.modelLoadError().empty()) {
        std::cerr << "error: --model: " << ctl.modelLoadError() << "\n";
        model_checked = true;
        if (!says_on_screen) {
          exit_code = 2;
          break;
        }  // else the window stays, its toast saying why (Controller::fail)
      }
    }
    // New tokens (the workspace's, or a model's text): their CJK glyphs into the atlas.
    if (const std::uint64_t v = ctl.document().version() * 0x9E3779B97F4A7C15ull + ctl.model().version();
        v != glyphs_version) {
      glyphs_version = v;
      std::vector<std::string> shown = ctl.document().workspace().tokens;
      if (ctl.model().isOpen()) {  // the model's text field draws the decoded text, the views its tokens
        shown = ctl.model().tokens();
        shown.push_back(ctl.model().text());
      }
      if (const std::shared_ptr<const GptModel>& m = ctl.model().model(); m != glyphs_model.lock()) {
        glyphs_model = m;  // a model opened: the characters its tokens decode to, once
        vocabulary_glyphs = m && m->tokenizer ? tokenCharacters(*m->tokenizer) : std::vector<std::uint32_t>{};
      }
      if (useTokenGlyphs(shown, vocabulary_glyphs)) window.reloadFonts();
    }
    if (hint_at_start) {  // after the autosave's view is restored: its text size counts
      hint_at_start = false;
      ctl.hintIfCramped(now, true);
    }
    for (const CommandFailure& f : ctl.takeFailures()) {
      if (bench) {
        bench->refused(f);
        continue;
      }
      std::cerr << "error: command " << f.index << " (" << f.name << "): " << f.message << "\n";
      if (!options.keep_going) exit_code = 2;
    }
    if (exit_code != 0 || ctl.quitRequested()) break;

    // 4c. The frame: UI, render, swap.
    const auto draw_start = std::chrono::steady_clock::now();
    window.beginFrame(ctl.takeCommitTyping());  // Ctrl+S while typing: a click away commits the field
    app.draw(now);
    if (!options.dump_layout_path.empty()) app.recordState();  // tests only: it costs
    window.endFrame(!headless);  // a screenshot run's captures render offscreen: its window shows nothing
    // A popup that appeared is placed over the next frames: drawn before the window sleeps (a prompt
    // opened by a click's command had stayed half placed until the next wake-up; a click where it
    // was drawn missed it).
    if (window.settling()) eager_frames = std::max(eager_frames, 1);
    const auto draw_end = std::chrono::steady_clock::now();
    using Ms = std::chrono::duration<double, std::milli>;
    app.endFrame(now, window.mouseDown(), window.typing(), Ms(draw_end - frame_start).count(),
                 Ms(draw_end - draw_start).count());
    if (const std::string wanted = ctl.windowTitle(); wanted != title) window.setTitle(title = wanted);
    layout().endFrame(options.dump_layout_path, headless);

    // 4d. Unattended runs end here.
    if (bench && bench->afterFrame(ctl)) {  // t1: the end of the frame showing an edit's result
      int w = 0, h = 0;
      window.size(&w, &h);
      exit_code = bench->finish(w, h);
      running = false;
    }
    // Headless: once the commands are done and the newest result has been on screen a few frames,
    // and the layout holds still (a map's numbers follow its fit of the frame before), so that the
    // dump says what the capture shows; a layout that never holds still is the capture's to report.
    const bool script_done = !script || script->done(ctl);
    ready_frames = script_done && ctl.settled() && (ctl.snapshot() || !ctl.engineError().empty()) ? ready_frames + 1
                                                                                                  : 0;
    constexpr int kMostSettlingFrames = 16;
    if (headless && ready_frames >= options.frames &&
        (layout().held() || ready_frames >= options.frames + kMostSettlingFrames)) {
      exit_code = headlessCapture(options, app);
      running = false;
    } else if (headless && now - start > 600) {
      std::cerr << "error: the engine did not finish within 600 s\n";
      exit_code = 1;
      running = false;
    }
  }

  // 5. Shutdown, in reverse: the App (its worker, its textures), then the window with ImGui.
  return exit_code;
}
