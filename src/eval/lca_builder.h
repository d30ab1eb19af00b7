// An LCA-style code-editing task set from a repository's history (repoctx make-lca-tasks): each task is a
// commit's message as the request, its parent as the base, and its diff restricted to non-test Python files
// (gold_files "python") or to every non-test file ("text": documentation and configuration too, as LCA's own
// rows) as the gold patch (LCA code editing's layout: repo, hash, base_hash, message, diff, mods).
//
// A commit qualifies when it has one parent, its message has at least min_message_words words and does not
// start with "Merge", and its gold changes modify between 1 and max_files files that exist at the
// parent, with min_changed_lines to max_changed_lines added plus removed lines. Of the qualifying commits
// among the newest `scan` first-parent commits, `max_tasks` evenly spaced ones are kept (newest first).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace repoctx {

struct LcaBuildOptions {
  std::string repo_name;  // "owner/name", written into each row
  std::string rev = "HEAD";
  size_t scan = 3000;
  size_t max_tasks = 6;
  int min_message_words = 4;
  int max_files = 6;
  int min_changed_lines = 4;
  int max_changed_lines = 400;
  std::string gold_files = "python";  // python | text
};

// Rows in LCA's layout; throws Error(not_found) when the repository or revision is missing.
std::vector<nlohmann::json> build_lca_tasks(const std::string& repo_path, const LcaBuildOptions& o);

}  // namespace repoctx
