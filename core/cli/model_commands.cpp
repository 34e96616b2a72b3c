// attnscope-cli model-trace (cli/model_commands.h). Only the weights printed are kept from each
// layer's trace, and printed once the whole pass has succeeded: a failure prints nothing.
#include "cli/model_commands.h"

#include "cli/number_lists.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <set>

#include "engine/errors.h"
#include "engine/stages.h"
#include "formats/atomic_file.h"
#include "formats/export.h"
#include "formats/file_reading.h"
#include "formats/json_format.h"
#include "lm/gpt_forward.h"
#include "lm/gpt_model.h"
#include "lm/head_scores.h"
#include "lm/model_pass.h"

namespace attnscope {

namespace {

void writeNumber(std::ostream& out, float v) {
  char buf[32];
  out.write(buf, std::to_chars(buf, buf + sizeof buf, v).ptr - buf);
}

// A score of the label table is defined unless its has-flag says not (duplicate_token and
// induction without a repeated token, previous_token at T = 1).
bool scoreDefined(const HeadScores& s, const HeadLabelInfo& info) { return info.has == nullptr || s.*info.has; }

// A name model-trace --format csv|npy writes: l{layer}_h{head}_weights, scores, logits and
// next_tokens as .csv or .npy, tokens.csv.
bool isTraceFileName(const std::string& name) {
  const auto digits = [&](std::size_t& at) {
    const std::size_t from = at;
    while (at < name.size() && name[at] >= '0' && name[at] <= '9') ++at;
    return at > from;
  };
  for (const char* stem : {"scores", "logits", "next_tokens"})
    for (const char* ext : {".csv", ".npy"})
      if (name == std::string(stem) + ext) return true;
  if (name == "tokens.csv") return true;
  std::size_t at = 1;
  return name.size() > 1 && name[0] == 'l' && digits(at) && name.compare(at, 2, "_h") == 0 && digits(at += 2) &&
         (name.compare(at, std::string::npos, "_weights.csv") == 0 ||
          name.compare(at, std::string::npos, "_weights.npy") == 0);
}

}  // namespace

std::string textArgument(const std::string& text, std::ostream& notes) {
  if (text != "-") return text;
  std::string in = readFileWithin("/dev/stdin", std::int64_t{64} << 20, FileKind::AnyReadable);
  if (!in.empty() && in.back() == '\n')
    notes << "note: the text from stdin ends with a line end, which is tokenized too (GPT-2's \"Ċ\"; the next "
             "tokens are then those after a new line): echo -n or printf '%s' leaves it out\n";
  return in;
}

void runModelTrace(const ModelTraceOptions& options, const Limits& limits, std::ostream& out) {
  // What the options say alone is checked before the model is read; --top-k's upper bound, the
  // vocabulary, after.
  if (options.top_k < 0)
    throw InputError("--top-k: expected how many next tokens to list, 0 (none) up to the vocabulary's size, got " +
                     std::to_string(options.top_k));
  // 0 is greedy, as the app's slider offers it: the top token 1, the others 0 (topNextTokens).
  const bool greedy = options.temperature == 0 && !std::signbit(options.temperature);
  if (!greedy && (!(options.temperature > 0) || !std::isfinite(options.temperature))) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", options.temperature);
    throw InputError(std::string("--temperature: expected 0 (greedy) or a finite number above 0 (1: the model's "
                                 "own probabilities; below 1 sharper, above flatter), got ") +
                     got);
  }
  GptLoadOptions load = GptLoadOptions::within(limits);
  load.num_heads = options.num_heads;
  load.reference_mlp = false;  // the fast path only
  const std::shared_ptr<const GptModel> model = loadGptModel(options.model, load);
  std::vector<int> ids;
  if (options.has_text) {
    if (model->tokenizer == nullptr && !model->no_text.empty())
      throw InputError(options.model + ": " + model->no_text + " (give --ids instead of --text)");
    if (model->tokenizer == nullptr)
      throw InputError(options.model +
                       ": no tokenizer beside the model (vocab.json + merges.txt, or encoder.json + vocab.bpe" +
                       (model->tokenizer_files_odd.empty() ? "" : "; " + model->tokenizer_files_odd) +
                       "): give --ids instead of --text");
    if (options.prepend_eot) {
      if (model->tokenizer->endOfText() < 0) throw InputError("--prepend-eot: the vocabulary has no <|endoftext|>");
      ids.push_back(model->tokenizer->endOfText());
    }
    const std::vector<int> text = model->tokenizer->encode(textArgument(options.text, std::cerr));
    ids.insert(ids.end(), text.begin(), text.end());
  } else {
    ids = parseNumberList(options.ids, "--ids", "token ids like 464,2068");
  }
  if (options.top_k > model->config.vocab_size)
    throw InputError("--top-k: " + std::to_string(options.top_k) + " is more than the model's vocabulary of " +
                     std::to_string(model->config.vocab_size) + " tokens (at most " +
                     std::to_string(model->config.vocab_size) + ")");
  std::vector<int> layers;
  if (!options.layers.empty()) {
    layers = parseNumberList(options.layers, "--layers", "layers like 0,5");
    for (int l : layers)
      if (l < 0 || l >= model->config.layers)
        throw InputError("--layers: layer " + std::to_string(l) + " does not exist: the model has " +
                         std::to_string(model->config.layers) + " (0 … " + std::to_string(model->config.layers - 1) +
                         ")");
  }

  // The maps printed are held until the pass is done, so that a failure (an overflow in a late
  // layer) prints nothing: their memory is checked first, after what no memory would mend.
  try {
    checkModelTokens(*model, ids, limits);
  } catch (const InputError& e) {  // named by the option that gave the tokens, the added one counted
    std::string why = e.what();
    if (why.rfind("tokens: ", 0) == 0) why.erase(0, 8);
    throw InputError((options.has_text ? "--text: " : "--ids: ") + why +
                     (options.has_text && options.prepend_eot ? " (the <|endoftext|> of --prepend-eot counted)" : ""));
  }
  const int T = static_cast<int>(ids.size()), H = model->config.heads;
  const std::int64_t printed_layers = layers.empty() ? model->config.layers : static_cast<std::int64_t>(layers.size());
  const std::int64_t held = printed_layers * H * std::int64_t{T} * T * static_cast<std::int64_t>(sizeof(float));
  if (held > limits.max_memory_bytes)
    throw InputError("model-trace: the weights of " + std::to_string(printed_layers) + " layers × " +
                     std::to_string(H) + " heads at " + std::to_string(T) + " tokens take " +
                     std::to_string(held >> 20) + " MiB, more than the memory budget of " +
                     std::to_string(limits.max_memory_bytes >> 20) +
                     " MiB: choose layers with --layers, or raise "
                     "--memory-budget");
  struct KeptHead {
    Matrix weights;
    HeadScores scores;
  };
  std::vector<std::pair<int, std::vector<KeptHead>>> kept;
  const TokenPatterns patterns(ids);
  GptRequest request;
  request.map_layers = layers;
  request.on_layer = [&](int layer, const Matrix&, Trace&& t) {
    if (!layers.empty() && std::find(layers.begin(), layers.end(), layer) == layers.end()) return;
    std::vector<KeptHead> heads;
    for (HeadTrace& h : t.batches[0].heads) {
      const HeadScores scores = headScores(t, h, patterns);
      heads.push_back({std::move(h.weights), scores});
    }
    kept.emplace_back(layer, std::move(heads));
  };
  ExecutionOptions exec;
  exec.parallel = true;
  exec.threads = options.threads;
  // An overflow says which model's values overflowed (it had named no file).
  const GptResult result = [&] {
    try {
      return gptForward(*model, ids, request, exec, limits);
    } catch (const ComputeError& e) {
      throw ComputeError(options.model + ": " + e.what());
    }
  }();

  // A token as the vocabulary spells it (Ġ for a leading space), or as the model's own names it (a
  // text trained here), or its id without either.
  const auto token_name = [&model](int id) {
    if (id >= 0 && id < static_cast<int>(model->token_labels.size()))
      return model->token_labels[static_cast<std::size_t>(id)];
    return model->tokenizer != nullptr && id < model->tokenizer->vocabularySize() ? model->tokenizer->tokenString(id)
                                                                                  : std::to_string(id);
  };
  std::vector<std::string> token_names;
  for (int id : ids) token_names.push_back(token_name(id));
  // The last position's most likely next tokens (its logits are result.logits' only row).
  const std::vector<NextToken> next = topNextTokens(result.logits.row(0).data(), static_cast<int>(result.logits.cols()),
                                                    options.temperature, options.top_k);
  if (options.format != "json") {
    ExportFormat format;
    if ((options.format != "csv" && options.format != "npy") || !parseExportFormat(options.format, &format))
      throw InputError("--format: expected json, csv or npy, got '" + options.format + "'");
    const std::string ext = exportExtension(format);
    makeFolder(options.out);
    int files = 0;
    std::set<std::string> written;
    const auto write = [&](const std::string& name, const std::string& contents) {
      writeFileAtomically(joinPath(options.out, name), contents);
      written.insert(name);
      ++files;
    };
    std::vector<std::string> score_columns{"layer", "head"};
    for (const HeadLabelInfo& info : headLabelTable()) score_columns.push_back(info.id);
    score_columns.push_back("mean_entropy");
    Matrix scores(static_cast<Eigen::Index>(kept.size()) * H, static_cast<Eigen::Index>(score_columns.size()));
    std::vector<std::string> score_rows;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (std::size_t l = 0; l < kept.size(); ++l)
      for (std::size_t hd = 0; hd < kept[l].second.size(); ++hd) {
        const KeptHead& k = kept[l].second[hd];
        const std::string stem = "l" + std::to_string(kept[l].first + 1) + "_h" + std::to_string(hd + 1) + "_weights";
        write(stem + ext, format == ExportFormat::Csv ? matrixCsv(k.weights, tokenLabels(token_names, T, true))
                                                      : matrixNpy(k.weights));
        const HeadScores& sc = k.scores;
        auto row = scores.row(static_cast<Eigen::Index>(l * H + hd));
        row(0) = static_cast<float>(kept[l].first + 1);
        row(1) = static_cast<float>(hd + 1);
        Eigen::Index c = 2;
        for (const HeadLabelInfo& info : headLabelTable()) row(c++) = scoreDefined(sc, info) ? sc.*info.score : nan;
        row(c) = sc.mean_entropy;
        score_rows.push_back("layer " + std::to_string(kept[l].first + 1) + " head " + std::to_string(hd + 1));
      }
    Matrix next_rows(static_cast<Eigen::Index>(next.size()), 3);  // id, probability, logit
    std::vector<std::string> next_names;
    for (std::size_t i = 0; i < next.size(); ++i) {
      next_rows.row(static_cast<Eigen::Index>(i)) << static_cast<float>(next[i].id), next[i].probability, next[i].logit;
      next_names.push_back(token_name(next[i].id));
    }
    if (format == ExportFormat::Csv) {
      write("scores.csv", matrixCsv(scores, CsvLabels{"name", score_rows, score_columns}));
      if (!next.empty())
        write("next_tokens.csv", matrixCsv(next_rows, CsvLabels{"token", next_names, {"id", "probability", "logit"}}));
      std::vector<std::string> vocabulary;
      for (Eigen::Index v = 0; v < result.logits.cols(); ++v) vocabulary.push_back(token_name(static_cast<int>(v)));
      write("logits.csv", matrixCsv(result.logits.transpose(), CsvLabels{"token", vocabulary, {"logit"}}));
    } else {
      write("scores.npy", matrixNpy(scores));
      if (!next.empty()) write("next_tokens.npy", matrixNpy(next_rows));
      write("logits.npy", matrixNpy(result.logits));
    }
    Matrix ids_matrix(T, 1);
    for (int t = 0; t < T; ++t) ids_matrix(t, 0) = static_cast<float>(ids[t]);
    write("tokens.csv", matrixCsv(ids_matrix, CsvLabels{"token", token_names, {"id"}}));
    out << "wrote " << files << " files to " << options.out << "\n";
    // What the JSON's "notes" say (a head count guessed, an untied head) is said here too.
    for (const std::string& note : model->notes) out << "note: " << note << "\n";
    // An earlier trace's files are left as they were (nothing of the user's is removed), and named.
    std::vector<std::string> earlier;
    std::error_code ec;  // only a note: a folder that cannot be listed says nothing
    for (std::filesystem::directory_iterator it(options.out, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (isTraceFileName(name) && !written.count(name)) earlier.push_back(name);
    }
    std::sort(earlier.begin(), earlier.end());
    if (!earlier.empty()) {
      out << "note: " << options.out << " also holds " << earlier.size() << (earlier.size() == 1 ? " file" : " files")
          << " of an earlier trace, left as they were:";
      for (std::size_t k = 0; k < std::min<std::size_t>(earlier.size(), 6); ++k) out << " " << earlier[k];
      out << (earlier.size() > 6 ? " …" : "") << "\n";
    }
    return;
  }

  nlohmann::json head;
  head["ids"] = ids;
  head["tokens"] = token_names;
  head["notes"] = model->notes;
  head["layout"] = model->config.layout;
  head["heads_per_layer"] = H;
  const std::string h = jsonText(head);
  out << h.substr(0, h.size() - 1) << ",\n\"layers\": [";
  for (std::size_t l = 0; l < kept.size(); ++l) {
    out << (l ? ",\n" : "\n") << "{\"layer\": " << kept[l].first << ", \"heads\": [";
    for (std::size_t hd = 0; hd < kept[l].second.size(); ++hd) {
      const Matrix& w = kept[l].second[hd].weights;
      const HeadScores& sc = kept[l].second[hd].scores;
      nlohmann::json scores;
      for (const HeadLabelInfo& info : headLabelTable())
        scores[info.id] = scoreDefined(sc, info) ? nlohmann::json(tidyFloat(sc.*info.score)) : nlohmann::json();
      scores["mean_entropy"] = tidyFloat(sc.mean_entropy);
      const HeadLabelInfo* label = headLabel(sc);
      out << (hd ? ",\n" : "\n") << "  {\"head\": " << hd
          << ", \"label\": " << (label != nullptr ? jsonText(label->id) : std::string("null"))
          << ", \"scores\": " << jsonText(scores) << ", \"weights\": [";
      for (Eigen::Index i = 0; i < w.rows(); ++i) {
        out << (i ? ",\n    [" : "\n    [");
        for (Eigen::Index j = 0; j < w.cols(); ++j) {
          if (j) out << ", ";
          writeNumber(out, w(i, j));
        }
        out << "]";
      }
      out << "]}";
    }
    out << "]}";
  }
  out << "\n],\n\"logits\": [";
  for (Eigen::Index v = 0; v < result.logits.cols(); ++v) {
    if (v) out << ", ";
    writeNumber(out, result.logits(0, v));
  }
  out << "]";
  if (!next.empty()) {
    out << ",\n\"next_tokens\": [";
    for (std::size_t i = 0; i < next.size(); ++i) {
      nlohmann::ordered_json t;
      t["id"] = next[i].id;
      t["token"] = token_name(next[i].id);
      t["probability"] = tidyFloat(next[i].probability);
      t["logit"] = tidyFloat(next[i].logit);
      out << (i ? ",\n  " : "\n  ") << t.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    out << "]";
  }
  out << "}\n";
}

}  // namespace attnscope
