#include "repo/python/text.h"

#include <cctype>

namespace repoctx::py {

std::string collapse_ws(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool space = false;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\\') {
      space = !out.empty();
      continue;
    }
    if (space) {
      // No space after an opening or before a closing bracket: "f( a )" -> "f(a)".
      char prev = out.back();
      if (prev != '(' && prev != '[' && c != ')' && c != ']' && c != ',' && c != ':') out.push_back(' ');
    }
    space = false;
    out.push_back(c);
  }
  return out;
}

std::string unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c != '\\' || i + 1 >= s.size()) {
      out.push_back(c);
      continue;
    }
    char n = s[++i];
    switch (n) {
      case 'n':
        out.push_back('\n');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '\'':
        out.push_back('\'');
        break;
      case '"':
        out.push_back('"');
        break;
      case '\n':
        break;  // line continuation
      default:
        out.push_back('\\');
        out.push_back(n);
    }
  }
  return out;
}

bool append_string_value(std::string_view t, std::string& out) {
  size_t q = t.find_first_of("'\"");
  if (q == std::string_view::npos) return false;
  std::string_view prefix = t.substr(0, q);
  bool raw = false;
  for (char c : prefix) {
    if (c == 'f' || c == 'F' || c == 'b' || c == 'B') return false;
    if (c == 'r' || c == 'R') raw = true;
  }
  std::string_view body = t.substr(q);
  size_t ql = (body.size() >= 6 && (body.substr(0, 3) == "\"\"\"" || body.substr(0, 3) == "'''")) ? 3 : 1;
  if (body.size() < 2 * ql) return false;
  body = body.substr(ql, body.size() - 2 * ql);
  out += raw ? std::string(body) : unescape(body);
  return true;
}

std::string dotted_name(std::string_view text) {
  std::string out;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c)) && c != '\\') out.push_back(c);
  return out;
}

}  // namespace repoctx::py
