#include "eval/completion_metrics.h"

#include <algorithm>

#include "util/text.h"

namespace repoctx {

std::vector<std::string> stripped_lines(std::string_view text) {
  std::vector<std::string> out;
  for (auto line : split_lines(text)) {
    auto s = trim(line);
    if (!s.empty()) out.emplace_back(s);
  }
  return out;
}

namespace {
std::string joined(const std::vector<std::string>& lines, size_t n) {
  std::string out;
  for (size_t i = 0; i < std::min(n, lines.size()); ++i) {
    if (i) out += '\n';
    out += lines[i];
  }
  return out;
}

std::vector<char32_t> code_points(std::string_view s) {
  std::vector<char32_t> out;
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (i + len > s.size()) len = 1;
    char32_t cp = len == 1 ? c : c & (0x7F >> len);
    bool ok = true;
    for (size_t k = 1; k < len; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      ok = ok && (cc >> 6) == 2;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (!ok) {
      len = 1;
      cp = c;
    }
    out.push_back(cp);
    i += len;
  }
  return out;
}
}  // namespace

std::string scored_prediction(std::string_view generated, std::string_view ground_truth) {
  return joined(stripped_lines(generated), stripped_lines(ground_truth).size());
}

bool exact_match(std::string_view generated, std::string_view ground_truth) {
  auto target = stripped_lines(ground_truth);
  auto pred = stripped_lines(generated);
  if (pred.size() > target.size()) pred.resize(target.size());
  return pred == target;
}

// Hand-written: the two-row dynamic programme is a dozen lines, and no library repoctx links has it.
size_t levenshtein(std::string_view a, std::string_view b) {
  auto x = code_points(a), y = code_points(b);
  std::vector<size_t> prev(y.size() + 1), cur(y.size() + 1);
  for (size_t j = 0; j <= y.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= x.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= y.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x[i - 1] == y[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[y.size()];
}

double edit_similarity(std::string_view generated, std::string_view ground_truth) {
  auto target = stripped_lines(ground_truth);
  std::string t = joined(target, target.size());
  std::string p = joined(stripped_lines(generated), target.size());
  size_t lt = code_points(t).size(), lp = code_points(p).size();
  size_t m = std::max(lt, lp);
  if (m == 0) return 1.0;
  return 1.0 - static_cast<double>(levenshtein(t, p)) / static_cast<double>(m);
}

}  // namespace repoctx
