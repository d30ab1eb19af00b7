#include "util/text.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>

#include "util/hash.h"

namespace repoctx {

namespace {

// Character classes by table: the tokenizer runs over every byte of every indexed file.
enum : uint8_t { c_other = 0, c_upper = 1, c_lower = 2, c_digit = 4, c_under = 8 };
constexpr std::array<uint8_t, 256> make_classes() {
  std::array<uint8_t, 256> t{};
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = c_upper;
  for (int c = 'a'; c <= 'z'; ++c) t[c] = c_lower;
  for (int c = '0'; c <= '9'; ++c) t[c] = c_digit;
  t['_'] = c_under;
  return t;
}
constexpr auto kClass = make_classes();
inline uint8_t cls(char c) {
  return kClass[static_cast<unsigned char>(c)];
}
inline bool is_word(char c) {
  return cls(c) != c_other;
}
inline bool is_upper(char c) {
  return cls(c) == c_upper;
}
inline bool is_lower(char c) {
  return cls(c) == c_lower;
}
inline bool is_digit(char c) {
  return cls(c) == c_digit;
}
inline char lower(char c) {
  return is_upper(c) ? static_cast<char>(c + 32) : c;
}

// Splits one underscore-free part into subwords with the same semantics as the regex
// [A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+ applied left to right (findall).
template <class Emit>
void split_camel(std::string_view p, Emit&& emit) {
  size_t i = 0, n = p.size();
  while (i < n) {
    char c = p[i];
    if (is_upper(c)) {
      size_t j = i;
      while (j < n && is_upper(p[j])) ++j;
      size_t ups = j - i;
      if (j < n && is_lower(p[j])) {
        if (ups >= 2) {
          // "HTTPServer": the upper run minus its last letter is one word (lookahead [A-Z][a-z]).
          emit(p.substr(i, ups - 1));
          i = j - 1;
        }
        // "[A-Z]?[a-z]+": one capital followed by lowercase letters.
        size_t k = i + 1;
        while (k < n && is_lower(p[k])) ++k;
        emit(p.substr(i, k - i));
        i = k;
      } else {
        emit(p.substr(i, ups));
        i = j;
      }
    } else if (is_lower(c)) {
      size_t k = i;
      while (k < n && is_lower(p[k])) ++k;
      emit(p.substr(i, k - i));
      i = k;
    } else if (is_digit(c)) {
      size_t k = i;
      while (k < n && is_digit(p[k])) ++k;
      emit(p.substr(i, k - i));
      i = k;
    } else {
      ++i;
    }
  }
}

}  // namespace

template <class Emit>
void tokenize_code_each(std::string_view text, Emit&& out) {
  size_t i = 0, n = text.size();
  thread_local std::string buf;
  auto lowered = [&](std::string_view w) {
    buf.resize(w.size());
    for (size_t k = 0; k < w.size(); ++k) buf[k] = lower(w[k]);
    return std::string_view(buf);
  };
  while (i < n) {
    if (!is_word(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < n && is_word(text[j])) ++j;
    std::string_view run = text.substr(i, j - i);
    size_t emitted = 0;
    size_t p = 0;
    while (p <= run.size()) {
      size_t q = run.find('_', p);
      if (q == std::string_view::npos) q = run.size();
      if (q > p) {
        split_camel(run.substr(p, q - p), [&](std::string_view w) {
          if (w.size() < 2) return;
          bool digits = true;
          for (char c : w) digits = digits && is_digit(c);
          if (digits) return;
          out(lowered(w));
          ++emitted;
        });
      }
      p = q + 1;
    }
    if (emitted > 1) out(lowered(run));
    i = j;
  }
}

void tokenize_code(std::string_view text, std::vector<std::string>& out) {
  tokenize_code_each(text, [&](std::string_view w) { out.emplace_back(w); });
}

void tokenize_hashes(std::string_view text, std::vector<uint64_t>& out) {
  tokenize_code_each(text, [&](std::string_view w) { out.push_back(hash64(w)); });
}

std::vector<std::string> tokenize_code(std::string_view text) {
  std::vector<std::string> out;
  tokenize_code(text, out);
  return out;
}

std::string normalize_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool space = false;
  for (unsigned char c : text) {
    if (std::isspace(c)) {
      space = !out.empty();
      continue;
    }
    if (std::ispunct(c)) continue;
    if (space) out.push_back(' ');
    space = false;
    out.push_back(static_cast<char>(std::tolower(c)));
  }
  return out;
}

static std::vector<std::string_view> whitespace_tokens(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    if (j > i) out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

double rouge_l_f1(std::string_view a, std::string_view b) {
  auto ta = whitespace_tokens(a), tb = whitespace_tokens(b);
  if (ta.empty() || tb.empty()) return 0.0;
  // The LCS length is symmetric: keep the shorter sequence as the row to bound memory.
  const auto& rows = ta.size() >= tb.size() ? ta : tb;
  const auto& cols = ta.size() >= tb.size() ? tb : ta;
  std::vector<uint32_t> prev(cols.size() + 1, 0), cur(cols.size() + 1, 0);
  for (const auto& r : rows) {
    for (size_t j = 1; j <= cols.size(); ++j)
      cur[j] = r == cols[j - 1] ? prev[j - 1] + 1 : std::max(prev[j], cur[j - 1]);
    std::swap(prev, cur);
  }
  double lcs = prev[cols.size()];
  if (lcs == 0) return 0.0;
  double p = lcs / static_cast<double>(tb.size()), r = lcs / static_cast<double>(ta.size());
  return 2 * p * r / (p + r);
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t i = 0;
  while (i <= text.size()) {
    size_t j = text.find('\n', i);
    if (j == std::string_view::npos) {
      if (i < text.size()) lines.push_back(text.substr(i));
      break;
    }
    lines.push_back(text.substr(i, j - i));
    i = j + 1;
  }
  return lines;
}

std::string_view trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

bool is_blank(std::string_view line) {
  return trim(line).empty();
}

std::string clean_docstring(std::string_view raw) {
  // inspect.cleandoc: expand tabs, strip leading whitespace of the first line, remove the common
  // indentation of the remaining lines, then drop leading and trailing blank lines.
  std::string expanded;
  expanded.reserve(raw.size());
  size_t col = 0;
  for (char c : raw) {
    if (c == '\t') {
      size_t pad = 8 - col % 8;
      expanded.append(pad, ' ');
      col += pad;
    } else {
      expanded.push_back(c);
      col = (c == '\n') ? 0 : col + 1;
    }
  }
  auto lines = split_lines(expanded);
  if (!expanded.empty() && expanded.back() == '\n') lines.emplace_back();
  size_t margin = std::string::npos;
  for (size_t i = 1; i < lines.size(); ++i) {
    auto l = lines[i];
    size_t content = l.find_first_not_of(' ');
    if (content == std::string_view::npos) continue;
    margin = std::min(margin, content);
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view l = lines[i];
    if (i == 0) {
      size_t a = l.find_first_not_of(" \t\r\f\v");
      l = a == std::string_view::npos ? std::string_view{} : l.substr(a);
    } else if (margin != std::string::npos) {
      l = l.size() > margin ? l.substr(margin) : std::string_view{};
    }
    out.emplace_back(l);
  }
  // Like cleandoc, only lines that became empty are dropped at the edges (not whitespace-only ones).
  while (!out.empty() && out.back().empty()) out.pop_back();
  while (!out.empty() && out.front().empty()) out.erase(out.begin());
  return join(out, "\n");
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0, n = s.size();
  while (i < n) {
    unsigned char c = s[i];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > n) return false;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    if (len == 2 && c < 0xC2) return false;  // overlong
    i += len;
  }
  return true;
}

std::string sanitize_utf8(std::string_view s) {
  if (is_valid_utf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size());
  size_t i = 0, n = s.size();
  while (i < n) {
    unsigned char c = s[i];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len != 0 && i + len <= n && !(len == 2 && c < 0xC2);
    for (size_t k = 1; ok && k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) ok = false;
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
    }
  }
  return out;
}

std::vector<uint32_t> line_starts(std::string_view text) {
  // memchr jumps from newline to newline (vectorised by libc): a byte-by-byte loop over a structural
  // request's masked file was 3% of the request's CPU on sympy (files of up to ~30,000 lines).
  std::vector<uint32_t> starts{0};
  const char* const begin = text.data();
  const char* const end = begin + text.size();
  for (const char* p = begin; p < end;) {
    const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p));
    if (!nl) break;
    p = static_cast<const char*>(nl) + 1;
    starts.push_back(static_cast<uint32_t>(p - begin));
  }
  return starts;
}

std::string_view line_range(std::string_view text, const std::vector<uint32_t>& starts, int first, int last) {
  if (first < 1) first = 1;
  if (last > static_cast<int>(starts.size())) last = static_cast<int>(starts.size());
  if (first > last) return {};
  size_t a = starts[first - 1];
  size_t b = last < static_cast<int>(starts.size()) ? starts[last] : text.size();
  if (b > a && b <= text.size() && text[b - 1] == '\n') --b;
  if (a > text.size()) return {};
  return text.substr(a, b - a);
}

size_t edit_distance(std::string_view a, std::string_view b, size_t max) {
  if (a.size() > b.size()) std::swap(a, b);  // a: the shorter
  size_t n = a.size(), m = b.size();
  const size_t over = max + 1;
  if (m - n > max) return over;
  if (n == 0) return m;
  thread_local std::vector<size_t> prev, cur;
  prev.assign(m + 1, over);
  cur.assign(m + 1, over);
  for (size_t j = 0; j <= std::min(m, max); ++j) prev[j] = j;
  for (size_t i = 1; i <= n; ++i) {
    // Row i covers columns [lo, hi]; the cells just outside the band read as `over`.
    size_t lo = i > max ? i - max : 1, hi = std::min(m, i + max);
    cur[lo - 1] = lo == 1 ? std::min(i, over) : over;
    size_t row_min = cur[lo - 1];
    for (size_t j = lo; j <= hi; ++j) {
      size_t v = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      cur[j] = std::min(v, over);
      row_min = std::min(row_min, cur[j]);
    }
    if (hi < m) cur[hi + 1] = over;
    if (row_min > max) return over;
    std::swap(prev, cur);
  }
  return std::min(prev[m], over);
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out.append(sep);
    out.append(parts[i]);
  }
  return out;
}

std::string comment_block_text(const std::vector<std::string_view>& comments) {
  std::string doc;
  for (std::string_view t : comments) {
    if (starts_with(t, "///"))
      t = t.substr(3);
    else if (starts_with(t, "//"))
      t = t.substr(2);
    else if (starts_with(t, "/*") && t.size() >= 4)
      t = t.substr(2, t.size() - 4);
    for (auto line : split_lines(t)) {
      std::string_view l = trim(line);
      if (starts_with(l, "*")) l = trim(l.substr(1));
      if (!doc.empty()) doc.push_back('\n');
      doc.append(l);
    }
  }
  return std::string(trim(doc));
}

std::string collapse_spaces(std::string_view s) {
  std::string o;
  bool sp = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      sp = !o.empty();
      continue;
    }
    if (sp) o.push_back(' ');
    sp = false;
    o.push_back(c);
  }
  return o;
}

std::unordered_set<std::string_view> word_set(std::string_view words) {
  std::unordered_set<std::string_view> out;
  for (size_t i = 0; i < words.size();) {
    size_t j = std::min(words.find(' ', i), words.size());
    if (j > i) out.insert(words.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

}  // namespace repoctx
