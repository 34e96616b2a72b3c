#include "display/comparison.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "display/number_text.h"

namespace attnscope {

MapDifference mapDifference(const StageMap& a, const StageMap& b) {
  MapDifference d;
  if (a.rows() != b.rows() || a.cols() != b.cols() || a.size() == 0) return d;
  d.comparable = true;
  const Eigen::Index R = a.rows(), C = a.cols();
  d.delta.resize(R, C);
  std::vector<float> ra(static_cast<std::size_t>(C)), rb(static_cast<std::size_t>(C));
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  for (Eigen::Index i = 0; i < R; ++i) {
    a.readRow(i, ra.data());
    b.readRow(i, rb.data());
    for (Eigen::Index j = 0; j < C; ++j) {
      const float x = ra[static_cast<std::size_t>(j)], y = rb[static_cast<std::size_t>(j)];
      if (std::memcmp(&x, &y, sizeof x) != 0) ++d.changed;
      if (!std::isfinite(x) || !std::isfinite(y)) {
        d.masked_in_b += x != kMasked && y == kMasked;
        d.masked_in_a += x == kMasked && y != kMasked;
        d.delta(i, j) = kMasked;
        continue;
      }
      const float v = y - x;
      d.delta(i, j) = v;
      if (d.row < 0 || std::fabs(v) > d.max_abs)
        d.max_abs = std::fabs(v), d.row = static_cast<int>(i), d.col = static_cast<int>(j);
    }
  }
  return d;
}

std::vector<std::pair<int, int>> changedCells(const StageMap& a, const StageMap& b) {
  std::vector<std::pair<int, int>> out;
  if (a.rows() != b.rows() || a.cols() != b.cols()) return out;
  std::vector<float> ra(static_cast<std::size_t>(a.cols())), rb(ra.size());
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    a.readRow(i, ra.data());
    b.readRow(i, rb.data());
    for (std::size_t j = 0; j < ra.size(); ++j)
      if (std::memcmp(&ra[j], &rb[j], sizeof(float)) != 0) out.emplace_back(static_cast<int>(i), static_cast<int>(j));
  }
  return out;
}

namespace {

std::string valueText(const nlohmann::json& v) {
  if (v.is_number_float()) {
    const double x = v.get<double>();
    return formatFixed(static_cast<float>(x), std::fabs(x) < 10 ? 2 : 1);
  }
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

}  // namespace

std::vector<std::string> workspaceDifferences(const Workspace& a, const Workspace& b, int max_cells) {
  std::vector<std::string> out;
  // The model: every field modelToJson prints, in its order.
  const nlohmann::json ma = modelToJson(a.model), mb = modelToJson(b.model);
  for (auto it = mb.begin(); it != mb.end(); ++it) {
    const nlohmann::json& va = ma.contains(it.key()) ? ma[it.key()] : nlohmann::json();
    if (va != it.value()) out.push_back(it.key() + " " + valueText(va) + " → " + valueText(it.value()));
  }
  // The tokens and their embeddings.
  const Eigen::Index Ta = a.embeddings.rows(), Tb = b.embeddings.rows();
  if (Ta != Tb) out.push_back("tokens " + std::to_string(Ta) + " → " + std::to_string(Tb));
  if (a.embeddings.cols() != b.embeddings.cols())
    out.push_back("d_in " + std::to_string(a.embeddings.cols()) + " → " + std::to_string(b.embeddings.cols()));
  const std::size_t common = std::min(a.tokens.size(), b.tokens.size());
  int renamed = 0;
  for (std::size_t i = 0; i < common; ++i)
    if (a.tokens[i] != b.tokens[i] && ++renamed <= max_cells)
      out.push_back("token " + std::to_string(i + 1) + " '" + a.tokens[i] + "' → '" + b.tokens[i] + "'");
  if (renamed > max_cells) out.push_back(std::to_string(renamed) + " tokens renamed");
  if (a.embeddings.cols() == b.embeddings.cols()) {
    std::vector<std::string> cells;
    int edited = 0;
    const Eigen::Index rows = std::min(Ta, Tb);
    for (Eigen::Index i = 0; i < rows; ++i)
      for (Eigen::Index j = 0; j < a.embeddings.cols(); ++j) {
        const float x = a.embeddings(i, j), y = b.embeddings(i, j);
        if (std::memcmp(&x, &y, sizeof x) == 0) continue;
        if (++edited <= max_cells)
          cells.push_back("x" + std::to_string(i + 1) + " d" + std::to_string(j) + " " +
                          (i < static_cast<Eigen::Index>(b.tokens.size())
                               ? "('" + b.tokens[static_cast<std::size_t>(i)] + "') "
                               : std::string()) +
                          formatFixed(x) + " → " + formatFixed(y));
      }
    if (edited > max_cells)
      out.push_back(std::to_string(edited) + " embedding cells");
    else
      out.insert(out.end(), cells.begin(), cells.end());
  }
  // The parameters: the user's own weights.
  const nlohmann::json pa = a.model.parameters ? parameterValuesToJson(*a.model.parameters) : nlohmann::json::object();
  const nlohmann::json pb = b.model.parameters ? parameterValuesToJson(*b.model.parameters) : nlohmann::json::object();
  if (pa != pb) {
    if (pa.empty())
      out.push_back("own parameters in B");
    else if (pb.empty())
      out.push_back("own parameters in A");
    else
      for (auto it = pb.begin(); it != pb.end(); ++it)
        if (!pa.contains(it.key()) || pa[it.key()] != it.value()) out.push_back(it.key() + " edited");
  }
  return out;
}

}  // namespace attnscope
