#include "formats/trace_json.h"

#include <charconv>
#include <cmath>

#include "engine/stages.h"
#include "formats/json_format.h"

namespace attnscope {

namespace {

// Streams numbers without building a JSON tree: the GPT-2 trace has tens of millions of them.
class Writer {
 public:
  explicit Writer(std::ostream& out) : out_(out) {}

  void number(float v) {
    if (std::isinf(v) && v < 0) {
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
  out << "{\n\"format\": \"attnscope-trace\",\n\"version\": 2,\n\"workspace\": "
      << jsonText(workspaceToJson(ws)) << ",\n\"parameters\": {";
  const auto params = stateDict(t.model, *t.parameters);
  for (std::size_t i = 0; i < params.size(); ++i) {
    out << (i ? ",\n" : "\n") << "  \"" << params[i].name << "\": ";
    if (params[i].is_vector)
      w.vector(params[i].value);
    else
      w.matrix(params[i].value, "  ");
  }
  out << (params.empty() ? "},\n" : "\n},\n") << "\"batches\": [";
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
      for (const StageInfo& stage : stageTable()) {  // the stage table's order and names
        if (stage.parameter) continue;  // in "parameters" already
        out << sep << "\"" << stage.id << "\": ";
        w.map(StageMap(t, ht, stage.stage), stage.flags, in);
        sep = ",\n   ";
      }
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
