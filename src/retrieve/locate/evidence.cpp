#include "retrieve/locate/evidence.h"

#include <re2/re2.h>

#include <algorithm>
#include <set>
#include <unordered_set>

#include "util/text.h"

namespace repoctx {
namespace {

void add_distinct(std::vector<std::string>& out, std::set<std::string>& seen, std::string s) {
  if (!s.empty() && seen.insert(s).second) out.push_back(std::move(s));
}

bool is_keyword_or_common(const std::string& w) {
  static const std::unordered_set<std::string> words = {
      "False",    "None",   "True",  "and",  "as",     "assert",   "async",     "await",      "break",  "class",
      "continue", "def",    "del",   "elif", "else",   "except",   "finally",   "for",        "from",   "global",
      "if",       "import", "in",    "is",   "lambda", "nonlocal", "not",       "or",         "pass",   "raise",
      "return",   "try",    "while", "with", "yield",  "self",     "cls",       "print",      "len",    "str",
      "int",      "dict",   "list",  "set",  "tuple",  "object",   "type",      "isinstance", "super",  "range",
      "bool",     "float",  "bytes", "the",  "this",   "that",     "Traceback", "File",       "line",   "most",
      "recent",   "call",   "last",  "http", "https",  "www",      "com",       "org",        "github", "html",
      "e.g",      "i.e",    "etc",   "args", "kwargs"};
  return words.count(w) > 0;
}

// snake_case, CamelCase (an upper letter after a lower one, or a run of capitals then lower: HTTPServer),
// or a name with a digit after letters (utf8, sha256): shapes prose words rarely have.
bool looks_like_code(const std::string& w) {
  if (w.size() < 3) return false;
  bool lower = false;
  for (size_t i = 0; i < w.size(); ++i) {
    char c = w[i];
    if (c == '_' && i > 0 && i + 1 < w.size()) return true;
    if (std::isupper(static_cast<unsigned char>(c)) && lower) return true;
    if (std::islower(static_cast<unsigned char>(c))) lower = true;
  }
  // "HTTPServer", "URLError": capitals followed by a capital-lower pair.
  for (size_t i = 1; i + 1 < w.size(); ++i)
    if (std::isupper(static_cast<unsigned char>(w[i - 1])) && std::isupper(static_cast<unsigned char>(w[i])) &&
        std::islower(static_cast<unsigned char>(w[i + 1])))
      return true;
  return false;
}

// The parts of the text that are code: fenced blocks, indented blocks, doctest/REPL lines, traceback
// lines, and `inline code`.
std::string code_parts(std::string_view text, std::vector<std::string>& inline_code) {
  std::string out;
  bool fenced = false, in_traceback = false;
  for (auto line : split_lines(text)) {
    std::string_view t = trim(line);
    if (starts_with(t, "```") || starts_with(t, "~~~")) {
      fenced = !fenced;
      continue;
    }
    if (starts_with(t, "Traceback (most recent call last)")) in_traceback = true;
    bool code = fenced || in_traceback || starts_with(line, "    ") || starts_with(line, "\t") ||
                starts_with(t, ">>> ") || starts_with(t, "... ") || starts_with(t, "$ ");
    if (in_traceback && t.empty()) in_traceback = false;
    if (code) {
      out.append(line);
      out += '\n';
    }
  }
  static const RE2 tick("`([^`\\n]{1,200})`");
  re2::StringPiece in(text.data(), text.size());
  std::string inner;
  while (RE2::FindAndConsume(&in, tick, &inner)) {
    inline_code.push_back(inner);
    out += inner;
    out += '\n';
  }
  return out;
}

void extract_frames(std::string_view text, RequestEvidence& ev) {
  // Python: File "x.py", line 12, in func
  static const RE2 py("File \"([^\"\\n]+)\", line (\\d+)(?:, in ([\\w<>.]+))?");
  // pytest / compilers / loggers: path/x.py:12: in func, path/x.py:12
  static const RE2 colon("([\\w./\\\\-]*\\w\\.py):(\\d+)(?::? in ([\\w<>]+))?");
  re2::StringPiece in(text.data(), text.size());
  std::string path, line, fn;
  while (RE2::FindAndConsume(&in, py, &path, &line, &fn)) ev.frames.push_back({path, std::atoi(line.c_str()), fn});
  in = re2::StringPiece(text.data(), text.size());
  while (RE2::FindAndConsume(&in, colon, &path, &line, &fn)) {
    bool dup = std::any_of(ev.frames.begin(), ev.frames.end(),
                           [&](const TraceFrame& f) { return f.path == path && f.line == std::atoi(line.c_str()); });
    if (!dup) ev.frames.push_back({path, std::atoi(line.c_str()), fn});
  }
}

void extract_literals(std::string_view text, RequestEvidence& ev) {
  std::set<std::string> seen, seen_exc;
  static const RE2 exc("(?m)^\\s*(?:[\\w.]+\\.)?(\\w*(?:Error|Exception|Warning|Exit|Interrupt))(?::\\s*(.+))?$");
  static const RE2 exc_inline("\\b(\\w+(?:Error|Exception|Warning))\\b");
  static const RE2 dq("\"([^\"\\n]{4,200})\"");
  static const RE2 sq("'([^'\\n]{4,200})'");
  re2::StringPiece in(text.data(), text.size());
  std::string name, msg;
  while (RE2::FindAndConsume(&in, exc, &name, &msg)) {
    add_distinct(ev.exceptions, seen_exc, name);
    std::string m(trim(msg));
    if (m.size() >= 4) add_distinct(ev.literals, seen, m);
  }
  in = re2::StringPiece(text.data(), text.size());
  while (RE2::FindAndConsume(&in, exc_inline, &name)) add_distinct(ev.exceptions, seen_exc, name);
  for (const RE2* re : {&dq, &sq}) {
    in = re2::StringPiece(text.data(), text.size());
    std::string lit;
    while (RE2::FindAndConsume(&in, *re, &lit)) {
      // A path or a code expression is not a message; a message has a space in it.
      if (lit.find(' ') == std::string::npos) continue;
      add_distinct(ev.literals, seen, std::string(trim(lit)));
    }
  }
}

}  // namespace

RequestEvidence extract_evidence(std::string_view text) {
  RequestEvidence ev;
  extract_frames(text, ev);
  extract_literals(text, ev);
  std::set<std::string> seen_path, seen_dot, seen_id, seen_code;
  for (const auto& f : ev.frames) add_distinct(ev.paths, seen_path, f.path);
  static const RE2 path_re("((?:[\\w.-]+/)*[\\w-]+\\.py)\\b");
  re2::StringPiece in(text.data(), text.size());
  std::string s;
  while (RE2::FindAndConsume(&in, path_re, &s)) add_distinct(ev.paths, seen_path, s);
  static const RE2 dotted_re("\\b([A-Za-z_]\\w*(?:\\.[A-Za-z_]\\w*)+)");
  in = re2::StringPiece(text.data(), text.size());
  while (RE2::FindAndConsume(&in, dotted_re, &s)) {
    if (ends_with(s, ".py") || ends_with(s, ".txt") || ends_with(s, ".md") || ends_with(s, ".rst") ||
        ends_with(s, ".com") || ends_with(s, ".org") || s == "e.g" || s == "i.e")
      continue;
    add_distinct(ev.dotted, seen_dot, s);
  }
  std::vector<std::string> inline_code;
  std::string code = code_parts(text, inline_code);
  static const RE2 word("\\b([A-Za-z_][A-Za-z0-9_]*)\\b");
  static const RE2 call("\\b([A-Za-z_][A-Za-z0-9_]*)\\(");
  in = re2::StringPiece(text.data(), text.size());
  while (RE2::FindAndConsume(&in, word, &s))
    if (looks_like_code(s) && !is_keyword_or_common(s)) add_distinct(ev.identifiers, seen_id, s);
  in = re2::StringPiece(text.data(), text.size());
  while (RE2::FindAndConsume(&in, call, &s))
    if (s.size() >= 3 && !is_keyword_or_common(s)) add_distinct(ev.identifiers, seen_id, s);
  for (const auto& ic : inline_code) {
    re2::StringPiece v(ic);
    while (RE2::FindAndConsume(&v, word, &s))
      if (s.size() >= 3 && !is_keyword_or_common(s)) add_distinct(ev.identifiers, seen_id, s);
  }
  for (const auto& d : ev.dotted)  // the parts of dotted names are names too ("flask.Flask.run" -> run)
    for (size_t a = 0, b; a <= d.size(); a = b + 1) {
      b = std::min(d.find('.', a), d.size());
      std::string part = d.substr(a, b - a);
      if (part.size() >= 3 && !is_keyword_or_common(part)) add_distinct(ev.identifiers, seen_id, part);
    }
  in = re2::StringPiece(code);
  while (RE2::FindAndConsume(&in, word, &s))
    if (s.size() >= 3 && !is_keyword_or_common(s)) add_distinct(ev.code_identifiers, seen_code, s);
  for (const auto& f : ev.frames)
    if (!f.function.empty() && f.function != "<module>") add_distinct(ev.code_identifiers, seen_code, f.function);
  return ev;
}

std::vector<std::string> literal_fragments(std::string_view literal, size_t max) {
  // Words of letters (and ' -), broken at placeholders ({name}, %s), quotes and digits: those parts of a
  // message are filled in at run time and differ from the source's format string.
  static const RE2 word_re("([A-Za-z][A-Za-z'-]*|[^A-Za-z\\s]+)");
  std::vector<std::vector<std::string>> runs(1);
  re2::StringPiece in(literal.data(), literal.size());
  std::string w;
  while (RE2::FindAndConsume(&in, word_re, &w)) {
    if (std::isalpha(static_cast<unsigned char>(w[0]))) {
      runs.back().push_back(w);
    } else if (w != "," && w != "." && w != ":" && w != ";") {
      if (!runs.back().empty()) runs.emplace_back();
    }
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& r : runs) {
    if (r.size() < 3) {
      std::string joined = join(r, " ");
      if (joined.size() >= 8 && r.size() >= 1) add_distinct(out, seen, joined);
      continue;
    }
    for (size_t i = 0; i + 3 <= r.size(); ++i) {
      bool specific = std::any_of(r.begin() + static_cast<long>(i), r.begin() + static_cast<long>(i) + 3,
                                  [](const std::string& x) { return x.size() >= 4; });
      if (specific) add_distinct(out, seen, r[i] + " " + r[i + 1] + " " + r[i + 2]);
    }
  }
  if (out.size() > max) out.resize(max);
  return out;
}

}  // namespace repoctx
