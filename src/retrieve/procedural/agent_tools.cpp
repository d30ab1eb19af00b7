#include "retrieve/procedural/agent_tools.h"

#include <fmt/core.h>
#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <tuple>

#include "util/error.h"
#include "util/text.h"

namespace repoctx {

namespace {

constexpr const char* kToolNames = "ls, grep, read_func, read_lines, search_func, propose_func";

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Suggestions rank candidates by edit distance; beyond this many edits a name is not "close" (and a
// 16,000-character name costs O(1) per candidate instead of O(16,000 x length)).
constexpr size_t kMaxSuggestionEdits = 64;

// An argument quoted back in a message: whole when short, else its start and its length, so that no
// error repeats a huge input (outputs are bounded by ToolLimits::max_output_chars).
std::string echo(std::string_view s) {
  constexpr size_t kShown = 120;
  if (s.size() <= kShown) return sanitize_utf8(s);
  size_t cut = kShown;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return sanitize_utf8(s.substr(0, cut)) + fmt::format("… ({} characters)", s.size());
}

std::string basename(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

std::string stem(const std::string& name) {
  size_t dot = name.rfind('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

// A shown line: cut to `max` bytes on a UTF-8 boundary, invalid bytes replaced (the agent's messages are
// JSON), trailing whitespace and '\r' dropped.
std::string show_line(std::string_view line, size_t max) {
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
  if (line.size() <= max) return sanitize_utf8(line);
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  return sanitize_utf8(line.substr(0, cut)) + fmt::format(" … [{} more characters]", line.size() - cut);
}

// Output bounded by characters, on line boundaries; room is kept for the closing note, so that the whole
// output stays under the limit.
class Bounded {
 public:
  explicit Bounded(size_t limit) : limit_(limit), budget_(limit > 800 ? limit - 400 : limit / 2) {}
  bool add(const std::string& line) {
    if (full_ || text_.size() + line.size() + 1 > budget_) {
      full_ = true;
      return false;
    }
    text_ += line;
    text_ += '\n';
    return true;
  }
  bool full() const { return full_; }
  std::string finish(const std::string& note) {
    std::string out = std::move(text_);
    if (!note.empty()) out += note + "\n";
    if (out.size() > limit_) {  // only a pathological note (a huge path) gets here
      size_t cut = limit_;
      while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
      out.resize(cut);
    }
    return out;
  }

 private:
  size_t limit_, budget_;
  bool full_ = false;
  std::string text_;
};

// grep matches every line alone (the tools' contract, and what the Python reference does): in the
// pattern, \A and \z mean the start and end of a line like ^ and $, and a flag group that turns multi-line
// mode off ((?-m)) is kept without that flag. The rewrite walks the pattern once, leaving escapes, character
// classes and \Q...\E literals as they are; whatever it leaves invalid, RE2 reports.
std::string per_line_pattern(std::string_view p) {
  std::string out;
  out.reserve(p.size());
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char n = p[i + 1];
      if (n == 'Q') {  // \Q...\E: literal text up to \E (or the end)
        size_t e = p.find("\\E", i + 2);
        size_t stop = e == std::string_view::npos ? p.size() : e + 2;
        out.append(p.substr(i, stop - i));
        i = stop - 1;
      } else if (!in_class && (n == 'A' || n == 'z')) {
        out.push_back(n == 'A' ? '^' : '$');
        ++i;
      } else {
        out.push_back(c);
        out.push_back(n);
        ++i;
      }
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      out.push_back(c);
      continue;
    }
    if (c == '[') {
      in_class = true;
      out.push_back(c);
      if (i + 1 < p.size() && p[i + 1] == '^') out.push_back(p[++i]);
      if (i + 1 < p.size() && p[i + 1] == ']') out.push_back(p[++i]);  // a leading ']' is literal
      continue;
    }
    if (c == '(' && i + 1 < p.size() && p[i + 1] == '?') {
      size_t j = i + 2;
      while (j < p.size() && (std::isalpha(static_cast<unsigned char>(p[j])) || p[j] == '-')) ++j;
      if (j < p.size() && (p[j] == ')' || p[j] == ':') && j > i + 2) {
        std::string flags(p.substr(i + 2, j - i - 2));
        size_t minus = flags.find('-');
        if (minus != std::string::npos) {
          std::string off = flags.substr(minus + 1);
          off.erase(std::remove(off.begin(), off.end(), 'm'), off.end());
          flags = flags.substr(0, minus) + (off.empty() ? "" : "-" + off);
        }
        if (!flags.empty() || p[j] == ':') out += "(?" + flags + p[j];
        i = j;
        continue;
      }
    }
    out.push_back(c);
  }
  return out;
}

ToolResult fail(std::string error) {
  ToolResult r;
  r.ok = false;
  r.error = std::move(error);
  return r;
}

std::string files_count(int n) {
  return n == 1 ? "1 file" : fmt::format("{} files", n);
}
std::string lines_count(int n) {
  return n == 1 ? "1 line" : fmt::format("{} lines", n);
}

bool is_function_or_class(EntityKind k) {
  return is_callable(k) || is_type(k);
}

}  // namespace

RepoTools::RepoTools(const Engine& e, const TargetContext* ctx, ToolLimits l) : e_(e), ctx_(ctx), lim_(l) {
  dirs_[""];
  const auto& files = e_.view().files();
  std::vector<int> order(files.size());
  for (size_t i = 0; i < files.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return files[a].path < files[b].path; });
  for (int f : order) {
    const std::string& p = files[f].path;
    std::string dir;
    ++dirs_[""].total_files;
    for (size_t s = p.find('/'); s != std::string::npos; s = p.find('/', s + 1)) {
      std::string child = p.substr(0, s);
      dirs_[dir].subdirs.insert(child.substr(dir.empty() ? 0 : dir.size() + 1));
      dir = child;
      ++dirs_[dir].total_files;
    }
    dirs_[dir].files.push_back(f);
  }
}

const std::string& RepoTools::text_of(int file) const {
  if (ctx_ && file == ctx_->target.file) return ctx_->masked_content;
  return e_.view().content(file);
}

bool RepoTools::exists(int entity) const {
  return !ctx_ || entity == ctx_->target.entity || !ctx_->is_hidden_entity(entity);
}

std::string RepoTools::function_name(int entity) const {
  return e_.target_name(entity);
}

std::string RepoTools::close_paths(const std::string& path) const {
  std::string base = basename(path);
  std::vector<std::tuple<int, size_t, std::string>> close;
  auto consider = [&](const std::string& cand, const std::string& shown) {
    if (cand.empty()) return;
    if (ends_with(cand, "/" + path) || ends_with(path, "/" + cand))
      close.emplace_back(0, cand.size(), shown);
    else if (basename(cand) == base || stem(basename(cand)) == base)
      close.emplace_back(1, cand.size(), shown);
    else {
      size_t limit = std::max<size_t>(2, base.size() / 4);
      size_t d = edit_distance(lower(basename(cand)), lower(base), limit);
      if (d <= limit) close.emplace_back(2, d, shown);
    }
  };
  for (const auto& f : e_.view().files()) consider(f.path, f.path);
  for (const auto& [d, info] : dirs_) consider(d, d + "/");
  std::sort(close.begin(), close.end());
  std::string hint;
  for (size_t i = 0; i < std::min<size_t>(3, close.size()); ++i) hint += (i ? ", " : "") + std::get<2>(close[i]);
  return hint;
}

std::optional<RepoTools::Located> RepoTools::locate(const std::string& raw, std::string* error) const {
  std::string p(trim(raw));
  if (p.find('\0') != std::string::npos) {
    *error = "the path contains a NUL byte; give a path relative to the repository root";
    return std::nullopt;
  }
  const std::string& root = e_.view().root();
  if (starts_with(p, "/")) {
    // An absolute path is accepted only when it names something under the repository root.
    if (!root.empty() && root != "/" && (p == root || starts_with(p, root + "/"))) {
      p = p.substr(root.size());
    } else {
      *error = "path '" + echo(p) +
               "' is outside the repository: the tools only see the repository, and paths are "
               "relative to its root (\"\" or \".\" for the root, e.g. '" +
               (e_.view().files().empty() ? std::string("pkg/module.py") : e_.view().files().front().path) + "')";
      return std::nullopt;
    }
  } else if (starts_with(p, "~")) {
    *error = "path '" + echo(p) +
             "' is outside the repository ('~' is not expanded): paths are relative to the "
             "repository root";
    return std::nullopt;
  }
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string::npos) j = p.size();
    std::string part = p.substr(i, j - i);
    if (part == "..") {
      if (parts.empty()) {
        *error = "path '" + echo(trim(raw)) +
                 "' leaves the repository root: the tools only see the "
                 "repository; give a path relative to its root (\"\" for the root)";
        return std::nullopt;
      }
      parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(std::move(part));
    }
    i = j + 1;
  }
  Located loc;
  loc.path = join(parts, "/");
  if (auto f = e_.view().file_by_path(loc.path)) {
    loc.file = *f;
    return loc;
  }
  if (dirs_.count(loc.path)) {
    loc.is_dir = true;
    return loc;
  }
  std::string hint = close_paths(loc.path);
  *error = "no indexed file or directory '" + echo(loc.path) + "' in the repository" +
           (hint.empty() ? std::string(" (paths are relative to the repository root; only indexed source files exist "
                                       "for the tools: ls \"\" lists the root)")
                         : " (did you mean " + hint + "?)");
  return std::nullopt;
}

ToolResult RepoTools::ls(const std::string& path) {
  std::string err;
  auto loc = locate(path, &err);
  if (!loc) return fail(err);
  ToolResult r;
  r.ok = true;
  const auto& files = e_.view().files();
  if (!loc->is_dir) {
    r.output = fmt::format("{} ({})\n", loc->path, lines_count(files[loc->file].line_count));
    r.files.push_back(loc->path);
    return r;
  }
  const Dir& d = dirs_.at(loc->path);
  std::string prefix = loc->path.empty() ? "" : loc->path + "/";
  Bounded out(lim_.max_output_chars);
  int shown = 0, total = static_cast<int>(d.subdirs.size() + d.files.size());
  for (const auto& s : d.subdirs) {
    if (shown >= lim_.max_entries ||
        !out.add(fmt::format("{}/ ({})", s, files_count(dirs_.at(prefix + s).total_files))))
      break;
    ++shown;
  }
  if (shown == static_cast<int>(d.subdirs.size()))
    for (int f : d.files) {
      if (shown >= lim_.max_entries ||
          !out.add(fmt::format("{} ({})", basename(files[f].path), lines_count(files[f].line_count))))
        break;
      ++shown;
    }
  std::string note;
  if (total == 0)
    note = "(empty: the index holds no files)";
  else if (shown < total)
    note = fmt::format(
        "[{} more entries not shown (listing limit): ls a sub-directory, or search with grep / search_func]",
        total - shown);
  r.output = out.finish(note);
  r.dirs.push_back(loc->path.empty() ? "." : loc->path);
  return r;
}

namespace {

// The files grep searches: the one at `path`, or those under the directory at `path` ("" = root), by path.
std::vector<int> grep_scope(const RepoView& v, bool is_dir, int file, const std::string& path) {
  std::vector<int> scope;
  if (!is_dir)
    scope.push_back(file);
  else {
    std::string prefix = path.empty() ? "" : path + "/";
    for (size_t f = 0; f < v.files().size(); ++f)
      if (starts_with(v.files()[f].path, prefix)) scope.push_back(static_cast<int>(f));
    std::sort(scope.begin(), scope.end(), [&](int a, int b) { return v.files()[a].path < v.files()[b].path; });
  }
  return scope;
}

struct GrepTally {
  int shown = 0, omitted = 0, omitted_files = 0;
};

// The lines of file `fp` (text `text`) that `re` matches, as "path:line: text" into `out` while the match
// and output limits allow, the others counted as omitted; a file with a line shown joins r.files.
void grep_file(const RE2& re, std::string_view text, const std::string& fp, const ToolLimits& lim, Bounded& out,
               GrepTally& t, ToolResult& r) {
  bool file_shown = false, file_omitted = false;
  int line_no = 1;
  size_t counted = 0;  // line_no is the line number of offset `counted`
  for (size_t i = 0; i <= text.size();) {
    re2::StringPiece m;
    if (!re.Match(text, i, text.size(), RE2::UNANCHORED, &m, 1)) break;
    size_t pos = static_cast<size_t>(m.data() - text.data());
    size_t ls = pos == 0 ? std::string_view::npos : text.rfind('\n', pos - 1);
    ls = ls == std::string_view::npos ? 0 : ls + 1;
    size_t le = text.find('\n', pos);
    if (le == std::string_view::npos) le = text.size();
    line_no += static_cast<int>(
        std::count(text.begin() + static_cast<long>(counted), text.begin() + static_cast<long>(ls), '\n'));
    counted = ls;
    i = le + 1;
    if (ls == text.size()) break;  // the empty "line" after a final newline is not a line
    std::string_view line = text.substr(ls, le - ls);
    if (t.shown < lim.max_matches &&
        out.add(fmt::format("{}:{}: {}", fp, line_no, show_line(line, lim.max_line_chars)))) {
      ++t.shown;
      file_shown = true;
    } else {
      ++t.omitted;
      file_omitted = true;
    }
  }
  if (file_shown) r.files.push_back(fp);
  if (file_omitted && !file_shown) ++t.omitted_files;
}

}  // namespace

ToolResult RepoTools::grep(const std::string& pattern, const std::string& path, bool fixed) {
  if (pattern.empty())
    return fail("grep needs a non-empty \"pattern\" (a regular expression, or text with \"fixed\": true)");
  if (pattern.size() > lim_.max_pattern_chars)
    return fail(fmt::format("the pattern is {} characters long; the limit is {}: search for a shorter distinctive part",
                            pattern.size(), lim_.max_pattern_chars));
  RE2::Options o;
  o.set_log_errors(false);
  o.set_max_mem(lim_.regex_max_mem);
  o.set_literal(fixed);
  // Lines are matched alone: a match never contains a newline, so one search over the whole file (RE2,
  // linear) finds exactly the lines a per-line search would, in one pass.
  o.set_never_nl(true);
  RE2 re(fixed ? pattern : "(?m)" + per_line_pattern(pattern), o);
  if (re.error_code() == RE2::ErrorPatternTooLarge)
    return fail("the regular expression '" + echo(pattern) + "' is too large to run (" + echo(re.error()) +
                "): use fewer or smaller repetitions, or a fixed string");
  if (!re.ok())
    return fail("invalid regular expression '" + echo(pattern) + "': " + echo(re.error()) +
                " (grep takes RE2 syntax: no backreferences or lookaround; pass \"fixed\": true to search the text "
                "literally)");
  std::string err;
  auto loc = locate(path, &err);
  if (!loc) return fail(err);

  const std::vector<int> scope = grep_scope(e_.view(), loc->is_dir, loc->file, loc->path);
  ToolResult r;
  r.ok = true;
  Bounded out(lim_.max_output_chars);
  GrepTally t;
  for (int f : scope) grep_file(re, text_of(f), e_.view().files()[f].path, lim_, out, t, r);
  std::string where = loc->path.empty() ? "the repository" : "'" + loc->path + "'";
  std::string note;
  if (t.shown == 0 && t.omitted == 0)
    note = fmt::format("no line of {} matches {} '{}'", where, fixed ? "the text" : "the pattern", echo(pattern));
  else if (t.omitted > 0)
    note = fmt::format("[{} more matching lines not shown{}: narrow the pattern or the path]", t.omitted,
                       t.omitted_files ? fmt::format(" ({} more files)", t.omitted_files) : std::string());
  r.output = out.finish(note);
  if (loc->is_dir) r.dirs.push_back(loc->path.empty() ? "." : loc->path);
  return r;
}

std::string RepoTools::numbered(int file, int first, int last, int* shown_last, size_t budget) const {
  auto lines = split_lines(text_of(file));
  if (last > static_cast<int>(lines.size())) last = static_cast<int>(lines.size());
  Bounded out(budget);
  *shown_last = first - 1;
  for (int n = first; n <= last && n - first < lim_.max_lines; ++n) {
    if (!out.add(fmt::format("{:>5}| {}", n, show_line(lines[n - 1], lim_.max_line_chars)))) break;
    *shown_last = n;
  }
  return out.finish("");
}

ToolResult RepoTools::read_lines(const std::string& path, int start, int end) {
  std::string err;
  auto loc = locate(path, &err);
  if (!loc) return fail(err);
  if (loc->is_dir)
    return fail("'" + (loc->path.empty() ? std::string(".") : loc->path) +
                "' is a directory: read_lines reads a file (ls lists the directory)");
  if (start < 0 || end < 0) return fail(fmt::format("line numbers are 1-based; got start {} and end {}", start, end));
  int n = static_cast<int>(split_lines(text_of(loc->file)).size());
  if (start == 0) start = 1;
  if (end == 0) end = start + lim_.max_lines - 1;
  if (start > end) return fail(fmt::format("start ({}) is after end ({}): give start <= end", start, end));
  if (start > n) return fail(fmt::format("{} has {} lines; start ({}) must be at most {}", loc->path, n, start, n));
  end = std::min(end, n);
  int last = 0;
  std::string header = fmt::format("{} (lines {}-{} of {})", loc->path, start, end, n);
  std::string body =
      numbered(loc->file, start, end, &last, lim_.max_output_chars - std::min<size_t>(lim_.max_output_chars / 2, 400));
  ToolResult r;
  r.ok = true;
  r.output = header + "\n" + body;
  if (last < end)
    r.output += fmt::format("[lines {}-{} not shown (limit per call): read_lines {} {} {}]\n", last + 1, end, loc->path,
                            last + 1, end);
  r.files.push_back(loc->path);
  return r;
}

std::string RepoTools::close_names(const std::string& name, bool callables_only) const {
  std::string q = lower(name);
  size_t sep = q.find("::");
  if (sep != std::string::npos) q = q.substr(sep + 2);
  const auto& ents = e_.view().entities();
  std::vector<std::pair<size_t, int>> close;
  for (size_t i = 0; i < ents.size(); ++i) {
    const EntityRec& en = ents[i];
    if (!(callables_only ? is_callable(en.kind) : is_function_or_class(en.kind)) || !exists(static_cast<int>(i)))
      continue;
    size_t limit = std::max<size_t>(2, q.size() / 3);
    size_t d = std::min(edit_distance(q, lower(en.name), limit), edit_distance(q, lower(en.qualname), limit));
    if (d <= limit) close.emplace_back(d, static_cast<int>(i));
  }
  std::sort(close.begin(), close.end(), [&](const auto& a, const auto& b) {
    return std::tie(a.first, ents[a.second].qualname, a.second) < std::tie(b.first, ents[b.second].qualname, b.second);
  });
  std::string hint;
  for (size_t i = 0; i < std::min<size_t>(3, close.size()); ++i)
    hint += (i ? ", " : "") + function_name(close[i].second);
  return hint;
}

bool RepoTools::lookup_accepts(int entity, bool callables_only) const {
  const EntityKind k = e_.view().entities()[entity].kind;
  return (callables_only ? is_callable(k) : is_function_or_class(k)) && exists(entity);
}

std::vector<int> RepoTools::lookup_in_file(const std::string& path, const std::string& qual, bool callables_only,
                                           std::string* error) const {
  const char* what = callables_only ? "function or method" : "function or class";
  const auto& v = e_.view();
  const auto& ents = v.entities();
  auto loc = locate(path, error);
  if (!loc) return {};
  if (loc->is_dir) {
    *error = "'" + loc->path + "' is a directory; write the function as \"path/to/file.py::Qualified.name\"";
    return {};
  }
  std::vector<int> found;
  for (int i : v.find_entities(loc->file, qual))
    if (lookup_accepts(i, callables_only)) found.push_back(i);
  if (found.empty()) {
    // Close names within that file first: the agent usually has the file right.
    std::vector<std::pair<size_t, std::string>> close;
    const FileRec& fr = v.files()[loc->file];
    for (int i = fr.first_entity; i < fr.first_entity + fr.n_entities; ++i)
      if (lookup_accepts(i, callables_only))
        close.emplace_back(edit_distance(lower(ents[i].qualname), lower(qual), kMaxSuggestionEdits), ents[i].qualname);
    std::sort(close.begin(), close.end());
    std::string hint;
    for (size_t i = 0; i < std::min<size_t>(3, close.size()); ++i) hint += (i ? ", " : "") + close[i].second;
    *error = fmt::format("no {} '{}' in {}{}", what, echo(qual), loc->path,
                         hint.empty() ? " (search_func finds functions by name)" : " (closest: " + hint + ")");
  }
  return found;
}

namespace {

// Why `found` (sorted, distinct entities that `name` stands for) is not one answer, or "" when it is:
// several definitions of one qualname in one file (property setters, if/else variants) are one answer;
// different files or qualnames are an ambiguity the agent resolves.
std::string ambiguity(const RepoTools& tools, const std::vector<int>& found, const std::string& name,
                      bool callables_only) {
  std::vector<std::string> names;
  for (int i : found) names.push_back(tools.function_name(i));
  std::vector<std::string> distinct = names;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (distinct.size() <= 1) return "";
  std::string list;
  for (size_t i = 0; i < std::min<size_t>(20, distinct.size()); ++i) list += (i ? ", " : "") + distinct[i];
  if (distinct.size() > 20) list += fmt::format(" and {} more", distinct.size() - 20);
  return fmt::format("'{}' names {} {}s: {}; pass one of them as path::Qualified.name", echo(name), distinct.size(),
                     callables_only ? "function" : "definition", list);
}

}  // namespace

std::vector<int> RepoTools::lookup(const std::string& raw, bool callables_only, std::string* error) const {
  std::string name(trim(raw));
  if (ends_with(name, "()")) name.resize(name.size() - 2);
  const char* what = callables_only ? "function or method" : "function or class";
  if (name.size() > lim_.max_name_chars) {
    *error = fmt::format("the name is {} characters long; the limit is {}: give \"path/to/file.py::Qualified.name\"",
                         name.size(), lim_.max_name_chars);
    return {};
  }
  if (name.empty()) {
    *error = std::string("give the ") + what + " as \"path/to/file.py::Qualified.name\" or a unique name";
    return {};
  }
  const auto& v = e_.view();
  const auto& ents = v.entities();
  size_t sep = name.find("::");
  if (sep != std::string::npos) return lookup_in_file(name.substr(0, sep), name.substr(sep + 2), callables_only, error);

  // A bare name: a qualname or a short name (both: "make_response" is helpers.make_response and
  // Flask.make_response alike, an ambiguity to list), else a dotted module path ("pkg.mod.C.f").
  std::vector<int> found;
  for (size_t i = 0; i < ents.size(); ++i)
    if (ents[i].qualname == name && lookup_accepts(static_cast<int>(i), callables_only))
      found.push_back(static_cast<int>(i));
  for (int i : v.entities_named(name))
    if (lookup_accepts(i, callables_only)) found.push_back(i);
  if (found.empty())
    for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) {
      auto f = v.file_by_module(name.substr(0, dot));
      if (!f) continue;
      for (int i : v.find_entities(*f, name.substr(dot + 1)))
        if (lookup_accepts(i, callables_only)) found.push_back(i);
      if (!found.empty()) break;
    }
  if (found.empty()) {
    std::string hint = close_names(name, callables_only);
    *error =
        fmt::format("no {} named '{}' in the repository{}", what, echo(name),
                    hint.empty() ? " (search_func finds functions by part of their name)" : " (closest: " + hint + ")");
    return {};
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  if (std::string why = ambiguity(*this, found, name, callables_only); !why.empty()) {
    *error = why;
    return {};
  }
  return found;
}

ToolResult RepoTools::read_func(const std::string& name) {
  std::string err;
  auto found = lookup(name, false, &err);
  if (found.empty()) return fail(err);
  const auto& ents = e_.view().entities();
  ToolResult r;
  r.ok = true;
  size_t budget = lim_.max_output_chars - std::min<size_t>(lim_.max_output_chars / 2, 400);
  std::string notes;
  for (int i : found) {
    const EntityRec& en = ents[i];
    const std::string& path = e_.view().files()[en.file].path;
    int first = en.decorated_start_line > 0 ? en.decorated_start_line : en.start_line;
    std::string header = fmt::format("{} (lines {}-{})", function_name(i), first, en.end_line);
    if (r.output.size() + header.size() + 1 >= budget) {
      notes += fmt::format("[{} not shown (output limit): read_lines {} {} {}]\n", header, path, first, en.end_line);
      continue;
    }
    // The target itself: its signature and docstring, and where its hidden body is, rather than a screen
    // of masked lines.
    int end = en.end_line;
    std::string hidden_note;
    int visible_end = std::max(en.header_end_line, en.doc_end_line);
    if (ctx_ && i == ctx_->target.entity && en.body_start_line > visible_end && visible_end >= first) {
      end = visible_end;
      hidden_note =
          fmt::format("[lines {}-{}: the body of the function being implemented, hidden]\n", end + 1, en.end_line);
    }
    int last = 0;
    std::string body = numbered(en.file, first, end, &last, budget - r.output.size() - header.size() - 1);
    r.output += header + "\n" + body;
    if (last == end) r.output += hidden_note;
    if (last < end)
      notes += fmt::format("[lines {}-{} of {} not shown (limit per call): read_lines {} {} {}]\n", last + 1, end,
                           function_name(i), path, last + 1, end);
    r.functions.push_back(i);
    if (std::find(r.files.begin(), r.files.end(), path) == r.files.end()) r.files.push_back(path);
  }
  r.output += notes;
  return r;
}

ToolResult RepoTools::search_func(const std::string& raw) {
  std::string query(trim(raw));
  if (ends_with(query, "()")) query.resize(query.size() - 2);
  for (const char* kw : {"def ", "class ", "async def "})
    if (starts_with(query, kw)) query = std::string(trim(query.substr(std::string(kw).size())));
  size_t sep = query.find("::");
  if (sep != std::string::npos) query = query.substr(sep + 2);
  if (query.empty()) return fail("search_func needs a name or part of one (e.g. \"parse\" or \"Config.load\")");
  if (query.size() > lim_.max_name_chars)
    return fail(fmt::format("the name is {} characters long; the limit is {}: search for a part of it", query.size(),
                            lim_.max_name_chars));
  std::string q = lower(query);
  std::vector<std::string> words;
  for (size_t i = 0; i < q.size();) {
    size_t j = q.find_first_of(" \t\n", i);
    if (j == std::string::npos) j = q.size();
    if (j > i) words.push_back(q.substr(i, j - i));
    i = j + 1;
  }
  const auto& v = e_.view();
  const auto& ents = v.entities();
  struct Cand {
    int tier;
    int entity;
  };
  std::vector<Cand> cands;
  for (size_t i = 0; i < ents.size(); ++i) {
    const EntityRec& en = ents[i];
    if (!is_function_or_class(en.kind) || !exists(static_cast<int>(i))) continue;
    std::string ql = lower(en.qualname);
    bool all = true;
    for (const auto& w : words) all = all && ql.find(w) != std::string::npos;
    if (!all) continue;
    std::string nl = lower(en.name);
    int tier = nl == q || ql == q ? 0 : starts_with(nl, q) ? 1 : nl.find(q) != std::string::npos ? 2 : 3;
    cands.push_back({tier, static_cast<int>(i)});
  }
  std::sort(cands.begin(), cands.end(), [&](const Cand& a, const Cand& b) {
    const EntityRec &x = ents[a.entity], &y = ents[b.entity];
    return std::tie(a.tier, v.files()[x.file].path, x.start_line) <
           std::tie(b.tier, v.files()[y.file].path, y.start_line);
  });
  ToolResult r;
  r.ok = true;
  if (cands.empty()) {
    std::string hint = close_names(query, false);
    r.output = fmt::format("no function or class name contains '{}'{}\n", echo(query),
                           hint.empty() ? " (grep searches the code itself)" : " (closest names: " + hint + ")");
    return r;
  }
  Bounded out(lim_.max_output_chars);
  int shown = 0;
  for (const auto& c : cands) {
    const EntityRec& en = ents[c.entity];
    std::string sig = en.signature.empty() ? kind_name(en.kind) : en.signature;
    if (shown >= lim_.max_entries || !out.add(show_line(function_name(c.entity) + "  " + sig, lim_.max_line_chars)))
      break;
    ++shown;
    r.functions.push_back(c.entity);
  }
  int left = static_cast<int>(cands.size()) - shown;
  r.output = out.finish(left > 0 ? fmt::format("[{} more matches not shown: use a longer or more specific name]", left)
                                 : std::string());
  return r;
}

std::optional<int> RepoTools::resolve_function(const std::string& name, std::string* error) const {
  // Classes are looked up too, so that proposing one gets a precise answer rather than "no such function".
  std::string err;
  auto found = lookup(name, false, &err);
  if (found.empty()) {
    if (error) *error = err;
    return std::nullopt;
  }
  const auto& ents = e_.view().entities();
  // Several definitions of one qualname in one file: the last is the live one (as Engine::resolve_target).
  int e = found.back();
  if (is_type(ents[e].kind)) {
    if (error)
      *error = "'" + function_name(e) + "' is a class; propose one of its methods (search_func \"" + ents[e].qualname +
               ".\" lists them)";
    return std::nullopt;
  }
  if (ctx_ && e == ctx_->target.entity) {
    if (error)
      *error = "'" + function_name(e) +
               "' is the target function itself; propose another function whose steps resemble the target step";
    return std::nullopt;
  }
  return e;
}

ToolResult RepoTools::call(const ToolCall& c) {
  ToolResult r = dispatch(c);
  if (!r.ok && r.error.size() > lim_.max_output_chars) r.error = echo(r.error.substr(0, lim_.max_output_chars - 100));
  return r;
}

ToolResult RepoTools::dispatch(const ToolCall& c) {
  std::string tool = lower(trim(c.tool));
  if (tool == "ls") return ls(c.path);
  if (tool == "grep" || tool == "execute_bash") return grep(c.pattern, c.path, c.fixed);
  if (tool == "read_func") return read_func(c.name);
  if (tool == "read_lines") return read_lines(c.path, c.start, c.end);
  if (tool == "search_func") return search_func(c.name.empty() ? c.pattern : c.name);
  if (tool == "propose_func") {
    std::string err;
    auto e = resolve_function(c.name, &err);
    if (!e) return fail(err);
    ToolResult r;
    r.ok = true;
    r.output = function_name(*e);
    r.functions.push_back(*e);
    r.files.push_back(e_.view().files()[e_.view().entities()[*e].file].path);
    return r;
  }
  return fail("unknown tool '" + echo(c.tool) + "'; the tools are " + kToolNames);
}

std::string RepoTools::structure(int depth, size_t max_chars) const {
  Bounded out(max_chars);
  int omitted = 0;
  std::function<void(const std::string&, int)> walk = [&](const std::string& dir, int level) {
    const Dir& d = dirs_.at(dir);
    std::string prefix = dir.empty() ? "" : dir + "/";
    for (const auto& s : d.subdirs) {
      const std::string child = prefix + s;
      if (!out.add(fmt::format("{}{}/ ({})", std::string(2 * level, ' '), child,
                               files_count(dirs_.at(child).total_files)))) {
        ++omitted;
        continue;
      }
      if (level + 1 < depth) walk(child, level + 1);
    }
    if (dir.empty())
      for (int f : d.files)
        if (!out.add(e_.view().files()[f].path)) ++omitted;
  };
  walk("", 0);
  return out.finish(omitted ? fmt::format("[{} more entries not shown: ls lists any directory]", omitted)
                            : std::string());
}

namespace {

std::string tool_argument_string(const nlohmann::json& args, const char* key, const char* tool) {
  auto it = args.find(key);
  if (it == args.end() || it->is_null()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) return it->dump();
  throw Error(ExitCode::bad_input, fmt::format("{}: \"{}\" must be a string", tool, key));
}

int json_int(const nlohmann::json& args, const char* key, const char* tool) {
  auto it = args.find(key);
  if (it == args.end() || it->is_null()) return 0;
  if (it->is_number_integer()) {
    auto v = it->get<int64_t>();
    if (v < -1000000000 || v > 1000000000)
      throw Error(ExitCode::bad_input, fmt::format("{}: \"{}\" is out of range", tool, key));
    return static_cast<int>(v);
  }
  if (it->is_number_float()) {
    // A model may write 12.0; anything outside int's range (or NaN) is a bad argument, not a cast.
    double d = it->get<double>();
    if (!(d >= -1e9 && d <= 1e9))
      throw Error(ExitCode::bad_input, fmt::format("{}: \"{}\" is out of range", tool, key));
    return static_cast<int>(d);
  }
  if (it->is_string()) {
    std::string s(trim(it->get<std::string>()));
    if (!s.empty() && s.size() <= 9 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
      return std::stoi(s);
  }
  throw Error(ExitCode::bad_input, fmt::format("{}: \"{}\" must be a line number", tool, key));
}

bool json_bool(const nlohmann::json& args, const char* key, const char* tool) {
  auto it = args.find(key);
  if (it == args.end() || it->is_null()) return false;
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_string()) {
    std::string s = lower(trim(it->get<std::string>()));
    if (s == "true") return true;
    if (s == "false" || s.empty()) return false;
  }
  throw Error(ExitCode::bad_input, fmt::format("{}: \"{}\" must be true or false", tool, key));
}

}  // namespace

ToolCall tool_call_from_json(const nlohmann::json& j) {
  if (!j.is_object())
    throw Error(ExitCode::bad_input, "a tool call must be a JSON object with \"tool\" and its arguments");
  auto t = j.find("tool");
  if (t == j.end() || !t->is_string() || t->get<std::string>().empty())
    throw Error(ExitCode::bad_input, std::string("the tool call has no \"tool\"; name one of ") + kToolNames);
  ToolCall c;
  c.tool = t->get<std::string>();
  const nlohmann::json* args = &j;
  for (const char* k : {"args", "arguments"})
    if (j.contains(k) && j[k].is_object()) args = &j[k];
  const char* tool = c.tool.c_str();
  c.path = tool_argument_string(*args, "path", tool);
  c.pattern = tool_argument_string(*args, "pattern", tool);
  c.name = tool_argument_string(*args, "name", tool);
  if (c.name.empty()) c.name = tool_argument_string(*args, "query", tool);
  c.start = json_int(*args, "start", tool);
  c.end = json_int(*args, "end", tool);
  c.fixed = json_bool(*args, "fixed", tool);
  return c;
}

}  // namespace repoctx
