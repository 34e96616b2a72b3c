#include "formats/pytorch_script.h"

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <vector>

#include "engine/parameters.h"
#include "formats/json_format.h"
#include "formats/utf8.h"
#include "seed_classes.h"

namespace attnscope {

std::string pythonString(const std::string& text) {
  std::string out = "\"";
  char buf[16];
  for (std::size_t i = 0; i < text.size();) {
    std::uint32_t cp = nextCodePoint(text, &i);
    if (cp == kNotUtf8) cp = 0xFFFD;
    if (cp == '\\' || cp == '"') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp >= 0x20 && cp < 0x7F) {
      out += static_cast<char>(cp);
    } else {
      std::snprintf(buf, sizeof buf, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x", cp);
      out += buf;
    }
  }
  return out + "\"";
}

namespace {

std::string pythonList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + pythonString(items[i]);
  return out + "]";
}

const char* pyBool(bool b) { return b ? "True" : "False"; }

// Keyword arguments beyond the seed's, only where they differ from the seed's behaviour.
std::string options(const ModelConfig& m, bool causal_default) {
  std::string s;
  if (m.causal != causal_default) s += std::string(", causal=") + pyBool(m.causal);
  if (m.scale == Scale::None) s += ", scale=False";
  if (trilRoute(m)) s += ", causal_route=\"tril\"";
  return s;
}

// A double as Python reads it back exactly, in its fewest digits ("0.1", "0.1234567890123"): the
// stream's default six digits wrote p = 0.50000049 as 0.5, and torch drew other masks than ours.
std::string pythonFloat(double v) {
  char buf[40];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;  // the shortest that reads back exactly
  return std::string(buf, end);
}

std::string constructor(const ModelConfig& m, int T, int d_in) {
  std::ostringstream s;
  const std::string p = pythonFloat(m.dropout);
  switch (m.variant) {
    case Variant::Simple: return "";
    case Variant::SelfAttentionV1:
      s << "SelfAttention_v1(d_in=" << d_in << ", d_out=" << m.d_out << options(m, false) << ")";
      break;
    case Variant::SelfAttentionV2:
      s << "SelfAttention_v2(d_in=" << d_in << ", d_out=" << m.d_out << ", qkv_bias=" << pyBool(m.qkv_bias)
        << options(m, false) << ")";
      break;
    case Variant::Causal:
      s << "CausalAttention(d_in=" << d_in << ", d_out=" << m.d_out << ", context_length=" << T
        << ", dropout=" << p << ", qkv_bias=" << pyBool(m.qkv_bias) << options(m, true) << ")";
      break;
    case Variant::MultiHeadWrapper:
    case Variant::MultiHead:
      s << (m.variant == Variant::MultiHead ? "MultiHeadAttention" : "MultiHeadAttentionWrapper") << "(d_in=" << d_in
        << ", d_out=" << m.d_out << ", context_length=" << T << ", dropout=" << p
        << ", num_heads=" << m.num_heads << ", qkv_bias=" << pyBool(m.qkv_bias) << options(m, true) << ")";
      break;
  }
  return s.str();
}

// A float32 exactly, as Python's float.hex writes it ("0x1.b851ecp-2", "-0x0p+0"): float.fromhex
// reads the same double back, and torch.float32 holds it without rounding.
std::string hexFloat(float v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%a", static_cast<double>(v));
  return buf;
}

// The workspace's own parameters (docs/DESIGN.md §2.4) as Python, in state_dict order: each float32
// exact, with its shortest decimal beside short rows for the reader.
void writeParameters(std::ostream& s, const ModelConfig& m, int d_in) {
  s << "# Your own parameters (the workspace's \"parameters\"), loaded over the seeded initialization as\n"
    << "# load_state_dict does it: the constructor has made its draws, so the dropout masks are the same.\n"
    << "# Every float32 is exact: float.fromhex of its hex form (the decimal is in the comment).\n"
    << "def exact(values):\n"
    << "    if values and isinstance(values[0], list):\n"
    << "        return torch.tensor([[float.fromhex(v) for v in row] for row in values], dtype=torch.float32)\n"
    << "    return torch.tensor([float.fromhex(v) for v in values], dtype=torch.float32)\n\n\n"
    << "parameters = {\n";
  auto row = [&](const Matrix& v, Eigen::Index r, const std::string& indent, bool last) {
    s << indent << "[";
    for (Eigen::Index c = 0; c < v.cols(); ++c) s << (c ? ", " : "") << '"' << hexFloat(v(r, c)) << '"';
    s << "]" << (last ? "" : ",");
    if (v.cols() <= 8) {
      s << "  # ";
      for (Eigen::Index c = 0; c < v.cols(); ++c) s << (c ? ", " : "") << formatFloat(v(r, c));
    }
    s << "\n";
  };
  for (const ParameterShape& shape : parameterShapes(m, d_in))
    for (const NamedTensor& t : *m.parameters) {
      if (t.name != shape.name) continue;
      s << "    " << pythonString(t.name) << ": exact(";
      if (t.is_vector) {
        s << "\n";
        row(t.value, 0, "        ", true);
        s << "    ),\n";
      } else {
        s << "[\n";
        for (Eigen::Index r = 0; r < t.value.rows(); ++r) row(t.value, r, "        ", r + 1 == t.value.rows());
        s << "    ]),\n";
      }
    }
  s << "}\n";
}

// Which torch draws the masks this workspace shows (docs/DESIGN.md §2.2 "Two dropout streams"),
// said in the script and checked when it runs: another build prints other masks, and says so.
void writeDropoutStreamCheck(std::ostream& s, const ModelConfig& m) {
  const bool mkl = m.dropout_rng == DropoutStream::Mkl;
  s << "\n# The dropout masks are those of " << dropoutStreamTitle(m.dropout_rng) << ".\n"
    << "# "
    << (mkl ? "Another torch (Debian's, macOS arm64, any torch on an AMD or ARM CPU)"
            : "torch with MKL on an Intel CPU (pip's torch on x86-64)")
    << " draws other masks, so other outputs.\n"
    << "def dropout_uses_mkl():\n"
    << "    \"\"\"torch's bernoulli_ takes MKL's stream when built with MKL and on an Intel CPU.\"\"\"\n"
    << "    if not torch.backends.mkl.is_available():\n"
    << "        return False\n"
    << "    try:\n"
    << "        with open(\"/proc/cpuinfo\") as f:\n"
    << "            return \"GenuineIntel\" in f.read()\n"
    << "    except OSError:\n"
    << "        import platform\n"
    << "        return \"Intel\" in platform.processor()\n"
    << "if " << (mkl ? "not " : "") << "dropout_uses_mkl():\n"
    << "    print(\"note: this torch draws dropout " << (mkl ? "without" : "with")
    << " MKL's stream; attnscope showed the masks of " << dropoutStreamTitle(m.dropout_rng)
    << ", so the output differs\", file=sys.stderr)\n\n";
}

}  // namespace

std::string pytorchScript(const Workspace& ws, const std::string& source) {
  const ModelConfig& m = ws.model;
  const int T = static_cast<int>(ws.embeddings.rows()), d_in = static_cast<int>(ws.embeddings.cols());
  std::ostringstream s;
  s.precision(17);  // any double streamed here reads back exactly (the constructor's p: pythonFloat)
  // Line 2 declares the encoding, so no later line can (Python reads a coding declaration on line 1
  // or 2 only: a file name there once made it decode the script as UTF-7, whose "+ACI-" is a quote).
  // What the user named is written as pure ASCII Python string literals (pythonString).
  s << "#!/usr/bin/env python3\n"
    << "# -*- coding: utf-8 -*-\n"
    << "# Generated by attnscope-cli pytorch from " << pythonString(source) << "\n"
    << "# The workspace rebuilt with the seed notebook's classes. Run it with Debian's torch:\n"
    << "#   /usr/bin/python3 script.py          prints the output as the notebook does\n"
    << "#   /usr/bin/python3 script.py --json   prints it as JSON, every float32 digit\n"
    << "import json\nimport sys\n\n"
    << kSeedClassesPy << "\n\n";
  s << "tokens = " << pythonList(ws.tokens) << "\n";
  if (ws.random) {
    s << "torch.manual_seed(" << ws.random->seed << ")\n";
    if (ws.random->draws_before > 0)
      s << "torch.randint(0, 2**32 - 1, (" << ws.random->draws_before << ",))  # the " << ws.random->draws_before
        << " 32-bit draws earlier cells made, one each\n";
    s << "inputs = torch." << (ws.random->normal ? "randn" : "rand") << "(" << ws.random->rows << ", "
      << ws.random->cols << ")\n";
  } else {
    s << "inputs = torch.tensor([\n";
    for (int i = 0; i < T; ++i) {
      s << "    [";
      for (int c = 0; c < d_in; ++c) s << (c ? ", " : "") << formatFloat(ws.embeddings(i, c));
      s << "],  # " << pythonString(ws.tokens[i]) << "\n";
    }
    s << "], dtype=torch.float32)  # float32 even when every value is whole (torch would make int64)\n";
  }
  if (ws.batch_sequences.empty()) {
    s << "batch = torch.stack([inputs] * " << m.batch_size << ", dim=0)  # (B, T, d_in)\n\n";
  } else {  // a batch of different sequences: elements 2 … B of their own
    s << "batch = torch.stack([inputs,\n";
    for (const Matrix& seq : ws.batch_sequences) {
      s << "    torch.tensor([";
      for (int i = 0; i < T; ++i) {
        s << (i ? ", [" : "[");
        for (int c = 0; c < d_in; ++c) s << (c ? ", " : "") << formatFloat(seq(i, c));
        s << "]";
      }
      s << "], dtype=torch.float32),\n";
    }
    s << "], dim=0)  # (B, T, d_in): each element a sequence of its own\n\n";
  }
  if (m.variant == Variant::Simple) {
    s << "with torch.no_grad():\n"
      << "    output = torch.stack([simple_attention(x, normalization=\"" << normalizationId(m.normalization)
      << "\", scale=" << pyBool(m.scale == Scale::SqrtDk) << ") for x in batch])\n";
  } else {
    const bool own = m.parameters && !m.parameters->empty();
    if (own) {
      writeParameters(s, m, d_in);
      s << "\n";
    }
    s << "torch.manual_seed(" << m.seed << ")\n";
    if (m.draws_before > 0)
      s << "torch.randint(0, 2**32 - 1, (" << m.draws_before << ",))  # the " << m.draws_before
        << " 32-bit draws earlier cells made, one each\n";
    s << "model = " << constructor(m, T, d_in) << "\n";
    if (own)
      s << "loaded = model.load_state_dict(parameters, strict=False)  # the rest stay as seeded (and the mask buffer)\n"
        << "assert not loaded.unexpected_keys, loaded.unexpected_keys\n";
    s << "model." << (m.training ? "train()" : "eval()") << "\n";
    if (hasDropout(m.variant) && m.training && m.dropout > 0 && m.dropout < 1) writeDropoutStreamCheck(s, m);
    if (m.dropout_seed) s << "torch.manual_seed(" << *m.dropout_seed << ")  # right before the forward's dropout\n";
    s << "with torch.no_grad():\n";
    if (m.variant == Variant::SelfAttentionV1 || m.variant == Variant::SelfAttentionV2)
      s << "    output = torch.stack([model(x) for x in batch])  # the class takes (T, d_in)\n";
    else
      s << "    output = model(batch)\n";
  }
  s << "\nif \"--json\" in sys.argv:\n"
    << "    print(json.dumps(output.tolist()))\n"
    << "else:\n"
    << "    print(output)\n";
  return s.str();
}

}  // namespace attnscope
