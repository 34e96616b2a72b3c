#include "display/comparison.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "display/number_text.h"

namespace attnscope {

namespace {

// B − A cell by cell, B's cell (i, j) against A's (rows[i], cols[j]) — none where either is −1.
MapDifference differenceOf(const StageMap& a, const StageMap& b, const std::vector<int>& rows,
                           const std::vector<int>& cols) {
  MapDifference d;
  const Eigen::Index R = b.rows(), C = b.cols();
  d.delta.resize(R, C);
  d.blank.setZero(R, C);
  std::vector<float> ra(static_cast<std::size_t>(a.cols())), rb(static_cast<std::size_t>(C));
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  for (Eigen::Index i = 0; i < R; ++i) {
    const int ai = rows[static_cast<std::size_t>(i)];
    b.readRow(i, rb.data());
    if (ai < 0) {
      d.delta.row(i).setConstant(kMasked);
      d.blank.row(i).setConstant(1);
      continue;
    }
    a.readRow(ai, ra.data());
    for (Eigen::Index j = 0; j < C; ++j) {
      const int aj = cols[static_cast<std::size_t>(j)];
      if (aj < 0) {
        d.delta(i, j) = kMasked;
        d.blank(i, j) = 1;
        continue;
      }
      ++d.compared;
      d.compared_lower += j <= i;
      const float x = ra[static_cast<std::size_t>(aj)], y = rb[static_cast<std::size_t>(j)];
      if (std::memcmp(&x, &y, sizeof x) != 0) ++d.changed;
      if (!std::isfinite(x) || !std::isfinite(y)) {
        d.masked_in_b += x != kMasked && y == kMasked;
        d.masked_in_a += x == kMasked && y != kMasked;
        d.delta(i, j) = kMasked;
        d.blank(i, j) = std::isinf(x) && std::isinf(y);
        continue;
      }
      const float v = y - x;
      d.delta(i, j) = v;
      if (d.row < 0 || std::fabs(v) > d.max_abs)
        d.max_abs = std::fabs(v), d.row = static_cast<int>(i), d.col = static_cast<int>(j);
    }
  }
  d.comparable = d.compared > 0;
  return d;
}

std::vector<int> identity(Eigen::Index n) {
  std::vector<int> out(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int>(i);
  return out;
}

}  // namespace

MapDifference mapDifference(const StageMap& a, const StageMap& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols() || a.size() == 0) return {};
  return differenceOf(a, b, identity(a.rows()), identity(a.cols()));
}

MapDifference alignedDifference(const StageMap& a, const StageMap& b, const std::vector<int>& a_of_b, bool token_rows,
                                bool token_cols) {
  const auto fits = [&](bool tokens, Eigen::Index na, Eigen::Index nb) {
    if (!tokens) return na == nb;
    return static_cast<std::size_t>(nb) == a_of_b.size() &&
           std::all_of(a_of_b.begin(), a_of_b.end(), [na](int k) { return k < na; });
  };
  if (a.size() == 0 || b.size() == 0 || !fits(token_rows, a.rows(), b.rows()) || !fits(token_cols, a.cols(), b.cols()))
    return {};
  MapDifference d = differenceOf(a, b, token_rows ? a_of_b : identity(b.rows()),
                                 token_cols ? a_of_b : identity(b.cols()));
  d.aligned = true;
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

bool differsInTextAlone(const Workspace& a, const Workspace& b, const std::vector<int>& a_of_b) {
  if (a.embeddings.cols() != b.embeddings.cols() || !a.batch_sequences.empty() || !b.batch_sequences.empty() ||
      a_of_b.size() != b.tokens.size() || static_cast<Eigen::Index>(b.tokens.size()) != b.embeddings.rows() ||
      static_cast<Eigen::Index>(a.tokens.size()) != a.embeddings.rows())
    return false;
  bool shared = false;
  for (std::size_t k = 0; k < a_of_b.size(); ++k) {
    const int j = a_of_b[k];
    if (j < 0 || j >= a.embeddings.rows() || a.tokens[static_cast<std::size_t>(j)] != b.tokens[k]) continue;
    for (Eigen::Index c = 0; c < a.embeddings.cols(); ++c) {
      const float x = a.embeddings(j, c), y = b.embeddings(static_cast<Eigen::Index>(k), c);
      if (std::memcmp(&x, &y, sizeof x) != 0) return false;
    }
    shared = true;
  }
  if (!shared || modelToJson(a.model) != modelToJson(b.model)) return false;
  const nlohmann::json pa = a.model.parameters ? parameterValuesToJson(*a.model.parameters) : nlohmann::json::object();
  const nlohmann::json pb = b.model.parameters ? parameterValuesToJson(*b.model.parameters) : nlohmann::json::object();
  return pa == pb;
}

// Texts: where B's tokens differ from A's.

namespace {

// One place where the texts differ: A's tokens [a, a + a_len) are B's [b, b + b_len) there.
struct TokenHunk {
  std::size_t a = 0, a_len = 0, b = 0, b_len = 0;
};

std::vector<TokenHunk> tokenHunks(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::size_t prefix = 0, suffix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix]) ++prefix;
  while (suffix < a.size() - prefix && suffix < b.size() - prefix &&
         a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix])
    ++suffix;
  const std::size_t n = a.size() - prefix - suffix, m = b.size() - prefix - suffix;
  std::vector<TokenHunk> hunks;
  if (n == 0 || m == 0) {
    if (n + m > 0) hunks.push_back({prefix, n, prefix, m});
    return hunks;
  }
  if (n * m > kTokenDiffCells) {  // position by position, then the longer one's rest
    const std::size_t common = std::min(n, m);
    for (std::size_t i = prefix; i < prefix + common; ++i)
      if (a[i] != b[i]) {
        if (!hunks.empty() && hunks.back().a + hunks.back().a_len == i)
          ++hunks.back().a_len, ++hunks.back().b_len;
        else
          hunks.push_back({i, 1, i, 1});
      }
    if (n != m) hunks.push_back({prefix + common, n - common, prefix + common, m - common});
    return hunks;
  }
  // lcs[i·(m+1) + j]: the longest common subsequence of the middles' suffixes from i and j (at most
  // min(n, m) ≤ 2048 under kTokenDiffCells), walked forward: a common token kept, else the side
  // whose step keeps the longer subsequence.
  std::vector<std::uint16_t> lcs((n + 1) * (m + 1), 0);
  const auto at = [&](std::size_t i, std::size_t j) -> std::uint16_t& { return lcs[i * (m + 1) + j]; };
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;)
      at(i, j) = a[prefix + i] == b[prefix + j] ? static_cast<std::uint16_t>(at(i + 1, j + 1) + 1)
                                                : std::max(at(i + 1, j), at(i, j + 1));
  std::size_t i = 0, j = 0;
  bool open = false;
  while (i < n || j < m) {
    if (i < n && j < m && a[prefix + i] == b[prefix + j]) {
      ++i, ++j, open = false;
      continue;
    }
    if (!open) hunks.push_back({prefix + i, 0, prefix + j, 0}), open = true;
    if (j == m || (i < n && at(i + 1, j) >= at(i, j + 1)))
      ++i, ++hunks.back().a_len;
    else
      ++j, ++hunks.back().b_len;
  }
  return hunks;
}

// Up to three of the tokens [from, from + count), then "…".
std::string tokenNames(const std::vector<std::string>& t, std::size_t from, std::size_t count) {
  std::string out;
  for (std::size_t k = 0; k < count && k < 3; ++k) out += (k > 0 ? " " : "") + t[from + k];
  return count > 3 ? out + " …" : out;
}

// "3" or "3–4": positions counted from 1.
std::string positions(std::size_t from, std::size_t count) {
  return count == 1 ? std::to_string(from + 1) : std::to_string(from + 1) + "–" + std::to_string(from + count);
}

}  // namespace

TokenDifference tokenDifference(const std::vector<std::string>& a, const std::vector<std::string>& b, int max_places) {
  const std::vector<TokenHunk> hunks = tokenHunks(a, b);
  const std::size_t shown = std::min(hunks.size(), static_cast<std::size_t>(std::max(max_places, 1)));
  const bool replacements = std::all_of(hunks.begin(), hunks.end(),
                                        [](const TokenHunk& h) { return h.a_len == 1 && h.b_len == 1; });
  TokenDifference d;
  // B's tokens against A's: one for one between the places and in a place of as many tokens on
  // each side; a place of other lengths is B's own.
  d.a_of_b.assign(b.size(), -1);
  std::size_t ia = 0, ib = 0;
  for (std::size_t k = 0; k <= hunks.size(); ++k) {
    const std::size_t until = k < hunks.size() ? hunks[k].b : b.size();
    while (ib < until) d.a_of_b[ib++] = static_cast<int>(ia++);
    if (k == hunks.size()) break;
    const TokenHunk& h = hunks[k];
    d.shifted = d.shifted || h.a_len != h.b_len;
    for (std::size_t t = 0; t < h.b_len; ++t) d.a_of_b[h.b + t] = h.a_len == h.b_len ? static_cast<int>(h.a + t) : -1;
    ia = h.a + h.a_len, ib = h.b + h.b_len;
  }
  std::string& out = d.said;
  for (std::size_t k = 0; k < shown; ++k) {
    const TokenHunk& h = hunks[k];
    for (std::size_t i = 0; i < h.a_len && i < 3; ++i) d.in_a.push_back(static_cast<int>(h.a + i));
    for (std::size_t i = 0; i < h.b_len && i < 3; ++i) d.in_b.push_back(static_cast<int>(h.b + i));
    out += k > 0 ? ", " : "";
    if (replacements) {  // "tokens 2 (a → b), 5 (c → d)"
      if (k == 0) out += hunks.size() == 1 ? "token " : "tokens ";
      out += positions(h.b, 1) + " (" + a[h.a] + " → " + b[h.b] + ")";
      continue;
    }
    const bool removed = h.b_len == 0;
    const std::size_t count = removed ? h.a_len : h.b_len;
    out += (count == 1 ? "token " : "tokens ") + positions(removed ? h.a : h.b, count) + " (";
    if (h.a_len == 0)  // after A's last token: appended (Append the top token's)
      out += tokenNames(b, h.b, h.b_len) + (h.a == a.size() ? ") appended" : ") inserted");
    else if (removed)
      out += tokenNames(a, h.a, h.a_len) + ") removed";
    else
      out += tokenNames(a, h.a, h.a_len) + " → " + tokenNames(b, h.b, h.b_len) + ")";
  }
  if (hunks.size() > shown) {
    out += " and " + std::to_string(hunks.size() - shown) + " more";
    if (a.size() != b.size()) out += " (" + std::to_string(a.size()) + " → " + std::to_string(b.size()) + " tokens)";
  }
  return d;
}

}  // namespace attnscope
