#include "eval/completion_tasks.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "repo/model.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;
namespace fs = std::filesystem;

// ------------------------------------------------------------------------------------------ loading
namespace {

struct TaskError {
  std::string what;
};

const json& field(const json& j, const char* k) {
  if (!j.is_object() || !j.contains(k) || j[k].is_null()) throw TaskError{std::string("missing field '") + k + "'"};
  return j[k];
}
std::string str(const json& j, const char* k) {
  const json& v = field(j, k);
  if (!v.is_string()) throw TaskError{std::string("field '") + k + "' is not a string"};
  return v.get<std::string>();
}
int integer(const json& j, const char* k) {
  const json& v = field(j, k);
  if (!v.is_number_integer()) throw TaskError{std::string("field '") + k + "' is not an integer"};
  return v.get<int>();
}
std::string opt_str(const json& j, const char* k) {
  return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
}

std::string repo_path(const std::string& name, const CompletionTaskLoadOptions& o) {
  if (auto it = o.repos.find(name); it != o.repos.end()) return it->second;
  if (!o.repos_dir.empty()) return o.repos_dir + "/" + name;
  throw TaskError{"repository '" + name + "' has no local path: pass --repo " + name + "=PATH or --repos-dir DIR"};
}

// CrossCodeEval's sets are named by language: python, java, typescript, csharp (repoctx's names too).
std::string language_of(const std::string& file) {
  Language l = language_from_path(file);
  return l == Language::unknown ? "unknown" : language_name(l);
}

// CrossCodeEval: the prompt is the file's text before the cursor from line context_start_lineno (0-based);
// the cursor ends it, often inside a line.
CompletionTask from_cceval(const json& j, const CompletionTaskLoadOptions& o) {
  const json& m = field(j, "metadata");
  CompletionTask t;
  t.id = str(m, "task_id");
  t.file = str(m, "file");
  t.repo = repo_path(str(m, "repository"), o);
  t.prompt = str(j, "prompt");
  t.ground_truth = str(j, "groundtruth");
  t.right_context = opt_str(j, "right_context");
  int start = m.contains("context_start_lineno") ? integer(m, "context_start_lineno") : 0;
  size_t nl = std::count(t.prompt.begin(), t.prompt.end(), '\n');
  t.line = start + static_cast<int>(nl) + 1;
  size_t last = t.prompt.rfind('\n');
  t.column = static_cast<int>(last == std::string::npos ? t.prompt.size() : t.prompt.size() - last - 1);
  t.kind = "line";
  t.benchmark = o.benchmark.empty() ? "cceval-" + language_of(t.file) : o.benchmark;
  if (language_from_path(t.file) == Language::unknown)
    throw TaskError{"'" + t.file + "' is in a language repoctx does not index (" + language_of(t.file) +
                    "): its task cannot be retrieved for"};
  return t;
}

// RepoEval: metadata.fpath_tuple = [repository, path parts...], line_no = the ground truth's first line
// (0-based); the prompt ends at the start of that line.
CompletionTask from_repoeval(const json& j, const CompletionTaskLoadOptions& o, const std::string& file_kind) {
  const json& m = field(j, "metadata");
  CompletionTask t;
  t.id = str(m, "task_id");
  const json& tuple = field(m, "fpath_tuple");
  if (!tuple.is_array() || tuple.size() < 2) throw TaskError{"'fpath_tuple' must list the repository and a path"};
  for (const auto& part : tuple)
    if (!part.is_string()) throw TaskError{"'fpath_tuple' holds a non-string"};
  t.repo = repo_path(tuple[0].get<std::string>(), o);
  for (size_t i = 1; i < tuple.size(); ++i) t.file += (i > 1 ? "/" : "") + tuple[i].get<std::string>();
  t.line = integer(m, "line_no") + 1;
  t.column = 0;
  t.prompt = opt_str(j, "prompt");
  t.ground_truth = str(m, "ground_truth");
  t.kind = file_kind;
  t.benchmark = o.benchmark.empty() ? "repoeval-" + file_kind : o.benchmark;
  return t;
}

CompletionTask from_native(const json& j, const CompletionTaskLoadOptions& o) {
  CompletionTask t;
  t.id = str(j, "id");
  t.repo = str(j, "repo");
  if (auto it = o.repos.find(t.repo); it != o.repos.end()) t.repo = it->second;
  t.file = str(j, "file");
  t.line = integer(j, "line");
  t.column = j.contains("column") ? integer(j, "column") : 0;
  t.ground_truth = str(j, "ground_truth");
  t.kind = opt_str(j, "kind");
  if (t.kind.empty()) t.kind = "line";
  t.benchmark = o.benchmark.empty() ? opt_str(j, "benchmark") : o.benchmark;
  if (t.benchmark.empty()) t.benchmark = fs::path(t.repo).filename().string() + "-" + t.kind;
  t.prompt = opt_str(j, "prompt");
  t.right_context = opt_str(j, "right_context");
  if (j.contains("definitions") && j["definitions"].is_array())
    for (const auto& d : j["definitions"])
      if (d.is_string()) t.definitions.push_back(d.get<std::string>());
  return t;
}

std::string repoeval_kind(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  if (name.find("api") != std::string::npos) return "api";
  if (name.find("function") != std::string::npos || name.find("func") != std::string::npos) return "function";
  return "line";
}

}  // namespace

std::vector<CompletionTask> load_completion_tasks(const std::string& path, const CompletionTaskLoadOptions& o) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ExitCode::not_found, "cannot read task file '" + path + "'");
  std::vector<CompletionTask> out;
  std::set<std::string> ids;
  const std::string file_kind = repoeval_kind(path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    CompletionTask t;
    json j = json::parse(line, nullptr, false);
    try {
      if (j.is_discarded() || !j.is_object()) throw TaskError{"not a JSON object"};
      const bool cceval_meta = j.contains("metadata") && j["metadata"].is_object() &&
                               j["metadata"].contains("repository") && j["metadata"].contains("file");
      if (j.contains("groundtruth") || cceval_meta)
        t = from_cceval(j, o);
      else if (j.contains("metadata") && j["metadata"].is_object() && j["metadata"].contains("fpath_tuple"))
        t = from_repoeval(j, o, file_kind);
      else
        t = from_native(j, o);
      if (t.line < 1 || t.column < 0) throw TaskError{fmt::format("cursor {}:{} is not a position", t.line, t.column)};
    } catch (const TaskError& e) {
      std::string id = t.id;
      if (id.empty() && j.is_object() && j.contains("metadata") && j["metadata"].is_object())
        id = opt_str(j["metadata"], "task_id");
      if (id.empty() && j.is_object()) id = opt_str(j, "id");
      t = CompletionTask{};
      t.id = id.empty() ? fmt::format("{}:{}", fs::path(path).filename().string(), n) : id;
      t.error = fmt::format("{} line {}: {}", path, n, e.what);
    }
    if (!ids.insert(t.id).second) {
      t.error = fmt::format("{} line {}: task id '{}' appears twice", path, n, t.id);
      t.id += fmt::format("#line{}", n);
    }
    out.push_back(std::move(t));
  }
  return out;
}

json completion_task_json(const CompletionTask& t) {
  json j = {{"id", t.id},     {"benchmark", t.benchmark}, {"kind", t.kind},     {"repo", t.repo},
            {"file", t.file}, {"line", t.line},           {"column", t.column}, {"ground_truth", t.ground_truth}};
  if (!t.prompt.empty()) j["prompt"] = t.prompt;
  if (!t.right_context.empty()) j["right_context"] = t.right_context;
  if (!t.definitions.empty()) j["definitions"] = t.definitions;
  return j;
}

void write_completion_tasks(const std::string& path, const std::vector<CompletionTask>& tasks) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(ExitCode::bad_input, "cannot write '" + path + "'");
  for (const auto& t : tasks)
    out << completion_task_json(t).dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  if (!out) throw Error(ExitCode::bad_input, "cannot write '" + path + "' (disk full?)");
}

// ------------------------------------------------------------------------------------------ cursor
Cursor task_cursor(const Engine& e, const CompletionTask& t) {
  auto f = e.view().file_by_path(t.file);
  if (!f) throw Error(ExitCode::not_found, "file '" + t.file + "' is not in the index of " + t.repo);
  Cursor c{*f, t.line, t.column};
  auto ctx = make_cursor_context(e, c);  // checks the position
  const std::string& content = e.view().content(*f);
  // The prompt's last line is the text of the cursor's line before the cursor.
  if (!t.prompt.empty()) {
    size_t nl = t.prompt.rfind('\n');
    std::string_view tail = std::string_view(t.prompt).substr(nl == std::string::npos ? 0 : nl + 1);
    std::string_view have = std::string_view(ctx->unfinished).substr(ctx->offset - static_cast<size_t>(c.column));
    if (tail != have)
      throw Error(ExitCode::bad_input,
                  fmt::format("{} no longer matches task {}: line {} reads '{}' before the "
                              "cursor, the task's prompt ends with '{}'",
                              t.file, t.id, t.line, std::string(have).substr(0, 80), std::string(tail).substr(0, 80)));
  }
  // The ground truth's first non-blank line starts at the cursor.
  auto first_line = [](std::string_view s) {
    size_t p = s.find_first_not_of(" \t\r\n");
    if (p == std::string_view::npos) return std::string_view();
    return trim(s.substr(p, s.find('\n', p) - p));
  };
  std::string_view want = first_line(t.ground_truth);
  std::string_view got = first_line(std::string_view(content).substr(ctx->offset));
  if (!want.empty() && got.substr(0, want.size()) != want)
    throw Error(ExitCode::bad_input, fmt::format("{} no longer matches task {}: at {}:{} the file reads '{}', the "
                                                 "ground truth is '{}'",
                                                 t.file, t.id, t.line, t.column, std::string(got).substr(0, 80),
                                                 std::string(want).substr(0, 80)));
  return c;
}

// ------------------------------------------------------------------------------------------ building
namespace {

struct Candidate {
  uint64_t order;
  int file, line;
  std::vector<int> definitions;
};

// Lines inside function bodies (after the docstring) of a file, with the innermost callable's scope.
std::vector<std::pair<int, int>> body_lines(const RepoView& v, int file) {
  std::vector<std::pair<int, int>> out;  // (line, entity)
  const FileRec& f = v.files()[file];
  std::map<int, int> owner;
  for (int i = f.first_entity; i < f.first_entity + f.n_entities; ++i) {
    const EntityRec& en = v.entities()[i];
    if (!is_callable(en.kind) || en.body_start_line <= 0) continue;
    for (int l = en.body_start_line; l <= en.body_end_line; ++l) owner[l] = i;  // inner definitions come later
  }
  for (const auto& [l, ent] : owner) out.emplace_back(l, ent);
  return out;
}

bool non_trivial(std::string_view line, int min_tokens) {
  std::string_view s = trim(line);
  if (s.empty() || s[0] == '#' || starts_with(s, "//") || starts_with(s, "/*") || s[0] == '*') return false;
  if (starts_with(s, "\"\"\"") || starts_with(s, "'''") || starts_with(s, "@")) return false;
  if (starts_with(s, "def ") || starts_with(s, "class ") || starts_with(s, "async def ")) return false;
  return static_cast<int>(tokenize_code(s).size()) >= min_tokens;
}

// Calls on each line that resolve to a repository definition in another file.
std::map<int, std::vector<int>> cross_file_calls(const Engine& e, int file) {
  const RepoView& v = e.view();
  const FileRec& f = v.files()[file];
  std::map<int, std::vector<int>> out;
  for (const Reference& r : v.references(file)) {
    if (r.kind != RefKind::call || r.scope < 0) continue;
    Resolution res = e.graph().resolve(file, f.first_entity + r.scope, r.chain);
    if (res.kind != Resolution::Kind::entity) continue;
    const EntityRec& d = v.entities()[res.entity];
    if (d.file == file || !(is_callable(d.kind) || is_type(d.kind))) continue;
    auto& defs = out[r.line];
    if (std::find(defs.begin(), defs.end(), res.entity) == defs.end()) defs.push_back(res.entity);
  }
  return out;
}

void candidates_of_file(const Engine& e, int file, const CompletionBuildOptions& o, bool api,
                        std::vector<Candidate>& out) {
  const RepoView& v = e.view();
  const FileRec& f = v.files()[file];
  const std::string& content = v.content(file);
  auto starts = line_starts(content);
  int n_lines = f.line_count;
  std::map<int, std::vector<int>> calls;
  if (api) calls = cross_file_calls(e, file);
  for (const auto& [l, ent] : body_lines(v, file)) {
    if (l <= o.margin_lines || l > n_lines - o.margin_lines) continue;
    const EntityRec& en = v.entities()[ent];
    if (en.doc_start_line > 0 && l >= en.doc_start_line && l <= en.doc_end_line) continue;
    std::string_view text = line_range(content, starts, l, l);
    if (!non_trivial(text, o.min_tokens)) continue;
    Candidate c{hash64(fmt::format("{}\x1f{}\x1f{}", o.seed, f.path, l)), file, l, {}};
    if (api) {
      auto it = calls.find(l);
      if (it == calls.end()) continue;
      c.definitions = it->second;
    }
    out.push_back(std::move(c));
  }
}

}  // namespace

std::vector<CompletionTask> build_completion_tasks(const Engine& e, const std::string& repo_path,
                                                   const CompletionBuildOptions& o) {
  if (o.kind != "line" && o.kind != "api" && o.kind != "both")
    throw Error(ExitCode::usage, "--kind takes line, api or both, got '" + o.kind + "'");
  const RepoView& v = e.view();
  std::vector<CompletionTask> out;
  std::string folder = fs::path(repo_path).filename().string();
  for (const std::string kind : {"line", "api"}) {
    if (o.kind != "both" && o.kind != kind) continue;
    std::vector<Candidate> cands;
    for (size_t f = 0; f < v.files().size(); ++f) {
      if (v.files()[f].n_errors > 0) continue;  // a syntax error may hide the structure of the lines
      candidates_of_file(e, static_cast<int>(f), o, kind == "api", cands);
    }
    std::sort(cands.begin(), cands.end(), [&](const Candidate& a, const Candidate& b) {
      return a.order != b.order ? a.order < b.order : std::tie(a.file, a.line) < std::tie(b.file, b.line);
    });
    std::map<int, int> per_file;
    int want = o.kind == "both" ? (o.max_tasks + (kind == "line" ? 1 : 0)) / 2 : o.max_tasks;
    int made = 0;
    for (const auto& c : cands) {
      if (made >= want) break;
      if (per_file[c.file]++ >= o.max_per_file) continue;
      const std::string& content = v.content(c.file);
      auto starts = line_starts(content);
      std::string_view text = line_range(content, starts, c.line, c.line);
      CompletionTask t;
      t.kind = kind;
      t.benchmark = o.benchmark.empty() ? folder + "-" + kind : o.benchmark;
      t.repo = repo_path;
      t.file = v.files()[c.file].path;
      t.line = c.line;
      t.column = static_cast<int>(text.find_first_not_of(" \t"));
      t.ground_truth = std::string(text.substr(static_cast<size_t>(t.column)));
      t.id = fmt::format("{}/{}/{}:{}", folder, kind, t.file, t.line);
      for (int d : c.definitions) t.definitions.push_back(e.target_name(d));
      out.push_back(std::move(t));
      ++made;
    }
  }
  return out;
}

}  // namespace repoctx
