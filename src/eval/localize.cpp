#include "eval/localize.h"

#include <fmt/core.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>

#include "index/index.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/log.h"
#include "util/text.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace repoctx {

// ------------------------------------------------------------------------------------------- tasks
namespace {

std::string text_of(const json& row, const char* key) {
  auto it = row.find(key);
  return it != row.end() && it->is_string() ? it->get<std::string>() : "";
}

// LCA's "mods" (change_type, old_path, new_path, diff of hunks) as one git diff.
std::string diff_of_mods(const json& mods) {
  std::string out;
  for (const auto& m : mods) {
    if (!m.is_object()) continue;
    std::string type = text_of(m, "change_type"), oldp = text_of(m, "old_path"), newp = text_of(m, "new_path"),
                d = text_of(m, "diff");
    if (oldp.empty()) oldp = newp;
    if (newp.empty()) newp = oldp;
    if (oldp.empty()) continue;
    out += "diff --git a/" + oldp + " b/" + newp + "\n";
    if (type == "ADD") out += "new file mode 100644\n";
    if (type == "DELETE") out += "deleted file mode 100644\n";
    out += (type == "ADD" ? std::string("--- /dev/null") : "--- a/" + oldp) + "\n";
    out += (type == "DELETE" ? std::string("+++ /dev/null") : "+++ b/" + newp) + "\n";
    out += d;
    if (!d.empty() && d.back() != '\n') out += "\n";
  }
  return out;
}

}  // namespace

LocalizeTask task_from_row(const json& row, size_t index) {
  LocalizeTask t;
  t.id = "row-" + std::to_string(index + 1);
  if (!row.is_object()) {
    t.error = "row " + std::to_string(index + 1) + " is not a JSON object";
    return t;
  }
  t.repo = text_of(row, "repo");
  t.dataset = text_of(row, "dataset");
  if (row.contains("problem_statement") || row.contains("instance_id")) {  // SWE-bench
    t.id = text_of(row, "instance_id").empty() ? t.id : text_of(row, "instance_id");
    if (t.dataset.empty()) t.dataset = "swe-bench-lite";
    t.base_commit = text_of(row, "base_commit");
    t.request = text_of(row, "problem_statement");
    t.patch = text_of(row, "patch");
    for (const char* k : {"repo", "base_commit", "problem_statement", "patch"})
      if (text_of(row, k).empty()) t.error = "SWE-bench row '" + t.id + "' has no " + k;
    return t;
  }
  if (row.contains("message")) {  // LCA code editing
    if (t.dataset.empty()) t.dataset = "lca";
    t.commit = text_of(row, "hash");
    t.base_commit = text_of(row, "base_hash");
    t.request = text_of(row, "message");
    t.patch = text_of(row, "diff");
    if (t.patch.empty() && row.contains("mods")) t.patch = diff_of_mods(row["mods"]);
    t.id = text_of(row, "id").empty() ? t.repo + "@" + (t.commit.empty() ? t.base_commit : t.commit).substr(0, 12)
                                      : text_of(row, "id");
    if (t.repo.empty() || t.request.empty())
      t.error = "LCA row " + std::to_string(index + 1) + " has no repo or message";
    if (t.commit.empty() && t.base_commit.empty()) t.error = "LCA row '" + t.id + "' has neither hash nor base_hash";
    if (t.commit.empty() && t.patch.empty()) t.error = "LCA row '" + t.id + "' has no hash, diff or mods";
    return t;
  }
  t.error = "row " + std::to_string(index + 1) +
            " is neither a SWE-bench row (instance_id, repo, base_commit, problem_statement, patch) nor an LCA row "
            "(repo, hash, message)";
  return t;
}

std::vector<LocalizeTask> load_localize_tasks(const std::string& path) {
  std::string text = read_file(path, "task file");
  std::vector<LocalizeTask> out;
  auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {
    json arr = json::parse(text, nullptr, false);
    if (arr.is_discarded() || !arr.is_array())
      throw Error(ExitCode::bad_input, "'" + path + "' starts like a JSON array but is not valid JSON");
    for (size_t i = 0; i < arr.size(); ++i) out.push_back(task_from_row(arr[i], i));
    return out;
  }
  size_t n = 0;
  for (auto line : split_lines(text)) {
    if (trim(line).empty()) continue;
    json row = json::parse(line, nullptr, false);
    if (row.is_discarded()) {
      LocalizeTask t;
      t.id = "row-" + std::to_string(n + 1);
      t.error = "line " + std::to_string(n + 1) + " of '" + path + "' is not valid JSON";
      out.push_back(t);
    } else {
      out.push_back(task_from_row(row, n));
    }
    ++n;
  }
  if (out.empty()) throw Error(ExitCode::bad_input, "'" + path + "' holds no task");
  return out;
}

// ----------------------------------------------------------------------------------------- metrics
Prf prf(const std::set<std::string>& gold, const std::set<std::string>& retrieved) {
  size_t tp = 0;
  for (const auto& x : retrieved) tp += gold.count(x);
  Prf m;
  m.p = retrieved.empty() ? 0 : static_cast<double>(tp) / static_cast<double>(retrieved.size());
  m.r = gold.empty() ? 0 : static_cast<double>(tp) / static_cast<double>(gold.size());
  m.f1 = m.p + m.r > 0 ? 2 * m.p * m.r / (m.p + m.r) : 0;
  return m;
}

LineSets gold_lines(const std::vector<FileDiff>& diff) {
  LineSets out;
  for (const auto& f : diff) {
    if (f.old_path.empty()) continue;  // a new file: nothing at the base to retrieve
    auto& set = out[f.old_path];
    for (const auto& h : f.hunks) {
      if (h.old_lines == 0) {
        set.insert(std::max(1, h.old_start));
        continue;
      }
      for (int l = h.old_start; l < h.old_start + h.old_lines; ++l) set.insert(l);
    }
  }
  return out;
}

namespace {

// The first line (1-based) at or after `from` where `want` matches `lines` exactly, searching outward from
// `at`; -1 when nowhere.
int find_block(const std::vector<std::string_view>& lines, const std::vector<std::string>& want, int at, int from) {
  int n = static_cast<int>(lines.size()), k = static_cast<int>(want.size());
  auto matches = [&](int start) {
    if (start < from || start < 1 || start + k - 1 > n) return false;
    for (int i = 0; i < k; ++i) {
      std::string_view l = lines[static_cast<size_t>(start + i - 1)];
      if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
      if (l != want[static_cast<size_t>(i)]) return false;
    }
    return true;
  };
  for (int d = 0; d <= n; ++d) {
    if (matches(at + d)) return at + d;
    if (d > 0 && matches(at - d)) return at - d;
  }
  return -1;
}

}  // namespace

std::string place_hunks(std::vector<FileDiff>& diff,
                        const std::function<std::optional<std::string>(const std::string&)>& read) {
  for (auto& f : diff) {
    if (f.old_path.empty()) continue;
    auto content = read(f.old_path);
    if (!content) return "the patch changes " + f.old_path + ", which is not in the base";
    auto lines = split_lines(*content);
    if (!content->empty() && content->back() == '\n' && !lines.empty() && lines.back().empty()) lines.pop_back();
    int from = 1;
    for (auto& h : f.hunks) {
      if (h.old_text.empty()) continue;  // pure insertion: nothing to match
      int at = find_block(lines, h.old_text, std::max(1, h.old_start), from);
      if (at < 0)
        return fmt::format("the patch does not apply: the hunk at line {} of {} matches no lines of the base",
                           h.old_start, f.old_path);
      h.old_start = at;
      from = at + static_cast<int>(h.old_text.size());
    }
  }
  return "";
}

EntityRule entity_rule_named(const std::string& name) {
  if (name == "innermost") return EntityRule::innermost;
  if (name == "enclosing") return EntityRule::enclosing;
  throw Error(ExitCode::usage,
              "unknown entity rule '" + name + "': use innermost (the study's) or enclosing (every enclosing scope)");
}

const char* entity_rule_name(EntityRule r) {
  return r == EntityRule::innermost ? "innermost" : "enclosing";
}

std::set<std::string> entities_of_lines(const RepoView& v, const LineSets& lines, EntityRule rule) {
  std::set<std::string> out;
  for (const auto& [path, set] : lines) {
    auto f = v.file_by_path(path);
    if (!f || set.empty()) continue;
    const auto& fr = v.files()[*f];
    std::vector<int> scopes;
    for (int e = fr.first_entity; e < fr.first_entity + fr.n_entities; ++e)
      if (is_callable(v.entities()[e].kind) || is_type(v.entities()[e].kind)) scopes.push_back(e);
    for (int line : set) {
      int innermost = -1;
      for (int e : scopes) {
        const auto& en = v.entities()[e];
        if (line < en.decorated_start_line || line > en.end_line) continue;
        if (rule == EntityRule::enclosing) out.insert(path + "::" + en.qualname);
        if (innermost < 0 || en.decorated_start_line >= v.entities()[innermost].decorated_start_line) innermost = e;
      }
      out.insert(path + "::" + (innermost < 0 ? std::string("<module>") : v.entities()[innermost].qualname));
    }
  }
  return out;
}

LineSets lines_of_hits(const RepoView& v, const std::vector<Hit>& hits) {
  LineSets out;
  for (const auto& h : hits) {
    const std::string& path = hit_path(v, h);
    if (path.empty()) continue;
    auto& set = out[path];
    for (int l = h.start_line; l <= h.end_line; ++l) set.insert(l);
  }
  return out;
}

TaskScore score_task(const RepoView& v, const LineSets& gold, const std::vector<Hit>& hits, EntityRule rule) {
  TaskScore s;
  LineSets got = lines_of_hits(v, hits);
  for (const auto& [p, _] : gold) s.gold_files.insert(p);
  for (const auto& [p, _] : got) s.files.insert(p);
  s.gold_entities = entities_of_lines(v, gold, rule);
  s.entities = entities_of_lines(v, got, rule);
  s.file = prf(s.gold_files, s.files);
  s.entity = prf(s.gold_entities, s.entities);
  return s;
}

HitRankings rankings_of_hits(const RepoView& v, const std::vector<Hit>& hits, EntityRule rule) {
  HitRankings r;
  bool file_hits = std::any_of(hits.begin(), hits.end(), [](const Hit& h) { return h.type == Hit::Type::file; });
  bool entity_hits =
      std::any_of(hits.begin(), hits.end(), [](const Hit& h) { return h.type == Hit::Type::entity && h.entity >= 0; });
  std::set<std::string> seen_files, seen_entities;
  auto add = [](std::vector<std::string>& out, std::set<std::string>& seen, const std::string& s) {
    if (seen.insert(s).second) out.push_back(s);
  };
  for (const auto& h : hits) {
    const std::string& path = hit_path(v, h);
    if (path.empty()) continue;
    if (!file_hits || h.type == Hit::Type::file) add(r.files, seen_files, path);
    if (entity_hits) {
      if (h.type == Hit::Type::entity && h.entity >= 0)
        add(r.entities, seen_entities, path + "::" + v.entities()[static_cast<size_t>(h.entity)].qualname);
      else if (h.label == "<module>")  // a ranked module level (locate)
        add(r.entities, seen_entities, path + "::<module>");
    } else if (h.type != Hit::Type::file) {
      LineSets lines;
      for (int l = h.start_line; l <= h.end_line; ++l) lines[path].insert(l);
      for (const auto& en : entities_of_lines(v, lines, rule)) add(r.entities, seen_entities, en);
    }
  }
  return r;
}

Prf prf_at(const std::set<std::string>& gold, const std::vector<std::string>& ranked, size_t k) {
  std::set<std::string> top(ranked.begin(), ranked.begin() + static_cast<long>(std::min(k, ranked.size())));
  return prf(gold, top);
}

std::string index_at_commit(const GitRepository& git, const std::string& commit, const std::string& cache_root,
                            IndexOptions io, IndexStats* stats) {
  std::string tree = git.tree_id(commit);
  std::string dir = git.materialize_tree(
      commit, cache_root + "/checkouts", [](const std::string&) { return true; },
      [](const std::string& path) { return language_from_path(path) != Language::unknown; });
  if (io.db_path.empty()) io.db_path = cache_root + "/checkout-indexes/" + tree + ".db";
  IndexStats st = build_index(dir, io);
  if (stats) *stats = st;
  return io.db_path;
}

std::string find_clone(const std::vector<std::string>& dirs, const std::string& repo) {
  std::string plus = repo, name = repo.substr(repo.rfind('/') == std::string::npos ? 0 : repo.rfind('/') + 1);
  std::replace(plus.begin(), plus.end(), '/', '+');
  std::error_code ec;
  for (const auto& d : dirs)
    for (const std::string& c : {d + "/" + plus + "/repo", d + "/" + plus, d + "/" + repo, d + "/" + name})
      if (fs::exists(c + "/.git", ec) || fs::exists(c + "/HEAD", ec) || fs::exists(c + "/objects", ec)) return c;
  return "";
}

}  // namespace repoctx
