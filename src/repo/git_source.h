// A repository read at a commit straight from git objects (libgit2): no checkout of the user's repository is
// needed or touched. Used by the context-retrieval study's tasks (a repository at a base commit and a gold
// patch) and by the LCA-style task builder (commit histories).
//
// The indexer reads a folder (index/index.h); until it can be fed blobs directly, a commit's tree is written
// once into a cache folder keyed by the tree id (materialize_tree), read-only afterwards, and indexed there
// (docs/DEVIATIONS.md). Only the files the indexer could take (Python and Java sources) are written.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace repoctx {

// One file of a unified diff: paths at the base ("" for a new file) and after ("" for a deleted one), and
// its hunks' line ranges at the base and after (1-based starts, counts as in the @@ header).
struct DiffHunk {
  int old_start = 0, old_lines = 0, new_start = 0, new_lines = 0;
  std::vector<std::string> old_text;  // the hunk's lines at the base (context and removed), without newlines
};
struct FileDiff {
  std::string old_path, new_path;
  std::vector<DiffHunk> hunks;
};

// Parses a unified diff (git's format, as in SWE-bench's and LCA's patches) with libgit2. Throws
// Error(bad_input) with libgit2's reason when it is not a diff.
std::vector<FileDiff> parse_unified_diff(const std::string& patch);

struct CommitInfo {
  std::string id, parent;  // parent: the first parent ("" for a root commit)
  std::string message;
  int parents = 0;
  int64_t time = 0;  // committer time, seconds since the epoch
};

class GitRepository {
 public:
  // `path`: a work tree, a bare repository or a .git folder. Throws Error(not_found) when it is none.
  explicit GitRepository(const std::string& path);
  ~GitRepository();
  GitRepository(const GitRepository&) = delete;
  GitRepository& operator=(const GitRepository&) = delete;

  // The full id of the commit `rev` names (an id, a prefix, a branch, HEAD~3); nullopt when there is none.
  std::optional<std::string> resolve_commit(const std::string& rev) const;
  CommitInfo commit(const std::string& id) const;        // throws Error(not_found)
  std::string tree_id(const std::string& commit) const;  // throws Error(not_found)
  // The file's content at the commit; nullopt when the path is not a file there.
  std::optional<std::string> read_file(const std::string& commit, const std::string& path) const;
  // Unified diff (3 lines of context, like `git diff`) from one commit's tree to another's; with `keep`, only
  // the files whose path (after, else before) it accepts.
  std::string diff(const std::string& from_commit, const std::string& to_commit,
                   const std::function<bool(const std::string&)>& keep = {}) const;
  // Does `patch` apply to the commit's tree? On failure *why holds libgit2's reason.
  bool patch_applies(const std::string& commit, const std::string& patch, std::string* why) const;
  // Commits reachable from `start` along first parents, newest first, at most `max`.
  std::vector<CommitInfo> first_parent_history(const std::string& start, size_t max) const;
  // Writes the commit's files accepted by `keep(path)` under cache_root/<tree id>/ once (into a temporary
  // folder renamed into place, so a killed run leaves nothing half-written) and returns that folder.
  // Symbolic links and submodules are not written.
  // A kept file whose blob the object store lacks (a snapshot or partial clone without its largest files)
  // fails the call when `required(path)` (or `required` is empty), else is left out and its path listed in
  // the folder's .repoctx-missing.
  std::string materialize_tree(const std::string& commit, const std::string& cache_root,
                               const std::function<bool(const std::string&)>& keep,
                               const std::function<bool(const std::string&)>& required = {}) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace repoctx
