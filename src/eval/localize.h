// The context-retrieval study's evaluation (repoctx localize-eval): tasks (a request, a repository at a base
// commit, the gold patch), gold files and entities from the patch, file- and entity-level precision, recall
// and F1 of the gathered context, the context length, and the study's result table.
//
// Rules (docs/EVAL.md):
//  - Gold files: the files the patch changes that exist at the base (its "--- a/" side; new files are not
//    context anyone could retrieve).
//  - Gold lines: each hunk's whole range at the base (context lines included, as the study's code counts
//    them); a hunk with no base lines stands for the line it follows.
//  - Entities of a set of lines (gold and retrieved alike), by the study's rule (EntityRule::innermost, the
//    default): the innermost function or class whose range at the base holds each line, or the module
//    ("path::<module>") for a line outside every function and class (jedi's get_context, as the study's code
//    calls it). EntityRule::enclosing adds every enclosing function and class of each line. Only indexed source
//    files have entities.
//  - Per task: P = |gold & retrieved| / |retrieved| (0 when nothing was retrieved), R = |gold & retrieved| /
//    |gold| (0 when the gold set is empty), F1 = 2PR / (P + R) (0 when both are 0): scikit-learn's binary
//    scores with zero_division = 0, as the study computed them. Averages are macro: over tasks, and over the
//    tasks of each repository.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "index/index.h"
#include "index/repo_view.h"
#include "llm/models.h"
#include "repo/git_source.h"
#include "retrieve/retriever.h"

namespace repoctx {

struct LocalizeTask {
  std::string id, dataset, repo;  // repo: "owner/name"
  std::string base_commit;        // the tree the request is made against
  std::string commit;             // LCA: the commit that made the change (its parent is the base)
  std::string request;            // issue text or commit message
  std::string patch;              // gold unified diff ("" = diff of base..commit, computed from git)
  std::string error;              // the row is unusable (and why)
};

// A JSON array or JSONL file of SWE-bench rows (instance_id, repo, base_commit, problem_statement, patch) or
// LCA code-editing rows (repo, hash, message, and base_hash / diff / mods when present). A row of neither
// layout becomes a task with `error` set. Throws Error(not_found / bad_input) when the file is missing or not
// JSON at all.
std::vector<LocalizeTask> load_localize_tasks(const std::string& path);
LocalizeTask task_from_row(const nlohmann::json& row, size_t index);

struct Prf {
  double p = 0, r = 0, f1 = 0;
};
Prf prf(const std::set<std::string>& gold, const std::set<std::string>& retrieved);

// Lines per repository path.
using LineSets = std::map<std::string, std::set<int>>;
LineSets gold_lines(const std::vector<FileDiff>& diff);
// Places each hunk of `diff` where its base lines are in the base files (`read(path)` gives a file's content
// at the base, nullopt when absent), as `git apply` does: at the header's line, else at the nearest offset,
// each hunk after the previous one of its file. Hunk starts are moved to where they apply. Returns "" when
// every hunk was placed, else why the patch does not apply.
std::string place_hunks(std::vector<FileDiff>& diff,
                        const std::function<std::optional<std::string>(const std::string&)>& read);
// Which scopes of a line are its entities: the innermost only (the study's rule), or every enclosing function
// and class besides.
enum class EntityRule { innermost, enclosing };
// "innermost" or "enclosing"; throws Error(usage) naming both on anything else.
EntityRule entity_rule_named(const std::string& name);
const char* entity_rule_name(EntityRule r);

// "path::Qual.name" of each line's innermost scope ("path::<module>" outside every function and class), plus,
// with EntityRule::enclosing, every function or class holding a line.
std::set<std::string> entities_of_lines(const RepoView& v, const LineSets& lines, EntityRule rule);
LineSets lines_of_hits(const RepoView& v, const std::vector<Hit>& hits);

struct TaskScore {
  Prf file, entity;
  std::set<std::string> gold_files, gold_entities, files, entities;
};
TaskScore score_task(const RepoView& v, const LineSets& gold, const std::vector<Hit>& hits, EntityRule rule);

struct LocalizeEvalOptions {
  std::vector<std::string> strategies;
  std::string out_dir;
  std::vector<std::string> repos_dirs;  // where clones live: DIR/owner+name[/repo], DIR/owner/name, DIR/name
  std::string cache_dir;                // trees and indexes by tree id; "" = ~/.cache/repoctx/study
  int shard = 0, shards = 1;
  size_t max_tasks = 0;  // 0 = all
  bool write_traces = true;
  EntityRule entity_rule = EntityRule::innermost;
  RetrieverOptions retriever;
};

// Runs every strategy on every task of the shard (task i belongs to shard i % shards) and appends one JSON
// row per (task, strategy) to out_dir/results-<shard>of<shards>.jsonl; (task, strategy) pairs already in any
// results file of out_dir are skipped (resume). A task whose repository, commit or patch is unusable gets
// an error row per strategy, and the run goes on. Returns the number of rows written.
size_t run_localize_eval(const std::vector<LocalizeTask>& tasks, const LocalizeEvalOptions& o, const Models& models);

// The study's result table from every results-*.jsonl in `dir`: per dataset and strategy the macro averages
// of file P/R/F1, entity P/R/F1 and the context length; then the same per repository. Markdown.
std::string localize_table(const std::string& dir);

// A task's repository at its base commit, indexed (trees and indexes cached by tree id under
// o.cache_dir), with the gold lines of its patch; `error` says why the task is unusable.
struct PreparedTask {
  std::string error;
  std::string tree, base;
  LineSets gold;
  std::shared_ptr<Engine> engine;
  double index_seconds = 0;  // 0 when the index came from the cache
};
struct TaskEngineCache {  // the last engine, reused by the next task at the same tree
  std::string tree;
  std::shared_ptr<Engine> engine;
};
PreparedTask prepare_localize_task(const LocalizeTask& t, const LocalizeEvalOptions& o, TaskEngineCache& cache);

// Rankings of a strategy's hits, for the ranked metrics (files F1@1, entities F1@3, files R@10): the file
// ranking is the Hit::Type::file hits in order when there are any, else the distinct files of the hits in
// order; the entity ranking is the entity hits ("path::Qual.name") in order when there are any, else the
// entities of each hit's lines (entities_of_lines) in hit order.
struct HitRankings {
  std::vector<std::string> files, entities;
};
HitRankings rankings_of_hits(const RepoView& v, const std::vector<Hit>& hits, EntityRule rule);
// P/R/F1 of the first k of `ranked` (distinct items) against `gold`.
Prf prf_at(const std::set<std::string>& gold, const std::vector<std::string>& ranked, size_t k);

// The repository at `commit`: every file of its tree written once into cache_root/checkouts/<tree id>/
// (the index reads the sources; the study's corpus the other text files too; a non-source file whose blob
// the clone lacks is left out, listed in .repoctx-missing) and indexed into
// cache_root/checkout-indexes/<tree id>.db unless io.db_path names another index; both are reused by every
// later call at the same tree. Returns the index's path.
std::string index_at_commit(const GitRepository& git, const std::string& commit, const std::string& cache_root,
                            IndexOptions io, IndexStats* stats = nullptr);

// Finds the clone of "owner/name" under one of `dirs`; "" when none holds it.
std::string find_clone(const std::vector<std::string>& dirs, const std::string& repo);

}  // namespace repoctx
