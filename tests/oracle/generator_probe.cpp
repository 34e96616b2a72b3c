// generator_probe: prints what our TorchGenerator draws, so test_generator.py can compare it bit for
// bit with Debian's torch. Reads a JSON array of cases on stdin, writes a JSON array of results on
// stdout; floats are written as their uint32 bit patterns so the comparison is exact.
//   {"kind": "rand",    "seed": s, "rows": r, "cols": c}  torch.manual_seed(s); torch.rand(r, c)
//   {"kind": "randn",   "seed": s, "rows": r, "cols": c}  torch.manual_seed(s); torch.randn(r, c)
//   {"kind": "linear",  "seed": s, "fan_in": i, "fan_out": o}  nn.Linear(i, o) weight then bias
//   {"kind": "dropout", "seed": s, "p": p, "n": n}  nn.Dropout(p) keep mask on n ones, and 1/(1−p)
#include <cstdint>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <vector>

#include "engine/torch_generator.h"
#include "formats/workspace_file.h"

using attnscope::TorchGenerator;
using nlohmann::json;

namespace {

std::uint32_t bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

json bitsOf(const float* data, std::size_t n) {
  json out = json::array();
  for (std::size_t i = 0; i < n; ++i) out.push_back(bits(data[i]));
  return out;
}

// rand / randn through the workspace path ({"random": …} embeddings), read back row by row.
json randomEmbeddings(const json& c, bool normal) {
  attnscope::RandomEmbeddings spec;
  spec.normal = normal;
  spec.seed = c.at("seed").get<std::uint32_t>();
  spec.rows = c.at("rows").get<int>();
  spec.cols = c.at("cols").get<int>();
  const attnscope::Matrix x = attnscope::makeRandomEmbeddings(spec);
  json out = json::array();
  for (int i = 0; i < x.rows(); ++i)
    for (int j = 0; j < x.cols(); ++j) out.push_back(bits(x(i, j)));
  return out;
}

json linear(const json& c) {
  TorchGenerator g(c.at("seed").get<std::uint32_t>());
  const auto fan_in = c.at("fan_in").get<std::size_t>(), fan_out = c.at("fan_out").get<std::size_t>();
  std::vector<float> weight(fan_out * fan_in), bias(fan_out);
  g.fillLinearWeight(weight.data(), fan_out, fan_in);
  g.fillLinearBias(bias.data(), fan_out, fan_in);
  return {{"weight", bitsOf(weight.data(), weight.size())}, {"bias", bitsOf(bias.data(), bias.size())}};
}

json dropout(const json& c) {
  TorchGenerator g(c.at("seed").get<std::uint32_t>());
  const double p = c.at("p").get<double>();
  std::vector<std::uint8_t> keep(c.at("n").get<std::size_t>());
  g.fillDropoutKeep(keep.data(), keep.size(), p);
  json mask = json::array();
  for (std::uint8_t k : keep) mask.push_back(static_cast<int>(k));
  return {{"keep", mask}, {"scale", bits(TorchGenerator::dropoutScale(p))}};
}

}  // namespace

int main() {
  try {
    const json cases = json::parse(std::cin);
    json results = json::array();
    for (const json& c : cases) {
      const std::string kind = c.at("kind").get<std::string>();
      if (kind == "rand")
        results.push_back(randomEmbeddings(c, false));
      else if (kind == "randn")
        results.push_back(randomEmbeddings(c, true));
      else if (kind == "linear")
        results.push_back(linear(c));
      else if (kind == "dropout")
        results.push_back(dropout(c));
      else
        throw std::runtime_error("unknown case kind '" + kind + "'");
    }
    std::cout << results.dump() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
