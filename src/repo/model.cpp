#include "repo/model.h"

#include <algorithm>

#include "util/text.h"

namespace repoctx {

const char* language_name(Language l) {
  switch (l) {
    case Language::python:
      return "python";
    case Language::java:
      return "java";
    case Language::go:
      return "go";
    case Language::javascript:
      return "javascript";
    case Language::typescript:
      return "typescript";
    case Language::rust:
      return "rust";
    case Language::c:
      return "c";
    case Language::cpp:
      return "cpp";
    case Language::csharp:
      return "csharp";
    default:
      return "unknown";
  }
}

Language language_from_name(std::string_view name) {
  for (auto l : {Language::python, Language::java, Language::go, Language::javascript, Language::typescript,
                 Language::rust, Language::c, Language::cpp, Language::csharp})
    if (name == language_name(l)) return l;
  return Language::unknown;
}

Language language_from_path(const std::string& path) {
  if (ends_with(path, ".py") || ends_with(path, ".pyi")) return Language::python;
  if (ends_with(path, ".java")) return Language::java;
  if (ends_with(path, ".go")) return Language::go;
  if (ends_with(path, ".rs")) return Language::rust;
  if (ends_with(path, ".cs")) return Language::csharp;
  // A .h header is C here; the parser reads one whose text is C++ (a class, a namespace, a template) as C++.
  if (ends_with(path, ".c") || ends_with(path, ".h")) return Language::c;
  for (const char* ext : {".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++", ".ipp", ".tpp", ".inl"})
    if (ends_with(path, ext)) return Language::cpp;
  for (const char* ext : {".ts", ".tsx", ".mts", ".cts"})
    if (ends_with(path, ext)) return Language::typescript;
  for (const char* ext : {".js", ".jsx", ".mjs", ".cjs"})
    if (ends_with(path, ext)) return Language::javascript;
  return Language::unknown;
}

std::string ParsedFile::partial_reason() const {
  for (const auto& e : errors)
    if (e.partial) return e.message;
  return {};
}

const char* kind_name(EntityKind k) {
  switch (k) {
    case EntityKind::klass:
      return "class";
    case EntityKind::function:
      return "function";
    case EntityKind::method:
      return "method";
    case EntityKind::variable:
      return "variable";
    case EntityKind::attribute:
      return "attribute";
    case EntityKind::interface:
      return "interface";
    case EntityKind::field:
      return "field";
    case EntityKind::constructor:
      return "constructor";
  }
  return "?";
}

std::optional<EntityKind> kind_from_name(const std::string& s) {
  for (auto k : {EntityKind::klass, EntityKind::function, EntityKind::method, EntityKind::variable,
                 EntityKind::attribute, EntityKind::interface, EntityKind::field, EntityKind::constructor})
    if (s == kind_name(k)) return k;
  return std::nullopt;
}

std::string Import::bound_name() const {
  if (!alias.empty()) return alias;
  if (!name.empty()) return name;
  return module.substr(0, module.find('.'));
}

std::string mask_body(const std::string& source, const Entity& e) {
  if (e.body_start_line <= 0 || e.body_end_line < e.body_start_line) return source;
  auto starts = line_starts(source);
  int nlines = static_cast<int>(starts.size());
  auto line_text = [&](int line) {
    size_t a = starts[line - 1];
    size_t b = line < nlines ? starts[line] : source.size();
    std::string_view full(source.data() + a, b - a);
    return full;
  };
  auto indent_of = [](std::string_view l) { return l.substr(0, std::min(l.find_first_not_of(" \t"), l.size())); };
  size_t first_a = starts[e.body_start_line - 1];
  bool inline_body =
      e.body_start_byte > first_a && !is_blank(std::string_view(source).substr(first_a, e.body_start_byte - first_a));
  // Indentation for the final "...": the first body statement's, or the header's plus four spaces when
  // the body starts on the header line ("def f(): return x").
  std::string last_indent = inline_body ? std::string(indent_of(line_text(e.start_line))) + "    "
                                        : std::string(indent_of(line_text(e.body_start_line)));
  std::string out;
  out.reserve(source.size());
  for (int line = 1; line <= nlines; ++line) {
    std::string_view full = line_text(line);
    bool has_nl = !full.empty() && full.back() == '\n';
    std::string_view content = has_nl ? full.substr(0, full.size() - 1) : full;
    if (line < e.body_start_line || line > e.body_end_line) {
      out.append(full);
      continue;
    }
    size_t keep = line == e.body_start_line && e.body_start_byte >= first_a ? e.body_start_byte - first_a : 0;
    if (line == e.body_start_line && line == e.body_end_line) {
      out.append(content.substr(0, keep));
      out.append("...");
    } else if (line == e.body_end_line) {
      out.append(last_indent);
      out.append("...");
    } else if (line == e.body_start_line) {
      out.append(content.substr(0, keep));
      out.push_back('#');
    } else if (!is_blank(content)) {
      out.append(indent_of(content));
      out.push_back('#');
    } else {
      out.append(content);  // blank lines stay blank: split-aggregate snippet boundaries do not move
    }
    if (has_nl) out.push_back('\n');
  }
  return out;
}

// By path component, not substring: `src/_pytest/python.py` or `latest/x.py` are not tests.
bool is_test_path(const std::string& path) {
  size_t start = 0;
  while (true) {
    size_t slash = path.find('/', start);
    std::string part = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (slash == std::string::npos)
      return starts_with(part, "test_") || ends_with(part, "_test.py") || part == "conftest.py" ||
             ends_with(part, "_test.go") || part.find(".test.") != std::string::npos ||
             part.find(".spec.") != std::string::npos;
    if (part == "tests" || part == "test" || part == "testing" || part == "__tests__") return true;
    start = slash + 1;
  }
}

}  // namespace repoctx
