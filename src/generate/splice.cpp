#include "generate/splice.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "repo/parser.h"
#include "util/text.h"

namespace repoctx {

std::string extract_code_block(const std::string& answer) {
  size_t open = answer.find("```");
  if (open == std::string::npos) return answer;
  size_t line_end = answer.find('\n', open);
  if (line_end == std::string::npos) return answer;
  size_t close = answer.find("\n```", line_end);
  if (close == std::string::npos) return answer.substr(line_end + 1);  // cut off by max_tokens
  return answer.substr(line_end + 1, close - line_end);
}

namespace {

size_t line_start_of(const std::string& s, size_t byte) {
  size_t p = s.rfind('\n', byte == 0 ? 0 : byte - 1);
  return byte == 0 || p == std::string::npos ? 0 : p + 1;
}

bool all_space(std::string_view s) {
  return s.find_first_not_of(" \t") == std::string_view::npos;
}

// End of line `line` (1-based), including its newline.
size_t line_end_incl(const std::string& s, const std::vector<uint32_t>& starts, int line) {
  return static_cast<size_t>(line) < starts.size() ? starts[static_cast<size_t>(line)] : s.size();
}

}  // namespace

ExtractedBody extract_body(const std::string& code, const std::string& name) {
  ExtractedBody out;
  SourceParser parser;
  ParsedFile pf = parser.parse("answer.py", "answer", code, Language::python);
  int best = -1, best_depth = 1 << 30;
  for (size_t i = 0; i < pf.entities.size(); ++i) {
    const auto& en = pf.entities[i];
    if (en.name != name || !is_callable(en.kind)) continue;
    int depth = 0;
    for (int p = en.parent; p >= 0; p = pf.entities[p].parent) ++depth;
    if (depth < best_depth) best = static_cast<int>(i), best_depth = depth;
  }
  if (best < 0) {
    out.problem = "the answer contains no definition of `" + name + "` (write the whole function, `def " + name +
                  "(...):` included)";
    return out;
  }
  const auto& en = pf.entities[best];
  if (en.body_start_line <= 0) {
    out.problem = "the answer's `" + name + "` has no statements after its docstring";
    return out;
  }
  auto starts = line_starts(code);
  size_t ls = line_start_of(code, en.body_start_byte);
  std::string indent = all_space(std::string_view(code).substr(ls, en.body_start_byte - ls))
                           ? code.substr(ls, en.body_start_byte - ls)
                           : std::string();
  std::string text =
      code.substr(en.body_start_byte, line_end_incl(code, starts, en.body_end_line) - en.body_start_byte);
  std::string body;
  bool first = true;
  for (auto& l : split_lines(text)) {
    if (!first) body += '\n';
    if (!first && !indent.empty() && l.substr(0, indent.size()) == indent)
      body += l.substr(indent.size());
    else if (first || !all_space(l))
      body += l;
    first = false;
  }
  while (!body.empty() && (body.back() == '\n' || body.back() == ' ' || body.back() == '\r')) body.pop_back();
  out.found = !body.empty();
  out.body = body;
  if (!out.found) out.problem = "the answer's `" + name + "` has an empty body";
  return out;
}

namespace {

// Java: the span between a method's braces that a new body replaces, and how the body is indented there.
struct JavaBodySpan {
  size_t from = 0, to = 0;   // [from, to): from the first statement's line (or the byte after '{' when the
                             // statements share its line) up to the closing brace's line (or the brace)
  std::string indent;        // of the statements
  std::string before_close;  // inserted before the closing brace when it shared a line with a statement
  bool ok = false;
};

JavaBodySpan java_body_span(const std::string& content, const Entity& t) {
  JavaBodySpan sp;
  if (t.body_start_line <= 0 || t.end_byte == 0 || t.end_byte > content.size()) return sp;
  size_t close = content.rfind('}', t.end_byte - 1);
  if (close == std::string::npos || close < t.body_start_byte) return sp;
  auto starts = line_starts(content);
  size_t hs = starts[static_cast<size_t>(t.start_line - 1)];
  std::string header_indent = content.substr(hs, content.find_first_not_of(" \t", hs) - hs);
  size_t ls = starts[static_cast<size_t>(t.body_start_line - 1)];
  if (all_space(std::string_view(content).substr(ls, t.body_start_byte - ls))) {
    sp.from = ls;
    sp.indent = content.substr(ls, t.body_start_byte - ls);
  } else {  // `void f() { return; }`: the statements move to lines of their own
    sp.from = t.body_start_byte;
    sp.indent = header_indent + "    ";
  }
  size_t cls = line_start_of(content, close);
  if (all_space(std::string_view(content).substr(cls, close - cls)) && cls >= sp.from) {
    sp.to = cls;
  } else {
    sp.to = close;
    sp.before_close = header_indent;
  }
  sp.ok = true;
  return sp;
}

std::string splice_java(const std::string& content, const Entity& t, const std::string& body) {
  JavaBodySpan sp = java_body_span(content, t);
  if (!sp.ok) return content;
  std::string out = content.substr(0, sp.from);
  if (sp.from == t.body_start_byte) {
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
  }
  for (const auto& l : split_lines(body)) {
    if (!l.empty()) out += sp.indent + std::string(l);
    out += '\n';
  }
  out += sp.before_close;
  out += content.substr(sp.to);
  return out;
}

}  // namespace

std::string stub_body(Language language, const std::string& message) {
  if (language == Language::java) return "throw new UnsupportedOperationException(\"" + message + "\");";
  return "raise NotImplementedError(\"" + message + "\")";
}

std::string current_body(const std::string& content, const Entity& t, Language language) {
  if (language == Language::java) {
    JavaBodySpan sp = java_body_span(content, t);
    if (!sp.ok) return "";
    std::string body;
    for (const auto& l : split_lines(std::string_view(content).substr(sp.from, sp.to - sp.from))) {
      std::string_view line = l;
      if (line.substr(0, sp.indent.size()) == sp.indent) line.remove_prefix(sp.indent.size());
      body += std::string(all_space(line) ? std::string_view() : line) + "\n";
    }
    while (!body.empty() && (body.back() == '\n' || body.back() == ' ')) body.pop_back();
    return body;
  }
  auto starts = line_starts(content);
  std::string src(line_range(content, starts, t.decorated_start_line, t.end_line));
  return extract_body(src, t.name).body;
}

std::string splice_body(const std::string& content, const Entity& t, const std::string& body, Language language) {
  if (language == Language::java) return splice_java(content, t, body);
  if (t.body_start_line <= 0) return content;
  auto starts = line_starts(content);
  size_t ls = starts[static_cast<size_t>(t.body_start_line - 1)];
  bool inline_body = !all_space(std::string_view(content).substr(ls, t.body_start_byte - ls));
  std::string indent;
  size_t from;
  std::string prefix;
  if (inline_body) {  // "def f(): return x": the new body goes on lines of its own
    size_t hs = starts[static_cast<size_t>(t.start_line - 1)];
    size_t n = content.find_first_not_of(" \t", hs) - hs;
    indent = content.substr(hs, n) + "    ";
    from = t.body_start_byte;
    prefix = "\n";
  } else {
    indent = content.substr(ls, t.body_start_byte - ls);
    from = ls;
  }
  size_t to = line_end_incl(content, starts, t.body_end_line);
  bool had_newline = to > 0 && content[to - 1] == '\n';
  std::string out = content.substr(0, from);
  while (inline_body && !out.empty() && out.back() == ' ') out.pop_back();
  out += prefix;
  bool first = true;
  for (const auto& l : split_lines(body)) {
    if (!first) out += '\n';
    if (!l.empty()) {
      out += indent;
      out += l;
    }
    first = false;
  }
  if (had_newline) out += '\n';
  out += content.substr(to);
  return out;
}

std::string unified_diff(const std::string& path, const std::string& before, const std::string& after, int context) {
  if (before == after) return "";
  auto a = split_lines(before), b = split_lines(after);
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre && a[a.size() - 1 - suf] == b[b.size() - 1 - suf]) ++suf;
  size_t c = static_cast<size_t>(std::max(context, 0));
  size_t s = pre > c ? pre - c : 0;
  size_t ea = std::min(a.size(), a.size() - suf + c), eb = std::min(b.size(), b.size() - suf + c);
  std::string out = fmt::format("--- a/{}\n+++ b/{}\n", path, path);
  auto range = [](size_t start, size_t n) {
    return n == 0 ? fmt::format("{},0", start) : fmt::format("{},{}", start + 1, n);
  };
  out += fmt::format("@@ -{} +{} @@\n", range(s, ea - s), range(s, eb - s));
  auto emit = [&](char mark, std::string_view line) {
    out += mark;
    out += line;
    out += '\n';
  };
  for (size_t i = s; i < pre; ++i) emit(' ', a[i]);
  for (size_t i = pre; i < a.size() - suf; ++i) emit('-', a[i]);
  for (size_t i = pre; i < b.size() - suf; ++i) emit('+', b[i]);
  for (size_t i = a.size() - suf; i < ea; ++i) emit(' ', a[i]);
  return out;
}

}  // namespace repoctx
