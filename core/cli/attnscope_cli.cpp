// attnscope-cli: the engine without a display. trace | pytorch | bench | export | import | tokenize |
// tensors | model-trace | train | pytorch-train (docs/DESIGN.md §2.5, §2.6, §2.7).
// Exit 0 on success; 2 with one line "error: …" on stderr for bad input.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/model_commands.h"
#include "cli/number_lists.h"
#include "display/stage_figures.h"
#include "engine/attention.h"
#include "editing/finite_option.h"
#include "engine/errors.h"
#include "engine/memory.h"
#include "formats/atomic_file.h"
#include "formats/export.h"
#include "formats/file_reading.h"
#include "formats/import_workspace.h"
#include "formats/json_format.h"
#include "formats/json_reading.h"
#include "formats/presets.h"
#include "formats/pytorch_script.h"
#include "formats/temporary_files.h"
#include "formats/tensor_file.h"
#include "formats/trace_json.h"
#include "formats/workspace_file.h"
#include "learn/train_script.h"
#include "learn/training_run.h"
#include "lm/gpt2_tokenizer.h"
#include "lm/gpt_model.h"
#include "tools/bench.h"

using namespace attnscope;

namespace {

// Parses "0,2" into batch indices.
std::vector<int> parseBatches(const std::string& list) {
  std::vector<int> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      std::size_t used = 0;
      const int b = std::stoi(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      out.push_back(b);
    } catch (const std::exception&) {
      throw InputError("--batch: expected comma-separated batch indices like 0,1, got '" + list + "'");
    }
  }
  return out;
}

// The trace the `trace` and `export` commands share: serial unless --threads (≥ 0) asks for the
// OpenMP path; with --batch, only those elements keep their intermediates; `heads` (--heads; empty:
// all) are the heads of those that keep their maps; outputs_only keeps none (an empty batch list).
Trace traceOf(const Workspace& ws, int threads, const std::string& batches, const Limits& limits,
              const std::vector<int>& heads = {}, bool outputs_only = false) {
  ExecutionOptions exec;
  exec.parallel = threads >= 0;
  exec.threads = std::max(threads, 0);
  exec.min_parallel_work = 0;  // --threads asks for the OpenMP path, however small the input
  TraceRequest request;
  if (!batches.empty()) {
    request.all_batches = false;
    request.batches = parseBatches(batches);
  }
  if (outputs_only) request = TraceRequest::only({});
  request.heads = heads;
  return computeTrace(inputsOf(ws), ws.model, exec, request, limits);
}

// What a command printed is checked: stdout on a full disk or a device that fails is one error and
// exit 2, never a truncated file and exit 0.
void finishStdout() {
  errno = 0;
  std::cout.flush();
  if (!std::cout)
    throw InputError(std::string("stdout: cannot write the output (") + (errno ? std::strerror(errno) : "write error") +
                     "); what was written is incomplete");
}

// `tensors`: the listing as JSON, then the values asked for, each float32 printed with 9
// significant digits (%.9g reads back to the same float32); ±∞ and NaN as the strings "inf",
// "-inf", "nan" (JSON has no such numbers). Everything is read before the first byte is printed.
// The text of --values is held whole (a failure prints nothing): up to 16 characters a value,
// checked against the memory budget before a tensor is read.
std::string tensorsJson(const TensorFile& file, const std::vector<std::string>& names, std::int64_t budget) {
  std::int64_t text_bytes = 0;
  for (const std::string& name : names) {
    const TensorInfo* t = file.find(name);
    if (t == nullptr) continue;  // floats() names what is missing
    text_bytes += t->elements() * 16;
    if (text_bytes > budget)
      throw InputError("--values: the values asked for would print about " + std::to_string(text_bytes >> 20) +
                       " MiB of text, more than the memory budget of " + std::to_string(budget >> 20) +
                       " MiB (raise --memory-budget)");
  }
  nlohmann::ordered_json out;
  out["format"] = file.format();
  out["tensors"] = nlohmann::ordered_json::array();
  for (const TensorInfo& t : file.tensors())
    out["tensors"].push_back({{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}});
  out["metadata"] = nlohmann::ordered_json::object();
  for (const auto& [key, value] : file.metadata()) out["metadata"][key] = value;
  std::string text = out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (names.empty()) return text + "\n";
  text.pop_back();  // the closing brace
  text += ",\"values\":{";
  char buf[32];
  for (std::size_t k = 0; k < names.size(); ++k) {
    const FloatTensor values = file.floats(names[k]);
    text += (k ? ",\n" : "\n") +
            nlohmann::json(names[k]).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + ":[";
    for (std::int64_t i = 0; i < values.elements(); ++i) {
      const float v = values.data[i];
      if (std::isnan(v))
        std::snprintf(buf, sizeof buf, "\"nan\"");
      else if (std::isinf(v))
        std::snprintf(buf, sizeof buf, v > 0 ? "\"inf\"" : "\"-inf\"");
      else
        std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
      text += (i ? "," : "");
      text += buf;
    }
    text += "]";
  }
  return text + "}}\n";
}

int run(int argc, char** argv) {
  // Named, so --help says "attnscope-cli" however it was started (help2man makes the man page of it).
  CLI::App app{"attnscope-cli: self-attention traces with PyTorch parity, no display needed", "attnscope-cli"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "attnscope-cli " ATTNSCOPE_VERSION);

  std::string trace_path, batch_list, head_list;
  int trace_threads = -1;
  bool trace_outputs_only = false;
  auto* trace = app.add_subcommand("trace", "print the full forward-pass trace of a workspace as JSON");
  trace->add_option("workspace", trace_path, "workspace JSON file")->required();
  trace->add_option("--threads", trace_threads, "use the OpenMP path with N threads (0 = all cores)")
      ->check(CLI::Range(0, 1024));
  auto* trace_batch = trace->add_option("--batch", batch_list,
                                        "keep the intermediates of these batch elements only (e.g. 0); "
                                        "outputs are always printed");
  auto* trace_heads = trace->add_option("--heads", head_list,
                                        "of the kept elements, only these heads keep their maps (e.g. 0 "
                                        "or 0,3); the others print their context only");
  trace
      ->add_flag("--outputs-only", trace_outputs_only,
                 "no element keeps intermediates: parameters, contexts and outputs only")
      ->excludes(trace_batch)
      ->excludes(trace_heads);

  std::string script_path;
  auto* pytorch = app.add_subcommand("pytorch", "print a Python script that rebuilds the workspace in PyTorch");
  pytorch->add_option("workspace", script_path, "workspace JSON file")->required();

  std::string bench_path, bench_preset;
  BenchOptions bench_options;
  auto* bench = app.add_subcommand("bench", "time the forward pass and the trace (JSON)");
  auto* bench_ws = bench->add_option("workspace", bench_path, "workspace JSON file");
  bench->add_option("--preset", bench_preset, "a preset by name (the presets/ of the data folder), e.g. gpt2-small")
      ->excludes(bench_ws);
  bench->add_option("--threads", bench_options.threads, "OpenMP threads (0 = all cores)")->check(CLI::Range(0, 1024));
  bench->add_option("--repeat", bench_options.repeat, "timed runs per measurement")->check(CLI::Range(1, 1000));
  bench->add_flag("--forward-only", bench_options.forward_only,
                  "time only the OpenMP forward pass, each run paired with a GEMM on every thread (the limit)");
  bool bench_forward_once = false, bench_reference = false;
  auto* bench_once = bench->add_flag("--forward-once", bench_forward_once,
                                     "compute one forward pass (serial, outputs only), time nothing, "
                                     "print {\"ok\":true}: for instruction counts");
  bench->add_flag("--reference", bench_reference, "with --forward-once: the reference loops, not the fused kernel")
      ->needs(bench_once);
  std::string bench_model;
  int bench_tokens = 1024;
  auto* bench_model_opt = bench
                              ->add_option("--model", bench_model,
                                           "a trained model (as model-trace takes it): its whole forward pass")
                              ->excludes(bench_ws);
  bench->add_option("--tokens", bench_tokens, "with --model: tokens of the random text (default 1024)")
      ->check(CLI::Range(1, 1 << 20))
      ->needs(bench_model_opt);
  GptLoadOptions bench_load;
  bench
      ->add_option("--num-heads", bench_load.num_heads,
                   "with --model: heads per layer (default: config.json's n_head, else the file's, else width / 64)")
      ->check(CLI::Range(1, Limits{}.max_heads))
      ->needs(bench_model_opt);

  // export: the trace (or any subset of batches) as CSV, JSON or .npy files in a folder.
  std::string export_path, export_format, export_out, export_batches;
  int export_threads = -1;
  auto* export_cmd = app.add_subcommand("export",
                                        "write the trace as CSV, JSON, .npy or figure (SVG, PDF) files into a folder");
  export_cmd->add_option("workspace", export_path, "workspace JSON file")->required();
  export_cmd->add_option("--format", export_format, "csv, json, npy, or svg / pdf: one figure per map")->required();
  export_cmd->add_option("--out", export_out, "folder to write into (created if needed)")->required();
  export_cmd->add_option("--batch", export_batches, "export the intermediates of these batch elements only");
  export_cmd->add_option("--threads", export_threads, "use the OpenMP path with N threads (0 = all cores)")
      ->check(CLI::Range(0, 1024));

  // import: a workspace from the numbers a notebook printed or saved.
  ImportRequest import_request;
  std::string import_tokens, import_variant;
  std::int64_t import_seed = 0;
  int import_heads = 0;
  bool import_eval = false;
  auto* import_cmd = app.add_subcommand(
      "import",
      "print a workspace made from your own embeddings: a printed tensor, a NumPy repr, CSV/TSV, "
      "JSON lists, .npy or .npz. The module is in training mode, as torch builds it and the notebook "
      "runs it (--eval for eval mode), unless --parameters is a workspace: then its mode");
  import_cmd
      ->add_option("--embeddings", import_request.embeddings,
                   "the embeddings: a text file (tensor(...), array(...), lists, CSV/TSV), .npy or .npz; - for stdin")
      ->required();
  import_cmd->add_option("--array", import_request.array,
                         "the .npz entry to use (default: its only 2-D array; needed when it has several)");
  import_cmd->add_option("--parameters", import_request.parameters,
                         "the module's own parameters: a .npz of its state_dict(), print(m.state_dict()), JSON of "
                         "name -> nested lists, or a workspace (its model too); the class, d_out, qkv_bias and the "
                         "wrapper's heads come from the names and shapes");
  auto* import_tokens_opt = import_cmd->add_option("--tokens", import_tokens,
                                                   "token names separated by spaces, e.g. \"Your journey starts\"");
  auto* import_variant_opt = import_cmd->add_option("--variant", import_variant, "the module (default multihead)");
  auto* import_seed_opt = import_cmd->add_option("--seed", import_seed, "torch.manual_seed before the module is built")
                              ->check(CLI::Range(std::int64_t{0}, std::int64_t{4294967295LL}));
  auto* import_heads_opt =
      import_cmd
          ->add_option("--num-heads", import_heads,
                       "heads (multihead_wrapper, multihead); needed with a MultiHeadAttention's --parameters: its "
                       "weights do not say how d_out splits into heads")
          ->check(CLI::Range(1, 1 << 20));
  import_cmd->add_flag("--eval", import_eval, "the module in eval mode (m.eval(): no dropout); default training");

  // tokenize: GPT-2's token ids of a text (DESIGN.md §2.6). Run from its callback, so the command is
  // this one block.
  std::string tokenize_model, tokenize_text;
  bool tokenize_eot = false;
  auto* tokenize = app.add_subcommand("tokenize", "print GPT-2's token ids of a text and the tokens, as JSON");
  tokenize
      ->add_option("model", tokenize_model,
                   "a folder with vocab.json + merges.txt or encoder.json + vocab.bpe, or a file inside one")
      ->required();
  tokenize
      ->add_option("--text", tokenize_text,
                   "the text (UTF-8); - reads it from stdin, byte for byte (a final line end too)")
      ->required();
  tokenize->add_flag("--prepend-eot", tokenize_eot, "begin with <|endoftext|>, as GPT-2 begins an unconditioned text");
  tokenize->callback([&] {
    // A model's file stands for its folder, there or not (the tokenizer may come without the
    // weights); another name that is not there is a typo, not its folder.
    std::error_code missing;
    if (tokenize_model.empty()) throw InputError("tokenize: give the tokenizer's folder, or a file in it");
    const bool model_file = fileKindOf(tokenize_model) == "a model" ||
                            std::filesystem::path(tokenize_model).filename() == "pytorch_model.bin";
    if (!model_file && !std::filesystem::exists(tokenize_model, missing))
      throw InputError(tokenize_model + ": no such file or folder");
    // A model trained here on a text names its tokens in its file: a typed text is cut into those.
    std::shared_ptr<const Gpt2Tokenizer> tokenizer;
    // A file that is no tensors (a stand-in name) stands for its folder, as before.
    std::shared_ptr<const TensorFile> file;
    if (model_file && std::filesystem::is_regular_file(tokenize_model, missing)) try {
        file = TensorFile::open(tokenize_model);
      } catch (const InputError&) {
      }
    // A model's names: as many as the model has ids (a file with no token embedding is no model,
    // and names no model's tokens).
    if (const std::int64_t rows = file ? tokenEmbeddingRows(*file) : -1; rows > 0) {
      const TokenNames names = readTokenNames(*file, tokenize_model, rows);
      std::string why;
      if (!names.labels.empty() &&
          !(tokenizer = tokenizerOfNames(names, modelFolder(tokenize_model), tokenize_model, &why)))
        throw InputError(tokenize_model + ": " + why);
    }
    if (!tokenizer) {
      tokenizer = Gpt2Tokenizer::fromFolder(modelFolder(tokenize_model));
      // Another model's tokenizer beside the model: its ids are not this model's (model-trace
      // --text refuses it alike).
      if (const std::string other = anotherModelsTokenizer(modelFolder(tokenize_model), *tokenizer,
                                                           file ? tokenEmbeddingRows(*file) : -1);
          !other.empty())
        throw InputError(tokenize_model + ": " + other);
    }
    if (const std::string missing = tokenizer->missingMerges(); !missing.empty())
      std::cerr << "note: " << missing << "\n";
    const std::string text = textArgument(tokenize_text, std::cerr);
    std::vector<int> ids;
    if (tokenize_eot) {
      if (tokenizer->endOfText() < 0) throw InputError("--prepend-eot: the vocabulary has no <|endoftext|>");
      ids.push_back(tokenizer->endOfText());
    }
    for (int id : tokenizer->encode(text)) ids.push_back(id);
    // Written as it goes, not built as one JSON tree first (64 MB of text had taken 6 GB).
    std::cout << "{\"ids\": [";
    for (std::size_t i = 0; i < ids.size(); ++i) std::cout << (i ? ", " : "") << ids[i];
    std::cout << "], \"tokens\": [";
    for (std::size_t i = 0; i < ids.size(); ++i)
      std::cout << (i ? ", " : "") << nlohmann::json(tokenizer->tokenString(ids[i])).dump();
    std::cout << "]}\n";
    finishStdout();
  });

  // tensors: the named tensors of a safetensors, torch.save (.pth/.pt) or .npz file (DESIGN.md §2.6).
  std::string tensors_path;
  std::vector<std::string> tensors_values;
  auto* tensors_cmd = app.add_subcommand(
      "tensors",
      "list the tensors of a safetensors, torch.save (.pth/.pt, a state_dict) or .npz file as JSON: name, dtype, "
      "shape, and the file's metadata; --values NAME adds a tensor's values as float32. Nothing in a file is "
      "ever executed: a .pth's pickle is read as data, with only the globals a state_dict uses");
  tensors_cmd->add_option("file", tensors_path, "the file (its kind is recognized by content)")->required();
  tensors_cmd->add_option("--values", tensors_values, "print this tensor's values (flat, C order; repeatable)");

  // train and pytorch-train: a task's model trained by the engine, or the PyTorch script that trains
  // it the same way (DESIGN.md §2.7). Each runs from its callback.
  std::string train_task_path;
  int train_steps = -1;
  bool train_gradients = false;
  auto* train_cmd = app.add_subcommand(
      "train",
      "train a task's model (TASK: a JSON file like {\"task\": \"induction\"}, - reads stdin) and print "
      "{\"losses\": [one per step], \"head_scores\": {...}} as JSON");
  train_cmd->add_option("task", train_task_path, "the TASK JSON file")->required();
  train_cmd->add_option("--steps", train_steps, "steps (default: the task's)")->check(CLI::Range(0, 1000000));
  train_cmd->add_flag("--gradients", train_gradients,
                      "add \"gradients\": every parameter's gradient at step 1, by its state_dict name");
  std::string train_save;
  CLI::Option* train_save_option =
      train_cmd->add_option("--save", train_save,
                            "write the trained model's state_dict (the book's GPTModel names) to a .npz, .safetensors, "
                            ".pth or .pt file (.pth/.pt: torch.save's, for torch.load), which attnscope --model and "
                            "model-trace open");
  bool train_time = false;
  train_cmd->add_flag("--time", train_time,
                      "add \"seconds\" (the steps' wall time) and \"elapsed\" (seconds at each head_scores record)");
  bool train_vocabulary = false;
  train_cmd->add_flag("--vocabulary", train_vocabulary,
                      "the text task: add \"vocabulary\" (each token id's label: the character, or GPT-2's token "
                      "string) and \"text_ids\" (the text as those ids)");
  train_cmd->callback([&] {
    TrainingRun run(readTrainTaskFile(train_task_path, train_steps));  // a relative tokenizer: the TASK's neighbour
    if (train_vocabulary && run.task().kind != TaskKind::Text)
      throw InputError("--vocabulary: only the text task has one (the " +
                       std::string(taskInfo(run.task().kind).name) + " task's tokens are the numbers 0 … " +
                       std::to_string(run.task().vocab - 1) + ")");
    if (train_save_option->count() > 0 && train_save.empty()) throw InputError("--save: give the file to write");
    if (!train_save.empty()) checkTrainModelPath(train_save);  // refused before training, not after
    nlohmann::json gradients;
    std::vector<float> g;
    const auto start = std::chrono::steady_clock::now();
    auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    std::vector<double> elapsed = {0.0};
    while (!run.finished()) {
      run.step(train_gradients && run.stepsDone() == 0 ? &g : nullptr);
      if (run.scores().size() > elapsed.size()) elapsed.push_back(seconds());
      if (!g.empty() && gradients.is_null()) {
        gradients = nlohmann::json::object();
        for (const ParamTensor& t : run.model().tensors)
          gradients[t.name] = std::vector<float>(g.begin() + static_cast<std::ptrdiff_t>(t.offset),
                                                 g.begin() + static_cast<std::ptrdiff_t>(t.offset + t.size));
      }
    }
    const double total = seconds();
    nlohmann::json out = run.resultJson();
    if (train_gradients) out["gradients"] = gradients;
    if (train_vocabulary) out["vocabulary"] = run.task().token_labels, out["text_ids"] = run.task().text_ids;
    if (train_time) out["seconds"] = total, out["elapsed"] = elapsed;
    // The model saved and the figures printed, each whatever the other does: a save that fails at the
    // end (the disk filled during the run) loses no figure, and a stdout that cannot be written
    // (a full disk, a closed pipe) loses no model. The save's error, if any, is said last.
    std::exception_ptr save_error;
    if (!train_save.empty()) try {  // a text task's token names go with it: reopened, it shows them
        saveTrainModel(run.model(), train_save, savedTokens(run.task()));
      } catch (...) {
        save_error = std::current_exception();
      }
    std::cout << out.dump() << "\n";
    finishStdout();
    if (save_error) std::rethrow_exception(save_error);
  });
  std::string train_script_task;
  auto* train_script_cmd = app.add_subcommand(
      "pytorch-train",
      "print a self-contained PyTorch script that trains the TASK's model as `train` does (the book's classes, "
      "loss.backward(), torch.optim) and prints the same JSON");
  train_script_cmd->add_option("task", train_script_task, "the TASK JSON file (- reads stdin)")->required();
  train_script_cmd->callback([&] {
    std::cout << pytorchTrainScript(readTrainTaskFile(train_script_task));
    finishStdout();
  });

  // model-trace: a trained model (GPT-2, the book's GPTModel) on a text, every layer's heads.
  ModelTraceOptions model_trace;
  auto* model_trace_cmd = app.add_subcommand(
      "model-trace",
      "print a trained model's attention weights (every layer and head, or --layers) and the next-token logits of "
      "the last position, on a text, as JSON; --top-k K adds the K most likely next tokens");
  model_trace_cmd
      ->add_option("model", model_trace.model,
                   "a Hugging Face GPT-2 folder (config.json, model.safetensors, vocab.json, merges.txt) or a "
                   "state_dict file (.safetensors, .pth, .pt, .npz) of GPT-2 or the book's GPTModel")
      ->required();
  auto* model_text = model_trace_cmd->add_option(
      "--text", model_trace.text,
      "the text, tokenized as GPT-2 does; - reads stdin, byte for byte (a final line end too)");
  auto* model_ids = model_trace_cmd->add_option("--ids", model_trace.ids,
                                                "token ids instead of a text, e.g. 464,2068,7586");
  model_text->excludes(model_ids);
  model_trace_cmd
      ->add_option("--num-heads", model_trace.num_heads,
                   "heads per layer (default: config.json's n_head, else the file's, else width / 64)")
      ->check(CLI::Range(1, Limits{}.max_heads));
  auto* model_eot =
      model_trace_cmd->add_flag("--prepend-eot", model_trace.prepend_eot,
                                "put <|endoftext|> (50256) before the text, as GPT-2 saw documents in training");
  model_trace_cmd->add_option("--layers", model_trace.layers, "only these layers' heads, e.g. 0,5 (default: all)")
      ->check(
          CLI::Validator([](const std::string& s) { return s.empty() ? "give the layers, e.g. 0,5" : ""; }, "LIST"));
  model_trace_cmd->add_option("--threads", model_trace.threads, "threads (0 = all cores)")->check(CLI::Range(0, 1024));
  auto* model_format = model_trace_cmd->add_option(
      "--format", model_trace.format,
      "json (standard output, the default), or csv / npy: one file per head's weights, the logits, the scores and "
      "the tokens, into --out");
  model_format->check(CLI::IsMember({"json", "csv", "npy"}));
  model_eot->excludes(model_ids);
  model_trace_cmd->add_option("--out", model_trace.out, "the folder for --format csv or npy (created if needed)")
      ->needs(model_format);
  // Their values are checked by runModelTrace (--top-k against the model's vocabulary, and NaN
  // passes CLI::Range), each with one message.
  auto* model_top_k = model_trace_cmd->add_option(
      "--top-k", model_trace.top_k,
      "list the K most likely next tokens after the text, with their probabilities (0 = none, the default; at "
      "most the vocabulary's size)");
  model_trace_cmd
      ->add_option("--temperature", model_trace.temperature,
                   "with --top-k: the probabilities are softmax(logits / T); T > 0, default 1 (below 1 sharper, "
                   "above flatter), or 0: greedy (the top token 1, the others 0)")
      ->needs(model_top_k);

  // One budget for every command: what a workspace may cost to read and to compute.
  double budget_mib = static_cast<double>(Limits{}.max_memory_bytes >> 20);
  for (CLI::App* sub : {trace, pytorch, bench, export_cmd, import_cmd, model_trace_cmd, tensors_cmd})
    sub->add_option("--memory-budget", budget_mib, "refuse workspaces estimated to need more (MiB; default 1024)")
        ->check(finiteRange(1.0, 1048576.0));

  // The main help's footer, set after the subcommands (made later, they would inherit it).
  app.footer(
      "Each command has its own options: attnscope-cli COMMAND --help.\n"
      "Example: attnscope-cli trace /usr/share/attnscope/presets/multihead.json");

  // An unknown command: one line naming the commands (the subcommands above are the list).
  const std::string first = argc > 1 ? argv[1] : "";
  std::string names;
  bool known = false;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
    known = known || sub->get_name() == first;
  }
  if (!first.empty() && first[0] != '-' && !known) {
    std::cerr << "error: unknown command '" << argv[1] << "' (commands: " << names << "; see --help)\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << e.what() << " (see attnscope-cli --help)\n";
    return 2;
  }

  // Temporary files a killed run left go; this run's are journaled (formats/temporary_files.h).
  removeAbandonedTemporaryFiles(stateFolder());
  journalTemporaryFiles(stateFolder());
  Limits limits;
  limits.max_memory_bytes = static_cast<std::int64_t>(budget_mib * 1048576.0);
  // A budget given bounds a model read too (its own default is larger: Limits::max_model_bytes).
  if (model_trace_cmd->get_option("--memory-budget")->count() > 0) limits.max_model_bytes = limits.max_memory_bytes;
  // The budget is for what the command will hold: the maps of the elements it keeps, or none.
  const auto tracing = [&limits](const std::string& batches, bool outputs_only) {
    Limits l = limits;
    l.traced_elements = outputs_only      ? Limits::kNoMaps
                        : batches.empty() ? 0
                                          : static_cast<int>(parseBatches(batches).size());
    return l;
  };
  if (*trace) {
    const std::vector<int> heads = *trace_heads ? parseNumberList(head_list, "--heads", "head indices like 0 or 0,3")
                                                : std::vector<int>{};
    limits = tracing(batch_list, trace_outputs_only);
    const Workspace ws = loadWorkspace(trace_path, limits);
    const Trace t = traceOf(ws, trace_threads, batch_list, limits, heads, trace_outputs_only);
    // Streamed: every check that can fail ran before the first byte, and the text of a large trace
    // is never held in memory.
    writeTraceJson(std::cout, ws, t);
  } else if (*pytorch) {
    std::cout << pytorchScript(loadWorkspace(script_path, limits), script_path);
  } else if (*bench) {
    if (!bench_model.empty()) {
      nlohmann::json result = benchModel(*loadGptModel(bench_model, bench_load), bench_tokens, bench_options);
      result["model_path"] = bench_model;
      std::cout << jsonText(result, 2) << "\n";
      finishStdout();
      return 0;
    }
    if (bench_path.empty() && bench_preset.empty()) throw InputError("bench: give a workspace file or --preset NAME");
    const std::string path = bench_preset.empty() ? bench_path : presetPath(bench_preset);
    if (bench_forward_once) {
      forwardOnce(loadWorkspace(path, limits), bench_reference);
      std::cout << "{\"ok\":true}\n";
      finishStdout();
      return 0;
    }
    nlohmann::json result = benchWorkspace(loadWorkspace(path, limits), bench_options);
    result["workspace"] = bench_preset.empty() ? bench_path : bench_preset;
    std::cout << jsonText(result, 2) << "\n";
  } else if (*export_cmd) {
    ExportFormat format;
    FigureFormat figure;
    const bool figures = figureFormatOf("." + export_format, &figure) && figure != FigureFormat::Png;
    if (!figures && !parseExportFormat(export_format, &format))
      throw InputError("--format: expected csv, json, npy, svg or pdf, got '" + export_format + "'");
    limits = tracing(export_batches, false);
    const Workspace ws = loadWorkspace(export_path, limits);
    const Trace t = traceOf(ws, export_threads, export_batches, limits);
    const int files = figures ? exportTraceFigures(ws, t, export_out, figure) : exportTrace(ws, t, export_out, format);
    std::cout << "wrote " << files << (files == 1 ? " file to " : " files to ") << export_out << "\n";
  } else if (*import_cmd) {
    if (*import_tokens_opt) import_request.tokens = import_tokens;
    if (*import_variant_opt) {
      Variant v;
      if (!parseVariant(import_variant, &v))
        throw InputError("--variant: unknown variant '" + import_variant + "' (one of " + idList(variantNames()) + ")");
      import_request.variant = v;
    }
    if (*import_seed_opt) import_request.seed = static_cast<std::uint32_t>(import_seed);
    if (*import_heads_opt) import_request.num_heads = import_heads;
    if (import_eval) import_request.training = false;
    const ImportResult imported = importWorkspace(import_request, limits);
    const std::string text = dumpWorkspace(imported.workspace);  // everything that can fail has run
    for (const std::string& note : imported.notes) std::cerr << "note: " << note << "\n";
    std::cout << text;
  } else if (*tensors_cmd) {
    std::cout << tensorsJson(*TensorFile::open(tensors_path), tensors_values, limits.max_memory_bytes);
  } else if (*model_trace_cmd) {
    if (!*model_text && !*model_ids) throw InputError("model-trace: give --text T or --ids 1,2,3");
    model_trace.has_text = model_text->count() > 0;
    if (model_trace.format != "json" && model_trace.out.empty())
      throw InputError("--format " + model_trace.format + ": give the folder to write into with --out DIR");
    if (model_trace.format == "json" && !model_trace.out.empty())
      throw InputError("--out: JSON goes to standard output; --out is for --format csv or npy");
    runModelTrace(model_trace, limits, std::cout);
  }
  finishStdout();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tuneMalloc();                      // the benchmark's repeated traces reuse their memory (engine/memory.h)
  std::ios::sync_with_stdio(false);  // the trace is streamed: C++ buffering, not libc's per write
  try {
    return run(argc, argv);
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
  } catch (const ComputeError& e) {
    std::cerr << "error: " << e.what() << "\n";
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory\n";
  }
  return 2;
}
