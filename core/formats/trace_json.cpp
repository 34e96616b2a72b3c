#include "formats/trace_json.h"

#include <charconv>
#include <cmath>

#include "engine/head_statistics.h"
#include "engine/stages.h"
#include "formats/json_format.h"

namespace attnscope {

namespace {

// Streams numbers without building a JSON tree: the GPT-2 trace has tens of millions of them.
class Writer {
 public:
  explicit Writer(std::ostream& out) : out_(out) {}

  void number(float v) {
    if (!std::isfinite(v)) {  // the masks' −∞; a statistic past float (÷ row sum on extreme inputs)
      out_ << "null";
      return;
    }
    char buf[32];
    out_.write(buf, std::to_chars(buf, buf + sizeof buf, v).ptr - buf);
  }
  template <typename M>
  void matrix(const M& m, const char* indent) {
    out_ << "[";
    for (int i = 0; i < m.rows(); ++i) {
      out_ << (i ? ",\n" : "\n") << indent << "  [";
      for (int j = 0; j < m.cols(); ++j) {
        if (j) out_ << ", ";
        if constexpr (std::is_same_v<typename M::Scalar, float>)
          number(m(i, j));
        else
          out_ << static_cast<int>(m(i, j));
      }
      out_ << "]";
    }
    out_ << "\n" << indent << "]";
  }
  // A stage, a row at a time (derived stages are never held whole); 0/1 masks as integers.
  void map(const StageMap& m, bool flags, const char* indent) {
    RowVector row(m.cols());
    out_ << "[";
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
      m.readRow(i, row.data());
      out_ << (i ? ",\n" : "\n") << indent << "  [";
      for (Eigen::Index j = 0; j < m.cols(); ++j) {
        if (j) out_ << ", ";
        if (flags)
          out_ << static_cast<int>(row(j));
        else
          number(row(j));
      }
      out_ << "]";
    }
    out_ << "\n" << indent << "]";
  }
  // A head's statistics (engine/head_statistics.h): arrays over the query rows, then the
  // summaries; the previous-token mean is null when T = 1 (no row has a previous token).
  void statistics(const HeadStatistics& s, const char* indent) {
    out_ << "{";
    auto floats = [&](const char* name, const RowVector& v, const char* sep) {
      out_ << sep << "\n" << indent << "  \"" << name << "\": [";
      for (Eigen::Index i = 0; i < v.size(); ++i) {
        if (i) out_ << ", ";
        number(v(i));
      }
      out_ << "]";
    };
    floats("entropy", s.entropy, "");
    floats("effective_tokens", s.effective_tokens, ",");
    floats("max_weight", s.max_weight, ",");
    out_ << ",\n" << indent << "  \"argmax\": [";
    for (std::size_t i = 0; i < s.argmax.size(); ++i) out_ << (i ? ", " : "") << s.argmax[i];
    out_ << "]";
    floats("row_sum_after_dropout", s.row_sum_after_dropout, ",");
    out_ << ",\n" << indent << "  \"mean_entropy\": ";
    number(s.mean_entropy);
    out_ << ",\n" << indent << "  \"mean_weight_previous_token\": ";
    if (s.has_previous)
      number(s.mean_previous);
    else
      out_ << "null";
    out_ << ",\n" << indent << "  \"mean_weight_first_token\": ";
    number(s.mean_first);
    out_ << "\n" << indent << "}";
  }
  void vector(const Matrix& m) {
    out_ << "[";
    for (int j = 0; j < m.size(); ++j) {
      if (j) out_ << ", ";
      number(m(j));
    }
    out_ << "]";
  }

 private:
  std::ostream& out_;
};

}  // namespace

void writeTraceJson(std::ostream& out, const Workspace& ws, const Trace& t) {
  Writer w(out);
  out << "{\n\"format\": \"attnscope-trace\",\n\"version\": 2,\n\"workspace\": " << jsonText(workspaceToJson(ws))
      << ",\n\"parameters\": {";
  std::size_t written = 0;  // one tensor at a time: GPT-2's or a 4096-wide module's are never copied whole
  forEachStateDictEntry(t.model, *t.parameters, [&](const std::string& name, const Matrix& value, bool is_vector) {
    out << (written++ ? ",\n" : "\n") << "  \"" << name << "\": ";
    if (is_vector)
      w.vector(value);
    else
      w.matrix(value, "  ");
  });
  out << (written == 0 ? "},\n" : "\n},\n") << "\"batches\": [";
  for (std::size_t b = 0; b < t.batches.size(); ++b) {
    const BatchTrace& bt = t.batches[b];
    out << (b ? ",\n" : "\n") << "{\"index\": " << b << ",\n \"heads\": [";
    for (std::size_t h = 0; h < bt.heads.size(); ++h) {
      const HeadTrace& ht = bt.heads[h];
      out << (h ? ",\n" : "\n") << "  {";
      if (!ht.hasMaps()) {  // maps not requested (--heads): the head's columns of the context only
        out << "\"context\": ";
        w.matrix(bt.context.middleCols(h * t.head_width, t.head_width), "    ");
        out << "}";
        continue;
      }
      const char* in = "    ";
      const char* sep = "";
      for (const StageInfo& stage : stageTable()) {                   // the stage table's order and names
        if (stage.parameter || !stageHeld(t, stage.stage)) continue;  // in "parameters"; another route's
        out << sep << "\"" << stage.id << "\": ";
        w.map(StageMap(t, ht, stage.stage), stage.flags, in);
        sep = ",\n   ";
      }
      out << sep << "\"statistics\": ";  // derived from the weights and dropped weights
      w.statistics(headStatistics(t, ht), in);
      out << "}";
    }
    out << (bt.heads.empty() ? "],\n" : "\n ],\n") << " \"context\": ";
    w.matrix(bt.context, "  ");
    out << ",\n \"output\": ";
    w.matrix(bt.output, "  ");
    out << "}";
  }
  out << "\n]\n}\n";
}

}  // namespace attnscope
