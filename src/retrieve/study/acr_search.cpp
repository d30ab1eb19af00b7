#include "retrieve/study/acr_search.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>

#include "util/text.h"

namespace repoctx {
namespace {

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

AcrAnswer failed(std::string text) {
  AcrAnswer a;
  a.text = std::move(text);
  return a;
}

bool in_class(const RepoView& v, int e) {
  for (int p = v.entities()[e].parent_index; p >= 0; p = v.entities()[p].parent_index)
    if (is_type(v.entities()[p].kind)) return true;
  return false;
}

}  // namespace

bool AcrSearch::is_test_file(const std::string& path) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    std::string part = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part == "test" || part == "tests") return true;
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return ends_with(path, "_test.py") || ends_with(path, "_test.go");
}

AcrSearch::AcrSearch(const Engine& e, AcrOptions o) : e_(e), o_(o) {
  const RepoView& v = e.view();
  for (size_t f = 0; f < v.files().size(); ++f) {
    const auto& fr = v.files()[f];
    if (fr.language == Language::unknown || (o_.skip_tests && is_test_file(fr.path))) continue;
    files_.push_back(static_cast<int>(f));
  }
  std::sort(files_.begin(), files_.end(), [&](int a, int b) { return v.files()[a].path < v.files()[b].path; });
  for (int f : files_) {
    const auto& fr = v.files()[f];
    for (int en = fr.first_entity; en < fr.first_entity + fr.n_entities; ++en) {
      const auto& ent = v.entities()[en];
      if (is_type(ent.kind))
        classes_[ent.name].push_back(en);
      else if (is_callable(ent.kind) && !in_class(v, en))
        functions_[ent.name].push_back(en);
    }
  }
  class_list_.assign(classes_.begin(), classes_.end());
  std::sort(class_list_.begin(), class_list_.end());
}

std::string AcrSearch::numbered(int file, int first, int last) const {
  const std::string& content = e_.view().content(file);
  auto starts = line_starts(content);
  std::string out;
  last = std::min(last, static_cast<int>(starts.size()));
  for (int l = std::max(first, 1); l <= last; ++l)
    out += std::to_string(l) + " " + std::string(line_range(content, starts, l, l)) + "\n";
  return sanitize_utf8(out);
}

AcrResult AcrSearch::result_of(int entity, const std::string& class_name) const {
  const auto& en = e_.view().entities()[entity];
  AcrResult r;
  r.file = en.file;
  r.start = en.start_line;  // ACR reports ast's lineno (the def/class line, decorators excluded)
  r.end = en.end_line;
  r.class_name = class_name;
  if (is_callable(en.kind)) r.func_name = en.name;
  r.code = numbered(en.file, r.start, r.end);
  return r;
}

std::string AcrSearch::tagged(const AcrResult& r) const {
  std::string s = "<file>" + e_.view().files()[r.file].path + "</file>\n";
  if (!r.class_name.empty()) s += "<class>" + r.class_name + "</class>";
  if (!r.func_name.empty()) s += " <func>" + r.func_name + "</func>";
  return s + "\n<code>\n" + r.code + "\n</code>";
}

std::string AcrSearch::shown(const std::vector<AcrResult>& rs, size_t limit) const {
  std::string out;
  for (size_t i = 0; i < rs.size() && i < limit; ++i)
    out += fmt::format("- Search result {}:\n```\n{}\n```\n", i + 1, tagged(rs[i]));
  return out;
}

std::string AcrSearch::collapse_files(const std::vector<AcrResult>& rs) const {
  std::vector<std::pair<int, int>> counts;  // file, matches (first-seen order)
  for (const auto& r : rs) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == r.file; });
    if (it == counts.end())
      counts.emplace_back(r.file, 1);
    else
      ++it->second;
  }
  std::string out;
  for (auto [f, n] : counts) out += fmt::format("- <file>{}</file> ({} matches)\n", e_.view().files()[f].path, n);
  return out;
}

std::vector<int> AcrSearch::files_matching(const std::string& file_name) const {
  // ACR accepts a path relative to the root or any suffix of one ("utils.py"), case-insensitively.
  std::string want = lowercase(std::string(trim(file_name)));
  while (starts_with(want, "./")) want = want.substr(2);
  std::vector<int> out;
  if (want.empty()) return out;
  for (int f : files_)
    if (ends_with(lowercase(e_.view().files()[f].path), want)) out.push_back(f);
  return out;
}

std::vector<int> AcrSearch::methods_of(int klass, const std::string& name) const {
  // Every function inside the class at any depth (ACR walks the class's whole ast).
  std::vector<int> out;
  const auto& v = e_.view();
  const auto& fr = v.files()[v.entities()[klass].file];
  for (int en = fr.first_entity; en < fr.first_entity + fr.n_entities; ++en)
    if (en != klass && is_callable(v.entities()[en].kind) && v.entities()[en].name == name && v.is_within(en, klass))
      out.push_back(en);
  return out;
}

std::string AcrSearch::class_signature(int klass) const {
  // The class header, then the headers of its methods and its class-level assignments (ACR's
  // get_class_signature), comment lines left out.
  const auto& v = e_.view();
  const auto& k = v.entities()[klass];
  std::vector<std::pair<int, int>> spans = {{k.start_line, k.header_end_line}};
  const auto& fr = v.files()[k.file];
  for (int en = fr.first_entity; en < fr.first_entity + fr.n_entities; ++en) {
    const auto& c = v.entities()[en];
    if (c.parent_index != klass) continue;
    if (is_callable(c.kind)) spans.emplace_back(c.decorated_start_line, c.header_end_line);
    if (c.kind == EntityKind::attribute) spans.emplace_back(c.start_line, c.end_line);
  }
  std::sort(spans.begin(), spans.end());
  const std::string& content = v.content(k.file);
  auto starts = line_starts(content);
  std::string out;
  int done = 0;
  for (auto [a, b] : spans)
    for (int l = std::max(a, done + 1); l <= b && l <= static_cast<int>(starts.size()); ++l) {
      auto line = line_range(content, starts, l, l);
      done = l;
      if (starts_with(trim(line), "#")) continue;
      out += std::to_string(l) + " " + std::string(line) + "\n";
    }
  return sanitize_utf8(out);
}

std::pair<std::string, std::string> AcrSearch::class_and_func_at(int file, int line) const {
  const auto& v = e_.view();
  const auto& fr = v.files()[file];
  int best = -1;
  for (int en = fr.first_entity; en < fr.first_entity + fr.n_entities; ++en) {
    const auto& c = v.entities()[en];
    if (is_callable(c.kind) && c.start_line <= line && line <= c.end_line &&
        (best < 0 || c.start_line >= v.entities()[best].start_line))
      best = en;
  }
  if (best < 0) return {"", ""};
  std::string klass;
  for (int p = v.entities()[best].parent_index; p >= 0; p = v.entities()[p].parent_index)
    if (is_type(v.entities()[p].kind)) {
      klass = v.entities()[p].name;
      break;
    }
  return {klass, v.entities()[best].name};
}

AcrAnswer AcrSearch::search_class(const std::string& class_name) const {
  auto it = classes_.find(class_name);
  if (it == classes_.end()) return failed("Could not find class " + class_name + " in the codebase.");
  AcrAnswer a;
  a.ok = true;
  for (int k : it->second) {
    AcrResult r = result_of(k, class_name);
    r.code = class_signature(k);
    a.results.push_back(r);
  }
  a.text = fmt::format("Found {} classes with name {} in the codebase:\n\n", a.results.size(), class_name);
  if (a.results.size() > static_cast<size_t>(o_.result_limit))
    a.text += "They appeared in the following files:\n" + collapse_files(a.results);
  else
    a.text += shown(a.results, a.results.size());
  if (a.results.size() > static_cast<size_t>(o_.result_limit)) a.results.resize(static_cast<size_t>(o_.result_limit));
  return a;
}

AcrAnswer AcrSearch::get_class_full_snippet(const std::string& class_name) const {
  auto it = classes_.find(class_name);
  if (it == classes_.end()) return failed("Could not find class " + class_name + " in the codebase.");
  AcrAnswer a;
  a.ok = true;
  for (int k : it->second) a.results.push_back(result_of(k, class_name));
  a.text = fmt::format("Found {} classes with name {} in the codebase:\n\n", a.results.size(), class_name);
  size_t limit = static_cast<size_t>(o_.class_full_limit);
  if (a.results.size() > limit) a.text += fmt::format("Too many results, showing full code for {} of them:\n", limit);
  if (a.results.size() > limit) a.results.resize(limit);
  a.text += shown(a.results, limit);
  return a;
}

AcrAnswer AcrSearch::search_class_in_file(const std::string& class_name, const std::string& file_name) const {
  auto files = files_matching(file_name);
  if (files.empty()) return failed("Could not find file " + file_name + " in the codebase.");
  auto it = classes_.find(class_name);
  if (it == classes_.end()) return failed("Could not find class " + class_name + " in the codebase.");
  AcrAnswer a;
  for (int k : it->second)
    if (std::count(files.begin(), files.end(), e_.view().entities()[k].file))
      a.results.push_back(result_of(k, class_name));
  if (a.results.empty()) return failed("Could not find class " + class_name + " in file " + file_name + ".");
  a.ok = true;
  a.text = fmt::format("Found {} classes with name {} in file {}:\n\n", a.results.size(), class_name, file_name) +
           shown(a.results, a.results.size());
  return a;
}

AcrAnswer AcrSearch::search_method(const std::string& method_name) const {
  std::vector<AcrResult> rs;
  if (auto it = functions_.find(method_name); it != functions_.end())
    for (int f : it->second) rs.push_back(result_of(f, ""));
  for (const auto& [cname, ks] : class_list_)
    for (int k : ks)
      for (int m : methods_of(k, method_name)) rs.push_back(result_of(m, cname));
  if (rs.empty()) return failed("Could not find method " + method_name + " in the codebase.");
  AcrAnswer a;
  a.ok = true;
  a.text = fmt::format("Found {} methods with name {} in the codebase:\n\n", rs.size(), method_name);
  if (rs.size() > static_cast<size_t>(o_.result_limit))
    a.text += "They appeared in the following files:\n" + collapse_files(rs);
  else
    a.text += shown(rs, rs.size());
  if (rs.size() > static_cast<size_t>(o_.result_limit)) rs.resize(static_cast<size_t>(o_.result_limit));
  a.results = std::move(rs);
  return a;
}

AcrAnswer AcrSearch::search_method_in_class(const std::string& method_name, const std::string& class_name) const {
  auto it = classes_.find(class_name);
  if (it == classes_.end()) return failed("Could not find class " + class_name + " in the codebase.");
  std::vector<AcrResult> rs;
  for (int k : it->second)
    for (int m : methods_of(k, method_name)) rs.push_back(result_of(m, class_name));
  if (rs.empty()) return failed("Could not find method " + method_name + " in class " + class_name + ".");
  AcrAnswer a;
  a.ok = true;
  a.text = fmt::format("Found {} methods with name {} in class {}:\n\n", rs.size(), method_name, class_name);
  size_t limit = static_cast<size_t>(o_.result_limit);
  if (rs.size() > limit)
    a.text += fmt::format("Too many results, showing full code for {} of them, and the rest just file names:\n", limit);
  a.text += shown(rs, limit);
  if (rs.size() > limit) {
    a.text += "Other results are in these files:\n" +
              collapse_files(std::vector<AcrResult>(rs.begin() + static_cast<long>(limit), rs.end()));
    rs.resize(limit);
  }
  a.results = std::move(rs);
  return a;
}

AcrAnswer AcrSearch::search_method_in_file(const std::string& method_name, const std::string& file_name) const {
  auto files = files_matching(file_name);
  if (files.empty()) return failed("Could not find file " + file_name + " in the codebase.");
  AcrAnswer all = search_method(method_name);
  std::vector<AcrResult> rs;
  // search_method keeps only the first results; filter the full list instead.
  if (auto it = functions_.find(method_name); it != functions_.end())
    for (int f : it->second)
      if (std::count(files.begin(), files.end(), e_.view().entities()[f].file)) rs.push_back(result_of(f, ""));
  for (const auto& [cname, ks] : class_list_)
    for (int k : ks)
      if (std::count(files.begin(), files.end(), e_.view().entities()[k].file))
        for (int m : methods_of(k, method_name)) rs.push_back(result_of(m, cname));
  if (rs.empty() && !all.ok) return failed("The method " + method_name + " does not appear in the codebase.");
  if (rs.empty()) return failed("There is no method with name `" + method_name + "` in file " + file_name + ".");
  AcrAnswer a;
  a.ok = true;
  a.text = fmt::format("Found {} methods with name `{}` in file {}:\n\n", rs.size(), method_name, file_name) +
           shown(rs, rs.size());
  a.results = std::move(rs);
  return a;
}

std::vector<AcrResult> AcrSearch::code_matches(const std::vector<int>& files, const std::string& code) const {
  std::vector<AcrResult> out;
  if (code.empty()) return out;
  for (int f : files) {
    const std::string& content = e_.view().content(f);
    size_t at = content.find(code);
    if (at == std::string::npos) continue;
    auto starts = line_starts(content);
    int n = static_cast<int>(starts.size());
    for (; at != std::string::npos; at = content.find(code, at + 1)) {
      int line = static_cast<int>(std::upper_bound(starts.begin(), starts.end(), at) - starts.begin());
      AcrResult r;
      r.file = f;
      r.start = std::max(1, line - o_.code_context);
      r.end = std::min(n, line + o_.code_context);
      std::tie(r.class_name, r.func_name) = class_and_func_at(f, line);
      r.code = numbered(f, r.start, r.end);
      out.push_back(std::move(r));
      if (out.size() >= 10000) return out;  // counts past this change nothing the model reads
    }
  }
  return out;
}

AcrAnswer AcrSearch::search_code(const std::string& code_str) const {
  auto rs = code_matches(files_, code_str);
  if (rs.empty()) return failed("Could not find code " + code_str + " in the codebase.");
  AcrAnswer a;
  a.ok = true;
  a.text = fmt::format("Found {} snippets containing `{}` in the codebase:\n\n", rs.size(), code_str);
  if (rs.size() > static_cast<size_t>(o_.result_limit))
    a.text += "They appeared in the following files:\n" + collapse_files(rs);
  else
    a.text += shown(rs, rs.size());
  if (rs.size() > static_cast<size_t>(o_.result_limit)) rs.resize(static_cast<size_t>(o_.result_limit));
  a.results = std::move(rs);
  return a;
}

AcrAnswer AcrSearch::search_code_in_file(const std::string& code_str, const std::string& file_name) const {
  std::string code = code_str;
  if (ends_with(code, ")")) code.pop_back();  // ACR drops one trailing ')' the model often adds
  auto files = files_matching(file_name);
  if (files.empty()) return failed("Could not find file " + file_name + " in the codebase.");
  auto rs = code_matches(files, code);
  if (rs.empty()) return failed("Could not find code " + code + " in file " + file_name + ".");
  AcrAnswer a;
  a.ok = true;
  a.text = fmt::format("Found {} snippets with code {} in file {}:\n\n", rs.size(), code, file_name);
  if (rs.size() > static_cast<size_t>(o_.result_limit)) {
    a.text += "They appeared in the following methods:\n";
    std::map<std::pair<std::string, std::string>, int> by;
    for (const auto& r : rs)
      ++by[{e_.view().files()[r.file].path, r.func_name.empty() ? "Not in a function" : r.func_name}];
    for (const auto& [k, n] : by)
      a.text += fmt::format("- <file>{}</file> <func>{}</func> ({} matches)\n", k.first, k.second, n);
    rs.resize(static_cast<size_t>(o_.result_limit));
  } else {
    a.text += shown(rs, rs.size());
  }
  a.results = std::move(rs);
  return a;
}

AcrAnswer AcrSearch::get_code_around_line(const std::string& file_name, int line_no, int window) const {
  auto files = files_matching(file_name);
  if (files.empty()) return failed("Could not find file " + file_name + " in the codebase.");
  AcrAnswer a;
  window = std::clamp(window, 0, 200);
  for (int f : files) {
    int n = e_.view().files()[f].line_count;
    if (line_no < 1 || line_no > n) continue;
    AcrResult r;
    r.file = f;
    r.start = std::max(1, line_no - window);
    r.end = std::min(n, line_no + window);
    std::tie(r.class_name, r.func_name) = class_and_func_at(f, line_no);
    r.code = numbered(f, r.start, r.end);
    a.results.push_back(std::move(r));
  }
  if (a.results.empty()) return failed(std::to_string(line_no) + " is invalid in file " + file_name + ".");
  a.ok = true;
  a.text = fmt::format("Found {} code snippets around line {}:\n\n", a.results.size(), line_no) +
           shown(a.results, a.results.size());
  return a;
}

Resolution AcrSearch::resolve_symbol_at(int file, int line, const std::string& symbol) const {
  const RepoView& v = e_.view();
  const SymbolGraph& g = e_.graph();
  // A reference on the line whose chain names the symbol: the chain up to it ("obj.foo" for foo in obj.foo()).
  for (const Reference& ref : v.references(file)) {
    if (ref.line != line) continue;
    size_t at = 0;
    for (;;) {
      size_t dot = ref.chain.find('.', at);
      std::string part = ref.chain.substr(at, dot == std::string::npos ? std::string::npos : dot - at);
      if (part == symbol) {
        Resolution r = g.resolve(file, ref.scope, ref.chain.substr(0, dot));
        if (r.kind != Resolution::Kind::none) return r;
        break;
      }
      if (dot == std::string::npos) break;
      at = dot + 1;
    }
  }
  // A definition of the symbol on that line (the name after def or class).
  const auto& fr = v.files()[file];
  for (int en = fr.first_entity; en < fr.first_entity + fr.n_entities; ++en) {
    const auto& c = v.entities()[en];
    if (c.name == symbol && c.start_line <= line && line <= c.header_end_line) {
      Resolution r;
      r.kind = Resolution::Kind::entity;
      r.entity = en;
      return r;
    }
  }
  // Otherwise what the name means at module level of the file (its definitions and imports).
  return g.module_member(file, symbol);
}

AcrAnswer AcrSearch::show_definition(const std::string& symbol, int line_number, const std::string& file_path) const {
  const RepoView& v = e_.view();
  std::string path(trim(file_path));
  while (starts_with(path, "./")) path = path.substr(2);
  auto f = v.file_by_path(path);
  if (!f) return failed("Could not find file " + file_path + " in the codebase (give its path from the root).");
  if (line_number < 1 || line_number > v.files()[*f].line_count)
    return failed(fmt::format("{} is invalid in file {} ({} lines).", line_number, path, v.files()[*f].line_count));
  const std::string& content = v.content(*f);
  std::string line(line_range(content, line_starts(content), line_number, line_number));
  if (symbol.empty() || line.find(symbol) == std::string::npos)
    return failed(fmt::format("The symbol `{}` does not appear in line {} of file {}: {}", symbol, line_number, path,
                              sanitize_utf8(line)));
  Resolution r = resolve_symbol_at(*f, line_number, symbol);
  AcrAnswer a;
  a.ok = true;
  if (r.kind == Resolution::Kind::builtin || r.kind == Resolution::Kind::external) {
    a.text = fmt::format("The symbol `{}` in line {} of file {} is defined outside the repository ({}).", symbol,
                         line_number, path, r.kind == Resolution::Kind::builtin ? "a Python builtin" : "an import");
    return a;
  }
  AcrResult res;
  if (r.kind == Resolution::Kind::entity) {
    const auto& en = v.entities()[r.entity];
    res.file = en.file;
    res.start = en.decorated_start_line;
    res.end = en.end_line;
    if (is_type(en.kind))
      res.class_name = en.name;
    else
      std::tie(res.class_name, res.func_name) = class_and_func_at(en.file, en.start_line);
  } else if (r.kind == Resolution::Kind::module) {
    res.file = r.file;
    res.start = 1;
    res.end = std::min(v.files()[r.file].line_count, 2 * o_.code_context + 1);  // the module's head
  } else {
    return failed(
        fmt::format("Could not find the definition of symbol `{}` in line {} of file {}.", symbol, line_number, path));
  }
  res.code = numbered(res.file, res.start, res.end);
  a.text = fmt::format("Found the definition of symbol `{}` in line {} of file {}:\n\n{}", symbol, line_number, path,
                       tagged(res));
  a.results.push_back(std::move(res));
  return a;
}

const std::vector<std::pair<std::string, std::vector<std::string>>>& AcrSearch::study_apis() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> a = {
      {"search_class", {"class_name"}},
      {"search_method_in_file", {"method_name", "file_path"}},
      {"search_method_in_class", {"method_name", "class_name"}},
      {"search_method", {"method_name"}},
      {"search_code", {"code_str"}},
      {"search_code_in_file", {"code_str", "file_path"}},
      {"show_definition", {"symbol", "line_number", "file_path"}},
  };
  return a;
}

const std::vector<std::pair<std::string, std::vector<std::string>>>& AcrSearch::apis() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> a = {
      {"search_class", {"class_name"}},
      {"search_class_in_file", {"class_name", "file_name"}},
      {"search_method", {"method_name"}},
      {"search_method_in_class", {"method_name", "class_name"}},
      {"search_method_in_file", {"method_name", "file_path"}},
      {"search_code", {"code_str"}},
      {"search_code_in_file", {"code_str", "file_path"}},
      {"get_code_around_line", {"file_path", "line_number", "window_size"}},
  };
  return a;
}

AcrAnswer AcrSearch::call(const std::string& api, const std::vector<std::string>& a) const {
  auto named = [&](const auto& p) { return p.first == api; };
  auto it = std::find_if(apis().begin(), apis().end(), named);
  if (it == apis().end()) it = std::find_if(study_apis().begin(), study_apis().end(), named);
  if (it == study_apis().end()) return failed("the API call '" + api + "' calls a non-existent function");
  if (a.size() != it->second.size())
    return failed(fmt::format("the API call '{}' has wrong number of arguments ({} given, {} expected)", api, a.size(),
                              it->second.size()));
  if (api == "search_class") return search_class(a[0]);
  if (api == "search_class_in_file") return search_class_in_file(a[0], a[1]);
  if (api == "search_method") return search_method(a[0]);
  if (api == "search_method_in_class") return search_method_in_class(a[0], a[1]);
  if (api == "search_method_in_file") return search_method_in_file(a[0], a[1]);
  if (api == "search_code") return search_code(a[0]);
  if (api == "search_code_in_file") return search_code_in_file(a[0], a[1]);
  if (api == "show_definition") {
    try {
      return show_definition(a[0], std::stoi(a[1]), a[2]);
    } catch (const std::exception&) {
      return failed("show_definition needs a whole number for line_number, got '" + a[1] + "'");
    }
  }
  int line = 0, window = 0;
  try {
    line = std::stoi(a[1]);
    window = std::stoi(a[2]);
  } catch (const std::exception&) {
    return failed("get_code_around_line needs whole numbers for line_number and window_size, got '" + a[1] + "', '" +
                  a[2] + "'");
  }
  return get_code_around_line(a[0], line, window);
}

}  // namespace repoctx
