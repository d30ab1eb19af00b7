#include "eval/lca_builder.h"

#include "eval/retrieval_eval.h"
#include "repo/git_source.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;

namespace {

int words(const std::string& s) {
  int n = 0;
  bool in = false;
  for (char c : s) {
    bool w = !std::isspace(static_cast<unsigned char>(c));
    if (w && !in) ++n;
    in = w;
  }
  return n;
}

bool is_python_source(const std::string& path) {
  return ends_with(path, ".py") && !is_test_path(path);
}

bool is_not_test(const std::string& path) {
  return !is_test_path(path);
}

// The commit as a task row, or null when it does not qualify.
json task_row(const GitRepository& git, const CommitInfo& c, const LcaBuildOptions& o) {
  std::string msg(trim(c.message));
  if (c.parents != 1 || words(msg) < o.min_message_words || starts_with(msg, "Merge")) return nullptr;
  std::string diff = git.diff(c.parent, c.id, o.gold_files == "text" ? is_not_test : is_python_source);
  if (diff.empty()) return nullptr;
  auto files = parse_unified_diff(diff);
  int modified = 0;
  json mods = json::array();
  for (const auto& f : files) {
    if (!f.old_path.empty() && !f.new_path.empty()) ++modified;
    std::string type = f.old_path.empty() ? "ADD" : f.new_path.empty() ? "DELETE" : "MODIFY";
    mods.push_back({{"change_type", type}, {"old_path", f.old_path}, {"new_path", f.new_path}});
  }
  if (modified < 1 || static_cast<int>(files.size()) > o.max_files) return nullptr;
  int real = 0;  // added plus removed lines (not the file headers)
  for (auto line : split_lines(diff))
    if ((starts_with(line, "+") && !starts_with(line, "+++")) || (starts_with(line, "-") && !starts_with(line, "---")))
      ++real;
  if (real < o.min_changed_lines || real > o.max_changed_lines) return nullptr;
  return {{"dataset", "lca-style"}, {"repo", o.repo_name}, {"hash", c.id}, {"base_hash", c.parent},
          {"message", msg},         {"diff", diff},        {"mods", mods}};
}

}  // namespace

std::vector<json> build_lca_tasks(const std::string& repo_path, const LcaBuildOptions& o) {
  GitRepository git(repo_path);
  auto start = git.resolve_commit(o.rev);
  if (!start) throw Error(ExitCode::not_found, "revision '" + o.rev + "' is not in '" + repo_path + "'");
  std::vector<json> qualifying;
  for (const auto& c : git.first_parent_history(*start, o.scan)) {
    throw_if_interrupted("nothing was written");
    json row = task_row(git, c, o);
    if (!row.is_null()) qualifying.push_back(std::move(row));
  }
  std::vector<json> out;
  if (qualifying.empty() || o.max_tasks == 0) return out;
  size_t k = std::min(o.max_tasks, qualifying.size());
  for (size_t i = 0; i < k; ++i) out.push_back(qualifying[i * qualifying.size() / k]);
  return out;
}

}  // namespace repoctx
